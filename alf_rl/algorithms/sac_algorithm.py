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
* Recurrent actor and critics (``ActorDistributionRnnNetwork``,
  ``CriticRnnNetwork``; ``QRnnNetwork`` for discrete SAC) keep one state
  per call site (``alf_rl.algorithms.network_streams``): the actor, each
  critic at the replayed action (also advanced by ``rollout`` at the
  action taken, and stored), each critic at the fresh action, each target
  critic; the last three start from the critic's stored state. Then
  ``first_train_step`` runs the whole ``train_step`` (the target states
  must advance).

With ``entropy_target_ctor``, an ``EntropyTargetAlgorithm`` replaces the
temperature loss: ``alpha`` is its (non-trainable) weight, moved once per
update (in ``after_train``, after the gradients were applied) by its staged
controller from the batch's entropy estimates ``SacInfo.entropy``, and the
target entropy is its own (``entropy_target_algorithm.default_target_entropy``
unless set on it).
"""

import functools
from typing import Any, Callable, Optional, Tuple

import gin
import numpy as np
import tensorflow as tf

from alf_rl import specs as alf_specs
from alf_rl.algorithms.config_checks import (check_unit_interval,
                                             reject_retired_arguments)
from alf_rl.algorithms.network_streams import NetworkStreams, StreamStep
from alf_rl.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from alf_rl.algorithms.replay_training import TDErrorPriority
from alf_rl.data_structures import (Experience, LossInfo, PolicyStep,
                                    TimeStep, TrainingInfo, namedtuple)
from alf_rl.networks import (ActorDistributionNetwork, CriticNetwork,
                             NormalProjectionNetwork, QNetwork)
from alf_rl.networks.target_network import PeriodicSoftUpdate, TargetNetwork
from alf_rl.ops import distributions as dist_ops
from alf_rl.ops.losses import (discrete_soft_actor_loss,
                               element_wise_squared_loss, soft_actor_loss,
                               temperature_loss)
from alf_rl.ops.masks import mask_last_row, pad_last_row
from alf_rl.ops.td_targets import (expected_soft_state_value,
                                   one_step_td_target, soft_state_value)
from alf_rl.utils.common import make_stateless_seed, valid_step_mask

from alf_rl.utils.nest import Nest

SacInfo = namedtuple(
    'SacInfo',
    [
        'critic1',  # [B] float32 Q1(s_t, a_t) of the replayed action
        'critic2',  # [B] float32 Q2(s_t, a_t)
        'target_value',  # [B] float32 soft V of the target critics at s_t
        'actor_loss',  # [B] float32 per-step actor loss (value: alpha logpi-Q)
        'alpha_loss',  # [B] float32 per-step temperature loss
        'entropy',  # [B] float32 policy entropy estimate at s_t (also the
        # entropy target's controller input, in after_train)
    ],
    default_value=())

SacLossInfo = namedtuple(
    'SacLossInfo',
    [
        'critic',  # [T, B] float32 sum of both critics' TD losses
        'actor',  # [T, B] float32
        'alpha',  # [T, B] float32 temperature loss
        'entropy',  # [T, B] float32 policy entropy estimate
        'temperature',  # [] float32 alpha = exp(log_alpha) of this update
        'td_error',  # [T, B] float32 mean of both critics' target - Q
        # (0 on the last row; its |.| is the prioritized-replay priority)
    ],
    default_value=())


def default_target_entropy(action_spec: Nest) -> float:
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


def _action_kind(action_spec: Nest) -> str:
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


def _check_temperature_arguments(entropy_target_ctor: Optional[Callable],
                                 alpha_optimizer: Optional[Any],
                                 target_entropy: Optional[float]) -> None:
    """ValueError: with an entropy target, alpha is not trained and the
    target entropy is the entropy target's."""
    if entropy_target_ctor is not None and (alpha_optimizer is not None or
                                            target_entropy is not None):
        raise ValueError(
            "SacAlgorithm: with entropy_target_ctor the temperature is "
            "set by the EntropyTargetAlgorithm: alpha_optimizer and "
            "target_entropy must be None (set target_entropy on the "
            "EntropyTargetAlgorithm), got alpha_optimizer=%s, "
            "target_entropy=%s" % (alpha_optimizer, target_entropy))


