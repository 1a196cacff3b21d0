"""Projection networks: a feature [B, D] -> one action leaf's distribution.

Each is a ``tf.Module`` built from ``(input_size, action_spec)`` and called on
features with any outer dims ([B, D] or [T, B, D]); it returns a distribution
whose batch shape is those outer dims (action dims are folded into the event
with ``Independent``), so ``log_prob``/``entropy`` are [B] per leaf.
"""

from typing import List, Optional

import gin
import numpy as np
import tensorflow as tf
import tf_keras
from tensorflow_probability import bijectors as tfb
from tensorflow_probability import distributions as tfd

from alf_rl import specs as alf_specs
from alf_rl.networks.network import build_layer
from alf_rl.ops.distributions import StableTanh


# Logit added to values outside an element's range when the elements of a
# vector (MultiDiscrete) spec have different numbers of values. Finite, so
# that entropy/KL stay finite (0 * log 0 is computed as 0 * -1e9 = 0).
_MASKED_LOGIT = -1e9


def _reshape_last(x: tf.Tensor, shape: List[int]) -> tf.Tensor:
    """[..., prod(shape)] -> [..., *shape]."""
    return tf.reshape(x, tf.concat([tf.shape(x)[:-1], shape], 0))


class ProjectionNetwork(tf.Module):
    """Base of the projections: ``proj(inputs [B, D] (or [T, B, D]) float32)
    -> distribution`` of one action leaf, batch shape [B] (or [T, B]).

    Args:
        action_spec: the spec of the action leaf.
        name: module name.
    """

    def __init__(self, action_spec: tf.TensorSpec, name: str):
        super().__init__(name=name)
        self._action_spec = action_spec

    @property
    def action_spec(self) -> tf.TensorSpec:
        """The action spec this projection was built for."""
        return self._action_spec


@gin.configurable
class CategoricalProjectionNetwork(ProjectionNetwork):
    """Projects features to a categorical over a bounded integer action.

    A scalar spec gives ``Categorical``; a vector spec (e.g. MultiDiscrete)
    gives ``Independent(Categorical)`` over its elements, elements with fewer
    values than the largest are masked. Values are ``[minimum, maximum]``:
    when some minimum is not 0 the categorical is shifted with
    ``TransformedDistribution(..., tfb.Shift(minimum))``. Samples and modes
    have the spec's dtype when it is int32 or int64; TFP's categorical
    supports no other integer dtype, so for e.g. int8 (MultiBinary) they are
    int64: cast them with ``ops.distributions.cast_to_spec`` before stepping
    the environment (``log_prob`` accepts either dtype).

    The logits layer is orthogonally initialized with gain
    ``init_output_scale`` (default 0.01) so the initial policy is nearly
    uniform, a stable start for policy gradients.

    Args:
        input_size: D, size of the input features.
        action_spec: ``BoundedTensorSpec`` with an integer dtype.
        init_output_scale: gain of the logits layer's initializer.
        name: module name.

    Raises:
        ValueError: the spec is not bounded integer.
    """

    def __init__(self, input_size: int,
                 action_spec: alf_specs.BoundedTensorSpec,
                 init_output_scale: float = 0.01,
                 name: str = 'CategoricalProjectionNetwork'):
        super().__init__(action_spec, name)
        if not (alf_specs.is_bounded(action_spec)
                and action_spec.dtype.is_integer):
            raise ValueError(
                "%s: expected a BoundedTensorSpec with an integer dtype for "
                "a categorical action, got %s" % (name, action_spec))
        self._shape = action_spec.shape.as_list()
        minimum = action_spec.minimum.astype(np.int64)
        counts = action_spec.maximum.astype(np.int64) - minimum + 1
        self._num_values = int(np.max(counts)) if counts.size else 1
        n = int(np.prod(self._shape))
        if np.all(counts == self._num_values):
            self._mask = None
        else:
            valid = np.arange(self._num_values) < counts[..., None]
            self._mask = tf.constant(
                np.where(valid, 0., _MASKED_LOGIT).astype(np.float32))
        self._dtype = (action_spec.dtype if action_spec.dtype in (tf.int32,
                                                                  tf.int64)
                       else tf.int64)
        self._shift = (None if np.all(minimum == 0) else
                       minimum.astype(self._dtype.as_numpy_dtype))
        with self.name_scope:
            self._logits_layer = tf_keras.layers.Dense(
                n * self._num_values,
                kernel_initializer=tf_keras.initializers.Orthogonal(
                    gain=init_output_scale),
                name='logits')
            build_layer(self._logits_layer, (None, input_size))

    def __call__(self, inputs: tf.Tensor) -> tfd.Distribution:
        """The action distribution.

        Args:
            inputs: [B, D] (or [T, B, D]) float32 features.

        Returns:
            A distribution with batch shape [B] and event shape the spec's
            shape; logits are [B, *shape, num_values].
        """
        logits = _reshape_last(self._logits_layer(inputs),
                               self._shape + [self._num_values])
        if self._mask is not None:
            logits = logits + self._mask
        dist = tfd.Categorical(logits=logits, dtype=self._dtype)
        if self._shape:
            dist = tfd.Independent(dist, len(self._shape))
        if self._shift is not None:
            dist = tfd.TransformedDistribution(dist, tfb.Shift(self._shift))
        return dist


