"""Conservative Q-Learning (CQL) on top of SAC.

Kumar et al. 2020, "Conservative Q-Learning for Offline Reinforcement
Learning" (arXiv:2006.04779), the CQL(H) variant: each SAC critic's TD loss
gets the penalty (``ops.offline_losses.cql_penalty``)

    penalty_i(s, a) = log sum_a' exp Q_i(s, a') - Q_i(s, a)

on the dataset's (s, a), pushing Q down on actions the data does not hold
and up on those it does. It is weighted by a fixed ``cql_alpha``, or, with
``cql_target_gap`` set (the Lagrangian version, the paper's eq. 30), by
``alpha' = exp(log_alpha')`` trained to keep the penalty at the gap:

    critic loss += alpha' * (penalty_i - gap)     (alpha' fixed here)
    alpha' loss  = -alpha' * (penalty_1 + penalty_2 - 2 gap) / 2
                                                   (penalty fixed here)

The log-sum-exp over actions is exact for discrete actions. For continuous
actions it is importance-sampled from ``num_sampled_actions`` uniform
actions and as many actions of the current policy at s (log-densities
``-log volume`` and ``log pi``; the paper's appendix F). Everything else
is ``SacAlgorithm``'s: this class only adds the loss term.

``backup_entropy=False`` bootstraps on ``min_i Q_target_i(s', a')`` at a
fresh ``a' ~ pi(s')`` (the expected value for discrete actions) instead of
SAC's soft value ``... - alpha log pi(a'|s')``: the authors' code and
CORL back up that way for the MuJoCo tasks. With the soft value, the
conservative penalty narrows the policy below SAC's entropy target, the
temperature grows, and ``-alpha log pi`` soon outweighs the rewards in
the targets (HalfCheetah medium: alpha 1.1, log pi 6.3 against rewards of
3.2 a step after 20,000 updates).

Deviations: no policy samples at the next state (the authors' code also
uses them); continuous actions must be one float leaf.
"""

import functools
from typing import Any, Optional, cast

import gin
import numpy as np
import tensorflow as tf

from alf_rl.algorithms.sac_algorithm import (
    SacAlgorithm,
    SacInfo,
    SacLossInfo,
    _policy_and_target,
)
from alf_rl.data_structures import LossInfo, PolicyStep, TrainingInfo
from alf_rl.data_structures import namedtuple
from alf_rl.ops import distributions as dist_ops
from alf_rl.ops.offline_losses import cql_penalty, discrete_cql_penalty
from alf_rl.utils.common import check_feed_forward, make_stateless_seed
from alf_rl.utils.nest import Nest

CqlInfo = namedtuple(
    'CqlInfo',
    cast(Any, SacInfo)._fields
    + (
        'cql_penalty1',  # [B] float32 penalty of critic 1 at (s_t, a_t)
        'cql_penalty2',  # [B] float32 penalty of critic 2
    ),
    default_value=(),
)

CqlLossInfo = namedtuple(
    'CqlLossInfo',
    cast(Any, SacLossInfo)._fields
    + (
        'cql_penalty',  # [T, B] float32 mean of both critics' penalties
        'cql_weight',  # [] float32 alpha' (fixed or Lagrangian)
    ),
    default_value=(),
)


