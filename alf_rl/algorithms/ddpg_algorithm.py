"""Deep Deterministic Policy Gradient (DDPG).

Lillicrap et al. 2016, "Continuous control with deep reinforcement
learning" (arXiv:1509.02971): a deterministic actor mu(s) and a critic
Q(s, a), both with slowly tracking target networks. The critic regresses on
the one-step target ``r + gamma * discount * Q'(s', mu'(s'))``; the actor
follows ``dQ/da`` at ``a = mu(s)`` (the deterministic policy gradient).

Deviations from the paper (all configurable):

* Exploration noise is Gaussian by default (``exploration_noise='gaussian'``,
  as in TD3 and Stable-Baselines3); ``'ou'`` gives the paper's
  Ornstein-Uhlenbeck process. Noise standard deviations are relative to the
  half-range ``(maximum - minimum) / 2`` of each action entry (so 0.1 means
  0.1 on a [-1, 1] action, 0.2 on Pendulum's [-2, 2]).
* The OU process lives in the rollout state (one process per environment,
  reset to 0 at FIRST steps by the driver) rather than in a variable: the
  batch size is unknown when the algorithm is built, and a state follows
  the environments exactly.
* No L2 weight decay on the critic, no batch normalization; the actions
  enter the critic at its input (``CriticNetwork``'s joint MLP), not at the
  second layer; defaults follow Stable-Baselines3 (tau 0.005).
* ``num_critic_replicas > 1`` trains several critics and bootstraps from
  the minimum of their targets (clipped double-Q, as TD3); the actor follows
  the first critic.

Recurrent actor and critics (``ActorNetwork`` with
``encoding_network_ctor=LSTMEncodingNetwork``, ``CriticRnnNetwork``) keep
one state per call site (``alf_rl.algorithms.network_streams``): the
actor, the target actor (from the actor's stored state), each critic at
the replayed action (advanced by ``rollout`` at the action taken, and
stored), the first critic at ``mu(s)`` (the actor's loss) and each target
critic (both from the critic's stored state). Then ``first_train_step``
runs the whole ``train_step`` (the targets' states must advance).

Actions must be bounded and continuous.
"""

from typing import Any, Callable, List, Optional, Tuple

import gin
import tensorflow as tf

from alf_rl.algorithms.config_checks import reject_retired_arguments
from alf_rl.algorithms.deterministic_actor import (
    DeterministicActorMixin, ExplorationNoise, actor_dqda_loss,
    check_continuous_action_spec)
from alf_rl.algorithms.network_streams import NetworkStreams, StreamStep
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

DdpgRolloutState = namedtuple(
    'DdpgRolloutState',
    [
        'ou_noise',  # nest like action_spec of [B, ...] float32: OU process
        # value in half-range units ('ou' exploration only, else ())
        'networks',  # {stream: state} of the recurrent networks' rollout
        # streams (see network_streams), else ()
    ],
    default_value=())

DdpgInfo = namedtuple(
    'DdpgInfo',
    [
        'critic',  # [B, num_critics] float32: Q_i(s_t, a_t) of the taken a_t
        'target_critic',  # [B] float32: min_i Q'_i(s_t, mu'(s_t) [+ noise])
        'actor_loss',  # [B] float32: dqda loss at a = mu(s_t)
    ],
    default_value=())

DdpgLossInfo = namedtuple(
    'DdpgLossInfo',
    [
        'critic',  # [T, B] float32 TD loss summed over critics
        'actor',  # [T, B] float32 actor (dqda) loss
        'q',  # [T, B] float32 Q_0(s_t, a_t) (for monitoring)
        'td_error',  # [T, B] float32 y_t - Q_0(s_t, a_t) (replay priority)
    ],
    default_value=())


def _ddpg_streams(actor: Any, critics: List[Any]) -> NetworkStreams:
    """DDPG's state streams (see the module docstring): ``actor`` and
    ``target_actor`` from it; ``critic<i>`` (a rollout stream too) and
    ``target_critic<i>`` from it; ``actor_critic`` from ``critic0``."""
    networks = {'actor': actor, 'target_actor': actor,
                'actor_critic': critics[0]}
    starts = {'actor': 'actor', 'target_actor': 'actor',
              'actor_critic': 'critic0'}
    for i, critic in enumerate(critics):
        for kind in ('critic', 'target_critic'):
            networks['%s%d' % (kind, i)] = critic
            starts['%s%d' % (kind, i)] = 'critic%d' % i
    return NetworkStreams(networks, starts)


