"""The PPO loss: clipped surrogate objective on precomputed advantages.

Schulman et al. 2017, "Proximal Policy Optimization Algorithms", eq. (7):

    r_t(theta) = pi(a_t|s_t) / pi_old(a_t|s_t)
    L^CLIP     = -min(r_t * A_t, clip(r_t, 1 - eps, 1 + eps) * A_t)

plus a value loss (optionally clipped around the rollout value, as in the
OpenAI baselines implementation) and an entropy bonus. Unlike
``ActorCriticLoss``, advantages and value targets are not computed from the
training window: ``PPOAlgorithm.preprocess_experience`` computes them once per
iteration over everything collected and stores them in
``training_info.rollout_info`` (a ``PPOInfo``), so every row of a mini-batch
is a training row. Advantages are normalized over the valid steps of the
mini-batch (as in baselines / SB3).
"""

import gin
import tensorflow as tf

from alf_rl.algorithms.actor_critic_loss import ActorCriticLoss
from alf_rl.data_structures import LossInfo, namedtuple
from alf_rl.ops import distributions as dist_ops
from alf_rl.ops import losses
from alf_rl.utils.common import valid_step_mask
from alf_rl.utils.schedules import schedule_value

PPOLossInfo = namedtuple(
    'PPOLossInfo',
    [
        'pg_loss',  # [T, B] clipped surrogate loss
        'td_loss',  # [T, B] (weighted) value loss
        'neg_entropy',  # [T, B] -H(pi(.|s_t)), () without entropy bonus
        'approx_kl',  # [T, B] (r_t - 1) - log r_t, r_t = pi/pi_old
        'clip_fraction',  # [T, B] 1.0 where |r_t - 1| > eps
        'explained_variance',  # [] of the value function on the returns
    ],
    default_value=())