def _build_networks(kind: str, observation_spec: Nest, action_spec: Nest,
                    actor_network_ctor: Optional[Callable],
                    critic_network_ctor: Optional[Callable]) -> tuple:
    """``(actor, critic1, critic2, their NetworkStreams)`` with the
    defaults of ``kind``."""
    if actor_network_ctor is None:
        actor_network_ctor = functools.partial(
            ActorDistributionNetwork,
            continuous_projection_net_ctor=functools.partial(
                NormalProjectionNetwork,
                scale_distribution=True,
                state_dependent_std=True))
    actor_network = actor_network_ctor(observation_spec, action_spec)
    if kind == 'continuous':
        critic1 = (critic_network_ctor or CriticNetwork)(
            (observation_spec, action_spec))
    else:
        critic1 = (critic_network_ctor or QNetwork)(observation_spec,
                                                    action_spec)
    critic2 = critic1.copy(name='critic2')
    return actor_network, critic1, critic2, _sac_streams(
        kind == 'discrete', actor_network, (critic1, critic2))


def _sac_streams(discrete: bool, actor: Any,
                 critics: Tuple[Any, Any]) -> NetworkStreams:
    """SAC's state streams (see the module docstring): ``actor``;
    ``critic<i>`` (a rollout stream too), ``target_critic<i>`` and, for
    continuous actions, ``actor_critic<i>``, both from ``critic<i>``."""
    networks, starts = {'actor': actor}, {'actor': 'actor'}
    kinds = ('critic', 'target_critic') + (() if discrete else
                                           ('actor_critic', ))
    for i, critic in enumerate(critics, 1):
        for kind in kinds:
            networks['%s%d' % (kind, i)] = critic
            starts['%s%d' % (kind, i)] = 'critic%d' % i
    return NetworkStreams(networks, starts)


