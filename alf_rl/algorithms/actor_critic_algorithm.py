"""Advantage actor-critic (A2C).

Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning",
in its synchronous form: one actor network (a distribution over actions)
and one value network, trained together on the driver's on-policy unroll
with ``ActorCriticLoss``. Deviation from the paper: synchronous batched
environments instead of asynchronous workers; optional GAE.
"""

from typing import Any, Callable, Optional

import gin
import tensorflow as tf

from alf_rl.algorithms.actor_critic_loss import ActorCriticLoss
from alf_rl.algorithms.entropy_target_algorithm import EntropyTargetAlgorithm
from alf_rl.algorithms.on_policy_algorithm import OnPolicyAlgorithm
from alf_rl.data_structures import (LossInfo, PolicyStep, TimeStep,
                                    TrainingInfo, namedtuple)
from alf_rl.networks import ActorDistributionNetwork, Network, ValueNetwork
from alf_rl.ops import distributions as dist_ops
from alf_rl.specs import cast_and_clip_to_spec
from alf_rl.utils.common import make_stateless_seed

ActorCriticState = namedtuple(
    'ActorCriticState',
    [
        'actor',  # nest of [B, ...]: the actor network's state
        'value',  # nest of [B, ...]: the value network's state
    ],
    default_value=())

ActorCriticInfo = namedtuple(
    'ActorCriticInfo',
    [
        'action_distribution',  # nest of distributions with batch [B]
        'value',  # [B] float32 value estimate
    ],
    default_value=())


