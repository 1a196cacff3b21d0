"""Running normalizers whose statistics live in TF variables (checkpointed).

``update(x)`` folds a batch into the running statistics; ``normalize(x)``
returns ``(x - mean) / sqrt(var + epsilon)``, optionally clipped. Both work
eagerly and inside ``tf.function``/``tf.while_loop``. The statistics are
``tf.Variable``s created in the constructor from a (nested) spec, so a
``tf.train.Checkpoint`` of the normalizer restores them and a checkpoint of
a different spec fails to restore with a shape error.
"""

from typing import Optional

import gin
import tensorflow as tf

from alf_rl.data_structures import StepType
from alf_rl.utils.nest import Nest, check_nest_matches_spec


class _Normalizer(tf.Module):
    """Shared machinery: per-leaf mean/variance variables and normalize().

    ``uses_step_type`` (a class attribute) declares whether ``update``
    takes the [B] or [T, B] step types (``update(x, step_type=...)``):
    ``RLAlgorithm`` passes them only to normalizers that declare it.

    Args:
        tensor_spec: nest of ``tf.TensorSpec`` of one element (no batch).
        clip_value: if > 0, clip normalized values to [-clip, clip].
        epsilon: added to the variance before the square root.
    """

    uses_step_type = False

    def __init__(self, tensor_spec: Nest, clip_value: float = 0.0,
                 epsilon: float = 1e-8, name: str = 'Normalizer'):
        super().__init__(name=name)
        self._spec = tensor_spec
        self._clip_value = float(clip_value)
        self._epsilon = float(epsilon)
        with self.name_scope:
            self._means = [
                tf.Variable(tf.zeros(s.shape, tf.float32), trainable=False,
                            name='mean%d' % i)
                for i, s in enumerate(tf.nest.flatten(tensor_spec))
            ]
            self._vars = [
                tf.Variable(tf.ones(s.shape, tf.float32), trainable=False,
                            name='var%d' % i)
                for i, s in enumerate(tf.nest.flatten(tensor_spec))
            ]

    def _flat(self, nest, outer_rank):
        check_nest_matches_spec(nest, self._spec, 'normalizer input',
                                outer_rank=outer_rank, check_dtype=False)
        return [tf.cast(x, tf.float32) for x in tf.nest.flatten(nest)]

    @property
    def mean(self) -> Nest:
        """Nest of the running means (shaped like the spec)."""
        return tf.nest.pack_sequence_as(self._spec,
                                        [m.read_value() for m in self._means])

    @property
    def variance(self) -> Nest:
        """Nest of the running variances (shaped like the spec)."""
        return tf.nest.pack_sequence_as(self._spec,
                                        [v.read_value() for v in self._vars])

    def normalize(self, nest: Nest, outer_rank: int = 1) -> Nest:
        """Normalizes a nest with the current statistics (no update).

        Args:
            nest: nest of tensors with ``outer_rank`` leading dims
                ([B, ...] or [T, B, ...]) matching the spec.
            outer_rank: number of leading dims.
        Returns:
            float32 nest, same structure and shapes.
        """
        flat = []
        for x, m, v in zip(self._flat(nest, outer_rank), self._means,
                           self._vars):
            flat.append(self._clip((x - m) / tf.sqrt(v + self._epsilon)))
        return tf.nest.pack_sequence_as(self._spec, flat)

    def _clip(self, y):
        """``y`` clipped to [-clip_value, clip_value] when clip_value > 0."""
        if self._clip_value > 0:
            return tf.clip_by_value(y, -self._clip_value, self._clip_value)
        return y


def update_reward_normalizer(normalizer: '_Normalizer', reward: tf.Tensor,
                             step_type: tf.Tensor) -> None:
    """Folds rewards into a reward normalizer, passing the step types to
    one that uses them (``uses_step_type``, e.g. ``ReturnScaleNormalizer``).

    Args:
        normalizer: a normalizer of scalar rewards.
        reward: [B] (or [T, B]) float32 rewards.
        step_type: int32 step types shaped like ``reward``.
    """
    if normalizer.uses_step_type:
        normalizer.update(reward, step_type=step_type)
    else:
        normalizer.update(reward)


