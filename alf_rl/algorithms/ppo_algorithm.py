"""Proximal Policy Optimization (PPO) as a short delta over actor-critic.

Schulman et al. 2017, "Proximal Policy Optimization Algorithms". Same
networks and rollout as ``ActorCriticAlgorithm``; trained through the replay
path (``OffPolicyTrainer`` with ``clear_replay_buffer=True``): each iteration
collects ``unroll_length`` steps of every environment, ``preprocess_experience``
computes GAE advantages and TD(lambda) returns once over that whole [T, B]
batch with the rollout's values, and ``train`` runs epochs of shuffled
mini-batches with ``PPOLoss``.

Deviation from the paper: the last collected step of every environment has
no successor to bootstrap from, so it is not trained on (its step type is set
to LAST in the preprocessed experience, which the training mask excludes);
the paper instead evaluates the value of the next observation.
"""

from typing import Any, Optional

import gin
import tensorflow as tf

from alf_rl.algorithms.actor_critic_algorithm import ActorCriticAlgorithm
from alf_rl.algorithms.on_policy_algorithm import EpochTraining
# PPOInfo (rollout info: action_distribution, value, returns, advantages)
# is what PPOLoss consumes, so it is defined beside it; imported from here
# as before.
from alf_rl.algorithms.ppo_loss import PPOInfo, PPOLoss
from alf_rl.data_structures import (Experience, PolicyStep, StepType,
                                    TimeStep, TrainingInfo)
from alf_rl.ops import policy_losses, value_ops
from alf_rl.ops.masks import masked_mean
from alf_rl.utils.gradient_application import replica_context


@gin.configurable
class PPOAlgorithm(EpochTraining, ActorCriticAlgorithm):
    """PPO: ``ActorCriticAlgorithm`` with precomputed GAE and ``PPOLoss``,
    trained in epochs over what one iteration collected (``EpochTraining``:
    ``OffPolicyTrainer`` with ``TrainerConfig.clear_replay_buffer=True``).

    Every row of a training sequence is trained (targets are precomputed),
    so ``TrainerConfig.mini_batch_length`` may be 1: mini-batches of single
    transitions, as in the paper (use whole sequences for RNN policies).

    The other arguments (``actor_network_ctor``, ``value_network_ctor``,
    ``optimizer``, ...) are ``ActorCriticAlgorithm``'s, passed through
    ``**kwargs``; among them ``use_rollout_state``, for recurrent networks:
    store the rollout state in the experience and start every training
    sequence from it (then ``TrainerConfig.mini_batch_length`` must be > 1,
    e.g. the whole unroll).

    Args:
        observation_spec: as ``ActorCriticAlgorithm``.
        action_spec: as ``ActorCriticAlgorithm``.
        loss: a ``PPOLoss``; defaults to ``PPOLoss()``.
        target_kl: if set, stop this iteration's remaining epochs and
            mini-batches once a mini-batch's mean approximate KL
            (``(r - 1) - log r``, r = pi / pi_old) exceeds
            ``1.5 * target_kl`` (as SB3).
        name: the algorithm's name.
        **kwargs: ``ActorCriticAlgorithm``'s other arguments.
    """

    def __init__(self,
                 observation_spec: Any,
                 action_spec: Any,
                 loss: Optional[PPOLoss] = None,
                 target_kl: Optional[float] = None,
                 name: str = 'PPOAlgorithm',
                 **kwargs: Any):
        loss = loss if loss is not None else PPOLoss()
        if not isinstance(loss, PPOLoss):
            raise TypeError("PPOAlgorithm: loss must be a PPOLoss, got %s" %
                            type(loss).__name__)
        if target_kl is not None and not target_kl > 0:
            raise ValueError("PPOAlgorithm: target_kl must be None or > 0, "
                             "got %r" % (target_kl, ))
        super().__init__(observation_spec, action_spec, loss=loss, name=name,
                         **kwargs)
        self._target_kl = target_kl
        # Gradient updates so far: drives the clip schedule; checkpointed.
        self._num_updates = tf.Variable(0, dtype=tf.int64, trainable=False,
                                        name='num_updates')
        loss.set_step_counter(self._num_updates)

    @property
    def num_updates(self) -> tf.Variable:
        """int64 variable: gradient updates applied so far."""
        return self._num_updates

    def after_train(self, training_info: TrainingInfo) -> None:
        """Counts the update (then whatever the base class does)."""
        self._num_updates.assign_add(1)
        super().after_train(training_info)

    def continue_training(self, training_info: TrainingInfo,
                          valid_masks: tf.Tensor) -> tf.Tensor:
        """False once the update's mean approximate KL passes
        ``1.5 * target_kl``.

        The KL is ``PPOLossInfo.approx_kl``'s, from the same ops on the
        same tensors: ``ops.policy_losses.approx_kl`` of the log ratio of
        the policy the update was computed with (``training_info.info``)
        to the behaviour policy (``training_info.rollout_info``), averaged
        over ``valid_masks``.

        Args:
            training_info: the [L, b] ``TrainingInfo`` of the update just
                done.
            valid_masks: [L, b] float32 mask of the steps that counted.
        Returns:
            bool scalar tensor.
        """
        if self._target_kl is None:
            return tf.constant(True)
        kl = policy_losses.approx_kl(
            self._loss.log_importance_ratio(training_info))
        return (masked_mean(kl, valid_masks, replica_context())
                <= 1.5 * self._target_kl)

    def rollout(self, time_step: TimeStep, state: Any) -> PolicyStep:
        """As ``ActorCriticAlgorithm.rollout``, with ``PPOInfo`` info.

        Returns:
            ``PolicyStep(action [B, ...], ActorCriticState, PPOInfo)`` with
            zero ``returns`` and ``advantages`` (filled in by
            ``preprocess_experience``).
        """
        step = super().rollout(time_step, state)
        value = step.info.value
        return step._replace(info=PPOInfo(
            action_distribution=step.info.action_distribution,
            value=value,
            returns=tf.zeros_like(value),
            advantages=tf.zeros_like(value)))

    def preprocess_experience(self, experience: Experience) -> Experience:
        """Computes advantages and returns over the whole collected batch.

        Args:
            experience: ``Experience`` with time-major [T, B, ...] leaves;
                its ``rollout_info`` a ``PPOInfo`` with [T, B] ``value``.
        Returns:
            The experience with ``rollout_info.advantages`` (GAE) and
            ``rollout_info.returns`` (advantages + value) filled in, [T, B];
            the last row (advantage 0, return its value) is marked LAST
            so that it is not trained on (it has no successor to bootstrap
            from).
        """
        info = experience.rollout_info
        value = tf.stop_gradient(info.value)
        advantages, returns = value_ops.advantages_and_returns(
            experience.reward, value, experience.step_type,
            experience.discount * self._loss.gamma, self._loss.td_lambda)
        # Back to [T, B]: the last row gets advantage 0 and return v.
        advantages = tf.concat([advantages, tf.zeros_like(value[-1:])],
                               axis=0)
        returns = tf.concat([returns, value[-1:]], axis=0)
        step_type = experience.step_type
        step_type = tf.concat(
            [step_type[:-1],
             tf.ones_like(step_type[-1:]) * StepType.LAST],
            axis=0)
        return experience._replace(
            step_type=step_type,
            rollout_info=info._replace(returns=returns,
                                       advantages=advantages))
