"""Tensor specs: bounded specs, specs from gymnasium spaces, zeros and samples.

TensorFlow has no public bounded spec, so ``BoundedTensorSpec`` is a
``tf.TensorSpec`` carrying ``minimum``/``maximum`` numpy arrays broadcast to
the spec's shape. Specs describe one element (no batch dimension); functions
taking ``outer_dims`` prepend batch/time dimensions.
"""

from typing import Any, Optional, Sequence, Union

import numpy as np
import tensorflow as tf

from alf_rl.data_structures import TimeStep
from alf_rl.utils.nest import Nest

TensorSpec = tf.TensorSpec

# Leading (batch/time) dims: Python ints or scalar int tensors, or a 1-D int
# tensor.
OuterDims = Union[Sequence[Any], tf.Tensor]


class BoundedTensorSpec(tf.TensorSpec):
    """A ``tf.TensorSpec`` with inclusive bounds.

    Args:
        shape: shape of one element (no batch dimension).
        dtype: a ``tf.DType`` or numpy dtype.
        minimum: scalar or array broadcastable to ``shape``.
        maximum: scalar or array broadcastable to ``shape``.
        name: optional name.
    """

    __slots__ = ('_minimum', '_maximum')

    def __init__(self, shape: Union[tf.TensorShape, Sequence[int]],
                 dtype: Any, minimum: Any, maximum: Any,
                 name: Optional[str] = None):
        super().__init__(shape, dtype, name)
        np_dtype = self.dtype.as_numpy_dtype
        try:
            lo = np.broadcast_to(np.asarray(minimum, dtype=np_dtype),
                                 self.shape.as_list())
            hi = np.broadcast_to(np.asarray(maximum, dtype=np_dtype),
                                 self.shape.as_list())
        except ValueError as e:
            raise ValueError(
                "BoundedTensorSpec bounds must broadcast to shape %s; got "
                "minimum %s and maximum %s (%s)" %
                (self.shape, np.shape(minimum), np.shape(maximum),
                 e)) from e
        if np.any(lo > hi):
            raise ValueError("BoundedTensorSpec: minimum %s exceeds maximum %s"
                             % (minimum, maximum))
        self._minimum = np.array(lo)
        self._minimum.setflags(write=False)
        self._maximum = np.array(hi)
        self._maximum.setflags(write=False)

    @classmethod
    def from_spec(cls, spec: tf.TensorSpec, minimum: Any = None,
                  maximum: Any = None) -> 'BoundedTensorSpec':
        """A bounded spec from ``spec``; bounds default to the dtype's range.

        Args:
            spec: a ``tf.TensorSpec`` (its bounds are kept when it has some).
            minimum, maximum: scalars or arrays broadcastable to the shape.

        Returns:
            ``BoundedTensorSpec`` with ``spec``'s shape, dtype and name.
        """
        dtype = tf.as_dtype(spec.dtype)
        if minimum is None:
            minimum = getattr(spec, 'minimum', dtype.min)
        if maximum is None:
            maximum = getattr(spec, 'maximum', dtype.max)
        return cls(spec.shape, dtype, minimum, maximum, spec.name)

    @property
    def minimum(self) -> np.ndarray:
        """numpy array shaped like the spec: the smallest allowed values."""
        return self._minimum

    @property
    def maximum(self) -> np.ndarray:
        """numpy array shaped like the spec: the largest allowed values."""
        return self._maximum

    def _serialize(self):
        return (self._shape, self._dtype, self._name, self._minimum,
                self._maximum)

    def __reduce__(self):
        return BoundedTensorSpec, (self._shape, self._dtype, self._minimum,
                                   self._maximum, self._name)

    def __repr__(self):
        return "BoundedTensorSpec(shape=%s, dtype=%s, name=%r, minimum=%s, " \
               "maximum=%s)" % (self.shape, repr(self.dtype), self.name,
                                _short(self._minimum), _short(self._maximum))

    def __eq__(self, other):
        return (type(self) is type(other) and self.shape == other.shape
                and self.dtype == other.dtype
                and np.array_equal(self._minimum, other._minimum)
                and np.array_equal(self._maximum, other._maximum))

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((tuple(self.shape.as_list()), self.dtype))


def _short(array):
    """Prints a constant array as its scalar."""
    flat = np.ravel(array)
    if flat.size and np.all(flat == flat[0]):
        return str(flat[0])
    return np.array2string(array, threshold=8)