@gin.configurable
class PPOLoss(ActorCriticLoss):
    """Per-step PPO loss from [T, B] training info.

    ``gamma`` and ``td_lambda`` are used by ``PPOAlgorithm`` to compute the
    GAE advantages and TD(lambda) returns beforehand (GAE is always on).

    Args:
        importance_ratio_clipping: eps of the clipped ratio, > 0, or a
            schedule (e.g. ``LinearSchedule``) of the update counter that
            ``PPOAlgorithm`` gives the loss (``set_step_counter``).
        value_clipping: if set, the value loss is the max of the unclipped
            loss and the loss of ``v_old + clip(v - v_old, -c, c)``.
        normalize_advantages: normalize advantages over the valid steps of
            each mini-batch.
        gamma, td_lambda, td_error_loss_fn, advantage_clip,
            entropy_regularization, td_loss_weight: as ``ActorCriticLoss``.
    """

    def __init__(self,
                 importance_ratio_clipping=0.2,
                 value_clipping=None,
                 normalize_advantages=True,
                 gamma=0.99,
                 td_lambda=0.95,
                 td_error_loss_fn=losses.element_wise_squared_loss,
                 advantage_clip=None,
                 entropy_regularization=None,
                 td_loss_weight=1.0):
        if not callable(importance_ratio_clipping) and \
                not importance_ratio_clipping > 0.0:
            raise ValueError("importance_ratio_clipping must be > 0, got %s" %
                             importance_ratio_clipping)
        if value_clipping is not None and not value_clipping > 0.0:
            raise ValueError("value_clipping must be None or > 0, got %s" %
                             value_clipping)
        super().__init__(gamma=gamma,
                         td_error_loss_fn=td_error_loss_fn,
                         use_gae=True,
                         td_lambda=td_lambda,
                         use_td_lambda_return=True,
                         normalize_advantages=normalize_advantages,
                         advantage_clip=advantage_clip,
                         entropy_regularization=entropy_regularization,
                         td_loss_weight=td_loss_weight)
        self._importance_ratio_clipping = importance_ratio_clipping
        self._value_clipping = value_clipping
        self._step_counter = None

    def set_step_counter(self, counter):
        """The integer scalar variable that drives the clip schedule.

        Args:
            counter: e.g. ``PPOAlgorithm``'s count of gradient updates.
        """
        self._step_counter = counter

    def importance_ratio_clipping(self):
        """The current clip eps (float32 scalar tensor).

        Raises:
            ValueError: if the clip is a schedule and no step counter was
                set.
        """
        clip = self._importance_ratio_clipping
        if callable(clip) and self._step_counter is None:
            raise ValueError(
                "PPOLoss: importance_ratio_clipping is a schedule (%s) but no "
                "step counter was set: use it through PPOAlgorithm, or call "
                "set_step_counter(variable)" % type(clip).__name__)
        step = self._step_counter if self._step_counter is not None else 0
        return schedule_value(clip, step)

    @property
    def gamma(self):
        return self._gamma

    @property
    def td_lambda(self):
        return self._td_lambda

    def __call__(self, training_info, value, action_distribution=None):
        """The loss.

        Args:
            training_info: ``TrainingInfo`` with [T, B] leaves;
                ``rollout_info`` a ``PPOInfo`` with the rollout's
                ``action_distribution``, ``value`` and the precomputed
                ``advantages`` and ``returns``.
            value: [T, B] float32 current value estimates (with gradient).
            action_distribution: nest of current distributions with batch
                [T, B]; defaults to ``training_info.info.action_distribution``.
        Returns:
            ``LossInfo(loss=[T, B], extra=PPOLossInfo)``. Every row is a
            training row; LAST steps are masked by the caller.
        """
        rollout_info = training_info.rollout_info
        if not hasattr(rollout_info, 'advantages'):
            raise ValueError(
                "PPOLoss: training_info.rollout_info must carry precomputed "
                "'advantages' and 'returns' (a PPOInfo from "
                "PPOAlgorithm.preprocess_experience), got %s -- train PPO "
                "with OffPolicyTrainer and clear_replay_buffer=True" %
                type(rollout_info).__name__)
        if action_distribution is None:
            action_distribution = training_info.info.action_distribution
        mask = valid_step_mask(training_info.step_type)
        advantages = rollout_info.advantages
        if self._normalize_advantages:
            advantages = losses.normalize_masked(advantages, mask)
        if self._advantage_clip:
            advantages = tf.clip_by_value(advantages, -self._advantage_clip,
                                          self._advantage_clip)
        advantages = tf.stop_gradient(advantages)
        returns = tf.stop_gradient(rollout_info.returns)

        log_pi = dist_ops.log_prob(action_distribution, training_info.action)
        old_log_pi = tf.stop_gradient(
            dist_ops.log_prob(rollout_info.action_distribution,
                              training_info.action))
        ratio = tf.exp(log_pi - old_log_pi)
        eps = self.importance_ratio_clipping()
        clipped_ratio = tf.clip_by_value(ratio, 1.0 - eps, 1.0 + eps)
        pg_loss = -tf.minimum(ratio * advantages, clipped_ratio * advantages)

        td_loss = self._td_error_loss_fn(returns, value)
        if self._value_clipping:
            old_value = tf.stop_gradient(rollout_info.value)
            clipped_value = old_value + tf.clip_by_value(
                value - old_value, -self._value_clipping,
                self._value_clipping)
            td_loss = tf.maximum(
                td_loss, self._td_error_loss_fn(returns, clipped_value))
        td_loss = self._td_loss_weight * td_loss
        loss = pg_loss + td_loss
        neg_entropy = ()
        if self._entropy_regularization:
            neg_entropy = -dist_ops.entropy(action_distribution)
            loss += self._entropy_regularization * neg_entropy
        # (r - 1) - log r: an unbiased, never negative estimate of
        # KL(pi_old || pi) (Schulman's "k3"; SB3 uses it), far less noisy
        # over one mini-batch than log pi_old - log pi.
        log_ratio = tf.stop_gradient(log_pi - old_log_pi)
        approx_kl = tf.exp(log_ratio) - 1.0 - log_ratio
        clip_fraction = tf.cast(
            tf.greater(tf.abs(tf.stop_gradient(ratio) - 1.0), eps),
            tf.float32)
        ev = losses.explained_variance(returns, tf.stop_gradient(value), mask)
        return LossInfo(loss=loss,
                        extra=PPOLossInfo(pg_loss=pg_loss,
                                          td_loss=td_loss,
                                          neg_entropy=neg_entropy,
                                          approx_kl=approx_kl,
                                          clip_fraction=clip_fraction,
                                          explained_variance=ev))
