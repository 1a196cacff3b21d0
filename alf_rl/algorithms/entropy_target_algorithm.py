"""Entropy target: adapt the entropy-bonus weight so that the policy's
entropy tracks a target (ALF's ``EntropyTargetAlgorithm``, reimplemented).

A fixed entropy bonus ``alpha * H`` either barely matters or keeps the policy
near uniform, and the right ``alpha`` differs per task and changes during
training. Here ``alpha = exp(log_alpha)`` is a non-trainable variable moved by
a small staged controller, once per gradient update of the owning algorithm
(in ``after_train``, after the gradients were applied; ``calc_loss`` already
uses the alpha of that step and changes no state), on the batch-mean entropy
``H`` of the policy:

1. *estimate* (only when ``max_entropy`` is None): the first call sets
   ``max_entropy = target + 0.8 * (H_0 - target)`` (or ``target`` when
   ``H_0 <= target``).
2. *init*: while ``H > max_entropy``, ``log_alpha -= slow_update_rate`` (so
   a too large ``initial_alpha`` cannot pin the policy at its initial
   entropy).
3. *free*: ``alpha`` is left alone until ``H`` first drops below the target.
4. *adjust*: ``log_alpha += rate * (0.75 trend + 0.25 level)`` with
   ``trend = sign(H_prev - H)`` (the previous call's entropy) and
   ``level = sign(target - H)``. So alpha rises while the entropy falls and
   sinks while it rises, whichever side of the target it is on, by a full
   step on the wrong side and half a step on the right side (ALF's rule:
   the entropy reacts to alpha with a lag, and a rule on the level alone
   overshoots by orders of magnitude); a constant entropy moves alpha by a
   quarter step towards the target. ``rate`` starts at
   ``fast_update_rate``, is multiplied by 0.9 at every crossing of the
   target (floored at ``slow_update_rate``) and is reset to
   ``fast_update_rate`` when the entropy collapses below a threshold (half
   the target for a positive target, twice the target minus 0.1 nat
   otherwise).

``log_alpha`` never goes below ``log(min_alpha)``. The loss returned to the
owner is ``-stop_gradient(alpha) * H(pi(.|s_t))`` per step: adding it to an
actor loss gives the entropy bonus, and no gradient reaches ``log_alpha``.

Deviations from ALF: the max entropy is estimated from the first batch only
(ALF averaged the first few batches); the entropy is the batch mean of each
update, not a window average; a constant entropy still moves alpha (ALF's
step was zero without a trend).
"""

from typing import Optional

import gin
import numpy as np
import tensorflow as tf

from alf_rl import specs as alf_specs
from alf_rl.algorithms.algorithm import Algorithm
from alf_rl.data_structures import LossInfo, TrainingInfo, namedtuple
from alf_rl.ops import distributions as dist_ops
from alf_rl.ops.masks import masked_mean
from alf_rl.utils.common import make_stateless_seed, valid_step_mask
from alf_rl.utils.gradient_application import replica_context

from alf_rl.utils.nest import Nest

EntropyTargetLossInfo = namedtuple(
    'EntropyTargetLossInfo',
    [
        'neg_entropy',  # [T, B] float32 -H(pi(.|s_t)), gradient stopped
        'alpha',  # [] float32 exp(log_alpha) used in the loss
        'stage',  # [] float32 controller stage (debug_summaries only)
        'update_rate',  # [] float32 current adjust rate (debug only)
    ],
    default_value=())

# The controller's state: its five variables, or their next values.
_ControllerState = namedtuple(
    '_ControllerState',
    [
        'log_alpha',  # [] float32
        'stage',  # [] int32, one of the *_STAGE constants
        'max_entropy',  # [] float32
        'update_rate',  # [] float32 current adjust rate
        'prev_entropy',  # [] float32 the previous update's mean entropy
    ])

# Controller stages (values of the ``stage`` variable).
ESTIMATE_STAGE = -2
INIT_STAGE = -1
FREE_STAGE = 0
ADJUST_STAGE = 1

_MIN_PROB = 0.01
_RATE_DECAY = 0.9
_MAX_ENTROPY_FRACTION = 0.8
_TREND_WEIGHT = 0.75