class CqlWeight:
    """CQL's penalty weight alpha', fixed or Lagrangian, for an algorithm
    class to inherit beside its base (``CqlSacAlgorithm``,
    ``CqlDqnAlgorithm``).

    Fixed (``cql_target_gap`` None): the loss term is ``alpha' * sum_i
    penalty_i``. Lagrangian (the paper's eq. 30): ``alpha' =
    min(exp(log_alpha'), max_cql_alpha)``, a variable trained by its own
    optimizer (or the algorithm's default one) to keep the mean of the n
    penalties at the gap:

        loss = sg(alpha') * (sum_i penalty_i - n gap)
               - alpha' * sg(sum_i penalty_i - n gap) / n

    so the networks get ``alpha' * grad penalty_i`` and ``log alpha'`` the
    gradient ``-alpha' * (mean_i penalty_i - gap)``: alpha' grows while
    the penalty is above the gap and shrinks below it.
    """

    _log_cql_alpha: tf.Variable
    _target_gap: Optional[float]
    _max_cql_alpha: float
    _fixed_cql_alpha: float

    @staticmethod
    def _check_cql_alpha(name: str, cql_alpha: float) -> None:
        """Refuses a ``cql_alpha`` that is not > 0 in one line (call it
        before the base class's ``__init__``: nothing is built then).

        Args:
            name: the algorithm's name, for the message.
            cql_alpha: the fixed weight, or the Lagrangian one's start.
        Raises:
            ValueError: ``cql_alpha <= 0`` (or not a number).
        """
        if not cql_alpha > 0:
            raise ValueError(
                "%s: cql_alpha must be > 0, got %r" % (name, cql_alpha)
            )

    def _init_cql_weight(
        self,
        cql_alpha: float,
        cql_target_gap: Optional[float],
        cql_alpha_optimizer: Optional[Any],
        max_cql_alpha: float,
    ) -> None:
        """Creates ``log alpha'`` (trainable only with a gap) and gives it
        ``cql_alpha_optimizer`` (Lagrangian only; None: the default
        optimizer). Call after the base class's ``__init__``."""
        self._target_gap = (
            None if cql_target_gap is None else float(cql_target_gap)
        )
        self._max_cql_alpha = float(max_cql_alpha)
        self._fixed_cql_alpha = float(cql_alpha)
        self._log_cql_alpha = tf.Variable(
            float(np.log(cql_alpha)),
            dtype=tf.float32,
            name='log_cql_alpha',
            trainable=self._target_gap is not None,
        )
        if cql_alpha_optimizer is not None and self._target_gap is not None:
            cast(Any, self).add_optimizer(
                cql_alpha_optimizer, [self._log_cql_alpha]
            )

    @property
    def cql_alpha(self) -> tf.Tensor:
        """[] float32: the penalty's current weight alpha' (``cql_alpha``
        itself when fixed)."""
        if self._target_gap is None:
            return tf.constant(self._fixed_cql_alpha, tf.float32)
        return tf.minimum(tf.exp(self._log_cql_alpha), self._max_cql_alpha)

    def _cql_loss(self, penalty: tf.Tensor, count: int) -> tf.Tensor:
        """The weighted penalty term (and alpha''s Lagrangian loss).

        Args:
            penalty: [T, B] float32 sum of ``count`` penalties of a row.
            count: how many penalties the sum has (critics).
        Returns:
            [T, B] float32 loss term.
        """
        alpha = self.cql_alpha
        if self._target_gap is None:
            return tf.stop_gradient(alpha) * penalty
        gap = penalty - count * self._target_gap
        return (
            tf.stop_gradient(alpha) * gap
            - alpha * tf.stop_gradient(gap) / count
        )