def is_discrete(spec: tf.TensorSpec) -> bool:
    """True when ``spec`` has an integer or bool dtype."""
    return tf.as_dtype(spec.dtype).is_integer or spec.dtype == tf.bool


def is_continuous(spec: tf.TensorSpec) -> bool:
    """True when ``spec`` has a floating dtype."""
    return tf.as_dtype(spec.dtype).is_floating


def is_bounded(spec: tf.TensorSpec) -> bool:
    """True for a ``BoundedTensorSpec``."""
    return isinstance(spec, BoundedTensorSpec)


def num_discrete_actions(spec: tf.TensorSpec) -> int:
    """The number of values of a scalar bounded discrete spec.

    Args:
        spec: a ``BoundedTensorSpec`` of an integer dtype, any shape, with
            one ``[minimum, maximum]`` range for all its elements.

    Returns:
        ``maximum - minimum + 1``.

    Raises:
        ValueError: if ``spec`` is not a bounded discrete spec whose bounds
            are the same for every element.
    """
    if not (is_bounded(spec) and is_discrete(spec)):
        raise ValueError("expected a bounded discrete spec, got %s" % (spec, ))
    lo, hi = np.unique(spec.minimum), np.unique(spec.maximum)
    if lo.size != 1 or hi.size != 1:
        raise ValueError("expected the same bounds for every action element, "
                         "got %s" % (spec, ))
    return int(hi[0]) - int(lo[0]) + 1


def spec_from_gym_space(space: Any, name: Optional[str] = None) -> Nest:
    """Converts a gymnasium space into a (nested) spec.

    ``Box`` keeps its dtype and bounds (uint8 images included); ``Discrete``
    becomes a scalar int64 spec in ``[start, start + n - 1]``;
    ``MultiDiscrete`` an int64 spec per element; ``MultiBinary`` int8 in
    ``[0, 1]``; ``Dict`` a dict and ``Tuple`` a tuple of specs.

    Args:
        space: a ``gymnasium.spaces.Space``.
        name: optional name for the spec.

    Returns:
        A ``BoundedTensorSpec`` or a dict/tuple nest of them.

    Raises:
        TypeError: for a space type with no spec (e.g. ``Text``, ``Graph``).
    """
    from gymnasium import spaces  # only needed here; keeps imports light
    if isinstance(space, spaces.Box):
        return BoundedTensorSpec(space.shape, space.dtype, space.low,
                                 space.high, name)
    if isinstance(space, spaces.Discrete):
        start = int(space.start)
        return BoundedTensorSpec((), tf.int64, start, start + int(space.n) - 1,
                                 name)
    if isinstance(space, spaces.MultiDiscrete):
        starts = np.asarray(getattr(space, 'start', 0))
        return BoundedTensorSpec(space.shape, tf.int64, starts,
                                 starts + np.asarray(space.nvec) - 1, name)
    if isinstance(space, spaces.MultiBinary):
        return BoundedTensorSpec(space.shape, tf.int8, 0, 1, name)
    if isinstance(space, spaces.Dict):
        return {
            k: spec_from_gym_space(s, k)
            for k, s in space.spaces.items()
        }
    if isinstance(space, spaces.Tuple):
        return tuple(spec_from_gym_space(s) for s in space.spaces)
    raise TypeError("cannot convert gymnasium space %r into a tensor spec: "
                    "supported are Box, Discrete, MultiDiscrete, MultiBinary, "
                    "Dict and Tuple" % (space, ))


def _full_shape(spec, outer_dims):
    return list(outer_dims) + spec.shape.as_list()


def zeros_from_spec(spec: Nest, outer_dims: OuterDims = ()) -> Nest:
    """Zero tensors for a nested spec.

    Args:
        spec: nest of ``TensorSpec``.
        outer_dims: leading dims to prepend, e.g. ``[B]`` or ``[T, B]``;
            entries may be scalar tensors.

    Returns:
        A nest of tensors shaped ``outer_dims + spec.shape``.
    """

    def _zeros(s):
        shape = tf.concat([
            tf.cast(tf.reshape(outer_dims, [-1]), tf.int32),
            tf.constant(s.shape.as_list(), tf.int32)
        ], 0) if tf.is_tensor(outer_dims) or any(
            tf.is_tensor(d) for d in outer_dims) else _full_shape(
                s, outer_dims)
        return tf.zeros(shape, s.dtype)

    return tf.nest.map_structure(_zeros, spec)


