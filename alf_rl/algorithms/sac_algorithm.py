"""Soft Actor-Critic (SAC), for continuous and discrete actions.

Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications"
(arXiv:1812.05905): a stochastic actor maximizing ``Q - alpha log pi``, twin
Q critics trained towards the soft TD target of their slowly updated target
copies (clipped double Q), and a temperature ``alpha`` tuned automatically so
that the policy's entropy stays near ``target_entropy``.

The variant is picked from the action spec:

* continuous (every action leaf a float spec): the actor is a tanh-squashed
  Gaussian (``ActorDistributionNetwork`` with ``NormalProjectionNetwork(
  scale_distribution=True, state_dependent_std=True)``), critics are
  ``CriticNetwork``s ``Q(s, a)``; the actor gradient is the reparameterized
  ``d/dtheta [alpha log pi(a~|s) - min_i Q_i(s, a~)]``.
* discrete (one scalar bounded integer action, as ALF's ``sac_cart_pole`` and
  Christodoulou 2019, "Soft Actor-Critic for Discrete Action Settings"): the
  actor is a categorical, critics are ``QNetwork``s giving ``Q(s, .)``;
  expectations over actions are computed exactly:
  ``V(s) = sum_a pi(a|s) (Q(s, a) - alpha log pi(a|s))`` and the actor loss is
  ``sum_a pi(a|s) (alpha log pi(a|s) - stop_gradient(min_i Q_i(s, a)))``.

Deviations from the paper:

* No separate state-value network (as in the paper's second version and in
  every modern implementation).
* The temperature loss is ``-log_alpha * (log pi + target_entropy)`` (as
  SB3/ALF: gradient descent on ``log alpha`` instead of ``alpha``).
* Actor and temperature losses are averaged over the same replayed steps as
  the critic loss (all steps of a sequence but its last and LAST steps).
* The actor's gradient reaches only the actor: ``dQ/da`` is computed with
  an inner tape and stopped (``Q_i`` variables get no actor-loss gradient).
* Default discrete ``target_entropy`` (ALF's choice, not the
  ``0.98 log |A|`` of Christodoulou 2019, which keeps the policy almost
  uniform): the entropy of a policy that gives probability 0.99 to one action
  and spreads 0.01 over the others, see ``default_target_entropy``.
* Feed-forward networks only (a recurrent network raises ``ValueError``).

With ``entropy_target_ctor``, an ``EntropyTargetAlgorithm`` replaces the
temperature loss: ``alpha`` is its (non-trainable) weight, moved once per
update by its staged controller from the batch's entropy estimates, and the
target entropy is its own (``entropy_target_algorithm.default_target_entropy``
unless set on it).
"""

import functools

import gin
import numpy as np
import tensorflow as tf

from alf_rl import specs as alf_specs
from alf_rl.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from alf_rl.data_structures import LossInfo, PolicyStep, namedtuple
from alf_rl.networks import (ActorDistributionNetwork, CriticNetwork,
                             NormalProjectionNetwork, QNetwork)
from alf_rl.ops import distributions as dist_ops
from alf_rl.ops.losses import element_wise_squared_loss
from alf_rl.ops.target_ops import PeriodicSoftUpdate
from alf_rl.utils.common import (check_feed_forward, make_stateless_seed,
                                 valid_step_mask)

SacInfo = namedtuple(
    'SacInfo',
    [
        'critic1',  # [B] float32 Q1(s_t, a_t) of the replayed action
        'critic2',  # [B] float32 Q2(s_t, a_t)
        'target_value',  # [B] float32 soft V of the target critics at s_t
        'actor_loss',  # [B] float32 per-step actor loss (value: alpha logpi-Q)
        'alpha_loss',  # [B] float32 per-step temperature loss
        'entropy',  # [B] float32 policy entropy estimate at s_t
    ],
    default_value=())

SacLossInfo = namedtuple(
    'SacLossInfo',
    [
        'critic',  # [T, B] float32 sum of both critics' TD losses
        'actor',  # [T, B] float32
        'alpha',  # [T, B] float32 temperature loss
        'entropy',  # [T, B] float32 policy entropy estimate
        'temperature',  # [] float32 alpha = exp(log_alpha)
        'td_error',  # [T, B] float32 mean of both critics' target - Q
        # (0 on the last row; its |.| is the prioritized-replay priority)
    ],
    default_value=())