def _std_transforms(std_transform: str):
    if std_transform == 'softplus':
        return tf.nn.softplus, lambda y: np.log(np.expm1(y))
    if std_transform == 'exp':
        return tf.exp, np.log
    raise ValueError("std_transform must be 'softplus' or 'exp', got %r" %
                     (std_transform, ))


@gin.configurable
class NormalProjectionNetwork(ProjectionNetwork):
    """Projects features to a (possibly tanh-squashed) normal distribution.

    With ``scale_distribution=False`` the result is
    ``Independent(Normal(mean, std))`` where, for a bounded spec and
    ``mean_transform='tanh'``, ``mean = mid + half_range * tanh(x)`` lies in
    the bounds. Samples of this distribution can leave the bounds: clip them
    before stepping the environment (``specs.clip_to_spec``) and keep the
    unclipped action for ``log_prob``.

    With ``scale_distribution=True`` (for SAC) the result is the tanh-squashed
    normal ``TransformedDistribution(Independent(Normal(x, std)),
    Chain([Shift(mid), Scale(half_range), StableTanh()]))``: samples always lie
    within the bounds, and ``mode`` is ``mid + half_range * tanh(x)``.

    Std parameterization: ``std = clip(transform(p), min_std, max_std)`` with
    ``transform`` softplus (default) or exp; ``p`` is a variable of shape
    [action size] initialized so that ``std == init_std`` (state-independent,
    the default, as in PPO), or the output of a dense layer whose bias is
    initialized that way (``state_dependent_std=True``, as in SAC).

    Initialization: the mean (and state-dependent std) layers are
    orthogonally initialized with gain ``init_output_scale`` (default 0.01),
    so the initial mean is near the middle of the bounds.

    Args:
        input_size: D, size of the input features.
        action_spec: ``TensorSpec``/``BoundedTensorSpec`` with a float dtype.
        state_dependent_std: compute std from the input.
        scale_distribution: return the tanh-squashed normal; requires finite
            bounds.
        mean_transform: ``'tanh'`` to squash the mean into finite bounds
            (ignored for unbounded specs and with ``scale_distribution``), or
            ``None`` for the identity.
        init_std: initial standard deviation.
        std_transform: ``'softplus'`` or ``'exp'``.
        min_std: lower clip of std.
        max_std: optional upper clip of std.
        init_output_scale: gain of the output layers' initializer.
        name: module name.

    Raises:
        ValueError: non-float spec, ``scale_distribution`` without finite
            bounds, bad ``mean_transform``/``std_transform``/std bounds.
    """

    def __init__(self,
                 input_size: int,
                 action_spec: tf.TensorSpec,
                 state_dependent_std: bool = False,
                 scale_distribution: bool = False,
                 mean_transform: Optional[str] = 'tanh',
                 init_std: float = 1.0,
                 std_transform: str = 'softplus',
                 min_std: float = 1e-4,
                 max_std: Optional[float] = None,
                 init_output_scale: float = 0.01,
                 name: str = 'NormalProjectionNetwork'):
        super().__init__(action_spec, name)
        if not action_spec.dtype.is_floating:
            raise ValueError(
                "%s: expected a floating action spec for a normal "
                "distribution, got %s" % (name, action_spec))
        if mean_transform not in ('tanh', None):
            raise ValueError("%s: mean_transform must be 'tanh' or None, got "
                             "%r" % (name, mean_transform))
        if not 0 < min_std <= init_std or (max_std is not None
                                           and init_std > max_std):
            raise ValueError(
                "%s: need 0 < min_std <= init_std <= max_std, got min_std=%s"
                " init_std=%s max_std=%s" % (name, min_std, init_std,
                                             max_std))
        self._shape = action_spec.shape.as_list()
        bounded = (alf_specs.is_bounded(action_spec)
                   and np.all(np.isfinite(action_spec.minimum))
                   and np.all(np.isfinite(action_spec.maximum)))
        if scale_distribution and not bounded:
            raise ValueError(
                "%s: scale_distribution=True needs finite bounds, got %s" %
                (name, action_spec))
        dtype = action_spec.dtype.as_numpy_dtype
        if bounded:
            lo = action_spec.minimum.astype(np.float64)
            hi = action_spec.maximum.astype(np.float64)
            self._mid = ((hi + lo) / 2).astype(dtype)
            self._half_range = ((hi - lo) / 2).astype(dtype)
        self._squash_mean = (bounded and mean_transform == 'tanh'
                             and not scale_distribution)
        self._scale_distribution = scale_distribution
        self._std_fn, inverse = _std_transforms(std_transform)
        self._min_std, self._max_std = min_std, max_std
        n = int(np.prod(self._shape))
        init_p = float(inverse(init_std))
        with self.name_scope:
            self._mean_layer = tf_keras.layers.Dense(
                n, kernel_initializer=tf_keras.initializers.Orthogonal(
                    gain=init_output_scale), name='mean')
            build_layer(self._mean_layer, (None, input_size))
            if state_dependent_std:
                self._std_layer = tf_keras.layers.Dense(
                    n, kernel_initializer=tf_keras.initializers.Orthogonal(
                        gain=init_output_scale),
                    bias_initializer=tf_keras.initializers.Constant(init_p),
                    name='std')
                build_layer(self._std_layer, (None, input_size))
            else:
                self._std_layer = None
                self._std_param = tf.Variable(tf.fill([n], init_p),
                                              name='std_param')

    def __call__(self, inputs: tf.Tensor) -> tfd.Distribution:
        """The action distribution.

        Args:
            inputs: [B, D] (or [T, B, D]) float32 features.

        Returns:
            A distribution with batch shape [B] and event shape the spec's
            shape (parameters ``loc``/``scale`` are [B, *shape]).
        """
        x = _reshape_last(self._mean_layer(inputs), self._shape)
        if self._std_layer is not None:
            p = _reshape_last(self._std_layer(inputs), self._shape)
        else:
            # Broadcast so the parameters carry the outer dims (needed to
            # store them in TensorArrays / replay and rebuild them).
            p = tf.reshape(self._std_param, self._shape) + tf.zeros_like(x)
        std = tf.maximum(self._std_fn(p), self._min_std)
        if self._max_std is not None:
            std = tf.minimum(std, self._max_std)
        if self._squash_mean:
            x = self._mid + self._half_range * tf.tanh(x)
        dist = tfd.Normal(loc=x, scale=std)
        if self._shape:
            dist = tfd.Independent(dist, len(self._shape))
        if self._scale_distribution:
            dist = tfd.TransformedDistribution(
                dist,
                tfb.Chain([
                    tfb.Shift(self._mid),
                    tfb.Scale(self._half_range),
                    StableTanh()
                ]))
        return dist
