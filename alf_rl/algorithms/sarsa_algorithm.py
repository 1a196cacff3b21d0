"""SARSA for continuous actions: a deterministic actor and a SARSA critic.

As ALF's ``SarsaAlgorithm`` (its ``sarsa_pendulum`` example), after
Rummery & Niranjan 1994 (SARSA) and Silver et al. 2014 (deterministic policy
gradient): a deterministic actor mu(s) explores with OU or Gaussian noise;
the critic Q(s, a) is trained towards the SARSA target built from the
action actually taken next,

    y_t = r_{t+1} + gamma * d_{t+1} * Q'(s_{t+1}, a_{t+1}),

where ``a_{t+1}`` is the (noisy) action stored in the experience and Q' is
a slowly tracking target critic; the actor ascends ``dQ/da`` at
``a = mu(s_t)``. Unlike DDPG, the bootstrap action is not ``mu'(s_{t+1})``,
so the critic evaluates the behaviour policy and no target actor is needed.

Deviations / choices:
- ALF bootstraps with the environment's discount only; here
  ``gamma`` multiplies it (the discount is 0/1 in alf_rl).
- Training goes through ``OffPolicyAlgorithm.train`` on sequences of at
  least two steps (row t uses row t+1's stored action). On-policy as in
  ALF's on-policy variant: ``TrainerConfig.clear_replay_buffer=True``
  (train on what each iteration collected); with a replay buffer (ALF's
  ``sarsa_pendulum`` off-policy block, the default example) the stored
  next action comes from an older behaviour policy.
- Exploration noise stddevs are in units of the action half-range (as
  ``DdpgAlgorithm``); the OU process lives in the rollout state.
- A recurrent actor or critic (``ActorNetwork`` with
  ``encoding_network_ctor=LSTMEncodingNetwork``, ``CriticRnnNetwork``)
  keeps one state per call site (``alf_rl.algorithms.network_streams``):
  the actor; the critic at the stored action (advanced by ``rollout`` at
  the action taken, and stored); the critic at ``mu(s)`` (the actor's
  loss) and the target critic, both from the critic's stored state. Then
  ``first_train_step`` runs the whole ``train_step``.
"""

from typing import Any, Callable, Optional

import gin
import tensorflow as tf

from alf_rl.algorithms.config_checks import (check_unit_interval,
                                             reject_retired_arguments)
from alf_rl.algorithms.deterministic_actor import (
    DeterministicActorMixin, ExplorationNoise, actor_dqda_loss,
    check_continuous_action_spec)
from alf_rl.algorithms.network_streams import NetworkStreams
from alf_rl.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from alf_rl.algorithms.replay_training import TDErrorPriority
from alf_rl.data_structures import (Experience, LossInfo, PolicyStep,
                                    TrainingInfo, namedtuple)
from alf_rl.networks import ActorNetwork, CriticNetwork
from alf_rl.networks.target_network import PeriodicSoftUpdate, TargetNetwork
from alf_rl.ops.losses import element_wise_squared_loss
from alf_rl.ops.masks import pad_last_row
from alf_rl.ops.td_targets import one_step_td_target

from alf_rl.utils.nest import Nest

SarsaRolloutState = namedtuple(
    'SarsaRolloutState',
    [
        'ou_noise',  # nest like action_spec of [B, ...] float32 OU value in
        # half-range units ('ou' exploration only, else ())
        'networks',  # {stream: state} of the recurrent networks' rollout
        # streams (see network_streams), else ()
    ],
    default_value=())

SarsaInfo = namedtuple(
    'SarsaInfo',
    [
        'critic',  # [B] float32 Q(s_t, a_t) of the stored action (trained)
        'target_critic',  # [B] float32 Q'(s_t, a_t) (no gradient)
        'actor_loss',  # [B] float32 dqda loss at a = mu(s_t)
    ],
    default_value=())

SarsaLossInfo = namedtuple(
    'SarsaLossInfo',
    [
        'critic',  # [T, B] float32 TD loss; 0 on the last row
        'actor',  # [T, B] float32 actor (dqda) loss
        'q',  # [T, B] float32 Q(s_t, a_t)
        'td_error',  # [T, B] float32 y_t - Q(s_t, a_t); 0 on the last row
    ],
    default_value=())