@gin.configurable
class CqlSacAlgorithm(CqlWeight, SacAlgorithm):
    """SAC with CQL's conservative critic penalty, for offline training.

    Args:
        observation_spec: nest of specs of one observation.
        action_spec: one float ``BoundedTensorSpec`` (continuous) or one
            scalar bounded integer spec (discrete).
        cql_alpha: the penalty's weight (the initial alpha' with
            ``cql_target_gap``).
        cql_target_gap: None: fixed weight; else the Lagrangian version
            keeping the penalty near this gap (the paper's tau).
        num_sampled_actions: N uniform and N policy actions per state for
            the continuous log-sum-exp.
        cql_alpha_optimizer: optimizer of ``log alpha'`` (None: the default
            ``optimizer``); only with ``cql_target_gap``.
        max_cql_alpha: clip of alpha' (Lagrangian).
        backup_entropy: True: the critics bootstrap on SAC's soft value;
            False: on the target critics' value of a fresh policy action,
            without ``- alpha log pi`` (the temperature then only enters
            the actor's loss).
        name: module name.
        **kwargs: ``SacAlgorithm``'s arguments.

    Raises:
        ValueError: ``cql_alpha <= 0``, ``num_sampled_actions < 1``, or
            continuous actions in more than one leaf.
    """

    def __init__(
        self,
        observation_spec: Nest,
        action_spec: Nest,
        cql_alpha: float = 1.0,
        cql_target_gap: Optional[float] = None,
        num_sampled_actions: int = 10,
        cql_alpha_optimizer: Optional[Any] = None,
        max_cql_alpha: float = 1e6,
        backup_entropy: bool = True,
        name: str = 'CqlSacAlgorithm',
        **kwargs: Any,
    ):
        self._check_cql_alpha(name, cql_alpha)
        if int(num_sampled_actions) < 1:
            raise ValueError(
                "%s: num_sampled_actions must be >= 1, got %r"
                % (name, num_sampled_actions)
            )
        flat = tf.nest.flatten(action_spec)
        if len(flat) != 1:
            raise ValueError(
                "%s: action_spec must be one leaf, got %d "
                "leaves" % (name, len(flat))
            )
        super().__init__(observation_spec, action_spec, name=name, **kwargs)
        # The penalties call the networks without their states.
        check_feed_forward(name, (self.actor_network, self._critic1))
        self._num_sampled = int(num_sampled_actions)
        self._backup_entropy = bool(backup_entropy)
        self._init_cql_weight(
            cql_alpha, cql_target_gap, cql_alpha_optimizer, max_cql_alpha
        )

    # ------------------------------------------------------------ steps
    def _train_step(self, exp, state, with_target):
        hard = with_target and not self._backup_entropy
        step = super()._train_step(exp, state, with_target and not hard)
        if hard:
            _, value = self._hard_target(exp, state)
            step = step._replace(info=step.info._replace(target_value=value))
        pen1, pen2 = self._penalties(exp)
        return step._replace(
            info=CqlInfo(*step.info, cql_penalty1=pen1, cql_penalty2=pen2)
        )

    def _hard_target(self, exp: Any, state: Nest) -> Any:
        """``(action [B, ...], value [B])``: a fresh policy action at s and
        the target critics' value there, without the entropy term (alpha
        0 in SAC's soft value; no gradient)."""
        action, _, value = _policy_and_target(
            self, self._streams.step(state), exp.observation, tf.zeros([])
        )
        return action, value

    def bootstrap_step(self, exp: Any, state: Nest) -> PolicyStep:
        """``SacAlgorithm.bootstrap_step`` (the target value without the
        entropy term with ``backup_entropy=False``) with zero penalties
        (the last row's losses are masked).

        Args/returns: as ``SacAlgorithm.bootstrap_step``, ``CqlInfo``.
        """
        if self._backup_entropy:
            step = super().bootstrap_step(exp, state)
        else:
            action, value = self._hard_target(exp, state)
            fields = len(cast(Any, SacInfo)._fields)
            info = SacInfo(*[tf.zeros_like(value)] * fields)
            step = PolicyStep(
                action=action,
                state=state,
                info=info._replace(target_value=value),
            )
        zeros = tf.zeros_like(step.info.target_value)
        return step._replace(
            info=CqlInfo(*step.info, cql_penalty1=zeros, cql_penalty2=zeros)
        )

    def _penalties(self, exp: Any) -> Any:
        """``(penalty_1, penalty_2)`` [B] at the replayed (s, a)."""
        critics = (self._critic1, self._critic2)
        spec = tf.nest.flatten(self.action_spec)[0]
        if self._discrete:
            index = tf.cast(tf.nest.flatten(exp.action)[0], tf.int64) - int(
                spec.minimum
            )
            result = []
            for critic in critics:
                q_all, _ = critic(exp.observation)  # [B, n]
                q_data = tf.gather(q_all, index, axis=-1, batch_dims=1)
                result.append(discrete_cql_penalty(q_all, q_data))
            return tuple(result)
        return self._continuous_penalties(exp, critics, spec)

    def _continuous_penalties(self, exp, critics, spec):
        """Importance-sampled penalties of continuous actions."""
        n = self._num_sampled
        obs, actions, log_density = self._proposals(exp, spec)
        data_action = tf.cast(tf.nest.flatten(exp.action)[0], tf.float32)
        pack = functools.partial(tf.nest.pack_sequence_as, self.action_spec)
        result = []
        for critic in critics:
            q_sampled, _ = critic((obs, pack([actions])))
            q_data, _ = critic((exp.observation, pack([data_action])))
            result.append(
                cql_penalty(
                    tf.reshape(q_sampled, [2 * n, -1]), log_density, q_data
                )
            )
        return tuple(result)

    def _proposals(self, exp, spec):
        """``(observations [2N B, ...], actions [2N B, D], log-densities
        [2N, B])``: N uniform actions, then N of the policy, per state (no
        gradient)."""
        n = self._num_sampled
        batch = tf.shape(tf.nest.flatten(exp.observation)[0])[0]
        obs = tf.nest.map_structure(
            lambda x: tf.tile(
                x, tf.concat([[2 * n], tf.ones_like(tf.shape(x)[1:])], 0)
            ),
            exp.observation,
        )
        low = tf.constant(spec.minimum, tf.float32) * tf.ones(spec.shape)
        high = tf.constant(spec.maximum, tf.float32) * tf.ones(spec.shape)
        uniform = tf.random.stateless_uniform(
            tf.concat([[n * batch], spec.shape], 0),
            make_stateless_seed(),
            minval=low,
            maxval=high,
        )
        log_uniform = -tf.reduce_sum(tf.math.log(high - low))
        dist, _ = self._actor_network(
            tf.nest.map_structure(lambda x: x[n * batch :], obs)
        )
        sampled = dist_ops.sample_action_distribution(
            dist, seed=make_stateless_seed()
        )
        log_pi = dist_ops.log_prob(dist, sampled)
        actions = tf.concat([uniform, tf.nest.flatten(sampled)[0]], 0)
        log_density = tf.reshape(
            tf.concat([tf.fill([n * batch], log_uniform), log_pi], 0),
            [2 * n, -1],
        )
        return obs, tf.stop_gradient(actions), tf.stop_gradient(log_density)

    # ------------------------------------------------------------ loss
    def calc_loss(self, training_info: TrainingInfo) -> LossInfo:
        """SAC's losses plus the weighted penalty in the critic loss (and
        the Lagrangian's loss of ``log alpha'``).

        Args:
            training_info: ``TrainingInfo`` with [T, B] leaves; ``info`` is
                ``CqlInfo``.
        Returns:
            ``LossInfo(loss [T, B], extra=CqlLossInfo)``.
        """
        sac = super().calc_loss(training_info)
        info = training_info.info
        penalty = info.cql_penalty1 + info.cql_penalty2
        return LossInfo(
            loss=sac.loss + self._cql_loss(penalty, 2),
            extra=CqlLossInfo(
                *sac.extra,
                cql_penalty=penalty / 2.0,
                cql_weight=self.cql_alpha,
            ),
        )
