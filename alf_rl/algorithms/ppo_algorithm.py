"""Proximal Policy Optimization (PPO) as a short delta over actor-critic.

Schulman et al. 2017, "Proximal Policy Optimization Algorithms". Same
networks and rollout as ``ActorCriticAlgorithm``; trained through the replay
path (``OffPolicyTrainer`` with ``clear_replay_buffer=True``): each iteration
collects ``unroll_length`` steps of every environment, ``preprocess_experience``
computes GAE advantages and TD(lambda) returns once over that whole [B, T]
batch with the rollout's values, and ``train`` runs epochs of shuffled
mini-batches with ``PPOLoss``.

Deviation from the paper: the last collected step of every environment has
no successor to bootstrap from, so it is not trained on (its step type is set
to LAST in the preprocessed experience, which the training mask excludes);
the paper instead evaluates the value of the next observation.
"""

import gin
import tensorflow as tf

from alf_rl.algorithms.actor_critic_algorithm import ActorCriticAlgorithm
from alf_rl.algorithms.ppo_loss import PPOLoss
from alf_rl.data_structures import StepType, namedtuple
from alf_rl.ops import value_ops

PPOInfo = namedtuple(
    'PPOInfo',
    [
        'action_distribution',  # nest of distributions with batch [B]
        'value',  # [B] float32 value estimate
        'returns',  # [B] float32 TD(lambda) return; 0 until preprocessed
        'advantages',  # [B] float32 GAE advantage; 0 until preprocessed
    ],
    default_value=())


@gin.configurable
class PPOAlgorithm(ActorCriticAlgorithm):
    """PPO: ``ActorCriticAlgorithm`` with precomputed GAE and ``PPOLoss``.

    Every row of a training sequence is trained (targets are precomputed),
    so ``TrainerConfig.mini_batch_length`` may be 1: mini-batches of single
    transitions, as in the paper (use whole sequences for RNN policies).

    Args:
        observation_spec, action_spec, actor_network_ctor,
            value_network_ctor, optimizer, **kwargs: as
            ``ActorCriticAlgorithm``.
        loss: a ``PPOLoss``; defaults to ``PPOLoss()``.
    """

    last_row_only_bootstraps = False

    def __init__(self, observation_spec, action_spec, loss=None,
                 name='PPOAlgorithm', **kwargs):
        loss = loss if loss is not None else PPOLoss()
        if not isinstance(loss, PPOLoss):
            raise TypeError("PPOAlgorithm: loss must be a PPOLoss, got %s" %
                            type(loss).__name__)
        super().__init__(observation_spec, action_spec, loss=loss, name=name,
                         **kwargs)

    def rollout(self, time_step, state):
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

    def preprocess_experience(self, experience):
        """Computes advantages and returns over the whole collected batch.

        Args:
            experience: ``Experience`` with [B, T, ...] leaves; its
                ``rollout_info`` a ``PPOInfo`` with [B, T] ``value``.
        Returns:
            The experience with ``rollout_info.advantages`` (GAE) and
            ``rollout_info.returns`` (advantages + value) filled in, [B, T];
            the last column has advantage 0 and is marked LAST so that it
            is not trained on (it has no successor to bootstrap from).
        """
        info = experience.rollout_info
        value = tf.stop_gradient(info.value)
        advantages = value_ops.generalized_advantage_estimation(
            experience.reward, value, experience.step_type,
            experience.discount * self._loss.gamma, self._loss.td_lambda,
            time_major=False)
        advantages = tf.concat([advantages, tf.zeros_like(value[:, -1:])],
                               axis=1)
        step_type = experience.step_type
        step_type = tf.concat(
            [step_type[:, :-1],
             tf.ones_like(step_type[:, -1:]) * StepType.LAST],
            axis=1)
        return experience._replace(
            step_type=step_type,
            rollout_info=info._replace(returns=advantages + value,
                                       advantages=advantages))
