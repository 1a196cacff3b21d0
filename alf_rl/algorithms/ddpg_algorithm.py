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
  reset to 0 at FIRST steps by the driver) rather than in a variable like
  ``alf_rl.ops.target_ops.OUProcess``: the batch size is unknown when the
  algorithm is built, and a state follows the environments exactly.
* No L2 weight decay on the critic, no batch normalization; the actions
  enter the critic at its input (``CriticNetwork``'s joint MLP), not at the
  second layer; defaults follow Stable-Baselines3 (tau 0.005).
* ``num_critic_replicas > 1`` trains several critics and bootstraps from
  the minimum of their targets (clipped double-Q, as TD3); the actor follows
  the first critic.

Only feed-forward networks and bounded continuous actions are supported.
"""

import gin
import numpy as np
import tensorflow as tf

from alf_rl import specs as alf_specs
from alf_rl.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from alf_rl.data_structures import LossInfo, PolicyStep, namedtuple
from alf_rl.networks import ActorNetwork, CriticNetwork
from alf_rl.ops.losses import element_wise_squared_loss
from alf_rl.ops.target_ops import PeriodicSoftUpdate
from alf_rl.utils import nest as nest_utils
from alf_rl.utils.common import (check_feed_forward, make_stateless_seed,
                                 ou_noise_state_spec)

DdpgRolloutState = namedtuple(
    'DdpgRolloutState',
    [
        'ou_noise',  # nest like action_spec of [B, ...] float32: OU process
        # value in half-range units ('ou' exploration only, else ())
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


def one_step_td_target(reward_tp1, discount_tp1, target_value_tp1, gamma):
    """y_t = r_{t+1} + gamma * discount_{t+1} * V'(s_{t+1}).

    Args:
        reward_tp1: [T-1, B] float32, rewards arriving with steps 1..T-1.
        discount_tp1: [T-1, B] float32, 0 on termination (gamma excluded).
        target_value_tp1: [T-1, B] float32 target value of steps 1..T-1.
        gamma: discount factor.
    Returns:
        [T-1, B] float32 targets (gradient stopped).
    """
    return tf.stop_gradient(reward_tp1 +
                            gamma * discount_tp1 * target_value_tp1)


def dqda_loss(action, dqda, dqda_clipping=None):
    """Deterministic policy gradient as a loss: ``0.5 * |sg(a + dqda) - a|^2``.

    Its gradient with respect to ``a`` is ``-dqda`` (ascend Q), and the
    stopped gradient keeps the critic out of the actor's loss. Its value is
    ``0.5 * |dqda|^2``, a measure of how far the actor is from a local
    maximum of Q.

    Args:
        action: nest of [B, ...] float32, ``mu(s)`` (differentiable).
        dqda: matching nest of [B, ...] float32, ``dQ/da`` at ``action``.
        dqda_clipping: optional bound on each entry of ``dqda``.
    Returns:
        [B] float32, summed over action entries.
    """

    def _leaf(a, g):
        if dqda_clipping is not None:
            g = tf.clip_by_value(g, -dqda_clipping, dqda_clipping)
        loss = 0.5 * tf.square(tf.stop_gradient(a + g) - a)
        return tf.reduce_sum(tf.reshape(loss, [tf.shape(loss)[0], -1]), -1)

    return tf.add_n(tf.nest.flatten(
        tf.nest.map_structure(_leaf, action, dqda)))


def ou_step(x, damping, stddev, seed):
    """One Ornstein-Uhlenbeck step: ``x + damping * (0 - x) + stddev * N``.

    Args:
        x: [B, ...] float32 current value.
        damping: theta, the pull towards 0.
        stddev: sigma of the innovation.
        seed: [2] int32 stateless seed.
    Returns:
        [B, ...] float32 next value.
    """
    noise = tf.random.stateless_normal(tf.shape(x), seed, stddev=stddev)
    return x * (1.0 - damping) + noise


def half_range(spec):
    """[*spec.shape] float32 constant ``(maximum - minimum) / 2``."""
    shape = spec.shape.as_list()
    low = np.broadcast_to(np.asarray(spec.minimum, np.float32), shape)
    high = np.broadcast_to(np.asarray(spec.maximum, np.float32), shape)
    return tf.constant((high - low) / 2., tf.float32)


def check_exploration_args(name, exploration_noise, noise_stddev):
    """Validates exploration settings shared by DDPG, TD3 and SARSA."""
    if exploration_noise not in ('gaussian', 'ou'):
        raise ValueError("%s: exploration_noise must be 'gaussian' or "
                         "'ou', got %r" % (name, exploration_noise))
    if noise_stddev < 0:
        raise ValueError("%s: noise_stddev must be >= 0, got %r" %
                         (name, noise_stddev))


def add_exploration_noise(action, ou_noise, action_spec, half_ranges, kind,
                          stddev, damping):
    """Adds Gaussian or Ornstein-Uhlenbeck noise scaled by half-ranges.

    Args:
        action: nest of [B, ...] deterministic actions.
        ou_noise: nest like ``action``, the OU processes' state (ignored
            for Gaussian noise).
        action_spec: the action spec nest.
        half_ranges: list (one per action leaf) of half action ranges.
        kind: 'gaussian' or 'ou'.
        stddev: noise scale in units of the half range.
        damping: OU damping (theta).
    Returns:
        ``(noisy action nest, new ou_noise nest or None)``.
    """
    flat_action = tf.nest.flatten(action)
    seeds = leaf_seeds(len(flat_action))
    new_ou = None
    if kind == 'ou':
        noise = [
            ou_step(x, damping, stddev, s)
            for x, s in zip(tf.nest.flatten(ou_noise), seeds)
        ]
        new_ou = tf.nest.pack_sequence_as(action_spec, noise)
    else:
        noise = [
            tf.random.stateless_normal(tf.shape(a), s, stddev=stddev)
            for a, s in zip(flat_action, seeds)
        ]
    noisy = [a + n * r for a, n, r in zip(flat_action, noise, half_ranges)]
    return tf.nest.pack_sequence_as(action_spec, noisy), new_ou


def leaf_seeds(n):
    """``n`` independent [2] int32 stateless seeds (one per action leaf)."""
    if n == 1:
        return [make_stateless_seed()]
    return tf.unstack(
        tf.random.stateless_uniform([n, 2], make_stateless_seed(),
                                    minval=None, maxval=None,
                                    dtype=tf.int32))


def check_continuous_action_spec(action_spec, algorithm_name):
    """Raises ValueError unless every leaf is a bounded float spec."""
    for path, spec in nest_utils.flatten_with_path(action_spec,
                                                   'action_spec'):
        if not (alf_specs.is_continuous(spec) and alf_specs.is_bounded(spec)):
            raise ValueError(
                "%s: %s needs continuous actions (a BoundedTensorSpec with a "
                "float dtype), got %s; use a discrete-action method (DQN, "
                "SAC with a categorical actor) for integer actions" %
                (path, algorithm_name, spec))


@gin.configurable
class DdpgAlgorithm(OffPolicyAlgorithm):
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
        td_errors_loss_fn: ``(target, prediction) -> elementwise loss``.
        dqda_clipping: optional bound on each entry of dQ/da.
        actor_optimizer: ``tf_keras`` optimizer of the actor (None: the
            algorithm's ``optimizer``).
        critic_optimizer: ``tf_keras`` optimizer of the critics (None: the
            algorithm's ``optimizer``).
        name: module name.
        **kwargs: passed to ``OffPolicyAlgorithm`` (``optimizer``,
            gradient clipping, reward shaping, observation transformers).

    Raises:
        ValueError: discrete or unbounded action specs, recurrent networks,
            an unknown ``exploration_noise``, or bad numbers.
    """

    def __init__(self,
                 observation_spec,
                 action_spec,
                 actor_network_ctor=ActorNetwork,
                 critic_network_ctor=CriticNetwork,
                 num_critic_replicas=1,
                 gamma=0.99,
                 tau=0.005,
                 target_update_period=1,
                 exploration_noise='gaussian',
                 noise_stddev=0.1,
                 ou_damping=0.15,
                 td_errors_loss_fn=element_wise_squared_loss,
                 dqda_clipping=None,
                 actor_optimizer=None,
                 critic_optimizer=None,
                 name='DdpgAlgorithm',
                 **kwargs):
        check_continuous_action_spec(action_spec, name)
        check_exploration_args(name, exploration_noise, noise_stddev)
        if num_critic_replicas < 1:
            raise ValueError("%s: num_critic_replicas must be >= 1, got %r" %
                             (name, num_critic_replicas))
        actor_network = actor_network_ctor(observation_spec, action_spec)
        critic_networks = [
            critic_network_ctor((observation_spec, action_spec))
            for _ in range(num_critic_replicas)
        ]
        check_feed_forward(name, [actor_network] + critic_networks)
        if exploration_noise == 'ou':
            rollout_state_spec = DdpgRolloutState(
                ou_noise=ou_noise_state_spec(action_spec))
        else:
            rollout_state_spec = DdpgRolloutState()
        super().__init__(observation_spec,
                         action_spec,
                         train_state_spec=(),
                         rollout_state_spec=rollout_state_spec,
                         predict_state_spec=(),
                         name=name,
                         **kwargs)
        self._actor_network = actor_network
        self._critic_networks = critic_networks
        self._target_actor_network = actor_network.copy(
            name='target_actor_network')
        self._target_critic_networks = [
            c.copy(name='target_critic_network%d' % i)
            for i, c in enumerate(critic_networks)
        ]
        sources, targets = [], []
        for source, target in zip(
                [actor_network] + critic_networks,
                [self._target_actor_network] + self._target_critic_networks):
            sources.extend(source.trainable_variables)
            targets.extend(target.trainable_variables)
        # Copies the weights now, then soft-updates in after_train.
        self._target_updater = PeriodicSoftUpdate(targets, sources, tau,
                                                  target_update_period)
        self._gamma = gamma
        self._exploration_noise = exploration_noise
        self._noise_stddev = noise_stddev
        self._ou_damping = ou_damping
        self._td_errors_loss_fn = td_errors_loss_fn
        self._dqda_clipping = dqda_clipping
        self._half_range = [
            half_range(s) for s in tf.nest.flatten(action_spec)
        ]
        self._actor_optimizer = actor_optimizer
        self._critic_optimizer = critic_optimizer
        if actor_optimizer is not None:
            self.add_optimizer(actor_optimizer, [actor_network])
        if critic_optimizer is not None:
            self.add_optimizer(critic_optimizer, critic_networks)

    def _trainable_attributes_to_ignore(self):
        # The updater holds the target (and source) variables too.
        return [
            '_target_actor_network', '_target_critic_networks',
            '_target_updater'
        ]

    # ------------------------------------------------------------ helpers
    def _scaled(self, fn, nest):
        """Maps ``fn(leaf, half_range)`` over a nest like ``action_spec``."""
        flat = [fn(x, r) for x, r in zip(tf.nest.flatten(nest),
                                         self._half_range)]
        return tf.nest.pack_sequence_as(self._action_spec, flat)

    def _target_action(self, observation):
        """The action the target critics are evaluated at: ``mu'(s)``.

        Args:
            observation: nest of [B, ...].
        Returns:
            nest like ``action_spec`` of [B, ...] float32.
        """
        action, _ = self._target_actor_network(observation)
        return action

    def _target_value(self, observation):
        """``mu'(s)`` and the smallest target critic's value there.

        Args:
            observation: nest of [B, ...].
        Returns:
            ``(target action like action_spec [B, ...], target Q [B])``.
        """
        target_action = self._target_action(observation)
        target_q = tf.reduce_min(tf.stack([
            c((observation, target_action))[0]
            for c in self._target_critic_networks
        ], axis=-1), axis=-1)
        return target_action, target_q

    # ------------------------------------------------------------ steps
    def predict(self, time_step, state):
        """Greedy action ``mu(s)``.

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: ``()``.
        Returns:
            ``PolicyStep(action [B, ...] inside the spec, (), ())``.
        """
        action, _ = self._actor_network(time_step.observation)
        action = alf_specs.cast_and_clip_to_spec(action, self._action_spec)
        return PolicyStep(action=action, state=())

    def rollout(self, time_step, state):
        """Exploration action ``clip(mu(s) + noise)``.

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: ``DdpgRolloutState`` with [B, ...] leaves.
        Returns:
            ``PolicyStep(action [B, ...], DdpgRolloutState, info=())``.
        """
        action, _ = self._actor_network(time_step.observation)
        action, ou_noise = add_exploration_noise(
            action, state.ou_noise, self._action_spec, self._half_range,
            self._exploration_noise, self._noise_stddev, self._ou_damping)
        if ou_noise is not None:
            state = DdpgRolloutState(ou_noise=ou_noise)
        action = alf_specs.cast_and_clip_to_spec(action, self._action_spec)
        return PolicyStep(action=action, state=state)

    def train_step(self, exp, state):
        """Critic values, target values and the actor's dqda loss.

        Args:
            exp: ``Experience`` with [B, ...] leaves (``exp.action`` the
                action taken).
            state: ``()``.
        Returns:
            ``PolicyStep(action=mu(s) [B, ...], state=(), info=DdpgInfo)``.
        """
        observation = exp.observation
        q = tf.stack(
            [c((observation, exp.action))[0] for c in self._critic_networks],
            axis=-1)
        _, target_q = self._target_value(observation)

        action, _ = self._actor_network(observation)
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(action)
            q_pi, _ = self._critic_networks[0]((observation, action))
        dqda = tape.gradient(q_pi, action)
        actor_loss = dqda_loss(action, dqda, self._dqda_clipping)
        return PolicyStep(action=action,
                          state=(),
                          info=DdpgInfo(critic=q,
                                        target_critic=tf.stop_gradient(
                                            target_q),
                                        actor_loss=actor_loss))

    def bootstrap_step(self, exp, state):
        """Only the target value at s_t (the last row of a sequence).

        The critic and actor terms of that row are masked anyway; skipping
        them (and their gradients) halves the work of an update on 2-step
        sequences. Same structure as ``train_step``'s, zeros elsewhere.

        Args:
            exp: ``Experience`` with [B, ...] leaves.
            state: ``()``.
        Returns:
            ``PolicyStep(action=target action [B, ...], state=(),
            info=DdpgInfo)`` with ``critic`` [B, n] and ``actor_loss`` [B]
            zeros.
        """
        target_action, target_q = self._target_value(exp.observation)
        zeros = tf.zeros_like(target_q)
        return PolicyStep(
            action=target_action,
            state=(),
            info=DdpgInfo(critic=tf.stack(
                [zeros] * len(self._critic_networks), axis=-1),
                          target_critic=tf.stop_gradient(target_q),
                          actor_loss=zeros))

    def calc_loss(self, training_info):
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
        critic_loss = tf.reduce_sum(
            self._td_errors_loss_fn(target[..., None], info.critic[:-1]), -1)
        td_error = target - info.critic[:-1, :, 0]

        def _pad(x):
            return tf.concat([x, tf.zeros_like(x[:1])], axis=0)

        critic_loss = _pad(critic_loss)
        actor_loss = info.actor_loss
        return LossInfo(loss=critic_loss + actor_loss,
                        extra=DdpgLossInfo(critic=critic_loss,
                                           actor=actor_loss,
                                           q=info.critic[..., 0],
                                           td_error=_pad(td_error)))

    def after_train(self, training_info):
        """Soft-updates the target networks (every target_update_period)."""
        del training_info
        self._target_updater()
