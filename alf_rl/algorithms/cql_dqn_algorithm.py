"""Conservative Q-Learning (CQL) for discrete actions, on top of DQN.

Kumar et al. 2020, "Conservative Q-Learning for Offline Reinforcement
Learning" (arXiv:2006.04779), CQL(H) with a Q network (their Atari
experiments, "QR-DQN + CQL" there; here the scalar DQN): DQN's TD loss of
every row gets the penalty (``ops.offline_losses.discrete_cql_penalty``)

    penalty(s, a) = log sum_a' exp Q(s, a') - Q(s, a_data)

weighted by a fixed ``cql_alpha``, or, with ``cql_target_gap`` set (the
Lagrangian version), by ``alpha' = exp(log_alpha')`` trained to keep the
penalty at the gap (``CqlWeight``, shared with ``CqlSacAlgorithm``):

    loss += alpha' * (penalty - gap)       (alpha' fixed here)
    alpha' loss = -alpha' * (penalty - gap)  (penalty fixed here)

It pushes Q down on actions the data does not hold and up on those it
does. Everything else (double-DQN
targets, n-step rows, target updates, prioritized replay, ε-greedy
rollout) is ``DqnAlgorithm``'s: this class only adds the loss term, so an
offline ``CqlDqnAlgorithm`` run continues online as a ``DqnAlgorithm``
(the same variables).

Deviation: scalar values only (not the paper's QR-DQN head). The
penalty reads the Q values of every action that DQN's step computed
(no extra forward pass).
"""

from typing import Any, Optional, cast

import gin
import tensorflow as tf

from alf_rl.algorithms.dqn_algorithm import (
    DqnAlgorithm,
    DqnInfo,
    DqnLossInfo,
)
from alf_rl.algorithms.cql_algorithm import CqlWeight
from alf_rl.algorithms.value_distributions import ScalarValues, ValueOutputs
from alf_rl.data_structures import (
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
    + (
        'cql_penalty',  # [T, B] float32 the penalty of each row
        'cql_weight',  # [] float32 alpha' (fixed or Lagrangian)
    ),
    default_value=(),
)


@gin.configurable
class CqlDqnAlgorithm(CqlWeight, DqnAlgorithm):
    """DQN with CQL's conservative penalty, for offline training.

    Args:
        observation_spec: nest of specs of one observation.
        action_spec: scalar bounded integer spec.
        cql_alpha: the penalty's weight alpha (> 0; the paper uses 1 to
            4 on Atari; the initial alpha' with ``cql_target_gap``).
        cql_target_gap: None: fixed weight; else the Lagrangian version
            keeping the penalty near this gap (the paper's tau).
        cql_alpha_optimizer: optimizer of ``log alpha'`` (None: the default
            ``optimizer``); only with ``cql_target_gap``.
        max_cql_alpha: clip of alpha' (Lagrangian).
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
        cql_target_gap: Optional[float] = None,
        cql_alpha_optimizer: Optional[Any] = None,
        max_cql_alpha: float = 1e6,
        name: str = 'CqlDqnAlgorithm',
        **kwargs: Any,
    ):
        self._check_cql_alpha(name, cql_alpha)
        values = kwargs.get('value_distribution')
        if values is not None and not isinstance(values, ScalarValues):
            raise ValueError(
                "%s: value_distribution must be ScalarValues (the penalty "
                "is on scalar Q values), got %s"
                % (name, type(values).__name__)
            )
        super().__init__(observation_spec, action_spec, name=name, **kwargs)
        self._init_cql_weight(
            cql_alpha, cql_target_gap, cql_alpha_optimizer, max_cql_alpha
        )

    # ------------------------------------------------------------ steps
    def _train_info(self, info: Any, out: ValueOutputs) -> Any:
        """DQN's ``info`` of ``train_step``/``first_train_step`` with the
        penalty at (s_t, a_t), from the step's Q values of every action
        ``out.q`` [B, A] and ``info.q_value`` [B] (the taken action's).

        Args:
            info: ``DqnInfo`` with [B] leaves.
            out: the online network's ``ValueOutputs`` at the row.
        Returns:
            ``CqlDqnInfo``.
        """
        penalty = discrete_cql_penalty(out.q, info.q_value)
        return CqlDqnInfo(*info, cql_penalty=penalty)

    def bootstrap_step(self, exp: Any, state: Nest) -> PolicyStep:
        """``DqnAlgorithm.bootstrap_step`` with a zero penalty (the last
        row's loss is masked).

        Args/returns: as ``DqnAlgorithm.bootstrap_step``, ``CqlDqnInfo``.
        """
        step = super().bootstrap_step(exp, state)
        zeros = tf.zeros_like(step.info.target_value)
        return step._replace(info=CqlDqnInfo(*step.info, cql_penalty=zeros))

    # ------------------------------------------------------------ loss
    def calc_loss(
        self,
        training_info: TrainingInfo,
        importance_weights: Optional[tf.Tensor] = None,
    ) -> LossInfo:
        """DQN's TD loss plus alpha' times the penalty (and, with
        ``cql_target_gap``, alpha''s Lagrangian loss).

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
        weighted = self._cql_loss(penalty, 1)
        if importance_weights is not None:
            weighted = weighted * tf.cast(importance_weights, weighted.dtype)
        return LossInfo(
            loss=dqn.loss + weighted,
            extra=CqlDqnLossInfo(
                *dqn.extra, cql_penalty=penalty, cql_weight=self.cql_alpha
            ),
        )