# ---------------------------------------------------------------- math
def soft_td_target(reward_t, discount_t, value_t, gamma):
    """Soft TD target of the previous step: ``r_t + gamma d_t V(s_t)``.

    Args:
        reward_t: [T, B] float32, reward arriving with step t.
        discount_t: [T, B] float32, 0 where step t terminated the episode.
        value_t: [T, B] float32, soft state value of the target critics at
            step t (already includes ``- alpha log pi``).
        gamma: discount factor.
    Returns:
        [T, B] float32 targets for Q(s_{t-1}, a_{t-1}), gradient stopped.
    """
    return tf.stop_gradient(reward_t + gamma * discount_t * value_t)


def discrete_soft_value(probs, log_probs, q_values, alpha):
    """Exact soft value of a categorical policy.

    ``V(s) = sum_a pi(a|s) (Q(s, a) - alpha log pi(a|s))``.

    Args:
        probs: [B, n] float32 pi(.|s).
        log_probs: [B, n] float32 log pi(.|s).
        q_values: [B, n] float32 Q(s, .).
        alpha: [] float32 temperature.
    Returns:
        [B] float32.
    """
    return tf.reduce_sum(probs * (q_values - alpha * log_probs), axis=-1)


def discrete_actor_loss(probs, log_probs, q_values, alpha):
    """SAC-discrete actor loss ``sum_a pi (alpha log pi - Q)``.

    ``q_values`` and ``alpha`` are stopped: only the policy is trained.

    Args:
        probs: [B, n] float32 pi(.|s).
        log_probs: [B, n] float32 log pi(.|s).
        q_values: [B, n] float32 Q(s, .) (e.g. the min of twin critics).
        alpha: [] float32 temperature.
    Returns:
        [B] float32.
    """
    q_values = tf.stop_gradient(q_values)
    alpha = tf.stop_gradient(alpha)
    return tf.reduce_sum(probs * (alpha * log_probs - q_values), axis=-1)


def temperature_loss(log_alpha, entropy, target_entropy):
    """``-log_alpha * (log pi + target_entropy) = log_alpha (H - H_target)``.

    Descending it lowers alpha when the entropy exceeds the target and
    raises it otherwise.

    Args:
        log_alpha: [] float32 variable.
        entropy: [B] float32 entropy estimate (``-log pi(a~|s)`` or exact).
        target_entropy: float.
    Returns:
        [B] float32.
    """
    return log_alpha * tf.stop_gradient(entropy - target_entropy)


def default_target_entropy(action_spec):
    """The default entropy target for an action spec.

    Continuous: ``-dim(action)`` summed over leaves (Haarnoja et al. 2018).
    Discrete with n values: the entropy of a policy putting 0.99 on one
    action and 0.01 on the others, computed as ALF did:
    ``0.01 * (log(n - 1) - log(0.01))`` (0.046 nats for n = 2).

    Args:
        action_spec: nest of float specs, or one scalar bounded int spec.
    Returns:
        float.
    """
    flat = tf.nest.flatten(action_spec)
    if len(flat) == 1 and alf_specs.is_discrete(flat[0]):
        n = alf_specs.num_discrete_actions(flat[0])
        min_prob = 0.01
        return float(min_prob * (np.log(max(n - 1, 1)) - np.log(min_prob)))
    return -float(sum(int(np.prod(s.shape.as_list())) for s in flat))


def _action_kind(action_spec):
    """'discrete' or 'continuous'; ValueError for anything else."""
    flat = tf.nest.flatten(action_spec)
    if not flat:
        raise ValueError("SacAlgorithm: empty action_spec %s" % (action_spec, ))
    if len(flat) == 1 and alf_specs.is_discrete(flat[0]):
        spec = flat[0]
        if (alf_specs.is_bounded(spec) and spec.shape.rank == 0
                and spec.dtype.is_integer):
            return 'discrete'
        raise ValueError(
            "SacAlgorithm: a discrete action must be one scalar "
            "BoundedTensorSpec with an integer dtype (its Q values come "
            "from a QNetwork), got %s" % (spec, ))
    if all(alf_specs.is_continuous(s) for s in flat):
        return 'continuous'
    raise ValueError(
        "SacAlgorithm: expected either float action specs (continuous SAC) "
        "or one scalar bounded integer spec (discrete SAC), got %s" %
        (action_spec, ))


