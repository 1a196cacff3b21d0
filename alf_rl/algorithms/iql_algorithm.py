"""Implicit Q-Learning (IQL), for offline training.

Kostrikov, Nair and Levine 2022, "Offline Reinforcement Learning with
Implicit Q-Learning" (arXiv:2110.06169). Never queries Q on actions outside
the dataset:

- value: expectile regression of V(s) on the smaller target critic,
  ``L_V = L_tau(min_i Q_target_i(s, a) - V(s))`` (eq. 5,
  ``ops.offline_losses.expectile_loss``);
- critics: ``L_Q = (r + gamma d V(s') - Q_i(s, a))^2`` (eq. 6), the
  bootstrap V of the next replayed row;
- policy extraction by advantage-weighted regression (eq. 7):
  ``L_pi = -min(exp((Q_target(s, a) - V(s)) / temperature), max_weight)
  log pi(a | s)`` (``ops.offline_losses.advantage_weights``).

Settings: ``expectile`` (tau, 0.7 for MuJoCo in the paper) and
``temperature`` (1/beta; the paper's beta is 3 for MuJoCo, with rewards
scaled by 1000 / the dataset's return range, and 10 for AntMaze; CORL uses
beta 3 on unscaled HalfCheetah rewards, for 1e6 updates). How many samples
the actor really learns from depends on the spread of the advantages, i.e.
on the rewards' scale and on how well the critics fit yet: on
HalfCheetah's unscaled rewards (~10 a step), after 32,500 updates on an
expert dataset, the advantages had a standard deviation of 4.0 (critic TD
loss ~50), and the weights' effective sample size ``(sum w)^2 / (n sum
w^2)`` was 0.46 of the batch at temperature 1/3 (40% of the weights at
``max_weight``), 0.20 at 3.33 (the actor regressing mostly on a fifth of
the batch) and 0.87 at 10. The loss summaries' ``weight`` (its batch mean;
well above 1 when a few samples dominate) shows it.
``examples/offline/iql_half_cheetah.gin`` uses 10.
Discrete actions use ``QNetwork``s (Q of the taken action); continuous
ones ``CriticNetwork``s. Target critics are Polyak-averaged (``tau``).
Float actions are clipped a hair inside their bounds in the policy's
likelihood (as ``BcAlgorithm`` does: a tanh-squashed Gaussian has no
density on the bounds, where clipped noise puts data). Deviation: the
paper's cosine learning-rate schedule of the actor is left to the
optimizer's configuration.
"""

import functools
from typing import Any, Callable, Optional

import gin
import tensorflow as tf

from alf_rl import specs as alf_specs
from alf_rl.algorithms.bc_algorithm import inside_bounds
from alf_rl.algorithms.config_checks import check_unit_interval
from alf_rl.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from alf_rl.algorithms.policy_actions import DEFAULT_ACTOR_CTOR, ActorPolicy
from alf_rl.data_structures import (
    LossInfo,
    PolicyStep,
    TrainingInfo,
    namedtuple,
)
from alf_rl.networks import (
    CriticNetwork,
    QNetwork,
    ValueNetwork,
)
from alf_rl.networks.target_network import PeriodicSoftUpdate, TargetNetwork
from alf_rl.ops import distributions as dist_ops
from alf_rl.ops.masks import pad_last_row
from alf_rl.ops.offline_losses import advantage_weights, expectile_loss
from alf_rl.ops.td_targets import one_step_td_target
from alf_rl.utils.common import check_feed_forward
from alf_rl.utils.nest import Nest

IqlInfo = namedtuple(
    'IqlInfo',
    [
        'critic1',  # [B] float32 Q1(s_t, a_t)
        'critic2',  # [B] float32 Q2(s_t, a_t)
        'value',  # [B] float32 V(s_t), no gradient: the critics' bootstrap
        'value_loss',  # [B] float32 L_tau(Q_target - V)
        'actor_loss',  # [B] float32 -w log pi(a_t | s_t)
        'advantage',  # [B] float32 Q_target - V (no gradient)
        'weight',  # [B] float32 min(exp(advantage / temperature), max)
    ],
    default_value=(),
)