@gin.configurable
class ActorCriticAlgorithm(OnPolicyAlgorithm):
    """A2C: an actor network, a value network and ``ActorCriticLoss``.

    Args:
        observation_spec: nest of specs of one observation.
        action_spec: nest of bounded specs of one action.
        actor_network_ctor: ``(observation_spec, action_spec) -> network``
            returning a nest of action distributions.
        value_network_ctor: ``(observation_spec) -> network`` returning [B]
            values.
        loss: an ``ActorCriticLoss`` (or a subclass: ``PPOLoss``);
            defaults to ``ActorCriticLoss()``.
        optimizer: a ``tf_keras`` optimizer for both networks.
        entropy_target_ctor: optional ``(action_spec) ->
            EntropyTargetAlgorithm``; its adaptive entropy bonus
            ``-alpha H`` is added to the loss instead of the loss's constant
            ``entropy_regularization`` (which must then be unset). Its
            ``EntropyTargetLossInfo`` is reported in the loss's
            ``extra.entropy_target`` and its ``-H`` in ``extra.neg_entropy``.
        **kwargs: passed to ``RLAlgorithm`` (reward shaping, observation
            transformers, gradient clipping, ...).
    """

    def __init__(self,
                 observation_spec: Any,
                 action_spec: Any,
                 actor_network_ctor: Callable[[Any, Any], Network] = (
                     ActorDistributionNetwork),
                 value_network_ctor: Callable[[Any], Network] = ValueNetwork,
                 loss: Optional[ActorCriticLoss] = None,
                 optimizer: Any = None,
                 entropy_target_ctor: Optional[
                     Callable[[Any], EntropyTargetAlgorithm]] = None,
                 name: str = 'ActorCriticAlgorithm',
                 **kwargs: Any):
        loss = loss if loss is not None else ActorCriticLoss()
        if not isinstance(loss, ActorCriticLoss):
            raise TypeError(
                "%s: loss must be an ActorCriticLoss (or PPOLoss), got %s" %
                (name, type(loss).__name__))
        if (entropy_target_ctor is not None
                and loss.entropy_regularization):
            raise ValueError(
                "%s: entropy_target_ctor replaces the constant entropy bonus, "
                "but the loss also has entropy_regularization=%s; set it to "
                "None" % (name, loss.entropy_regularization))
        actor_network = actor_network_ctor(observation_spec, action_spec)
        value_network = value_network_ctor(observation_spec)
        state_spec = ActorCriticState(actor=actor_network.state_spec,
                                      value=value_network.state_spec)
        super().__init__(observation_spec,
                         action_spec,
                         train_state_spec=state_spec,
                         predict_state_spec=ActorCriticState(
                             actor=actor_network.state_spec),
                         optimizer=optimizer,
                         name=name,
                         **kwargs)
        self._actor_network = actor_network
        self._value_network = value_network
        self._loss = loss
        self._entropy_target = (entropy_target_ctor(action_spec)
                                if entropy_target_ctor is not None else None)

    @property
    def actor_network(self) -> Network:
        """The network mapping observations to action distributions."""
        return self._actor_network

    @property
    def entropy_target(self) -> Optional[EntropyTargetAlgorithm]:
        """The ``EntropyTargetAlgorithm`` sub-algorithm, or None."""
        return self._entropy_target

    def predict(self, time_step: TimeStep, state: Any) -> PolicyStep:
        """Greedy action (the mode of the action distribution).

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: ``ActorCriticState`` with [B, ...] leaves.
        Returns:
            ``PolicyStep(action, ActorCriticState, info=())``.
        """
        dist, actor_state = self._actor_network(time_step.observation,
                                                state=state.actor)
        action = cast_and_clip_to_spec(dist_ops.mode(dist), self.action_spec)
        return PolicyStep(action=action,
                          state=ActorCriticState(actor=actor_state))

    def rollout(self, time_step: TimeStep, state: Any) -> PolicyStep:
        """Samples an action and evaluates the value.

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: ``ActorCriticState`` with [B, ...] leaves.
        Returns:
            ``PolicyStep(action [B, ...], ActorCriticState,
            ActorCriticInfo(action_distribution, value [B]))``.
        """
        dist, actor_state = self._actor_network(time_step.observation,
                                                state=state.actor)
        value, value_state = self._value_network(time_step.observation,
                                                 state=state.value)
        # Continuous samples of an unsquashed normal may leave the bounds.
        # They are returned as sampled (stored and trained on: the log-prob
        # of a clipped action would be the density at the bound, a biased
        # gradient); ``env_action`` clips them for the environment, as SB3
        # does. Discrete samples are clipped here (a no-op unless the logits
        # are NaN, which then surfaces as a non-finite loss).
        action = dist_ops.sample_action_distribution(
            dist, seed=make_stateless_seed())
        action = tf.nest.map_structure(
            lambda a, s: (cast_and_clip_to_spec(a, s)
                          if s.dtype.is_integer else tf.cast(a, s.dtype)),
            action, self.action_spec)
        return PolicyStep(action=action,
                          state=ActorCriticState(actor=actor_state,
                                                 value=value_state),
                          info=ActorCriticInfo(action_distribution=dist,
                                               value=value))

    def env_action(self, action: Any) -> Any:
        """``rollout``'s sampled action clipped into the spec's bounds.

        Args:
            action: nest of [B, ...] sampled actions.
        Returns:
            Nest of [B, ...] actions cast to the spec's dtypes and clipped
            to its bounds.
        """
        return cast_and_clip_to_spec(action, self.action_spec)

    def calc_loss(self, training_info: TrainingInfo) -> LossInfo:
        """The loss (``ActorCriticLoss`` or ``PPOLoss``) on [T, B] training
        info, plus the adaptive entropy bonus of the entropy target if any.

        Args:
            training_info: ``TrainingInfo`` with [T, B] leaves; ``info`` has
                ``action_distribution`` and ``value``.
        Returns:
            ``LossInfo(loss=[T, B], extra=the loss's extra)``.
        """
        loss_info = self._loss(training_info, training_info.info.value)
        if self._entropy_target is None:
            return loss_info
        entropy_loss = self._entropy_target.calc_loss(
            training_info.info.action_distribution, training_info.step_type)
        # ActorCriticLossInfo and PPOLossInfo both declare these fields.
        extra = loss_info.extra._replace(
            neg_entropy=entropy_loss.extra.neg_entropy,
            entropy_target=entropy_loss.extra._replace(neg_entropy=()))
        return loss_info._replace(loss=loss_info.loss + entropy_loss.loss,
                                  extra=extra)

    def after_train(self, training_info: TrainingInfo) -> None:
        """The entropy target's controller step (if any), after the update.

        Args:
            training_info: ``TrainingInfo`` with [T, B] leaves, as given to
                ``calc_loss``.
        """
        if self._entropy_target is not None:
            self._entropy_target.after_train(training_info)
        super().after_train(training_info)
