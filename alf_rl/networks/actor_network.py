"""``ActorNetwork``: observation -> deterministic bounded continuous action.

The actor of DDPG and TD3: an MLP (optionally after a conv stack) whose last
layer is squashed by ``tanh`` and scaled to each action leaf's bounds,
``a = minimum + (tanh(x) + 1) / 2 * (maximum - minimum)``.
"""

import functools
from typing import Any

import gin
import numpy as np
import tensorflow as tf
import tf_keras

from alf_rl import specs as alf_specs
from alf_rl.networks.encoder_head import EncoderCtor, EncoderHead
from alf_rl.networks.encoding_network import EncodingNetwork
from alf_rl.networks.network import Initializer, _ctor_args
from alf_rl.utils import nest as nest_utils
from alf_rl.utils.nest import Nest


def _default_last_initializer() -> tf_keras.initializers.Initializer:
    # Lillicrap et al. 2016, sec. 7: final-layer weights from U(-3e-3, 3e-3)
    # so that initial actions are near the middle of the range.
    return tf_keras.initializers.RandomUniform(-0.003, 0.003)


@gin.configurable
class ActorNetwork(EncoderHead):
    """A deterministic actor for bounded continuous actions.

    ``net(observation, state=()) -> (action, state)``. Every leaf of
    ``action_spec`` must be a ``BoundedTensorSpec`` with a float dtype and
    finite bounds. The encoder ends in one ``tanh`` layer producing all
    action entries at once (``sum(prod(leaf.shape))`` units); each leaf is
    scaled to its own ``[minimum, maximum]``.

    Args:
        input_tensor_spec: nest of ``tf.TensorSpec`` of one observation.
        action_spec: nest of bounded float ``BoundedTensorSpec``.
        encoding_network_ctor: builds the encoder (see ``EncoderCtor``),
            which gets the output layer (``last_layer_size``,
            ``last_activation``, ``last_kernel_initializer``); default an
            ``EncodingNetwork`` with ``fc_layer_params=(256, 256)`` and ReLU
            (as in the papers).
        last_kernel_initializer: the output layer's kernel initializer
            (default ``U(-3e-3, 3e-3)`` as in DDPG).
        name: module name.
        **encoder_kwargs: ``encoding_network_ctor``'s arguments, e.g.
            ``fc_layer_params``, ``activation`` (see ``EncodingNetwork``).

    Raises:
        ValueError: an action leaf that is not a bounded float spec (the
            message names its path).
        TypeError: an encoder argument that ``encoding_network_ctor`` does
            not take.
    """

    def __init__(self,
                 input_tensor_spec: Nest,
                 action_spec: Nest,
                 encoding_network_ctor: EncoderCtor = functools.partial(
                     EncodingNetwork, fc_layer_params=(256, 256)),
                 last_kernel_initializer: Initializer = None,
                 name: str = 'ActorNetwork',
                 **encoder_kwargs: Any):
        super().__init__(input_tensor_spec,
                         _ctor_args(locals(), 'encoder_kwargs'), name)
        self._action_spec = action_spec
        self._leaf_shapes = []
        minimums, maximums = [], []
        for path, spec in nest_utils.flatten_with_path(action_spec,
                                                       'action_spec'):
            if not (alf_specs.is_continuous(spec)
                    and alf_specs.is_bounded(spec)):
                raise ValueError(
                    "%s: ActorNetwork needs a BoundedTensorSpec with a float "
                    "dtype (continuous actions), got %s" % (path, spec))
            shape = spec.shape.as_list()
            low = np.broadcast_to(np.asarray(spec.minimum, np.float64), shape)
            high = np.broadcast_to(np.asarray(spec.maximum, np.float64),
                                   shape)
            if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
                raise ValueError(
                    "%s: ActorNetwork needs finite action bounds, got %s" %
                    (path, spec))
            self._leaf_shapes.append(shape)
            minimums.append(low.reshape(-1))
            maximums.append(high.reshape(-1))
        low = np.concatenate(minimums).astype(np.float32)
        high = np.concatenate(maximums).astype(np.float32)
        # Constants, not variables: bounds are configuration.
        self._offset = (high + low) / 2.
        self._scale = (high - low) / 2.
        self._sizes = [int(np.prod(s)) for s in self._leaf_shapes]
        with self.name_scope:
            self._encoder = self._make_encoder(
                encoding_network_ctor, encoder_kwargs,
                last_layer_size=sum(self._sizes),
                last_activation=tf.nn.tanh,
                last_kernel_initializer=(last_kernel_initializer or
                                         _default_last_initializer()))

    @property
    def action_spec(self) -> Nest:
        """Nest of action specs."""
        return self._action_spec

    def _head(self, squashed: tf.Tensor) -> Nest:
        """The action from the encoder's ``tanh`` output.

        Args:
            squashed: [B, D] (or [T, B, D]) float32 in (-1, 1).

        Returns:
            A nest like ``action_spec`` of float tensors [B, ...] (or
            [T, B, ...]) inside the bounds.
        """
        # Clip: offset + scale * tanh may overshoot a bound by one ulp.
        flat = tf.clip_by_value(self._offset + self._scale * squashed,
                                self._offset - self._scale,
                                self._offset + self._scale)
        outer_shape = tf.shape(flat)[:-1]
        static_outer = flat.shape[:-1].as_list()
        parts = (tf.split(flat, self._sizes, axis=-1)
                 if len(self._sizes) > 1 else [flat])
        actions = []
        for part, shape, spec in zip(parts, self._leaf_shapes,
                                     tf.nest.flatten(self._action_spec)):
            a = tf.reshape(part, tf.concat([outer_shape, shape], 0))
            a.set_shape(static_outer + shape)
            actions.append(tf.cast(a, spec.dtype))
        return tf.nest.pack_sequence_as(self._action_spec, actions)
