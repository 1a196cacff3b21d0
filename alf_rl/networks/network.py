"""``Network``: the base of every alf_rl network.

A network is a ``tf.Module`` built from specs. All variables are created in
the constructor (no lazy build), so an algorithm can collect its trainable
variables, create optimizer slots and restore checkpoints before the first
step, and calling a network inside ``tf.function`` never creates variables.
"""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import tensorflow as tf
import tf_keras

from alf_rl.utils import nest as nest_utils
from alf_rl.utils.nest import Nest

# What an ``initializer`` argument accepts: ``None`` (the default), a
# ``tf_keras`` initializer name or instance, or a callable ``f(shape, dtype)``.
Initializer = Optional[Union[str, tf_keras.initializers.Initializer,
                             Callable[..., tf.Tensor]]]


def _ctor_args(local_vars: Dict[str, Any],
               varkw: Optional[str] = None) -> Dict[str, Any]:
    """The constructor arguments from ``locals()`` taken on its first line.

    Args:
        local_vars: ``locals()`` of ``__init__``.
        varkw: name of its ``**kwargs`` parameter, if any: those arguments
            are merged in, so that ``type(net)(**args)`` passes them again.
    """
    args = {
        k: v
        for k, v in local_vars.items()
        if k not in ('self', '__class__', varkw)
    }
    if varkw is not None:
        args.update(local_vars[varkw])
    return args


def make_initializer(initializer: Initializer,
                     default: Union[str, tf_keras.initializers.Initializer] =
                     'glorot_uniform') -> Any:
    """A fresh ``tf_keras`` initializer for one layer.

    Unseeded ``tf_keras`` initializer *instances* return identical values each
    time they are called, so sharing one instance between layers (or between
    a network and its ``copy()``) would give identical weights. This returns
    a new instance per call.

    Args:
        initializer: ``None`` (use ``default``), a name, a ``tf_keras``
            initializer instance (cloned from its config) or a plain callable
            ``f(shape, dtype)`` (used as is).
        default: name or instance used when ``initializer`` is ``None``.

    Returns:
        An initializer.
    """
    if initializer is None:
        initializer = default
    if isinstance(initializer, str):
        return tf_keras.initializers.get(initializer)
    if isinstance(initializer, tf_keras.initializers.Initializer):
        return type(initializer).from_config(initializer.get_config())
    return initializer


def build_layer(layer: tf_keras.layers.Layer,
                input_shape: Union[tf.TensorShape, Sequence[Optional[int]]]
                ) -> tf.TensorShape:
    """Builds a ``tf_keras`` layer now (variables named ``<layer>/kernel``).

    Args:
        layer: an unbuilt ``tf_keras`` layer.
        input_shape: its input shape, batch dim ``None``.

    Returns:
        ``layer.compute_output_shape(input_shape)``.
    """
    with tf.name_scope(layer.name):
        layer.build(input_shape)
    return layer.compute_output_shape(input_shape)


def squash_outer_dims(tensor: tf.Tensor, outer_rank: int,
                      inner_shape: List[int]) -> tf.Tensor:
    """Merges the ``outer_rank`` leading dims: [T, B, ...] -> [T*B, ...].

    Args:
        tensor: [d_1, ..., d_outer_rank, *inner_shape] tensor.
        outer_rank: number of leading dims to merge (>= 1).
        inner_shape: static list, the rest of the shape.

    Returns:
        [N, *inner_shape] with N the product of the outer dims.
    """
    if outer_rank == 1:
        return tensor
    return tf.reshape(tensor, [-1] + list(inner_shape))


def unsquash_outer_dims(tensor: tf.Tensor, outer_shape: tf.Tensor,
                        static_outer_shape: Optional[List[int]] = None
                        ) -> tf.Tensor:
    """Inverse of ``squash_outer_dims``: [N, ...] -> [*outer_shape, ...].

    Args:
        tensor: [N, ...] tensor.
        outer_shape: int32 [outer_rank] tensor.
        static_outer_shape: optional list to restore the static shape.

    Returns:
        [*outer_shape, ...] tensor.
    """
    inner = tensor.shape[1:].as_list()
    result = tf.reshape(tensor, tf.concat([outer_shape, inner], 0))
    if static_outer_shape is not None:
        result.set_shape(list(static_outer_shape) + inner)
    return result


