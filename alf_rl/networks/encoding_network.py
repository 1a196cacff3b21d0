"""``EncodingNetwork``: nested observation -> [B, D] feature (conv + MLP)."""

from typing import (Annotated, Callable, List, Optional, Sequence, Tuple,
                    Union)

import gin
import numpy as np
import tensorflow as tf
import tf_keras

from alf_rl.networks.network import (Initializer, Network, _ctor_args,
                                     build_layer, make_initializer,
                                     squash_outer_dims, unsquash_outer_dims)
from alf_rl.utils.nest import Nest

# An activation: a callable on tensors or a ``tf_keras`` activation name.
Activation = Optional[Union[str, Callable[[tf.Tensor], tf.Tensor]]]
# ``(filters, kernel_size, strides)`` per conv layer (the description is
# what a gin binding of the wrong type is told).
ConvLayerParams = Optional[Annotated[
    Sequence[Tuple[int, int, int]],
    'a sequence of (filters, kernel_size, strides) tuples of ints']]
# Maps the flattened leaves, [N, d_i] each, to one [N, D] tensor.
Combiner = Optional[Callable[[List[tf.Tensor]], tf.Tensor]]


def _preprocess(x: tf.Tensor) -> tf.Tensor:
    """Casts a leaf to float32; uint8 images are scaled to [0, 1]."""
    if x.dtype == tf.uint8:
        return tf.cast(x, tf.float32) / 255.
    if x.dtype != tf.float32:
        return tf.cast(x, tf.float32)
    return x