@gin.configurable
class SarsaAlgorithm(DeterministicActorMixin, TDErrorPriority,
                     OffPolicyAlgorithm):
    """SARSA critic + deterministic actor (see the module docstring).

    Args:
        observation_spec: nest of specs of one observation.
        action_spec: nest of bounded float specs of one action.
        actor_network_ctor: ``(observation_spec, action_spec) -> network``
            returning a nest of bounded actions (``ActorNetwork``).
        critic_network_ctor: ``((observation_spec, action_spec)) -> network``
            returning [B] Q values (``CriticNetwork``).
        gamma: discount factor.
        tau: soft-update rate of the target critic.
        target_update_period: update the target every this many updates.
        exploration_noise: ``'ou'`` (Ornstein-Uhlenbeck, ALF's choice) or
            ``'gaussian'``.
        noise_stddev: stddev of the noise in units of the action half-range.
        ou_damping: theta of the OU process.
        td_error_loss_fn: ``(target, prediction) -> element-wise loss``.
        dqda_clipping: optional bound on each entry of dQ/da.
        actor_optimizer: ``tf_keras`` optimizer of the actor (None: the
            algorithm's ``optimizer``).
        critic_optimizer: ``tf_keras`` optimizer of the critic (None: the
            algorithm's ``optimizer``).
        name: module name.
        **kwargs: passed to ``OffPolicyAlgorithm`` (``optimizer``, gradient
            clipping, reward shaping, observation transformers).

    Raises:
        ValueError: discrete or unbounded action specs, an unknown
            ``exploration_noise`` or out-of-range numbers.
        TypeError: a retired argument name (``target_update_tau``,
            ``td_loss_fn``).
    """

    has_first_train_step = True  # first_train_step skips the targets

    def __init__(self,
                 observation_spec: Nest,
                 action_spec: Nest,
                 actor_network_ctor: Callable = ActorNetwork,
                 critic_network_ctor: Callable = CriticNetwork,
                 gamma: float = 0.99,
                 tau: float = 0.05,
                 target_update_period: int = 5,
                 exploration_noise: str = 'ou',
                 noise_stddev: float = 0.2,
                 ou_damping: float = 0.15,
                 td_error_loss_fn: Callable = element_wise_squared_loss,
                 dqda_clipping: Optional[float] = None,
                 actor_optimizer: Optional[Any] = None,
                 critic_optimizer: Optional[Any] = None,
                 name: str = 'SarsaAlgorithm',
                 **kwargs: Any):
        reject_retired_arguments(name, kwargs)
        check_continuous_action_spec(action_spec, name)
        noise = ExplorationNoise(action_spec, exploration_noise,
                                 float(noise_stddev), float(ou_damping), name)
        gamma = check_unit_interval(name, 'gamma', gamma)
        actor_network = actor_network_ctor(observation_spec, action_spec)
        critic_network = critic_network_ctor((observation_spec, action_spec))
        streams = NetworkStreams(
            dict(actor=actor_network, critic=critic_network,
                 actor_critic=critic_network, target_critic=critic_network),
            dict(actor='actor', critic='critic', actor_critic='critic',
                 target_critic='critic'))
        super().__init__(observation_spec, action_spec, name=name,
                         **streams.state_specs(lambda spec: SarsaRolloutState(
                             ou_noise=noise.ou_state_spec, networks=spec)),
                         **kwargs)
        self._streams = streams
        self._actor_network = actor_network
        self._critic_network = critic_network
        self._target_critic_network = TargetNetwork(
            critic_network, name='target_critic_network')
        self._target_updater = PeriodicSoftUpdate(
            self._target_critic_network.trainable_variables,
            critic_network.trainable_variables, tau, target_update_period)
        self._gamma = gamma
        self._noise = noise
        self._td_error_loss_fn = td_error_loss_fn
        self._dqda_clipping = dqda_clipping
        if actor_optimizer is not None:
            self.add_optimizer(actor_optimizer, [actor_network])
        if critic_optimizer is not None:
            self.add_optimizer(critic_optimizer, [critic_network])

    def train_step(self, exp: Experience, state: Nest) -> PolicyStep:
        """Critic and target critic at the stored action; the actor loss.

        Args:
            exp: ``Experience`` with [B, ...] leaves (``exp.action`` the
                action taken).
            state: the train streams' states (``()`` if feed-forward).
        Returns:
            ``PolicyStep(action=mu(s) [B, ...], state, info=SarsaInfo)``.
        """
        return self._train_step(exp, state, with_target=True)

    def first_train_step(self, exp: Experience,
                         state: Nest) -> PolicyStep:
        """``train_step`` without the target critic (the first row).

        The first row of a sequence is never a bootstrap value, so its
        ``target_critic`` is zeros (with recurrent networks it is computed:
        the target critic's state advances).

        Args:
            exp: ``Experience`` with [B, ...] leaves.
            state: the train streams' states (``()`` if feed-forward).
        Returns:
            ``PolicyStep(action=mu(s) [B, ...], state, info=SarsaInfo)``
            whose ``target_critic`` is zeros.
        """
        return self._train_step(exp, state,
                                with_target=self._streams.recurrent)

    def bootstrap_step(self, exp: Experience, state: Nest) -> PolicyStep:
        """Only the target critic at (s_t, a_t) (the last row).

        The critic and actor terms of that row are masked anyway.

        Args:
            exp: ``Experience`` with [B, ...] leaves.
            state: the train streams' states (``()`` if feed-forward).
        Returns:
            ``PolicyStep(action=a_t, state, info=SarsaInfo)`` whose
            ``critic`` and ``actor_loss`` are zeros.
        """
        step = self._streams.step(state)
        target_q, _ = step('target_critic', self._target_critic_network)(
            (exp.observation, exp.action))
        zeros = tf.zeros_like(target_q)
        return PolicyStep(action=exp.action,
                          state=step.state,
                          info=SarsaInfo(critic=zeros,
                                         target_critic=tf.stop_gradient(
                                             target_q),
                                         actor_loss=zeros))

    def _train_step(self, exp, state, with_target):
        """``train_step`` (with the target value iff ``with_target``)."""
        observation = exp.observation
        step = self._streams.step(state)
        q, _ = step('critic', self._critic_network)((observation, exp.action))
        if with_target:
            target_q, _ = step('target_critic', self._target_critic_network)(
                (observation, exp.action))
        else:
            target_q = tf.zeros_like(q)
        action, _ = step('actor', self._actor_network)(observation)
        actor_loss = actor_dqda_loss(
            step('actor_critic', self._critic_network), observation, action,
            self._dqda_clipping)
        return PolicyStep(action=action,
                          state=step.state,
                          info=SarsaInfo(
                              critic=q,
                              target_critic=tf.stop_gradient(target_q),
                              actor_loss=actor_loss))

    def calc_loss(self, training_info: TrainingInfo) -> LossInfo:
        """SARSA TD loss (rows 0..T-2, last row padded) plus actor loss.

        Args:
            training_info: ``TrainingInfo`` with [T, B, ...] leaves and
                ``info`` a ``SarsaInfo``.
        Returns:
            ``LossInfo(loss [T, B], extra=SarsaLossInfo)``.
        """
        info = training_info.info
        target = one_step_td_target(training_info.reward[1:],
                                    training_info.discount[1:],
                                    info.target_critic[1:], self._gamma)
        critic_loss = pad_last_row(
            self._td_error_loss_fn(target, info.critic[:-1]))
        td_error = target - info.critic[:-1]
        return LossInfo(loss=critic_loss + info.actor_loss,
                        extra=SarsaLossInfo(critic=critic_loss,
                                            actor=info.actor_loss,
                                            q=info.critic,
                                            td_error=pad_last_row(td_error)))

    def after_train(self, training_info: TrainingInfo) -> None:
        """Soft-updates the target critic (every target_update_period).

        Args:
            training_info: the ``TrainingInfo`` trained on (unused).
        """
        del training_info
        self._target_updater()