def default_target_entropy(action_spec: Nest) -> float:
    """ALF's default entropy target for an action spec (a sum over leaves).

    * Bounded continuous element with range ``M - m``: ``log(0.01 (M - m))``,
      the entropy of a uniform density on 1% of the range.
    * Unbounded continuous element: -1 (Haarnoja et al. 2018's ``-dim``).
    * Discrete element with n values: ``0.01 (log(n - 1) - log 0.01)``, the
      entropy of a policy that puts 0.99 on one action and spreads 0.01
      over the others, without the small ``-0.99 log 0.99`` term (0.046 nat
      for n = 2, i.e. 0.066 log 2; the same default as ``SacAlgorithm``'s).

    Args:
        action_spec: nest of ``TensorSpec``/``BoundedTensorSpec``.
    Returns:
        float.
    Raises:
        ValueError: a discrete spec without bounds.
    """
    total = 0.0
    for spec in tf.nest.flatten(action_spec):
        shape = spec.shape.as_list()
        if alf_specs.is_discrete(spec):
            if not alf_specs.is_bounded(spec):
                raise ValueError(
                    "default_target_entropy: a discrete action spec needs "
                    "bounds to count its values, got %s" % (spec, ))
            lo = np.broadcast_to(spec.minimum, shape).astype(np.float64)
            hi = np.broadcast_to(spec.maximum, shape).astype(np.float64)
            n = hi - lo + 1
            total += float(
                np.sum(_MIN_PROB *
                       (np.log(np.maximum(n - 1, 1)) - np.log(_MIN_PROB))))
        else:
            size = int(np.prod(shape))
            if alf_specs.is_bounded(spec):
                lo = np.broadcast_to(spec.minimum, shape).astype(np.float64)
                hi = np.broadcast_to(spec.maximum, shape).astype(np.float64)
                finite = np.isfinite(lo) & np.isfinite(hi)
                width = np.where(finite, hi - lo, 1.0)
                total += float(
                    np.sum(np.where(finite, np.log(_MIN_PROB * width), -1.0)))
            else:
                total -= float(size)
    return total


def _check_arguments(name: str, initial_alpha: float, min_alpha: float,
                     slow_update_rate: float, fast_update_rate: float,
                     target_entropy: float,
                     max_entropy: Optional[float]) -> None:
    """ValueError for the bad combinations ``EntropyTargetAlgorithm``
    refuses (see its docstring)."""
    if not initial_alpha > 0:
        raise ValueError("%s: initial_alpha must be > 0, got %s" %
                         (name, initial_alpha))
    if not min_alpha > 0:
        raise ValueError("%s: min_alpha must be > 0, got %s" %
                         (name, min_alpha))
    if not 0 < slow_update_rate <= fast_update_rate:
        raise ValueError(
            "%s: need 0 < slow_update_rate <= fast_update_rate, got "
            "slow=%s fast=%s" % (name, slow_update_rate, fast_update_rate))
    if max_entropy is not None and max_entropy < target_entropy:
        raise ValueError(
            "%s: max_entropy (%s) must be >= target_entropy (%s)" %
            (name, max_entropy, target_entropy))


def _has_analytic_entropy(nest_of_distributions: Nest) -> bool:
    """Whether every distribution has a closed-form entropy (no sample)."""
    try:
        for d in tf.nest.flatten(nest_of_distributions):
            d.entropy()
    except NotImplementedError:
        return False
    return True