@gin.configurable
class StreamingMeanVarNormalizer(_Normalizer):
    """Exact running mean/variance over every element seen (Chan et al.).

    Args:
        tensor_spec: nest of ``tf.TensorSpec`` of one element.
        clip_value: clip normalized values to [-clip, clip] if > 0.
        epsilon: variance floor.
    """

    def __init__(self, tensor_spec: Nest, clip_value: float = 0.0,
                 epsilon: float = 1e-8,
                 name: str = 'StreamingMeanVarNormalizer'):
        super().__init__(tensor_spec, clip_value, epsilon, name)
        with self.name_scope:
            self._count = tf.Variable(0.0, dtype=tf.float64, trainable=False,
                                      name='count')

    @property
    def count(self) -> tf.Tensor:
        """[] float64 number of elements folded in."""
        return self._count.read_value()

    def update(self, nest: Nest, outer_rank: int = 1,
               weights: Optional[tf.Tensor] = None) -> None:
        """Folds a batch into the statistics (parallel-variance update).

        Args:
            nest: nest of tensors with ``outer_rank`` leading dims.
            outer_rank: number of leading dims reduced over.
            weights: optional float 0/1 mask shaped like the leading dims;
                only elements with weight 1 are folded in (a batch of all
                zeros leaves the statistics unchanged).
        """
        flat = self._flat(nest, outer_rank)
        axes = list(range(outer_rank))
        if weights is None:
            n_b = tf.cast(tf.reduce_prod(tf.shape(flat[0])[:outer_rank]),
                          tf.float64)
        else:
            weights = tf.cast(weights, tf.float32)
            n_b = tf.cast(tf.reduce_sum(weights), tf.float64)
        n_a = self._count.read_value()
        total = n_a + n_b
        w_b = tf.cast(n_b / tf.maximum(total, 1.0), tf.float32)
        w_a = tf.cast(n_a / tf.maximum(total, 1.0), tf.float32)
        for x, m, v in zip(flat, self._means, self._vars):
            if weights is None:
                mean_b, var_b = tf.nn.moments(x, axes)
            else:
                w = tf.reshape(weights, weights.shape.as_list() + [1] *
                               (x.shape.rank - outer_rank))
                n = tf.maximum(tf.cast(n_b, tf.float32), 1.0)
                mean_b = tf.reduce_sum(w * x, axes) / n
                var_b = tf.reduce_sum(w * tf.square(x - mean_b), axes) / n
            delta = mean_b - m
            new_mean = m + delta * w_b
            # M2 / total: (var_a n_a + var_b n_b + delta^2 n_a n_b / total)
            new_var = var_b * w_b + v * w_a + tf.square(delta) * w_a * w_b
            m.assign(new_mean)
            v.assign(new_var)
        self._count.assign(total)


@gin.configurable
class EMAMeanVarNormalizer(_Normalizer):
    """Exponential-moving mean/variance (recent data weigh more).

    mean <- mean + r (batch_mean - mean);
    var <- (1 - r) (var + r (batch_mean - mean)^2) + r batch_var.

    Args:
        tensor_spec: nest of ``tf.TensorSpec`` of one element.
        update_rate: r in (0, 1].
        clip_value: clip normalized values to [-clip, clip] if > 0.
        epsilon: variance floor.
    """

    def __init__(self, tensor_spec: Nest, update_rate: float = 1e-3,
                 clip_value: float = 0.0, epsilon: float = 1e-8,
                 name: str = 'EMAMeanVarNormalizer'):
        if not 0.0 < update_rate <= 1.0:
            raise ValueError("update_rate must be in (0, 1], got %s" %
                             update_rate)
        super().__init__(tensor_spec, clip_value, epsilon, name)
        self._rate = float(update_rate)
        with self.name_scope:
            self._initialized = tf.Variable(False, trainable=False,
                                            name='initialized')

    def update(self, nest: Nest, outer_rank: int = 1) -> None:
        """Moves the statistics towards those of a batch.

        The first batch sets them directly (no bias towards the zero/one
        initial values).

        Args:
            nest: nest of tensors with ``outer_rank`` leading dims
                ([B, ...] or [T, B, ...]) matching the spec.
            outer_rank: number of leading dims reduced over.
        """
        rate = tf.where(self._initialized, self._rate, 1.0)
        for x, m, v in zip(self._flat(nest, outer_rank), self._means,
                           self._vars):
            mean_b, var_b = tf.nn.moments(x, list(range(outer_rank)))
            delta = mean_b - m
            m.assign(m + rate * delta)
            v.assign((1.0 - rate) * (v + rate * tf.square(delta)) +
                     rate * var_b)
        self._initialized.assign(True)


@gin.configurable
class AdaptiveScalarNormalizer(EMAMeanVarNormalizer):
    """EMA normalizer of a scalar per step (e.g. rewards, [B] or [T, B]).

    With ``center_mean`` it returns ``(x - mean) / std``. Without (the
    default, which keeps the sign of rewards) it only scales, by the root
    mean square ``sqrt(mean^2 + var)``: dividing an uncentred value by its
    std would blow up a reward whose mean is large next to its spread
    (r = 1 + N(0, 0.05) would become ~20, clipped to the same value for
    every step, so that better and worse steps earn alike).

    Args:
        update_rate: EMA rate.
        clip_value: clip normalized values to [-clip, clip] if > 0.
        center_mean: subtract the mean and divide by the std (False: divide
            by the root mean square).
    """

    def __init__(self, update_rate: float = 1e-3, clip_value: float = 0.0,
                 center_mean: bool = False,
                 name: str = 'AdaptiveScalarNormalizer'):
        super().__init__(tf.TensorSpec((), tf.float32), update_rate,
                         clip_value, name=name)
        self._center_mean = center_mean

    def normalize(self, x: tf.Tensor,
                  outer_rank: Optional[int] = None) -> tf.Tensor:
        """Normalizes [B] or [T, B] scalars (any outer rank).

        Args:
            x: [B] or [T, B] (any shape) rewards or other scalars.
            outer_rank: unused: every dim of ``x`` is an outer dim.

        Returns:
            float32 tensor shaped like ``x``.
        """
        x = tf.cast(x, tf.float32)
        mean, var = self._means[0], self._vars[0]
        if self._center_mean:
            return self._clip((x - mean) / tf.sqrt(var + self._epsilon))
        return self._clip(x / tf.sqrt(var + tf.square(mean) + self._epsilon))

    def update(self, x: tf.Tensor, outer_rank: Optional[int] = None) -> None:
        """Folds [B] or [T, B] scalars into the statistics.

        Args:
            x: [B] or [T, B] (any shape) scalars, all folded in.
            outer_rank: unused: every dim of ``x`` is an outer dim.
        """
        x = tf.cast(x, tf.float32)
        super().update(x, outer_rank=x.shape.rank)