# ---------------------------------------------------------------- algorithm
@gin.configurable
class SacAlgorithm(TDErrorPriority, OffPolicyAlgorithm):
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
        td_error_loss_fn: ``(target, prediction) -> loss``, element-wise.
        entropy_target_ctor: optional ``(action_spec) ->
            EntropyTargetAlgorithm`` replacing the gradient-tuned
            temperature (``initial_log_alpha`` is then unused); its
            ``log_alpha`` is checkpointed with this algorithm.
        optimizer: default optimizer for variables not given one above.
        name: module name.
        **kwargs: passed to ``OffPolicyAlgorithm`` (reward shaping,
            observation transformers, gradient clipping).

    Raises:
        ValueError: an action spec that is neither continuous nor one scalar
            bounded integer; bad gamma/tau/period.
        TypeError: a retired argument name.
    """

    has_first_train_step = True  # first_train_step skips the targets

    def __init__(self,
                 observation_spec: Nest,
                 action_spec: Nest,
                 actor_network_ctor: Optional[Callable] = None,
                 critic_network_ctor: Optional[Callable] = None,
                 actor_optimizer: Optional[Any] = None,
                 critic_optimizer: Optional[Any] = None,
                 alpha_optimizer: Optional[Any] = None,
                 gamma: float = 0.99,
                 tau: float = 0.005,
                 target_update_period: int = 1,
                 initial_log_alpha: float = 0.0,
                 target_entropy: Optional[float] = None,
                 td_error_loss_fn: Callable = element_wise_squared_loss,
                 entropy_target_ctor: Optional[Callable] = None,
                 optimizer: Optional[Any] = None,
                 name: str = 'SacAlgorithm',
                 **kwargs: Any):
        reject_retired_arguments(name, kwargs)
        kind = _action_kind(action_spec)
        _check_temperature_arguments(entropy_target_ctor, alpha_optimizer,
                                     target_entropy)
        self._gamma = check_unit_interval('SacAlgorithm', 'gamma', gamma)
        actor_network, critic1, critic2, streams = _build_networks(
            kind, observation_spec, action_spec, actor_network_ctor,
            critic_network_ctor)
        super().__init__(observation_spec, action_spec, optimizer=optimizer,
                         name=name, **streams.state_specs(), **kwargs)
        self._streams = streams
        self._discrete = kind == 'discrete'
        self._actor_network = actor_network
        self._critic1 = critic1
        self._critic2 = critic2
        self._target_critic1 = TargetNetwork(critic1, name='target_critic1')
        self._target_critic2 = TargetNetwork(critic2, name='target_critic2')
        self._entropy_target, self._log_alpha, self._target_entropy = (
            _temperature(entropy_target_ctor, initial_log_alpha,
                         target_entropy, self.action_spec))
        self._td_error_loss_fn = td_error_loss_fn
        for opt, modules in ((actor_optimizer, [actor_network]),
                             (critic_optimizer, [critic1, critic2]),
                             (alpha_optimizer, [self._log_alpha])):
            if opt is not None:
                self.add_optimizer(opt, modules)
        # Copies the critics into the targets now.
        self._target_updater = PeriodicSoftUpdate(
            self._target_critic1.variables + self._target_critic2.variables,
            critic1.variables + critic2.variables,
            tau=tau, period=target_update_period)
        # The one scalar integer spec of discrete SAC.
        self._discrete_spec = tf.nest.flatten(action_spec)[0]

    @property
    def actor_network(self) -> Any:
        """The network mapping observations to action distributions."""
        return self._actor_network

    @property
    def target_entropy(self) -> float:
        """float: the entropy the temperature steers towards."""
        return self._target_entropy

    @property
    def log_alpha(self) -> tf.Variable:
        """tf.Variable []: log of the temperature (the entropy target's,
        non-trainable, when there is one)."""
        return self._log_alpha

    @property
    def entropy_target(self) -> Optional[Any]:
        """The ``EntropyTargetAlgorithm`` setting alpha, or None."""
        return self._entropy_target

    # ------------------------------------------------------------ steps
    def predict(self, time_step: TimeStep, state: Nest) -> PolicyStep:
        """Greedy action: the actor's mode (``tanh(mean)`` scaled, argmax).

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: the actor's state (``()`` if feed-forward).
        Returns:
            ``PolicyStep(action [B, ...], state, ())``.
        """
        step = self._streams.step(state, 'predict')
        dist, _ = step('actor', self._actor_network)(time_step.observation)
        action = alf_specs.cast_and_clip_to_spec(dist_ops.mode(dist),
                                                 self.action_spec)
        return PolicyStep(action=action, state=step.state)

    def rollout(self, time_step: TimeStep, state: Nest) -> PolicyStep:
        """Exploration action sampled from the actor.

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: the rollout streams' states (``()`` if feed-forward).
        Returns:
            ``PolicyStep(action [B, ...], state, info=())``.
        """
        observation = time_step.observation
        step = self._streams.step(state, 'rollout')
        dist, _ = step('actor', self._actor_network)(observation)
        action = dist_ops.sample_action_distribution(
            dist, seed=make_stateless_seed())
        action = alf_specs.cast_and_clip_to_spec(action, self.action_spec)
        for name in self._streams.names('rollout'):
            if name != 'actor':  # a critic, at the action taken
                step(name, self._streams.network(name))(
                    observation if self._discrete else (observation, action))
        return PolicyStep(action=action, state=step.state)

    def train_state_from_rollout_state(self, state: Nest) -> Nest:
        """Every stream's state from its rollout stream's stored one (see
        the module docstring; ``()`` if feed-forward)."""
        return self._streams.start(state)

    def train_step(self, exp: Experience, state: Nest) -> PolicyStep:
        """Recomputes critics, target value and actor/alpha losses at s_t.

        Args:
            exp: ``Experience`` with [B, ...] leaves (``exp.action`` is the
                replayed action a_t).
            state: the train streams' states (``()`` if feed-forward).
        Returns:
            ``PolicyStep(action [B, ...] a fresh sample, state, SacInfo)``.
        """
        return self._train_step(exp, state, with_target=True)

    def first_train_step(self, exp: Experience,
                         state: Nest) -> PolicyStep:
        """``train_step`` without the target critics (the first row).

        The first row of a sequence is never a bootstrap value, so its
        ``target_value`` is zeros: two target-critic passes fewer per
        update (not with recurrent networks: the targets' states advance).

        Args:
            exp: ``Experience`` with [B, ...] leaves.
            state: the train streams' states (``()`` if feed-forward).
        Returns:
            ``PolicyStep(action [B, ...] a fresh sample, state, SacInfo)``
            whose ``target_value`` is zeros.
        """
        return self._train_step(exp, state,
                                with_target=self._streams.recurrent)

    def _train_step(self, exp, state, with_target):
        """``train_step`` (with the target value iff ``with_target``)."""
        alpha = tf.stop_gradient(tf.exp(self._log_alpha))
        step = self._streams.step(state)
        action, policy, target_value = _policy_and_target(
            self, step, exp.observation, alpha, with_target)
        critics = (step('critic1', self._critic1),
                   step('critic2', self._critic2))
        if self._discrete:
            q1, q2, actor_loss, entropy = _discrete_terms(
                critics, exp, self._discrete_spec, *policy, alpha)
        else:
            q1, q2, actor_loss, entropy = _continuous_terms(
                critics, (step('actor_critic1', self._critic1),
                          step('actor_critic2', self._critic2)),
                exp, self.action_spec, action, policy, alpha)
        alpha_loss = (tf.zeros_like(entropy)
                      if self._entropy_target is not None else
                      temperature_loss(self._log_alpha, entropy,
                                       self._target_entropy))
        return PolicyStep(action=action, state=step.state, info=SacInfo(
            critic1=q1, critic2=q2, target_value=target_value,
            actor_loss=actor_loss, alpha_loss=alpha_loss, entropy=entropy))

    def bootstrap_step(self, exp: Experience, state: Nest) -> PolicyStep:
        """Only the target value at s_t (the last row of a sequence).

        Skips the critic, actor and temperature terms, whose losses are
        masked on that row anyway: about half the compute of an update
        with 2-step sequences.

        Args:
            exp: ``Experience`` with [B, ...] leaves.
            state: the train streams' states (``()`` if feed-forward).
        Returns:
            ``PolicyStep`` with ``SacInfo`` whose fields other than
            ``target_value`` are zeros.
        """
        alpha = tf.stop_gradient(tf.exp(self._log_alpha))
        step = self._streams.step(state)
        action, _, target_value = _policy_and_target(
            self, step, exp.observation, alpha)
        zeros = tf.zeros_like(target_value)
        info = SacInfo(*[zeros] * len(SacInfo._fields))
        return PolicyStep(action=action, state=step.state,
                          info=info._replace(target_value=target_value))

    # ------------------------------------------------------------ loss
    def calc_loss(self, training_info: TrainingInfo) -> LossInfo:
        """Critic TD losses on rows 0..T-2, actor and temperature losses.

        Changes no state (the entropy target moves in ``after_train``).

        Args:
            training_info: ``TrainingInfo`` with [T, B] leaves; ``info`` is
                ``SacInfo``.
        Returns:
            ``LossInfo(loss [T, B], extra=SacLossInfo)``; the last row's
            critic loss is 0 (it only bootstraps; the base masks it).
        """
        info = training_info.info
        target = one_step_td_target(training_info.reward[1:],
                                    training_info.discount[1:],
                                    info.target_value[1:], self._gamma)
        critic_loss = pad_last_row(
            self._td_error_loss_fn(target, info.critic1[:-1]) +
            self._td_error_loss_fn(target, info.critic2[:-1]))
        td_error = target - 0.5 * (info.critic1[:-1] + info.critic2[:-1])
        loss = critic_loss + info.actor_loss + info.alpha_loss
        return LossInfo(loss=loss,
                        extra=SacLossInfo(critic=critic_loss,
                                          actor=info.actor_loss,
                                          alpha=info.alpha_loss,
                                          entropy=info.entropy,
                                          temperature=tf.exp(
                                              self._log_alpha),
                                          td_error=pad_last_row(td_error)))

    def after_train(self, training_info: TrainingInfo) -> None:
        """Moves the entropy target's controller (if any), then soft-updates
        the target critics (every ``target_update_period``).

        The controller takes one step per update on the mean entropy of the
        trained rows (valid steps; the last row only bootstraps and its
        entropy is a zero filler), as the temperature loss does.

        Args:
            training_info: the ``TrainingInfo`` trained on; ``info`` is
                ``SacInfo`` with [T, B] leaves.
        """
        if self._entropy_target is not None:
            mask = mask_last_row(valid_step_mask(training_info.step_type))
            self._entropy_target.adjust_alpha(training_info.info.entropy,
                                              mask)
        self._target_updater()


def _policy_and_target(sac: SacAlgorithm, step: StreamStep,
                       observation: Nest, alpha: tf.Tensor,
                       with_target: bool = True
                       ) -> Tuple[Nest, Any, tf.Tensor]:
    """A fresh action, the policy terms and the target soft value at s.

    Args:
        sac: the algorithm (its actor and target critics).
        step: the ``StreamStep`` of the networks' states.
        observation: nest of [B, ...].
        alpha: [] float32 temperature (gradient stopped).
        with_target: False: skip the target critics, zeros for the
            target value (a row no target reads).
    Returns:
        ``(action [B, ...], policy, target value [B] no gradient)``;
        ``policy`` is ``log pi(action|s)`` [B] (continuous; the sample
        keeps its gradient) or ``(pi, log pi)`` [B, n] (discrete).
    """
    dist, _ = step('actor', sac.actor_network)(observation)
    target_critics = (step('target_critic1', sac._target_critic1),
                      step('target_critic2', sac._target_critic2))
    if sac._discrete:
        return _discrete_policy_and_target(
            dist, observation, sac.action_spec, sac._discrete_spec,
            target_critics, alpha, with_target)
    return _continuous_policy_and_target(dist, observation, target_critics,
                                         alpha, with_target)


def _temperature(entropy_target_ctor: Optional[Callable],
                 initial_log_alpha: float, target_entropy: Optional[float],
                 action_spec: Nest) -> Tuple[Optional[Any], tf.Variable,
                                             float]:
    """``(entropy target, log_alpha, target entropy)``: the entropy
    target's (non-trainable ``log_alpha``, moved by its controller) or a
    trainable ``log_alpha`` variable and ``target_entropy`` (default
    ``default_target_entropy``)."""
    if entropy_target_ctor is not None:
        entropy_target = entropy_target_ctor(action_spec)
        return (entropy_target, entropy_target.log_alpha,
                entropy_target.target_entropy)
    log_alpha = tf.Variable(float(initial_log_alpha), dtype=tf.float32,
                            name='log_alpha')
    return (None, log_alpha,
            default_target_entropy(action_spec)
            if target_entropy is None else float(target_entropy))


def _all_log_probs(dist: Any, spec: Any) -> tf.Tensor:
    """[B, n] log pi(a|s) of every action value ``minimum + i`` of the
    scalar integer ``spec``."""
    values = tf.range(alf_specs.num_discrete_actions(spec), dtype=tf.int64)
    values = values + int(spec.minimum)
    values = tf.cast(values, tf.as_dtype(dist.dtype))
    # [n, 1] broadcasts against the batch shape [B] -> [n, B].
    log_probs = dist.log_prob(values[:, None])
    return tf.transpose(log_probs)


def _discrete_policy_and_target(dist: Any, observation: Nest,
                                action_spec: Nest, discrete_spec: Any,
                                target_critics: Tuple[Any, Any],
                                alpha: tf.Tensor, with_target: bool
                                ) -> Tuple[Nest, Any, tf.Tensor]:
    """Discrete SAC's ``_policy_and_target`` from the actor's ``dist``:
    a sampled action, ``(pi, log pi)`` [B, n] and the expected soft value
    [B] of the target critics' Q-values [B, n] (zeros without target)."""
    dist = tf.nest.flatten(dist)[0]
    log_probs = _all_log_probs(dist, discrete_spec)
    probs = tf.exp(log_probs)
    sample = dist.sample(seed=make_stateless_seed())
    action = alf_specs.cast_and_clip_to_spec(
        tf.nest.pack_sequence_as(action_spec, [sample]), action_spec)
    policy = (probs, log_probs)
    if not with_target:
        return action, policy, tf.zeros_like(log_probs[:, 0])
    target_q = tf.minimum(target_critics[0](observation)[0],
                          target_critics[1](observation)[0])
    return action, policy, tf.stop_gradient(
        expected_soft_state_value(probs, log_probs, target_q, alpha))


def _continuous_policy_and_target(dist: Any, observation: Nest,
                                  target_critics: Tuple[Any, Any],
                                  alpha: tf.Tensor, with_target: bool
                                  ) -> Tuple[Nest, tf.Tensor, tf.Tensor]:
    """Continuous SAC's ``_policy_and_target`` from the actor's ``dist``:
    a reparameterized action, its ``log pi`` [B] and the soft value [B] of
    the smaller target critic (zeros without target)."""
    # Reparameterized sample; log_prob is taken on the very sample tensor
    # so that TFP's bijector cache gives the pre-tanh value instead of
    # atanh(tanh(x)), which saturates in float32.
    action = dist_ops.sample_action_distribution(
        dist, seed=make_stateless_seed())
    log_pi = dist_ops.log_prob(dist, action)
    if not with_target:
        return action, log_pi, tf.zeros_like(log_pi)
    target_q = tf.minimum(target_critics[0]((observation, action))[0],
                          target_critics[1]((observation, action))[0])
    return action, log_pi, tf.stop_gradient(
        soft_state_value(target_q, log_pi, alpha))


def _continuous_terms(critics: Tuple[Any, Any],
                      actor_critics: Tuple[Any, Any], exp: Experience,
                      action_spec: Nest, action: Nest, log_pi: tf.Tensor,
                      alpha: tf.Tensor) -> tuple:
    """``(q1, q2, actor loss, entropy)`` [B] of continuous SAC: the
    ``critics`` on the replayed action, the actor loss on the fresh
    ``action`` through ``dQ/da`` of the ``actor_critics`` (the same
    networks, in streams of their own)."""
    observation = exp.observation
    critic_input_action = dist_ops.cast_to_spec(exp.action, action_spec)
    q1, _ = critics[0]((observation, critic_input_action))
    q2, _ = critics[1]((observation, critic_input_action))
    # dQ/da with the critics' variables out of the outer tape's reach:
    # only stop_gradient(dqda) enters the actor loss.
    flat_action = tf.nest.flatten(action)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(flat_action)
        a = tf.nest.pack_sequence_as(action, flat_action)
        q_new = tf.minimum(actor_critics[0]((observation, a))[0],
                           actor_critics[1]((observation, a))[0])
    dqda = tape.gradient(q_new, flat_action)
    actor_loss = soft_actor_loss(log_pi, q_new, flat_action, dqda, alpha)
    return q1, q2, actor_loss, -tf.stop_gradient(log_pi)


def _discrete_terms(critics: Tuple[Any, Any], exp: Experience,
                    discrete_spec: Any, probs: tf.Tensor,
                    log_probs: tf.Tensor, alpha: tf.Tensor) -> tuple:
    """``(q1, q2, actor loss, entropy)`` [B] of discrete SAC (exact
    expectations over the actions)."""
    index = tf.cast(tf.nest.flatten(exp.action)[0],
                    tf.int64) - int(discrete_spec.minimum)
    q1_all, _ = critics[0](exp.observation)
    q2_all, _ = critics[1](exp.observation)
    q1 = tf.gather(q1_all, index, axis=-1, batch_dims=1)
    q2 = tf.gather(q2_all, index, axis=-1, batch_dims=1)
    actor_loss = discrete_soft_actor_loss(probs, log_probs,
                                          tf.minimum(q1_all, q2_all), alpha)
    entropy = tf.stop_gradient(-tf.reduce_sum(probs * log_probs, -1))
    return q1, q2, actor_loss, entropy
