"""Conservative Q-Learning (CQL) for discrete actions, on top of DQN.

Kumar et al. 2020, "Conservative Q-Learning for Offline Reinforcement
Learning" (arXiv:2006.04779), CQL(H) with a Q network (their Atari
experiments, "QR-DQN + CQL" there; here the scalar DQN): DQN's TD loss of
every row gets the penalty (``ops.offline_losses.discrete_cql_penalty``)

    penalty(s, a) = log sum_a' exp Q(s, a') - Q(s, a_data)

weighted by a fixed ``cql_alpha``, pushing Q down on actions the data
does not hold and up on those it does. Everything else (double-DQN
targets, n-step rows, target updates, prioritized replay, ε-greedy
rollout) is ``DqnAlgorithm``'s: this class only adds the loss term, so an
offline ``CqlDqnAlgorithm`` run continues online as a ``DqnAlgorithm``
(the same variables).

Deviations: scalar values only (not the paper's QR-DQN head); no
Lagrangian weight. The penalty re-evaluates the online Q network on the
replayed observations (one forward pass more per row than DQN).
"""

from typing import Any, Optional, cast

import gin
import tensorflow as tf

from alf_rl.algorithms.dqn_algorithm import (
    DqnAlgorithm,
    DqnInfo,
    DqnLossInfo,
)
from alf_rl.algorithms.value_distributions import ScalarValues
from alf_rl.data_structures import (
    Experience,
    LossInfo,
    PolicyStep,
    TrainingInfo,
    namedtuple,
)
from alf_rl.ops.offline_losses import discrete_cql_penalty
from alf_rl.utils.nest import Nest

CqlDqnInfo = namedtuple(
    'CqlDqnInfo',
    cast(Any, DqnInfo)._fields
    + ('cql_penalty',),  # [B] float32 penalty at (s_t, a_t); 0 on last row
    default_value=(),
)

CqlDqnLossInfo = namedtuple(
    'CqlDqnLossInfo',
    cast(Any, DqnLossInfo)._fields
    + ('cql_penalty',),  # [T, B] float32 the penalty of each row
    default_value=(),
)


@gin.configurable
class CqlDqnAlgorithm(DqnAlgorithm):
    """DQN with CQL's conservative penalty, for offline training.

    Args:
        observation_spec: nest of specs of one observation.
        action_spec: scalar bounded integer spec.
        cql_alpha: the penalty's weight alpha (> 0; the paper uses 1 to
            4 on Atari).
        name: module name.
        **kwargs: ``DqnAlgorithm``'s arguments (``q_network_ctor``,
            ``gamma``, ``td_error_loss_fn``, ``optimizer``, ...).

    Raises:
        ValueError: ``cql_alpha <= 0``, or a ``value_distribution`` other
            than ``ScalarValues``.
    """

    has_first_train_step = True  # DQN's, with the penalty

    def __init__(
        self,
        observation_spec: Nest,
        action_spec: Nest,
        cql_alpha: float = 1.0,
        name: str = 'CqlDqnAlgorithm',
        **kwargs: Any,
    ):
        if not cql_alpha > 0:
            raise ValueError(
                "%s: cql_alpha must be > 0, got %r" % (name, cql_alpha)
            )
        values = kwargs.get('value_distribution')
        if values is not None and not isinstance(values, ScalarValues):
            raise ValueError(
                "%s: value_distribution must be ScalarValues (the penalty "
                "is on scalar Q values), got %s"
                % (name, type(values).__name__)
            )
        super().__init__(observation_spec, action_spec, name=name, **kwargs)
        self._cql_alpha = float(cql_alpha)

    # ------------------------------------------------------------ steps
    def train_step(self, exp: Any, state: Nest) -> PolicyStep:
        """``DqnAlgorithm.train_step`` and the penalty at (s_t, a_t).

        Args:
            exp: ``Experience`` with [B, ...] leaves.
            state: ``()``.
        Returns:
            ``PolicyStep(action [B] greedy, (), CqlDqnInfo)``.
        """
        return self._with_penalty(super().train_step(exp, state), exp, state)

    def first_train_step(self, exp: Any, state: Nest) -> PolicyStep:
        """``DqnAlgorithm.first_train_step`` (no target network) and the
        penalty.

        Args/returns: as ``train_step``.
        """
        return self._with_penalty(
            super().first_train_step(exp, state), exp, state
        )

    def bootstrap_step(self, exp: Any, state: Nest) -> PolicyStep:
        """``DqnAlgorithm.bootstrap_step`` with a zero penalty (the last
        row's loss is masked).

        Args/returns: as ``train_step``.
        """
        step = super().bootstrap_step(exp, state)
        zeros = tf.zeros_like(step.info.target_value)
        return step._replace(info=CqlDqnInfo(*step.info, cql_penalty=zeros))

    def _with_penalty(
        self, step: PolicyStep, exp: Experience, state: Nest
    ) -> PolicyStep:
        """``step`` with the penalty of the Q values at
        ``exp.observation`` (from the Q network's ``state``, that of the
        step) and its ``q_value`` (the taken action's)."""
        out, _ = self._outputs(
            self._q_network, exp.observation, 'train', state
        )
        q_all = out.q
        penalty = discrete_cql_penalty(q_all, step.info.q_value)
        return step._replace(info=CqlDqnInfo(*step.info, cql_penalty=penalty))

    # ------------------------------------------------------------ loss
    def calc_loss(
        self,
        training_info: TrainingInfo,
        importance_weights: Optional[tf.Tensor] = None,
    ) -> LossInfo:
        """DQN's TD loss plus ``cql_alpha`` times the penalty.

        Args:
            training_info: ``TrainingInfo`` with [T, B] leaves; ``info`` is
                ``CqlDqnInfo``.
            importance_weights: as ``DqnAlgorithm.calc_loss`` (they weight
                the penalty too).
        Returns:
            ``LossInfo(loss [T, B], extra=CqlDqnLossInfo)``.
        """
        dqn = super().calc_loss(training_info, importance_weights)
        penalty = training_info.info.cql_penalty
        weighted = self._cql_alpha * penalty
        if importance_weights is not None:
            weighted = weighted * tf.cast(importance_weights, weighted.dtype)
        return LossInfo(
            loss=dqn.loss + weighted,
            extra=CqlDqnLossInfo(*dqn.extra, cql_penalty=penalty),
        )