IqlLossInfo = namedtuple(
    'IqlLossInfo',
    [
        'critic',  # [T, B] float32 sum of both critics' TD losses
        'value',  # [T, B] float32 expectile loss
        'actor',  # [T, B] float32 advantage-weighted NLL
        'advantage',  # [T, B] float32
        'weight',  # [T, B] float32 the actor's advantage weights
    ],
    default_value=(),
)


def _discrete(action_spec: Nest) -> bool:
    flat = tf.nest.flatten(action_spec)
    return (
        len(flat) == 1
        and flat[0].dtype.is_integer
        and alf_specs.is_bounded(flat[0])
        and flat[0].shape.rank == 0
    )


def _check_settings(name: str, expectile: float, temperature: float) -> None:
    """Refuses, in one line, an expectile outside (0, 1) or a temperature
    <= 0."""
    if not 0 < expectile < 1 or not temperature > 0:
        raise ValueError(
            "%s: expectile must lie in (0, 1) and temperature be > 0; got "
            "%r and %r" % (name, expectile, temperature)
        )


def _build_critic(
    discrete: bool,
    observation_spec: Nest,
    action_spec: Nest,
    critic_network_ctor: Optional[Callable],
) -> Any:
    """One critic: ``ctor(observation_spec, action_spec)`` (discrete, Q of
    every action; default a ``QNetwork``) or ``ctor((observation_spec,
    action_spec))`` (default a ``CriticNetwork``), of (256, 256)."""
    if discrete:
        default_q: Callable = functools.partial(
            QNetwork, fc_layer_params=(256, 256)
        )
        return (critic_network_ctor or default_q)(
            observation_spec, action_spec
        )
    default_critic: Callable = functools.partial(
        CriticNetwork, joint_fc_layer_params=(256, 256)
    )
    return (critic_network_ctor or default_critic)(
        (observation_spec, action_spec)
    )