@gin.configurable
class ReturnScaleNormalizer(StreamingMeanVarNormalizer):
    """Scales rewards by the std of the discounted return (SB3 VecNormalize).

    Per environment it keeps the discounted return ``G <- gamma G + r``
    (restarted at each episode's FIRST step, whose reward belongs to no
    transition) and folds the [B] returns of every rollout step into an
    exact running variance; ``normalize(r) = r / sqrt(var(G) + epsilon)``,
    clipped to ``[-clip_value, clip_value]``, not centred. With a large
    gamma this keeps value targets near unit scale, where a per-step
    reward scale (``AdaptiveScalarNormalizer``) leaves them ~1 / (1 - gamma)
    times larger. ``RLAlgorithm`` passes it the step types
    (``uses_step_type``).

    Args:
        gamma: discount of the tracked return (the algorithm's gamma).
        clip_value: clip normalized rewards to [-clip, clip] if > 0.
        epsilon: variance floor.
    """

    uses_step_type = True

    def __init__(self, gamma: float = 0.99, clip_value: float = 10.0,
                 epsilon: float = 1e-8, name: str = 'ReturnScaleNormalizer'):
        if not 0.0 <= gamma <= 1.0:
            raise ValueError("ReturnScaleNormalizer: gamma must be in [0, 1],"
                             " got %r" % (gamma, ))
        super().__init__(tf.TensorSpec((), tf.float32), clip_value, epsilon,
                         name)
        self._gamma = float(gamma)
        with self.name_scope:
            # [B] running returns; B is set by the first update (when it is
            # static, eagerly while the update is traced: see _size_returns).
            self._returns = tf.Variable(tf.zeros([0]), trainable=False,
                                        shape=tf.TensorShape([None]),
                                        name='returns')

    @property
    def returns(self) -> tf.Tensor:
        """[B] float32 discounted returns of the current episodes."""
        return self._returns.read_value()

    def normalize(self, x: tf.Tensor,
                  outer_rank: Optional[int] = None) -> tf.Tensor:
        """Scales [B] or [T, B] rewards (any outer rank); no update.

        Args:
            x: [B] or [T, B] (any shape) rewards.
            outer_rank: unused: every dim of ``x`` is an outer dim.

        Returns:
            float32 tensor shaped like ``x``.
        """
        return self._clip(
            tf.cast(x, tf.float32) / tf.sqrt(self._vars[0] + self._epsilon))

    def _size_returns(self, batch_size: Optional[int]) -> None:
        """With a static B: resizes the returns to [B] zeros now, eagerly
        (``tf.init_scope``, also while a ``tf.function`` is traced), unless
        they already have B entries. XLA cannot change a variable's shape
        inside a compiled loop, so the graph must find it sized."""
        if batch_size is None:
            return
        with tf.init_scope():
            if (tf.executing_eagerly() and
                    int(tf.shape(self._returns)[0]) != batch_size):
                self._returns.assign(tf.zeros([batch_size]))

    def update(self, x: tf.Tensor, outer_rank: Optional[int] = None,
               step_type: Optional[tf.Tensor] = None) -> None:
        """Advances the [B] returns by one step and folds them in.

        Args:
            x: [B] rewards of one step of B environments.
            outer_rank: unused (one step: [B]).
            step_type: [B] step types; FIRST restarts an environment's
                return and is not folded in. None: every step continues.
        """
        x = tf.cast(x, tf.float32)
        if x.shape.rank != 1:
            raise ValueError("ReturnScaleNormalizer.update takes the [B] "
                             "rewards of one step, got shape %s" % x.shape)
        self._size_returns(x.shape[0])
        # The first update sizes the [B] returns (zeros). A tf.cond on the
        # size would do, but grappler folds it with the variable's initial
        # [0] shape (measured: "Incompatible shapes: [0] vs. [3]").
        previous = tf.concat([self._returns.read_value(), tf.zeros_like(x)],
                             0)[:tf.shape(x)[0]]
        returns = self._gamma * previous + x
        weights = None
        if step_type is not None:
            first = tf.equal(step_type, StepType.FIRST)
            returns = tf.where(first, tf.zeros_like(returns), returns)
            weights = 1.0 - tf.cast(first, tf.float32)
        self._returns.assign(returns)
        super().update(returns, outer_rank=1, weights=weights)