class Network(tf.Module):
    """Base class: specs, input checks and ``copy()``.

    Subclasses build all layers in ``__init__`` from specs, record their
    constructor arguments by calling ``self._set_ctor_args(args)`` where
    ``args = _ctor_args(locals())`` was taken on the constructor's first
    line (``copy()`` calls the constructor again with them), and implement
    ``_call(observation, state, outer_rank)``. Heads made of an encoder and
    an output derive from ``EncoderHead`` instead.

    Args:
        input_tensor_spec: nest of ``tf.TensorSpec`` of one observation.
        state_spec: nest of ``tf.TensorSpec`` of the recurrent state, ``()``
            for feed-forward networks.
        name: name of the module.
    """

    # The recorded constructor arguments are configuration, not state: keep
    # them out of variable/module collection.
    _TF_MODULE_IGNORED_PROPERTIES = frozenset(
        tf.Module._TF_MODULE_IGNORED_PROPERTIES | {'_network_ctor_args'})

    def __init__(self, input_tensor_spec: Nest, state_spec: Nest = (),
                 name: Optional[str] = None):
        super().__init__(name=name)
        self._input_tensor_spec = input_tensor_spec
        self._state_spec = state_spec

    def _set_ctor_args(self, ctor_args: Dict[str, Any]) -> None:
        self.__dict__['_network_ctor_args'] = dict(ctor_args)

    @property
    def input_tensor_spec(self) -> Nest:
        """Nest of ``tf.TensorSpec``: one observation, no outer dims."""
        return self._input_tensor_spec

    @property
    def state_spec(self) -> Nest:
        """Nest of ``tf.TensorSpec`` of the state; ``()`` if feed-forward."""
        return self._state_spec

    def copy(self, name: Optional[str] = None) -> 'Network':
        """A network of the same configuration with fresh variables.

        Used for target networks; the copy's weights are newly initialized
        (sync them with the algorithm's target updater).

        Args:
            name: name of the copy; defaults to this network's name.
        """
        args = dict(self.__dict__['_network_ctor_args'])
        args['name'] = name or self.name
        return type(self)(**args)

    def _check_input(self, observation: Nest) -> int:
        """The outer rank of ``observation``; raises on a spec mismatch."""
        nest_utils.assert_same_structure(observation, self._input_tensor_spec,
                                         'observation', 'input_tensor_spec',
                                         prefix='observation')
        outer_rank = len(tf.nest.flatten(observation)[0].shape) - len(
            tf.nest.flatten(self._input_tensor_spec)[0].shape)
        if outer_rank < 1:
            raise ValueError(
                "%s: observation has no outer (batch) dimension; expected "
                "[B, ...] or [T, B, ...] matching input_tensor_spec %s" %
                (self.name, self._input_tensor_spec))
        nest_utils.check_nest_matches_spec(
            observation, self._input_tensor_spec, 'observation', outer_rank,
            hint='input of network %s' % self.name, check_dtype=False)
        return outer_rank

    def __call__(self, observation: Nest,
                 state: Nest = ()) -> Tuple[Any, Nest]:
        """Runs the network.

        Args:
            observation: nest like ``input_tensor_spec`` of [B, ...] or
                [T, B, ...] tensors.
            state: nest like ``state_spec``; ``()`` for feed-forward.

        Returns:
            ``(output, state)``; output has the same outer dims as the input.
        """
        outer_rank = self._check_input(observation)
        return self._call(observation, state, outer_rank)

    def _call(self, observation: Nest, state: Nest,
              outer_rank: int) -> Tuple[Any, Nest]:
        raise NotImplementedError()