@gin.configurable
class DdpgAlgorithm(DeterministicActorMixin, TDErrorPriority,
                    OffPolicyAlgorithm):
    """DDPG (see the module docstring).

    Args:
        observation_spec: nest of specs of one observation.
        action_spec: nest of bounded float specs of one action.
        actor_network_ctor: ``(observation_spec, action_spec) -> network``
            returning a nest of bounded actions (``ActorNetwork``).
        critic_network_ctor: ``((observation_spec, action_spec)) -> network``
            returning [B] Q values (``CriticNetwork``).
        num_critic_replicas: number of critics; > 1 bootstraps from the
            minimum of their target networks (clipped double-Q).
        gamma: discount factor.
        tau: soft target-update rate.
        target_update_period: update the targets every this many updates.
        exploration_noise: ``'gaussian'`` or ``'ou'``.
        noise_stddev: stddev of the exploration noise, in units of the
            action half-range.
        ou_damping: theta of the OU process.
        td_error_loss_fn: ``(target, prediction) -> elementwise loss``.
        dqda_clipping: optional bound on each entry of dQ/da.
        actor_optimizer: ``tf_keras`` optimizer of the actor (None: the
            algorithm's ``optimizer``).
        critic_optimizer: ``tf_keras`` optimizer of the critics (None: the
            algorithm's ``optimizer``).
        name: module name.
        **kwargs: passed to ``OffPolicyAlgorithm`` (``optimizer``,
            gradient clipping, reward shaping, observation transformers).

    Raises:
        ValueError: discrete or unbounded action specs, an unknown
            ``exploration_noise``, or bad numbers.
        TypeError: a retired argument name (``td_errors_loss_fn``).
    """

    has_first_train_step = True  # first_train_step skips the targets

    def __init__(self,
                 observation_spec: Nest,
                 action_spec: Nest,
                 actor_network_ctor: Callable = ActorNetwork,
                 critic_network_ctor: Callable = CriticNetwork,
                 num_critic_replicas: int = 1,
                 gamma: float = 0.99,
                 tau: float = 0.005,
                 target_update_period: int = 1,
                 exploration_noise: str = 'gaussian',
                 noise_stddev: float = 0.1,
                 ou_damping: float = 0.15,
                 td_error_loss_fn: Callable = element_wise_squared_loss,
                 dqda_clipping: Optional[float] = None,
                 actor_optimizer: Optional[Any] = None,
                 critic_optimizer: Optional[Any] = None,
                 name: str = 'DdpgAlgorithm',
                 **kwargs: Any):
        reject_retired_arguments(name, kwargs)
        check_continuous_action_spec(action_spec, name)
        noise = ExplorationNoise(action_spec, exploration_noise,
                                 noise_stddev, ou_damping, name)
        if num_critic_replicas < 1:
            raise ValueError("%s: num_critic_replicas must be >= 1, got %r" %
                             (name, num_critic_replicas))
        actor_network = actor_network_ctor(observation_spec, action_spec)
        critic_networks = [
            critic_network_ctor((observation_spec, action_spec))
            for _ in range(num_critic_replicas)
        ]
        streams = _ddpg_streams(actor_network, critic_networks)
        super().__init__(observation_spec, action_spec, name=name,
                         **streams.state_specs(lambda spec: DdpgRolloutState(
                             ou_noise=noise.ou_state_spec, networks=spec)),
                         **kwargs)
        self._streams = streams
        self._actor_network = actor_network
        self._critic_networks = critic_networks
        self._make_targets(tau, target_update_period)
        self._gamma = gamma
        self._noise = noise
        self._td_error_loss_fn = td_error_loss_fn
        self._dqda_clipping = dqda_clipping
        self._actor_optimizer = actor_optimizer
        for opt, modules in ((actor_optimizer, [actor_network]),
                             (critic_optimizer, critic_networks)):
            if opt is not None:
                self.add_optimizer(opt, modules)

    def _make_targets(self, tau: float, period: int) -> None:
        """Target copies of the actor and critics, and their updater (which
        copies the weights now, then soft-updates in ``after_train``)."""
        self._target_actor_network = TargetNetwork(
            self._actor_network, name='target_actor_network')
        self._target_critic_networks = [
            TargetNetwork(c, name='target_critic_network%d' % i)
            for i, c in enumerate(self._critic_networks)
        ]
        sources, targets = [], []
        for source, target in zip(
                [self._actor_network] + self._critic_networks,
                [self._target_actor_network] + self._target_critic_networks):
            sources.extend(source.trainable_variables)
            targets.extend(target.trainable_variables)
        self._target_updater = PeriodicSoftUpdate(targets, sources, tau,
                                                  period)

    def _target_action(self, step: StreamStep, observation: Nest) -> Nest:
        """The action the target critics are evaluated at: ``mu'(s)``.

        Args:
            step: the ``StreamStep`` of the networks' states.
            observation: nest of [B, ...].
        Returns:
            nest like ``action_spec`` of [B, ...] float32.
        """
        action, _ = step('target_actor',
                         self._target_actor_network)(observation)
        return action

    def _target_value(self, step: StreamStep,
                      observation: Nest) -> Tuple[Nest, tf.Tensor]:
        """``(target action [B, ...], [B] min_i Q'_i there, no gradient)``."""
        target_action = self._target_action(step, observation)
        target_q = tf.reduce_min(tf.stack([
            step('target_critic%d' % i, c)((observation, target_action))[0]
            for i, c in enumerate(self._target_critic_networks)
        ], axis=-1), axis=-1)
        return target_action, tf.stop_gradient(target_q)

    # ------------------------------------------------------------ steps
    def train_step(self, exp: Experience, state: Nest) -> PolicyStep:
        """Critic values, target values and the actor's dqda loss.

        Args:
            exp: ``Experience`` with [B, ...] leaves (``exp.action`` the
                action taken).
            state: the train streams' states (``()`` if feed-forward).
        Returns:
            ``PolicyStep(action=mu(s) [B, ...], state, info=DdpgInfo)``.
        """
        return self._train_step(exp, state, with_target=True)

    def first_train_step(self, exp: Experience,
                         state: Nest) -> PolicyStep:
        """``train_step`` without the target networks (the first row).

        The first row of a sequence is never a bootstrap value, so its
        ``target_critic`` is zeros: no target actor and target critic
        passes on that row (with recurrent networks there are: their
        states advance).

        Args:
            exp: ``Experience`` with [B, ...] leaves.
            state: the train streams' states (``()`` if feed-forward).
        Returns:
            ``PolicyStep(action=mu(s) [B, ...], state, info=DdpgInfo)``
            whose ``target_critic`` is zeros.
        """
        return self._train_step(exp, state,
                                with_target=self._streams.recurrent)

    def _train_step(self, exp, state, with_target):
        """``train_step`` (with the target value iff ``with_target``)."""
        observation = exp.observation
        step = self._streams.step(state)
        q = tf.stack([
            step('critic%d' % i, c)((observation, exp.action))[0]
            for i, c in enumerate(self._critic_networks)
        ], axis=-1)
        if with_target:
            _, target_q = self._target_value(step, observation)
        else:
            target_q = tf.zeros_like(q[..., 0])
        action, _ = step('actor', self._actor_network)(observation)
        actor_loss = actor_dqda_loss(
            step('actor_critic', self._critic_networks[0]), observation,
            action, self._dqda_clipping)
        return PolicyStep(action=action,
                          state=step.state,
                          info=DdpgInfo(critic=q,
                                        target_critic=target_q,
                                        actor_loss=actor_loss))

    def bootstrap_step(self, exp: Experience, state: Nest) -> PolicyStep:
        """Only the target value at s_t (the last row of a sequence).

        The critic and actor terms of that row are masked anyway; skipping
        them (and their gradients) halves the work of an update on 2-step
        sequences. Same structure as ``train_step``'s, zeros elsewhere.

        Args:
            exp: ``Experience`` with [B, ...] leaves.
            state: the train streams' states (``()`` if feed-forward).
        Returns:
            ``PolicyStep(action=target action [B, ...], state,
            info=DdpgInfo)`` with
            ``critic`` [B, n] and ``actor_loss`` [B] zeros.
        """
        step = self._streams.step(state)
        target_action, target_q = self._target_value(step, exp.observation)
        zeros = tf.zeros_like(target_q)
        return PolicyStep(
            action=target_action,
            state=step.state,
            info=DdpgInfo(critic=tf.stack(
                [zeros] * len(self._critic_networks), axis=-1),
                          target_critic=target_q,
                          actor_loss=zeros))

    def calc_loss(self, training_info: TrainingInfo) -> LossInfo:
        """TD loss of every critic plus the actor loss, [T, B].

        Row t bootstraps from row t+1; the last row is padded with zeros
        (the base masks it).

        Args:
            training_info: ``TrainingInfo`` with [T, B, ...] leaves and
                ``info`` a ``DdpgInfo``.
        Returns:
            ``LossInfo(loss [T, B], extra=DdpgLossInfo)``.
        """
        info = training_info.info
        target = one_step_td_target(training_info.reward[1:],
                                    training_info.discount[1:],
                                    info.target_critic[1:], self._gamma)
        critic_loss = pad_last_row(tf.reduce_sum(
            self._td_error_loss_fn(target[..., None], info.critic[:-1]), -1))
        td_error = target - info.critic[:-1, :, 0]
        actor_loss = info.actor_loss
        return LossInfo(loss=critic_loss + actor_loss,
                        extra=DdpgLossInfo(critic=critic_loss,
                                           actor=actor_loss,
                                           q=info.critic[..., 0],
                                           td_error=pad_last_row(td_error)))

    def after_train(self, training_info: TrainingInfo) -> None:
        """Soft-updates the target networks (every target_update_period).

        Args:
            training_info: the ``TrainingInfo`` trained on (unused).
        """
        del training_info
        self._target_updater()