@gin.configurable
class IqlAlgorithm(ActorPolicy, OffPolicyAlgorithm):
    """Implicit Q-Learning: expectile value, twin critics, advantage-
    weighted policy.

    Args:
        observation_spec: nest of specs of one observation.
        action_spec: float specs, or one scalar bounded integer spec.
        actor_network_ctor: ``(observation_spec, action_spec) ->``
            ``ActorDistributionNetwork``-like network.
        critic_network_ctor: builds one critic: ``ctor((observation_spec,
            action_spec))`` (continuous) or ``ctor(observation_spec,
            action_spec)`` (discrete, Q of every action); None: a
            ``CriticNetwork`` / ``QNetwork`` of (256, 256).
        value_network_ctor: ``(observation_spec) -> ValueNetwork``-like.
        expectile: tau in (0, 1) of the value's expectile regression.
        temperature: 1/beta > 0 of the advantage weights.
        max_weight: clip of the advantage weights.
        gamma: discount factor.
        tau: Polyak rate of the target critics.
        optimizer: a ``tf_keras`` optimizer for all networks.
        name: module name.
        **kwargs: passed to ``OffPolicyAlgorithm``.

    Raises:
        ValueError: an out-of-range setting or a recurrent network.
    """

    def __init__(
        self,
        observation_spec: Nest,
        action_spec: Nest,
        actor_network_ctor: Callable = DEFAULT_ACTOR_CTOR,
        critic_network_ctor: Optional[Callable] = None,
        value_network_ctor: Callable = functools.partial(
            ValueNetwork, fc_layer_params=(256, 256)
        ),
        expectile: float = 0.7,
        temperature: float = 1.0 / 3.0,
        max_weight: float = 100.0,
        gamma: float = 0.99,
        tau: float = 0.005,
        optimizer: Optional[Any] = None,
        name: str = 'IqlAlgorithm',
        **kwargs: Any,
    ):
        _check_settings(name, expectile, temperature)
        self._expectile = float(expectile)
        self._gamma = check_unit_interval(name, 'gamma', gamma)
        self._discrete = _discrete(action_spec)
        actor = actor_network_ctor(observation_spec, action_spec)
        critic1 = _build_critic(
            self._discrete, observation_spec, action_spec, critic_network_ctor
        )
        value = value_network_ctor(observation_spec)
        check_feed_forward(name, [actor, critic1, value])
        super().__init__(
            observation_spec,
            action_spec,
            optimizer=optimizer,
            name=name,
            **kwargs,
        )
        self._actor_network = actor
        self._critic1 = critic1
        self._critic2 = critic1.copy(name='critic2')
        self._value_network = value
        self._build_targets(tau)
        self._temperature = float(temperature)
        self._max_weight = float(max_weight)

    def _build_targets(self, tau: float) -> None:
        """Target copies of both critics, Polyak-averaged every update."""
        self._target_critic1 = TargetNetwork(
            self._critic1, name='target_critic1'
        )
        self._target_critic2 = TargetNetwork(
            self._critic2, name='target_critic2'
        )
        self._target_updater = PeriodicSoftUpdate(
            self._target_critic1.variables + self._target_critic2.variables,
            self._critic1.variables + self._critic2.variables,
            tau=tau,
            period=1,
        )

    def _q(self, critic: Any, observation: Nest, action: Nest) -> tf.Tensor:
        """[B] Q of ``action`` at ``observation``."""
        if not self._discrete:
            return critic(
                (observation, dist_ops.cast_to_spec(action, self.action_spec))
            )[0]
        spec = tf.nest.flatten(self.action_spec)[0]
        index = tf.cast(tf.nest.flatten(action)[0], tf.int64) - int(
            spec.minimum
        )
        return tf.gather(critic(observation)[0], index, axis=-1, batch_dims=1)

    def train_step(self, exp: Any, state: Nest) -> PolicyStep:
        """Critics, value, expectile and actor losses at (s_t, a_t).

        Args:
            exp: ``Experience`` with [B, ...] leaves.
            state: ``()``.
        Returns:
            ``PolicyStep((), (), IqlInfo)``.
        """
        obs, action = exp.observation, exp.action
        q1 = self._q(self._critic1, obs, action)
        q2 = self._q(self._critic2, obs, action)
        target_q = tf.stop_gradient(
            tf.minimum(
                self._q(self._target_critic1, obs, action),
                self._q(self._target_critic2, obs, action),
            )
        )
        value, _ = self._value_network(obs)
        value_loss = expectile_loss(target_q - value, self._expectile)
        advantage = tf.stop_gradient(target_q - value)
        weights = advantage_weights(
            advantage, self._temperature, self._max_weight
        )
        dist, _ = self._actor_network(obs)
        actor_loss = -weights * dist_ops.log_prob(
            dist, inside_bounds(action, self.action_spec)
        )
        return PolicyStep(
            action=(),
            state=state,
            info=IqlInfo(
                critic1=q1,
                critic2=q2,
                value=tf.stop_gradient(value),
                value_loss=value_loss,
                actor_loss=actor_loss,
                advantage=advantage,
                weight=weights,
            ),
        )

    def calc_loss(self, training_info: TrainingInfo) -> LossInfo:
        """Critic TD losses on rows 0..T-2 (bootstrapping on the next
        row's V), value and actor losses on every row (the base masks the
        last and LAST rows).

        Args:
            training_info: ``TrainingInfo`` with [T, B] leaves; ``info`` is
                ``IqlInfo``.
        Returns:
            ``LossInfo(loss [T, B], extra=IqlLossInfo)``.
        """
        info = training_info.info
        target = one_step_td_target(
            training_info.reward[1:],
            training_info.discount[1:],
            info.value[1:],
            self._gamma,
        )
        critic_loss = pad_last_row(
            tf.square(target - info.critic1[:-1])
            + tf.square(target - info.critic2[:-1])
        )
        loss = critic_loss + info.value_loss + info.actor_loss
        return LossInfo(
            loss=loss,
            extra=IqlLossInfo(
                critic=critic_loss,
                value=info.value_loss,
                actor=info.actor_loss,
                advantage=info.advantage,
                weight=info.weight,
            ),
        )

    def after_train(self, training_info: TrainingInfo) -> None:
        """Soft-updates the target critics.

        Args:
            training_info: the ``TrainingInfo`` trained on (unused).
        """
        del training_info
        self._target_updater()