def sample_spec_nest(spec: Nest, outer_dims: Sequence[int] = (),
                     seed: Optional[int] = None) -> Nest:
    """Uniform random tensors within the bounds of a nested spec.

    Unbounded floating specs sample from [-10, 10]; unbounded integer specs
    from [-10, 10] as well.

    Args:
        spec: nest of ``TensorSpec``/``BoundedTensorSpec``.
        outer_dims: leading dims, e.g. ``[B]``.
        seed: optional int seed, for a ``tf.random.Generator``.

    Returns:
        A nest of tensors shaped ``outer_dims + spec.shape``.
    """
    gen = (tf.random.Generator.from_seed(seed)
           if seed is not None else tf.random.get_global_generator())

    def _sample(s):
        shape = _full_shape(s, outer_dims)
        lo = s.minimum if is_bounded(s) else np.full(s.shape, -10)
        hi = s.maximum if is_bounded(s) else np.full(s.shape, 10)
        if s.dtype == tf.bool:
            return gen.uniform(shape, 0, 2, tf.int32) > 0
        if s.dtype.is_integer:
            lo64 = np.maximum(lo.astype(np.float64), -2.0**30)
            hi64 = np.minimum(hi.astype(np.float64), 2.0**30)
            u = gen.uniform(shape, 0.0, 1.0, tf.float64)
            v = tf.floor(lo64 + u * (hi64 - lo64 + 1.0))
            return tf.cast(tf.minimum(v, hi64), s.dtype)
        lo64 = np.maximum(lo.astype(np.float64), -1e6)
        hi64 = np.minimum(hi.astype(np.float64), 1e6)
        u = gen.uniform(shape, 0.0, 1.0, tf.float64)
        return tf.cast(lo64 + u * (hi64 - lo64), s.dtype)

    return tf.nest.map_structure(_sample, spec)


def clip_to_spec(value: Nest, spec: Nest) -> Nest:
    """Clips a nest of tensors to the bounds of a nested spec.

    Args:
        value: nest of [B, ...] tensors.
        spec: matching nest of specs; unbounded specs leave values alone.

    Returns:
        The clipped nest.
    """

    def _clip(v, s):
        if not is_bounded(s):
            return v
        return tf.clip_by_value(v, tf.cast(s.minimum, v.dtype),
                                tf.cast(s.maximum, v.dtype))

    return tf.nest.map_structure(_clip, value, spec)


def cast_and_clip_to_spec(value: Nest, spec: Nest) -> Nest:
    """Casts a nest of actions to the spec dtypes, then clips to the bounds.

    What algorithms apply before handing actions to an environment, which
    rejects actions outside the action spec.

    Args:
        value: nest of [B, ...] tensors.
        spec: matching nest of specs.
    Returns:
        The nest in the spec's dtypes and bounds.
    """
    value = tf.nest.map_structure(lambda v, s: tf.cast(v, s.dtype), value,
                                  spec)
    return clip_to_spec(value, spec)


def add_outer_dims(spec: Nest, outer_dims: Sequence[Optional[int]]) -> Nest:
    """A nest of ``tf.TensorSpec`` with ``outer_dims`` prepended (None ok).

    Used to build input signatures, e.g. ``add_outer_dims(spec, [None])``.

    Args:
        spec: nest of specs of one element.
        outer_dims: leading dims, e.g. ``[None]`` ([B]) or ``[T, None]``.

    Returns:
        Matching nest of ``tf.TensorSpec`` shaped ``outer_dims + shape``
        (bounds dropped).
    """
    return tf.nest.map_structure(
        lambda s: tf.TensorSpec(list(outer_dims) + s.shape.as_list(), s.dtype,
                                s.name), spec)


def time_step_spec(observation_spec: Nest, action_spec: Nest) -> TimeStep:
    """The ``TimeStep`` spec for given observation and action specs.

    Args:
        observation_spec: nest of specs of one observation.
        action_spec: nest of specs of one action (``prev_action``'s spec).

    Returns:
        ``TimeStep`` of specs: scalar int32 ``step_type`` and ``env_id``,
        scalar float32 ``reward`` and ``discount``.
    """
    return TimeStep(step_type=tf.TensorSpec((), tf.int32),
                    reward=tf.TensorSpec((), tf.float32),
                    discount=tf.TensorSpec((), tf.float32),
                    observation=observation_spec,
                    prev_action=action_spec,
                    env_id=tf.TensorSpec((), tf.int32))