@gin.configurable
class EntropyTargetAlgorithm(Algorithm):
    """Adaptive entropy bonus ``-alpha H`` with ``H`` steered to a target.

    See the module docstring for the controller. Used as a sub-algorithm:
    ``ActorCriticAlgorithm(entropy_target_ctor=...)`` (and so PPO) adds
    ``calc_loss(...)``'s loss to its actor loss and calls ``after_train``
    after its update; ``SacAlgorithm(entropy_target_ctor=...)`` uses
    ``alpha`` as its temperature and calls ``adjust_alpha`` with its entropy
    estimates in its ``after_train``. All state (``log_alpha``, stage, rate,
    max entropy, previous entropy) lives in non-trainable variables:
    checkpointed with the owner, untouched by optimizers.

    Args:
        action_spec: nest of action specs (for the default target).
        initial_alpha: initial ``alpha`` (> 0).
        target_entropy: the entropy (nats, summed over the action nest) to
            track; None uses ``default_target_entropy(action_spec)``.
        slow_update_rate: ``log_alpha`` step of the init stage and floor of
            the adjust rate (> 0).
        fast_update_rate: initial adjust rate (>= ``slow_update_rate``);
            ``log(2)`` doubles/halves ``alpha`` per update.
        min_alpha: lower bound of ``alpha`` (> 0).
        max_entropy: entropy above which the init stage lowers ``alpha``;
            None estimates it from the first batch (module docstring).
        debug_summaries: also report the stage and the adjust rate in
            ``LossInfo.extra``.
        name: module name.

    Raises:
        ValueError: non-positive alphas or rates, ``fast < slow``,
            ``max_entropy`` below the target.
    """

    def __init__(self,
                 action_spec: Nest,
                 initial_alpha: float = 0.1,
                 target_entropy: Optional[float] = None,
                 slow_update_rate: float = 0.01,
                 fast_update_rate: float = float(np.log(2)),
                 min_alpha: float = 1e-4,
                 max_entropy: Optional[float] = None,
                 debug_summaries: bool = False,
                 name: str = 'EntropyTargetAlgorithm'):
        super().__init__(name=name)
        if target_entropy is None:
            target_entropy = default_target_entropy(action_spec)
        target_entropy = float(target_entropy)
        _check_arguments(name, initial_alpha, min_alpha, slow_update_rate,
                         fast_update_rate, target_entropy, max_entropy)
        self._action_spec = action_spec
        self._target_entropy = target_entropy
        self._slow_update_rate = float(slow_update_rate)
        self._fast_update_rate = float(fast_update_rate)
        self._log_min_alpha = float(np.log(min_alpha))
        if target_entropy > 0:
            self._fast_stage_threshold = target_entropy / 2
        else:
            self._fast_stage_threshold = 2 * target_entropy - 0.1
        self._debug_summaries = debug_summaries

        def _variable(value, dtype, var_name):
            return tf.Variable(value, trainable=False, dtype=dtype,
                               name=var_name)

        self._log_alpha = _variable(float(np.log(initial_alpha)),
                                    tf.float32, 'log_alpha')
        self._stage = _variable(
            ESTIMATE_STAGE if max_entropy is None else INIT_STAGE, tf.int32,
            'stage')
        self._max_entropy = _variable(
            target_entropy if max_entropy is None else float(max_entropy),
            tf.float32, 'max_entropy')
        self._update_rate = _variable(self._fast_update_rate, tf.float32,
                                      'update_rate')
        self._prev_entropy = _variable(0.0, tf.float32, 'prev_entropy')

    # ------------------------------------------------------------ properties
    @property
    def target_entropy(self) -> float:
        """float: the entropy the controller steers towards."""
        return self._target_entropy

    @property
    def log_alpha(self) -> tf.Variable:
        """tf.Variable [] float32 (non-trainable): log of the weight."""
        return self._log_alpha

    @property
    def alpha(self) -> tf.Tensor:
        """[] float32 ``exp(log_alpha)``, gradient stopped."""
        return tf.stop_gradient(tf.exp(self._log_alpha))

    @property
    def stage(self) -> tf.Variable:
        """tf.Variable [] int32: the controller stage (module constants)."""
        return self._stage

    # ------------------------------------------------------------ control
    def _next_state(self, h: tf.Tensor) -> _ControllerState:
        """The controller's next state after a batch of mean entropy ``h``
        (reads the variables, assigns nothing).

        Args:
            h: [] float32 masked-mean entropy of the batch.
        Returns:
            ``_ControllerState`` of [] tensors.
        """
        target = self._target_entropy
        stage = tf.convert_to_tensor(self._stage)
        was_adjusting = tf.equal(stage, ADJUST_STAGE)

        # estimate -> init
        estimating = tf.equal(stage, ESTIMATE_STAGE)
        estimated = target + _MAX_ENTROPY_FRACTION * tf.maximum(h - target, 0.)
        max_entropy = tf.where(estimating, estimated, self._max_entropy)
        stage = tf.where(estimating, INIT_STAGE, stage)

        # init: lower alpha slowly while the entropy exceeds max_entropy
        log_alpha = tf.convert_to_tensor(self._log_alpha)
        in_init = tf.equal(stage, INIT_STAGE)
        above_max = h > max_entropy
        log_alpha = tf.where(in_init & above_max,
                             log_alpha - self._slow_update_rate, log_alpha)
        stage = tf.where(in_init & ~above_max, FREE_STAGE, stage)

        # free: wait for the entropy to reach the target
        below = h < target
        stage = tf.where(tf.equal(stage, FREE_STAGE) & below, ADJUST_STAGE,
                         stage)

        # adjust
        adjusting = tf.equal(stage, ADJUST_STAGE)
        prev = tf.convert_to_tensor(self._prev_entropy)
        crossed = was_adjusting & tf.not_equal(below, prev < target)
        rate = tf.convert_to_tensor(self._update_rate)
        rate = tf.where(crossed,
                        tf.maximum(_RATE_DECAY * rate, self._slow_update_rate),
                        rate)
        rate = tf.where(h < self._fast_stage_threshold, self._fast_update_rate,
                        rate)
        # ALF's trend-dominated step, plus a level term so that a constant
        # entropy still moves alpha: 0.75 * trend + 0.25 * level.
        level = tf.sign(target - h)
        trend = tf.where(was_adjusting, tf.sign(prev - h), 0.0)
        step = rate * (_TREND_WEIGHT * trend + (1 - _TREND_WEIGHT) * level)
        log_alpha = tf.where(adjusting, log_alpha + step, log_alpha)
        rate = tf.where(adjusting, rate, self._update_rate)
        log_alpha = tf.maximum(log_alpha, self._log_min_alpha)
        return _ControllerState(log_alpha=log_alpha, stage=stage,
                                max_entropy=max_entropy, update_rate=rate,
                                prev_entropy=h)

    def adjust_alpha(self, entropy: tf.Tensor,
                     valid_mask: Optional[tf.Tensor] = None) -> tf.Tensor:
        """One controller update from a batch of entropies (graph-safe).

        The owner's ``after_train`` calls it once per update.

        Args:
            entropy: [T, B] or [B] float32 entropy estimates (gradient is
                ignored).
            valid_mask: same shape float mask of the steps to average over
                (None: all).
        Returns:
            [] float32 the new ``alpha`` (gradient stopped).
        """
        new = self._next_state(masked_mean(tf.stop_gradient(entropy),
                                           valid_mask, replica_context()))
        self._max_entropy.assign(new.max_entropy)
        self._stage.assign(new.stage)
        self._update_rate.assign(new.update_rate)
        self._prev_entropy.assign(new.prev_entropy)
        self._log_alpha.assign(new.log_alpha)
        return tf.stop_gradient(tf.exp(new.log_alpha))

    # ------------------------------------------------------------ loss
    def calc_loss(self, action_distribution: Nest,
                  step_type: Optional[tf.Tensor] = None,
                  valid_mask: Optional[tf.Tensor] = None) -> LossInfo:
        """Entropy bonus with the weight this update's controller step gives.

        Changes no state: ``after_train`` (or ``adjust_alpha``, for an owner
        with its own entropy estimates) moves the controller afterwards, to
        the ``alpha`` used here.

        Args:
            action_distribution: nest of distributions with batch [T, B]
                (or [B]); a ``TrainingInfo`` is also accepted (its
                ``info.action_distribution`` and ``step_type`` are used), so
                ``train_complete`` works on this algorithm alone.
            step_type: [T, B] int32; LAST steps are left out of the entropy
                average (used when ``valid_mask`` is None).
            valid_mask: [T, B] float32 mask of the steps to average over.
        Returns:
            ``LossInfo(loss=[T, B] -alpha * H (gradient only into the
            distribution's parameters), extra=EntropyTargetLossInfo)``.
            Entropies without a closed form (the tanh-squashed normal) are
            the one-sample estimate ``-log pi(a~|s)`` of a reparameterized
            sample.
        """
        if isinstance(action_distribution, TrainingInfo):
            step_type = action_distribution.step_type
            action_distribution = (
                action_distribution.info.action_distribution)
        if valid_mask is None and step_type is not None:
            valid_mask = valid_step_mask(step_type)
        outer_rank = None if valid_mask is None else valid_mask.shape.rank
        entropy = dist_ops.entropy(action_distribution,
                                   seed=make_stateless_seed(),
                                   outer_rank=outer_rank)
        new = self._next_state(masked_mean(tf.stop_gradient(entropy),
                                           valid_mask, replica_context()))
        alpha = tf.stop_gradient(tf.exp(new.log_alpha))
        debug = self._debug_summaries
        extra = EntropyTargetLossInfo(
            neg_entropy=-tf.stop_gradient(entropy),
            alpha=alpha,
            stage=tf.cast(new.stage, tf.float32) if debug else (),
            update_rate=new.update_rate if debug else ())
        return LossInfo(loss=-alpha * entropy, extra=extra)

    def after_train(self, training_info: TrainingInfo) -> None:
        """One controller step on the entropy of the trained batch.

        Recomputes the entropy of ``training_info.info.action_distribution``
        (exactly ``calc_loss``'s for closed-form entropies; a sampled
        estimate draws its own seed) averaged over the non-LAST steps.

        Args:
            training_info: ``TrainingInfo`` with [T, B] leaves whose
                ``info`` has ``action_distribution``.
        """
        dist = training_info.info.action_distribution
        valid_mask = valid_step_mask(training_info.step_type)
        seed = None if _has_analytic_entropy(dist) else make_stateless_seed()
        entropy = dist_ops.entropy(dist, seed=seed,
                                   outer_rank=valid_mask.shape.rank)
        self.adjust_alpha(entropy, valid_mask)