def _flat_sum(nest):
    """Sum of a nest of [B, ...] tensors over everything but the batch dim."""
    return tf.add_n([
        tf.reduce_sum(tf.reshape(x, [tf.shape(x)[0], -1]), axis=-1)
        for x in tf.nest.flatten(nest)
    ])


# ---------------------------------------------------------------- algorithm
@gin.configurable
class SacAlgorithm(OffPolicyAlgorithm):
    """Soft Actor-Critic with twin critics and automatic temperature.

    Args:
        observation_spec: nest of specs of one observation.
        action_spec: nest of float ``BoundedTensorSpec`` (continuous SAC, a
            tanh-squashed actor needs finite bounds) or one scalar bounded
            integer spec (discrete SAC).
        actor_network_ctor: ``(observation_spec, action_spec) -> network``
            returning a nest of action distributions. Default: an
            ``ActorDistributionNetwork`` whose continuous leaves use the
            tanh-squashed, state-dependent-std ``NormalProjectionNetwork``
            (and categoricals for a discrete action).
        critic_network_ctor: builds one critic; called as
            ``ctor((observation_spec, action_spec))`` -> [B] Q(s, a) for
            continuous actions (default ``CriticNetwork``) and as
            ``ctor(observation_spec, action_spec)`` -> [B, n] Q(s, .) for a
            discrete action (default ``QNetwork``). Built twice (twin
            critics); each gets a target copy.
        actor_optimizer: optimizer of the actor (or None: ``optimizer``).
        critic_optimizer: optimizer of both critics (or None).
        alpha_optimizer: optimizer of ``log_alpha`` (or None); not with
            ``entropy_target_ctor``.
        gamma: discount factor.
        tau: target soft-update rate.
        target_update_period: update the targets every this many updates.
        initial_log_alpha: initial ``log alpha``.
        target_entropy: entropy target of the temperature; None uses
            ``default_target_entropy(action_spec)``. Not with
            ``entropy_target_ctor`` (set the target on that algorithm).
        entropy_target_ctor: optional ``(action_spec) ->
            EntropyTargetAlgorithm`` replacing the gradient-tuned
            temperature (``initial_log_alpha`` is then unused); its
            ``log_alpha`` is checkpointed with this algorithm.
        td_error_loss_fn: ``(target, prediction) -> loss``, element-wise.
        optimizer: default optimizer for variables not given one above.
        name: module name.
        **kwargs: passed to ``OffPolicyAlgorithm`` (reward shaping,
            observation transformers, gradient clipping).

    Raises:
        ValueError: an action spec that is neither continuous nor one scalar
            bounded integer; recurrent networks; bad gamma/tau/period.
    """

    def __init__(self,
                 observation_spec,
                 action_spec,
                 actor_network_ctor=None,
                 critic_network_ctor=None,
                 actor_optimizer=None,
                 critic_optimizer=None,
                 alpha_optimizer=None,
                 gamma=0.99,
                 tau=0.005,
                 target_update_period=1,
                 initial_log_alpha=0.0,
                 target_entropy=None,
                 td_error_loss_fn=element_wise_squared_loss,
                 entropy_target_ctor=None,
                 optimizer=None,
                 name='SacAlgorithm',
                 **kwargs):
        kind = _action_kind(action_spec)
        if entropy_target_ctor is not None and (
                alpha_optimizer is not None or target_entropy is not None):
            raise ValueError(
                "SacAlgorithm: with entropy_target_ctor the temperature is "
                "set by the EntropyTargetAlgorithm: alpha_optimizer and "
                "target_entropy must be None (set target_entropy on the "
                "EntropyTargetAlgorithm), got alpha_optimizer=%s, "
                "target_entropy=%s" % (alpha_optimizer, target_entropy))
        if not 0.0 <= gamma <= 1.0:
            raise ValueError("SacAlgorithm: gamma must be in [0, 1], got %s" %
                             gamma)
        if actor_network_ctor is None:
            actor_network_ctor = functools.partial(
                ActorDistributionNetwork,
                continuous_projection_net_ctor=functools.partial(
                    NormalProjectionNetwork,
                    scale_distribution=True,
                    state_dependent_std=True))
        actor_network = actor_network_ctor(observation_spec, action_spec)
        if kind == 'continuous':
            critic_network_ctor = critic_network_ctor or CriticNetwork
            critic1 = critic_network_ctor((observation_spec, action_spec))
        else:
            critic_network_ctor = critic_network_ctor or QNetwork
            critic1 = critic_network_ctor(observation_spec, action_spec)
        critic2 = critic1.copy(name='critic2')
        check_feed_forward('SacAlgorithm', (actor_network, critic1))
        super().__init__(observation_spec,
                         action_spec,
                         optimizer=optimizer,
                         name=name,
                         **kwargs)
        self._discrete = kind == 'discrete'
        self._actor_network = actor_network
        self._critic1 = critic1
        self._critic2 = critic2
        self._target_critic1 = critic1.copy(name='target_critic1')
        self._target_critic2 = critic2.copy(name='target_critic2')
        if entropy_target_ctor is not None:
            self._entropy_target = entropy_target_ctor(action_spec)
            # Non-trainable: moved by the entropy target's controller.
            self._log_alpha = self._entropy_target.log_alpha
            self._target_entropy = self._entropy_target.target_entropy
        else:
            self._entropy_target = None
            self._log_alpha = tf.Variable(float(initial_log_alpha),
                                          dtype=tf.float32,
                                          name='log_alpha')
            self._target_entropy = (default_target_entropy(action_spec)
                                    if target_entropy is None else
                                    float(target_entropy))
        self._gamma = float(gamma)
        self._td_error_loss_fn = td_error_loss_fn
        if actor_optimizer is not None:
            self.add_optimizer(actor_optimizer, [actor_network])
        if critic_optimizer is not None:
            self.add_optimizer(critic_optimizer, [critic1, critic2])
        if alpha_optimizer is not None:
            self.add_optimizer(alpha_optimizer, [self._log_alpha])
        # Copies the critics into the targets now.
        self._target_updater = PeriodicSoftUpdate(
            self._target_critic1.variables + self._target_critic2.variables,
            critic1.variables + critic2.variables,
            tau=tau,
            period=target_update_period)
        if self._discrete:
            spec = tf.nest.flatten(action_spec)[0]
            self._num_actions = alf_specs.num_discrete_actions(spec)
            self._action_minimum = int(spec.minimum)

    def _trainable_attributes_to_ignore(self):
        # The updater references both target and source variables.
        return ['_target_critic1', '_target_critic2', '_target_updater']

    @property
    def target_entropy(self):
        """float: the entropy the temperature steers towards."""
        return self._target_entropy

    @property
    def log_alpha(self):
        """tf.Variable []: log of the temperature (the entropy target's,
        non-trainable, when there is one)."""
        return self._log_alpha

    @property
    def entropy_target(self):
        """The ``EntropyTargetAlgorithm`` setting alpha, or None."""
        return self._entropy_target

    def _temperature_loss(self, entropy):
        """[B] temperature loss; zeros when an entropy target sets alpha."""
        if self._entropy_target is not None:
            return tf.zeros_like(entropy)
        return temperature_loss(self._log_alpha, entropy,
                                self._target_entropy)

    # ------------------------------------------------------------ steps
    def predict(self, time_step, state):
        """Greedy action: the actor's mode (``tanh(mean)`` scaled, argmax).

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: ``()``.
        Returns:
            ``PolicyStep(action [B, ...], (), ())``.
        """
        dist, _ = self._actor_network(time_step.observation)
        action = alf_specs.cast_and_clip_to_spec(dist_ops.mode(dist),
                                                 self.action_spec)
        return PolicyStep(action=action, state=state)

    def rollout(self, time_step, state):
        """Exploration action sampled from the actor.

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: ``()``.
        Returns:
            ``PolicyStep(action [B, ...], (), info=())``.
        """
        dist, _ = self._actor_network(time_step.observation)
        action = dist_ops.sample_action_distribution(
            dist, seed=make_stateless_seed())
        action = alf_specs.cast_and_clip_to_spec(action, self.action_spec)
        return PolicyStep(action=action, state=state)

    def train_step(self, exp, state):
        """Recomputes critics, target value and actor/alpha losses at s_t.

        Args:
            exp: ``Experience`` with [B, ...] leaves (``exp.action`` is the
                replayed action a_t).
            state: ``()``.
        Returns:
            ``PolicyStep(action [B, ...] a fresh sample, (), SacInfo)``.
        """
        if self._discrete:
            return self._discrete_train_step(exp, state)
        return self._continuous_train_step(exp, state)

    def _continuous_train_step(self, exp, state):
        observation = exp.observation
        alpha = tf.stop_gradient(tf.exp(self._log_alpha))
        dist, _ = self._actor_network(observation)
        # Reparameterized sample; log_prob is taken on the very sample
        # tensor so that TFP's bijector cache gives the pre-tanh value
        # instead of atanh(tanh(x)), which saturates in float32.
        action = dist_ops.sample_action_distribution(
            dist, seed=make_stateless_seed())
        log_pi = dist_ops.log_prob(dist, action)

        critic_input_action = dist_ops.cast_to_spec(exp.action,
                                                    self.action_spec)
        q1, _ = self._critic1((observation, critic_input_action))
        q2, _ = self._critic2((observation, critic_input_action))

        target_value = self._continuous_target_value(observation, action,
                                                     log_pi, alpha)

        # dQ/da with the critics' variables out of the outer tape's reach:
        # only stop_gradient(dqda) enters the actor loss.
        flat_action = tf.nest.flatten(action)
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(flat_action)
            a = tf.nest.pack_sequence_as(action, flat_action)
            q_new = tf.minimum(self._critic1((observation, a))[0],
                               self._critic2((observation, a))[0])
        dqda = tf.nest.map_structure(tf.stop_gradient,
                                     tape.gradient(q_new, flat_action))
        # Value alpha log pi - Q, gradient alpha dlogpi - dQ/da da/dtheta.
        surrogate = _flat_sum([
            d * (x - tf.stop_gradient(x)) for d, x in zip(dqda, flat_action)
        ])
        actor_loss = alpha * log_pi - (tf.stop_gradient(q_new) + surrogate)
        entropy = -tf.stop_gradient(log_pi)
        alpha_loss = self._temperature_loss(entropy)
        return PolicyStep(action=action,
                          state=state,
                          info=SacInfo(critic1=q1,
                                       critic2=q2,
                                       target_value=target_value,
                                       actor_loss=actor_loss,
                                       alpha_loss=alpha_loss,
                                       entropy=entropy))

    def _all_log_probs(self, dist):
        """[B, n] log pi(a|s) of every action value ``minimum + i``."""
        values = tf.range(self._num_actions, dtype=tf.int64)
        values = values + self._action_minimum
        values = tf.cast(values, tf.as_dtype(dist.dtype))
        # [n, 1] broadcasts against the batch shape [B] -> [n, B].
        log_probs = dist.log_prob(values[:, None])
        return tf.transpose(log_probs)

    def _discrete_train_step(self, exp, state):
        observation = exp.observation
        alpha = tf.stop_gradient(tf.exp(self._log_alpha))
        dist, _ = self._actor_network(observation)
        dist = tf.nest.flatten(dist)[0]
        log_probs = self._all_log_probs(dist)  # [B, n]
        probs = tf.exp(log_probs)
        action = dist.sample(seed=make_stateless_seed())

        index = tf.cast(tf.nest.flatten(exp.action)[0],
                        tf.int64) - self._action_minimum
        q1_all, _ = self._critic1(observation)
        q2_all, _ = self._critic2(observation)
        q1 = tf.gather(q1_all, index, axis=-1, batch_dims=1)
        q2 = tf.gather(q2_all, index, axis=-1, batch_dims=1)

        target_value = self._discrete_target_value(observation, probs,
                                                   log_probs, alpha)

        actor_loss = discrete_actor_loss(probs, log_probs,
                                         tf.minimum(q1_all, q2_all), alpha)
        entropy = tf.stop_gradient(-tf.reduce_sum(probs * log_probs, -1))
        alpha_loss = self._temperature_loss(entropy)
        action = alf_specs.cast_and_clip_to_spec(
            tf.nest.pack_sequence_as(self.action_spec, [action]),
            self.action_spec)
        return PolicyStep(action=action,
                          state=state,
                          info=SacInfo(critic1=q1,
                                       critic2=q2,
                                       target_value=target_value,
                                       actor_loss=actor_loss,
                                       alpha_loss=alpha_loss,
                                       entropy=entropy))

    def _continuous_target_value(self, observation, action, log_pi, alpha):
        """[B] soft value min_i Q'_i(s, a) - alpha log pi(a|s), no gradient."""
        target_q1, _ = self._target_critic1((observation, action))
        target_q2, _ = self._target_critic2((observation, action))
        return tf.stop_gradient(
            tf.minimum(target_q1, target_q2) - alpha * log_pi)

    def _discrete_target_value(self, observation, probs, log_probs, alpha):
        """[B] soft value sum_a pi (min_i Q'_i - alpha log pi), no gradient."""
        target_q1, _ = self._target_critic1(observation)
        target_q2, _ = self._target_critic2(observation)
        return tf.stop_gradient(
            discrete_soft_value(probs, log_probs,
                                tf.minimum(target_q1, target_q2), alpha))

    def bootstrap_step(self, exp, state):
        """Only the target value at s_t (the last row of a sequence).

        Skips the critic, actor and temperature terms, whose losses are
        masked on that row anyway: about half the compute of an update
        with 2-step sequences.

        Args:
            exp: ``Experience`` with [B, ...] leaves.
            state: ``()``.
        Returns:
            ``PolicyStep`` with ``SacInfo`` whose fields other than
            ``target_value`` are zeros.
        """
        observation = exp.observation
        alpha = tf.stop_gradient(tf.exp(self._log_alpha))
        dist, _ = self._actor_network(observation)
        if self._discrete:
            dist = tf.nest.flatten(dist)[0]
            log_probs = self._all_log_probs(dist)
            target_value = self._discrete_target_value(
                observation, tf.exp(log_probs), log_probs, alpha)
            action = tf.nest.pack_sequence_as(
                self.action_spec, [dist.sample(seed=make_stateless_seed())])
            action = alf_specs.cast_and_clip_to_spec(action, self.action_spec)
        else:
            action = dist_ops.sample_action_distribution(
                dist, seed=make_stateless_seed())
            log_pi = dist_ops.log_prob(dist, action)
            target_value = self._continuous_target_value(
                observation, action, log_pi, alpha)
        zeros = tf.zeros_like(target_value)
        return PolicyStep(action=action,
                          state=state,
                          info=SacInfo(critic1=zeros,
                                       critic2=zeros,
                                       target_value=target_value,
                                       actor_loss=zeros,
                                       alpha_loss=zeros,
                                       entropy=zeros))

    # ------------------------------------------------------------ loss
    def calc_loss(self, training_info):
        """Critic TD losses on rows 0..T-2, actor and temperature losses.

        Args:
            training_info: ``TrainingInfo`` with [T, B] leaves; ``info`` is
                ``SacInfo``.
        Returns:
            ``LossInfo(loss [T, B], extra=SacLossInfo)``; the last row's
            critic loss is 0 (it only bootstraps; the base masks it).
        """
        info = training_info.info
        target = soft_td_target(training_info.reward[1:],
                                training_info.discount[1:],
                                info.target_value[1:], self._gamma)
        critic_loss = (self._td_error_loss_fn(target, info.critic1[:-1]) +
                       self._td_error_loss_fn(target, info.critic2[:-1]))
        td_error = target - 0.5 * (info.critic1[:-1] + info.critic2[:-1])

        def _pad(x):
            return tf.concat([x, tf.zeros_like(x[-1:])], axis=0)

        critic_loss = _pad(critic_loss)
        loss = critic_loss + info.actor_loss + info.alpha_loss
        if self._entropy_target is not None:
            # One controller step per update, on the trained rows' entropy
            # (the last row only bootstraps: its entropy is a zero filler).
            mask = valid_step_mask(training_info.step_type)
            mask = tf.concat([mask[:-1], tf.zeros_like(mask[-1:])], axis=0)
            self._entropy_target.adjust_alpha(info.entropy, mask)
        return LossInfo(loss=loss,
                        extra=SacLossInfo(critic=critic_loss,
                                          actor=info.actor_loss,
                                          alpha=info.alpha_loss,
                                          entropy=info.entropy,
                                          temperature=tf.exp(
                                              self._log_alpha),
                                          td_error=_pad(td_error)))

    def after_train(self, training_info):
        """Soft-updates the target critics (every ``target_update_period``)."""
        del training_info
        self._target_updater()