@gin.configurable
class EncodingNetwork(Network):
    """Encodes a nested observation into one feature vector.

    Each observation leaf is cast to float32 (uint8 scaled to [0, 1]); a
    rank-3 leaf ([H, W, C] image) goes through its own conv stack when
    ``conv_layer_params`` is given; every leaf is then flattened, the leaves
    are combined (concatenated by default) and passed through the fully
    connected layers, then an optional last layer.

    Initialization: hidden (conv and fc) kernels use ``kernel_initializer``
    (default Glorot-uniform), the last layer's kernel
    ``last_kernel_initializer`` (default: ``kernel_initializer``), biases
    zero.

    This is the default encoder of the heads (``ActorDistributionNetwork``,
    ``ValueNetwork``, ``QNetwork``, ``ActorNetwork``): their
    ``fc_layer_params``, ``conv_layer_params``, ``activation``,
    ``preprocessing_combiner`` and ``kernel_initializer`` arguments are this
    network's.

    Args:
        input_tensor_spec: nest of ``tf.TensorSpec`` of one observation.
        conv_layer_params: optional list of ``(filters, kernel_size,
            strides)`` for the conv stack (``'valid'`` padding) applied to
            every rank-3 leaf.
        fc_layer_params: optional list of hidden layer sizes.
        activation: activation of conv and hidden fc layers.
        preprocessing_combiner: ``None`` to concatenate the flattened leaves,
            or a callable mapping the list (in ``tf.nest.flatten`` order) of
            [N, d_i] float32 tensors to one [N, D] tensor.
        kernel_initializer: initializer of the conv and hidden fc kernels
            (``None``: Glorot-uniform); see ``make_initializer``.
        last_layer_size: optional size of a final dense layer.
        last_activation: activation of the final layer (``None``: linear).
        last_kernel_initializer: initializer of the final layer's kernel
            (``None``: ``kernel_initializer``).
        name: module name.

    Raises:
        ValueError: ``conv_layer_params`` given but no rank-3 leaf, or a
            malformed ``conv_layer_params`` entry.
    """

    def __init__(self,
                 input_tensor_spec: Nest,
                 conv_layer_params: ConvLayerParams = None,
                 fc_layer_params: Optional[Sequence[int]] = None,
                 activation: Activation = tf.nn.relu,
                 preprocessing_combiner: Combiner = None,
                 kernel_initializer: Initializer = None,
                 last_layer_size: Optional[int] = None,
                 last_activation: Activation = None,
                 last_kernel_initializer: Initializer = None,
                 name: str = 'EncodingNetwork'):
        ctor_args = _ctor_args(locals())
        super().__init__(input_tensor_spec, name=name)
        self._set_ctor_args(ctor_args)
        flat_specs = tf.nest.flatten(input_tensor_spec)
        if not flat_specs:
            raise ValueError("%s: input_tensor_spec is empty" % name)
        if conv_layer_params and not any(
                len(s.shape) == 3 for s in flat_specs):
            raise ValueError(
                "%s: conv_layer_params given but no observation leaf is an "
                "[H, W, C] image; leaf shapes are %s" %
                (name, [s.shape.as_list() for s in flat_specs]))
        for p in conv_layer_params or ():
            if len(p) != 3:
                raise ValueError(
                    "%s: each conv_layer_params entry must be (filters, "
                    "kernel_size, strides), got %r" % (name, p))

        with self.name_scope:
            # One conv stack per image leaf (None for the other leaves).
            self._conv_stacks: List[Optional[list]] = []
            sizes = []
            for i, spec in enumerate(flat_specs):
                shape = spec.shape.as_list()
                if conv_layer_params and len(shape) == 3:
                    stack = []
                    in_shape = tf.TensorShape([None] + shape)
                    for j, (filters, kernel, strides) in enumerate(
                            conv_layer_params):
                        layer = tf_keras.layers.Conv2D(
                            filters, kernel, strides, activation=activation,
                            kernel_initializer=make_initializer(
                                kernel_initializer),
                            name='conv%d_%d' % (i, j))
                        build_layer(layer, in_shape)
                        in_shape = layer.compute_output_shape(in_shape)
                        stack.append(layer)
                    self._conv_stacks.append(stack)
                    sizes.append(int(np.prod(in_shape[1:])))
                else:
                    self._conv_stacks.append(None)
                    sizes.append(int(np.prod(shape)))

            self._combiner = preprocessing_combiner
            if preprocessing_combiner is None:
                size = sum(sizes)
            else:
                # Run once on zeros to learn the output size; a combiner
                # with variables creates them here, in the constructor.
                size = int(
                    preprocessing_combiner(
                        [tf.zeros([1, d]) for d in sizes]).shape[-1])

            self._fc_layers = []
            for j, units in enumerate(fc_layer_params or ()):
                layer = tf_keras.layers.Dense(
                    units, activation=activation,
                    kernel_initializer=make_initializer(kernel_initializer),
                    name='fc%d' % j)
                build_layer(layer, (None, size))
                self._fc_layers.append(layer)
                size = units
            if last_layer_size is not None:
                layer = tf_keras.layers.Dense(
                    last_layer_size, activation=last_activation,
                    kernel_initializer=make_initializer(
                        kernel_initializer if last_kernel_initializer is None
                        else last_kernel_initializer),
                    name='last')
                build_layer(layer, (None, size))
                self._fc_layers.append(layer)
                size = last_layer_size
        self._output_size = size

    @property
    def output_size(self) -> int:
        """int: D, the size of the encoding."""
        return self._output_size

    @property
    def output_spec(self) -> tf.TensorSpec:
        """``tf.TensorSpec([D], float32)`` of one encoding."""
        return tf.TensorSpec([self._output_size], tf.float32)

    def _call(self, observation: Nest, state: Nest,
              outer_rank: int) -> Tuple[tf.Tensor, Nest]:
        """Encodes ``observation`` (see ``Network.__call__``).

        Returns:
            ``(encoding, state)``: [B, D] (or [T, B, D]) float32 and the
            unchanged ``state`` (``()``).
        """
        flat_obs = tf.nest.flatten(observation)
        flat_specs = tf.nest.flatten(self._input_tensor_spec)
        outer_shape = tf.shape(flat_obs[0])[:outer_rank]
        static_outer = flat_obs[0].shape[:outer_rank].as_list()
        features = []
        for x, spec, stack in zip(flat_obs, flat_specs, self._conv_stacks):
            x = _preprocess(
                squash_outer_dims(x, outer_rank, spec.shape.as_list()))
            for layer in stack or ():
                x = layer(x)
            n = int(np.prod(x.shape[1:]))
            features.append(tf.reshape(x, [-1, n]))
        if self._combiner is None:
            h = features[0] if len(features) == 1 else tf.concat(features, -1)
        else:
            h = self._combiner(features)
        for layer in self._fc_layers:
            h = layer(h)
        return unsquash_outer_dims(h, outer_shape, static_outer), state
