"""The PPO loss: clipped surrogate objective on precomputed advantages.

Schulman et al. 2017, "Proximal Policy Optimization Algorithms", eq. (7)
(``ops.policy_losses.clipped_surrogate_loss``), plus a value loss (optionally
clipped around the rollout value, as in the OpenAI baselines implementation:
``ops.policy_losses.clipped_value_loss``) and an entropy bonus. Unlike
``ActorCriticLoss``, advantages and value targets are not computed from the
training window: ``PPOAlgorithm.preprocess_experience`` computes them once per
iteration over everything collected and stores them in
``training_info.rollout_info`` (a ``PPOInfo``), so every row of a mini-batch
is a training row. Advantages are normalized over the valid steps of the
mini-batch (as in baselines / SB3).
"""

from typing import Any, Callable, Optional, Union

import gin
import tensorflow as tf

from alf_rl.algorithms.actor_critic_loss import (ActorCriticLoss,
                                                 ElementWiseLoss)
from alf_rl.data_structures import LossInfo, TrainingInfo, namedtuple
from alf_rl.ops import losses, policy_losses
from alf_rl.utils.common import valid_step_mask
from alf_rl.utils.gradient_application import replica_context

PPOInfo = namedtuple(
    'PPOInfo',
    [
        'action_distribution',  # nest of distributions with batch [B]
        'value',  # [B] float32 value estimate
        'returns',  # [B] float32 TD(lambda) return; 0 until preprocessed
        'advantages',  # [B] float32 GAE advantage; 0 until preprocessed
    ],
    default_value=())

PPOLossInfo = namedtuple(
    'PPOLossInfo',
    [
        'pg_loss',  # [T, B] clipped surrogate loss
        'td_loss',  # [T, B] (weighted) value loss
        'neg_entropy',  # [T, B] -H(pi(.|s_t)), () without entropy bonus
        'approx_kl',  # [T, B] (r_t - 1) - log r_t, r_t = pi/pi_old
        'clip_fraction',  # [T, B] 1.0 where |r_t - 1| > eps
        'explained_variance',  # [] of the value function on the returns
        # EntropyTargetLossInfo of an ``entropy_target_ctor``, () without
        'entropy_target',
        # [T, B] 1.0 where env_action clipped a bounded continuous action
        # (filled in by ActorCriticAlgorithm; () for discrete actions)
        'action_clipped_fraction',
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
        gamma: as ``ActorCriticLoss``.
        td_lambda: as ``ActorCriticLoss``.
        td_error_loss_fn: as ``ActorCriticLoss``.
        advantage_clip: as ``ActorCriticLoss``.
        entropy_regularization: as ``ActorCriticLoss``.
        td_loss_weight: as ``ActorCriticLoss``.
    """

    def __init__(self,
                 importance_ratio_clipping: Union[
                     float, Callable[[tf.Tensor], tf.Tensor]] = 0.2,
                 value_clipping: Optional[float] = None,
                 normalize_advantages: bool = True,
                 gamma: float = 0.99,
                 td_lambda: float = 0.95,
                 td_error_loss_fn: ElementWiseLoss = (
                     losses.element_wise_squared_loss),
                 advantage_clip: Optional[float] = None,
                 entropy_regularization: Optional[float] = None,
                 td_loss_weight: float = 1.0):
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

    def importance_ratio_clipping(self) -> tf.Tensor:
        """The current clip eps (float32 scalar tensor).

        Raises:
            ValueError: if the clip is a schedule and no step counter was
                set (``set_step_counter``).
        """
        return self._scheduled('importance_ratio_clipping',
                               self._importance_ratio_clipping,
                               'PPOAlgorithm')

    def __call__(self,
                 training_info: TrainingInfo,
                 value: tf.Tensor,
                 action_distribution: Any = None) -> LossInfo:
        """The clipped-surrogate loss of every row.

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
        Raises:
            ValueError: ``rollout_info`` is not a ``PPOInfo``.
        """
        rollout_info = training_info.rollout_info
        if not isinstance(rollout_info, PPOInfo):
            raise ValueError(
                "PPOLoss: training_info.rollout_info must be a PPOInfo with "
                "precomputed 'advantages' and 'returns' (from "
                "PPOAlgorithm.preprocess_experience), got %s -- train PPO "
                "with OffPolicyTrainer and clear_replay_buffer=True" %
                type(rollout_info).__name__)
        if action_distribution is None:
            action_distribution = training_info.info.action_distribution
        mask = valid_step_mask(training_info.step_type)
        advantages = self._prepare_advantages(rollout_info.advantages, mask)
        returns = tf.stop_gradient(rollout_info.returns)

        log_ratio = self.log_importance_ratio(training_info,
                                              action_distribution)
        ratio = tf.exp(log_ratio)
        eps = self.importance_ratio_clipping()
        pg_loss = policy_losses.clipped_surrogate_loss(ratio, advantages, eps)
        if self._value_clipping:
            td_loss = policy_losses.clipped_value_loss(
                value, tf.stop_gradient(rollout_info.value), returns,
                self._value_clipping, self._td_error_loss_fn)
        else:
            td_loss = self._td_error_loss_fn(returns, value)
        td_loss = self._td_loss_weight * td_loss
        loss, neg_entropy = self._add_entropy_bonus(pg_loss + td_loss,
                                                    action_distribution)
        return LossInfo(
            loss=loss,
            extra=PPOLossInfo(
                pg_loss=pg_loss,
                td_loss=td_loss,
                neg_entropy=neg_entropy,
                approx_kl=policy_losses.approx_kl(
                    tf.stop_gradient(log_ratio)),
                clip_fraction=policy_losses.clip_fraction(
                    tf.stop_gradient(ratio), eps),
                explained_variance=losses.explained_variance(
                    returns, tf.stop_gradient(value), mask,
                    replica_context())))
