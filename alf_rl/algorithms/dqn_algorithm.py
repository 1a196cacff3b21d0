"""Deep Q-Network (DQN) with double-DQN targets and n-step returns.

Mnih et al. 2015, "Human-level control through deep reinforcement
learning"; van Hasselt et al. 2016, "Deep Reinforcement Learning with Double
Q-learning"; n-step returns as in Hessel et al. 2018 (Rainbow); the optional
dueling head (Wang et al. 2016) is ``QNetwork(dueling=True)``.

An online ``QNetwork`` and a target copy; ε-greedy exploration with a linear
schedule; target updates every ``target_update_period`` updates (a hard copy
with ``tau=1``, Polyak averaging below 1).

Targets (reward[t] and discount[t] arrive WITH step t, see
``alf_rl.ops.value_ops``). For a training sequence of L steps every row t
uses all the rows after it ("every row with its available horizon", so row
0 gets an (L-1)-step return, row L-2 a 1-step return):

    G_t = r_{t+1} + γ d_{t+1} G_{t+1},   G_{L-1} = v_{L-1},   G_k = v_k at a
    LAST step k (the return stops at the episode's end),
    v_k = Q_target(s_k, argmax_a Q(s_k, a))      (double DQN)
    v_k = max_a Q_target(s_k, a)                 (use_double_q=False)

and the loss of row t is ``td_error_loss_fn(G_t, Q(s_t, a_t))``. With
``mini_batch_length=2`` this is plain one-step DQN. The last row only
bootstraps (its loss is a zero pad, and the base class masks it and LAST
rows).

Deviations / choices:
- The n-step horizon is set by the replayed sequence length instead of a
  separate ``n``; rows near the end of a sequence get shorter horizons (the
  returns are uncorrected off-policy n-step returns, as in Rainbow).
  ``loss_rows='first'`` trains only row 0 of each sequence, on its
  (L-1)-step return, as Rainbow's (Dopamine's, SB3's) n-step replay does:
  the window is folded into row 0 and the step it bootstraps from
  (``alf_rl.ops.td_targets.fold_n_step``) before any network runs, so an
  update with L = 4 costs what a one-step update costs.
- ε decays linearly over ``epsilon_decay_steps`` *rollout calls* (one call
  steps every parallel environment once), counted by a variable of the
  algorithm (checkpointed with it).
- Prioritized replay: ``calc_loss`` returns the per-step TD errors
  ``G_t - Q(s_t, a_t)`` ([T, B]) in ``LossInfo.extra.td_error``; the
  ``TDErrorPriority`` mixin turns row 0 into the priority (``calc_priority``) for
  ``update_priority``. Importance weights are applied by the base
  (``train(..., sample_weights=w)`` multiplies them into the [T, B] loss
  mask); a caller computing the loss itself can pass them to ``calc_loss``
  (``importance_weights``) instead, not both.

The value family: ``value_distribution`` decides what the network
predicts about the return and how it is trained (``ScalarValues``: DQN;
``CategoricalValues``: C51; ``QuantileValues``: QR-DQN;
``ImplicitQuantileValues``: IQN; see
``alf_rl.algorithms.value_distributions``), with the matching head from
``alf_rl.networks.distributional_q_networks``. The rest (ε-greedy, double
Q, dueling, n-step windows, target updates, prioritized replay, noisy
heads) is shared; Rainbow is a configuration of these parts. For a
distributional loss the priority is the row's loss. Noisy heads
(``noisy=True``) draw new noise as ``noise_resampling`` says: at every
``rollout`` call (the online network) and after every update, for the next
one (the online and the target network); ``predict`` (evaluation, export)
uses the mean weights alone (``noisy.without_noise``), as Dopamine's and
Kaixhin's Rainbow evaluate.

Recurrent Q networks (R2D2, Kapturowski et al. 2019): a Q network with a
state (``QRnnNetwork``, or any head of the family with
``encoding_network_ctor=LSTMEncodingNetwork``) is called one step at a time
with its state. The rollout (and predict) state is the online network's;
the train state is ``(online state, target state)``, both started from the
state stored with a replayed sequence's first step
(``use_rollout_state=True``), refreshed over the ``burn_in_steps`` rows,
and carried through the sequence. ``ScalarValues(value_rescaling=True)``
trains on R2D2's rescaled targets; ``sequence_priority_eta`` gives its
sequence priorities.
"""

from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import gin
import tensorflow as tf

from alf_rl.algorithms.config_checks import (check_unit_interval,
                                             reject_retired_arguments)
from alf_rl.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from alf_rl.algorithms.replay_training import TDErrorPriority
from alf_rl.algorithms.value_distributions import (ScalarValues,
                                                   ValueDistribution,
                                                   ValueOutputs)
from alf_rl.data_structures import (Experience, LossInfo, PolicyStep,
                                    TimeStep, TrainingInfo, namedtuple)
from alf_rl.networks import QNetwork
from alf_rl.networks.noisy import without_noise
from alf_rl.networks.target_network import PeriodicSoftUpdate, TargetNetwork
from alf_rl.ops import losses
from alf_rl.ops.exploration import epsilon_greedy_action
from alf_rl.ops.masks import pad_last_row
from alf_rl.ops.td_targets import fold_n_step
from alf_rl.specs import is_bounded, is_discrete, num_discrete_actions
from alf_rl.utils.common import make_stateless_seed
from alf_rl.utils.schedules import LinearSchedule

from alf_rl.utils.nest import Nest

DqnInfo = namedtuple(
    'DqnInfo',
    [
        'q_value',  # [B] float32 Q(s_t, a_t) of the action taken (trained)
        # ([B, N] log-probabilities or quantiles when distributional)
        'target_value',  # [B] float32 v_t = Q_target(s_t, a*) (no gradient)
        # ([B, N] probabilities, [B, N] or [B, N'] quantiles)
        'tau',  # [B, N] float32 IQN's fractions of q_value; () otherwise
    ],
    default_value=())

DqnLossInfo = namedtuple(
    'DqnLossInfo',
    [
        'td_error',  # [T, B] float32 G_t - Q(s_t, a_t); 0 on the last row
        'q_value',  # [T, B] float32 Q(s_t, a_t) (the mean if distributional)
    ],
    default_value=())


_RESAMPLING_EVENTS = ('rollout', 'update')


def _check_resampling(name: str, events: Sequence[str]) -> Tuple[str, ...]:
    """``noise_resampling`` validated: a subset of ``_RESAMPLING_EVENTS``."""
    if isinstance(events, str):
        events = (events, )
    unknown = [e for e in events if e not in _RESAMPLING_EVENTS]
    if unknown:
        raise ValueError("%s: noise_resampling must name events among %s, "
                         "got %r" % (name, _RESAMPLING_EVENTS, tuple(events)))
    return tuple(events)


def _check_action_spec(name: str, action_spec: Any) -> None:
    """Raises ValueError unless ``action_spec`` is one scalar bounded
    discrete spec."""
    if (tf.nest.is_nested(action_spec) or not is_bounded(action_spec)
            or not is_discrete(action_spec)
            or action_spec.shape.rank != 0):
        raise ValueError(
            "%s: action_spec must be one scalar BoundedTensorSpec with "
            "an integer dtype (a single discrete action), got %s" %
            (name, action_spec))


def _check_loss_rows(name: str, loss_rows: str, recurrent: bool) -> bool:
    """Whether ``loss_rows`` asks to fold windows ('first'), validated."""
    if loss_rows not in ('all', 'first'):
        raise ValueError("%s: loss_rows must be 'all' or 'first', got %r" %
                         (name, loss_rows))
    if loss_rows == 'first' and recurrent:
        raise ValueError("%s: loss_rows='first' needs a feed-forward Q "
                         "network (a recurrent one must run every row)" %
                         name)
    return loss_rows == 'first'


def _epsilon_schedule(name: str, epsilon_greedy: Union[float,
                                                       Sequence[float]],
                      decay_steps: int) -> LinearSchedule:
    """The exploration schedule from ``epsilon_greedy`` (float or
    ``(start, end)``), validated."""
    if isinstance(epsilon_greedy, (tuple, list)):
        if len(epsilon_greedy) != 2:
            raise ValueError("%s: epsilon_greedy must be a float or "
                             "(start, end), got %r" % (name, epsilon_greedy))
        start, end = epsilon_greedy
    else:
        start = end = epsilon_greedy
    start = check_unit_interval(name, 'epsilon_greedy', float(start))
    end = check_unit_interval(name, 'epsilon_greedy', float(end))
    if int(decay_steps) < 1:
        raise ValueError("%s: epsilon_decay_steps must be >= 1, got %r" %
                         (name, decay_steps))
    return LinearSchedule(start, end, int(decay_steps))


class _RecurrentQStates(object):
    """DQN's train state: ``(online, target)`` Q network states for a
    recurrent Q network (``_recurrent``, set by the constructor), ``()``
    for a feed-forward one."""

    _recurrent = False

    def train_state_from_rollout_state(self, state: Nest) -> Nest:
        """``(state, state)``: the target network starts from the online
        network's stored state (``()`` for a feed-forward Q network).

        Args:
            state: the stored rollout state, [b, ...] leaves.
        Returns:
            the train state.
        """
        return (state, state) if self._recurrent else state

    def _split(self, state: Nest) -> Tuple[Nest, Nest]:
        """(online, target) network states of a train state."""
        return state if self._recurrent else ((), ())


class _NoiseResampling(object):
    """New noise for noisy heads at the events ``_resampling`` names (set
    by the constructor; see ``DqnAlgorithm``'s ``noise_resampling``)."""

    _resampling: Tuple[str, ...] = ()
    _q_network: Any = None

    def _noise_variables(self, event: str) -> List[tf.Variable]:
        """The online network's noise variables if ``event`` redraws
        them, else none."""
        if event not in self._resampling:
            return []
        return [v for layer in getattr(self._q_network, 'noisy_layers', ())
                for v in (layer.epsilon_in, layer.epsilon_out)]

    def _resample_noise(self, event: str, networks: Sequence[Any]) -> None:
        """Draws new noise for ``networks`` if ``event`` is configured."""
        if event not in self._resampling:
            return
        for net in networks:
            if hasattr(net, 'resample_noise'):
                net.resample_noise()


class _ActionColumns(object):
    """Between actions and Q-value columns (column i is action ``minimum +
    i`` of the ``action_spec``)."""

    action_spec: Any

    def _to_action(self, index: tf.Tensor) -> tf.Tensor:
        action = tf.cast(index, self.action_spec.dtype)
        return action + tf.cast(self.action_spec.minimum, action.dtype)

    def _taken_q(self, values: tf.Tensor, action: tf.Tensor) -> tf.Tensor:
        """[B] (or [B, N]) values of the taken ``action`` [B] from
        ``values`` [B, A] (or [B, A, N])."""
        index = tf.cast(action, tf.int32) - tf.cast(self.action_spec.minimum,
                                                    tf.int32)
        return tf.gather(values, index[:, None], batch_dims=1)[:, 0]


class _FoldedRows(object):
    """``loss_rows='first'``: windows folded into two rows before the
    networks run (``_fold_rows`` and ``_gamma``, set by the constructor)."""

    _fold_rows = False
    _gamma = 0.99

    def training_rows(self, experience: Experience) -> Experience:
        """With ``loss_rows='first'``, the [L, b] window folded into 2 rows:
        row 0, and per sequence the step it bootstraps from (the first
        LAST step after row 0, else the last row) with the folded reward
        and discount of ``fold_n_step``; else the window unchanged.

        Args:
            experience: ``Experience`` with [L, b, ...] leaves.
        Returns:
            ``Experience`` with [2, b, ...] leaves (or the input).
        """
        if not self._fold_rows or experience.step_type.shape[0] == 2:
            return experience
        k, reward, discount = fold_n_step(experience.reward,
                                          experience.discount,
                                          experience.step_type, self._gamma)
        at_k = tf.stack([k, tf.range(tf.shape(k)[0])], axis=-1)
        rows = tf.nest.map_structure(
            lambda x: tf.stack([x[0], tf.gather_nd(x, at_k)]), experience)
        return rows._replace(
            reward=tf.stack([experience.reward[0], reward]),
            discount=tf.stack([experience.discount[0], discount]))


@gin.configurable
class DqnAlgorithm(_RecurrentQStates, _NoiseResampling, _ActionColumns,
                   _FoldedRows, TDErrorPriority, OffPolicyAlgorithm):
    """DQN / double DQN with n-step returns and ε-greedy exploration.

    Args:
        observation_spec: nest of specs of one observation.
        action_spec: scalar ``BoundedTensorSpec`` with an integer dtype.
        q_network_ctor: ``(observation_spec, action_spec) -> QNetwork``-like
            network returning [B, num_actions] Q values (column i is action
            ``minimum + i``), or the output ``value_distribution`` reads.
            ``QNetwork.dueling`` gives the dueling head; a recurrent one
            (``QRnnNetwork``) needs ``use_rollout_state=True``.
        gamma: discount factor γ.
        td_error_loss_fn: ``(target, prediction) -> element-wise loss``,
            e.g. ``element_wise_huber_loss`` (default, as in the Nature
            paper's error clipping) or ``element_wise_squared_loss``.
        use_double_q: double-DQN targets (argmax from the online network).
        epsilon_greedy: ``(start, end)`` of the exploration ε schedule, or
            one float for a constant ε.
        epsilon_decay_steps: rollout calls over which ε decays linearly.
        eval_epsilon_greedy: ε used by ``predict`` (0: greedy).
        value_distribution: a ``ValueDistribution`` (default
            ``ScalarValues()``; C51, QR-DQN, IQN: see the module doc); the
            Q network must produce its output.
        loss_rows: ``'all'``: every row but the last is trained, each on
            the return over its available horizon; ``'first'``: only row 0,
            on its (L-1)-step return (the window folded into two rows
            before the networks run; feed-forward Q networks only).
        noise_resampling: when noisy heads draw new noise: any of
            ``'rollout'`` (each rollout call) and ``'update'`` (each
            update); networks without ``resample_noise`` ignore it.
        tau: Polyak rate of target updates (1: copy).
        target_update_period: update the target every this many updates.
        optimizer: a ``tf_keras`` optimizer for the Q network.
        name: module name.
        **kwargs: passed to ``OffPolicyAlgorithm`` (reward shaping,
            observation transformers, gradient clipping, ...).

    Raises:
        ValueError: ``action_spec`` is not one scalar bounded discrete spec,
            the Q network does not fit ``value_distribution``, a
            hyperparameter is out of range, or ``loss_rows='first'`` with a
            recurrent Q network.
        TypeError: a retired argument name (``td_loss_fn``,
            ``target_update_tau``).
    """

    has_first_train_step = True  # first_train_step skips the targets

    def __init__(self,
                 observation_spec: Nest,
                 action_spec: Nest,
                 q_network_ctor: Callable = QNetwork,
                 gamma: float = 0.99,
                 td_error_loss_fn: Callable = losses.element_wise_huber_loss,
                 use_double_q: bool = True,
                 epsilon_greedy: Union[float, Sequence[float]] = (1.0, 0.05),
                 epsilon_decay_steps: int = 10000,
                 eval_epsilon_greedy: float = 0.0,
                 value_distribution: Optional[ValueDistribution] = None,
                 noise_resampling: Sequence[str] = ('rollout', 'update'),
                 loss_rows: str = 'all',
                 tau: float = 1.0,
                 target_update_period: int = 100,
                 optimizer: Optional[Any] = None,
                 name: str = 'DqnAlgorithm',
                 **kwargs: Any):
        reject_retired_arguments(name, kwargs)
        _check_action_spec(name, action_spec)
        self._epsilon = _epsilon_schedule(name, epsilon_greedy,
                                          epsilon_decay_steps)
        self._eval_epsilon = check_unit_interval(name, 'eval_epsilon_greedy',
                                                 eval_epsilon_greedy)
        gamma = check_unit_interval(name, 'gamma', gamma)
        q_network = q_network_ctor(observation_spec, action_spec)
        self._distribution = value_distribution or ScalarValues()
        self._distribution.check_network(name, q_network)
        self._resampling = _check_resampling(name, noise_resampling)
        q_state = q_network.state_spec
        self._recurrent = bool(tf.nest.flatten(q_state))
        self._fold_rows = _check_loss_rows(name, loss_rows, self._recurrent)
        super().__init__(observation_spec, action_spec, optimizer=optimizer,
                         name=name,
                         train_state_spec=((q_state, q_state)
                                           if self._recurrent else ()),
                         rollout_state_spec=q_state, **kwargs)
        self._q_network = q_network
        self._target_q_network = TargetNetwork(q_network,
                                               name='target_q_network')
        self._target_updater = PeriodicSoftUpdate(
            self._target_q_network.variables, self._q_network.variables,
            tau=tau, period=target_update_period)
        self._num_actions = num_discrete_actions(action_spec)
        self._gamma = gamma
        self._td_error_loss_fn = td_error_loss_fn
        self._use_double_q = bool(use_double_q)
        self._rollout_count = tf.Variable(0, dtype=tf.int64, trainable=False,
                                          name='rollout_count')

    @property
    def epsilon(self) -> tf.Tensor:
        """[] float32: the current exploration ε."""
        return self._epsilon(self._rollout_count)

    def rollout_owned_variables(self) -> List[tf.Variable]:
        """The ε schedule's counter of ``rollout`` calls and, when
        ``rollout`` resamples it, the online network's noise (see
        ``Algorithm.rollout_owned_variables``)."""
        return [self._rollout_count] + self._noise_variables('rollout')

    def _outputs(self, network: Any, observation: Nest, purpose: str,
                 state: Nest) -> Tuple[ValueOutputs, Nest]:
        return self._distribution.outputs(network, observation, purpose,
                                          state)

    def _act(self, observation: Nest, epsilon: Any,
             state: Nest) -> Tuple[tf.Tensor, Nest]:
        out, state = self._outputs(self._q_network, observation, 'act',
                                   state)
        index = epsilon_greedy_action(out.q, epsilon, make_stateless_seed())
        return self._to_action(index), state

    def predict(self, time_step: TimeStep, state: Nest) -> PolicyStep:
        """Greedy (or ``eval_epsilon_greedy``) action: the argmax of the
        mean Q, noisy heads with their mean weights (no noise).

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: the Q network's state (``()`` if feed-forward).
        Returns:
            ``PolicyStep(action [B] of the spec's dtype, state, ())``.
        """
        with without_noise([self._q_network]):
            if self._eval_epsilon == 0.0:
                out, state = self._outputs(self._q_network,
                                           time_step.observation, 'greedy',
                                           state)
                action = self._to_action(
                    tf.argmax(out.q, axis=-1, output_type=tf.int32))
            else:
                action, state = self._act(time_step.observation,
                                          self._eval_epsilon, state)
        return PolicyStep(action=action, state=state)

    def rollout(self, time_step: TimeStep, state: Nest) -> PolicyStep:
        """ε-greedy action; advances the ε schedule by one call.

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: the Q network's state (``()`` if feed-forward).
        Returns:
            ``PolicyStep(action [B], state, ())``.
        """
        self._resample_noise('rollout', [self._q_network])
        count = self._rollout_count.assign_add(1)
        action, state = self._act(time_step.observation,
                                  self._epsilon(count - 1), state)
        return PolicyStep(action=action, state=state)

    def train_step(self, exp: Experience, state: Nest) -> PolicyStep:
        """Q of the taken action and the bootstrap value of this step.

        Args:
            exp: ``Experience`` with [B, ...] leaves.
            state: ``(online, target)`` network states (``()`` if
                feed-forward).
        Returns:
            ``PolicyStep(action [B] greedy, state, DqnInfo)``.
        """
        q_state, target_state = self._split(state)
        out, q_state = self._outputs(self._q_network, exp.observation,
                                     'train', q_state)
        step = self._with_target(exp, (q_state, target_state),
                                 self._taken_q(out.values, exp.action), out)
        return step._replace(info=self._train_info(step.info, out))

    def _train_info(self, info: Any, out: ValueOutputs) -> Any:
        """The train steps' ``info``; a subclass's hook to add terms."""
        return info

    def first_train_step(self, exp: Experience,
                         state: Nest) -> PolicyStep:
        """``train_step`` without the target network (the first row).

        The first row of a sequence is never a bootstrap value (row t's
        n-step target reads rows after t), so its target value is zeros:
        with the usual 2-step sequences, one target-network pass fewer per
        update. (A recurrent Q network runs ``train_step``: the target
        network's state must advance.)

        Args:
            exp: ``Experience`` with [B, ...] leaves.
            state: ``()`` (``(online, target)`` states if recurrent).
        Returns:
            ``PolicyStep(action [B] greedy, state, DqnInfo)`` whose
            ``target_value`` is zeros (unless recurrent).
        """
        if self._recurrent:
            return self.train_step(exp, state)
        out, _ = self._outputs(self._q_network, exp.observation, 'train', ())
        q_value = self._taken_q(out.values, exp.action)
        info = DqnInfo(q_value=q_value, tau=out.tau,
                       target_value=self._distribution.zero_target(q_value))
        greedy = tf.argmax(out.q, axis=-1, output_type=tf.int32)
        return PolicyStep(action=self._to_action(greedy), state=state,
                          info=self._train_info(info, out))

    def bootstrap_step(self, exp: Experience, state: Nest) -> PolicyStep:
        """Only the bootstrap value of the last row of a sequence.

        Skips the online Q-network (its loss is masked on that row) unless
        double Q-learning needs it for the greedy action: with the usual
        2-step sequences, a third less network compute per update.

        Args:
            exp: ``Experience`` with [B, ...] leaves.
            state: ``(online, target)`` network states (``()`` if
                feed-forward).
        Returns:
            ``PolicyStep(action [B] greedy, state, DqnInfo)`` whose
            ``q_value`` (and ``tau``) are zeros.
        """
        out = None
        q_state, target_state = self._split(state)
        if self._use_double_q:
            out, q_state = self._outputs(self._q_network, exp.observation,
                                         'train', q_state)
        return self._with_target(exp, (q_state, target_state), None, out)

    def _with_target(self, exp: Experience, state: Nest,
                     q_value: Optional[tf.Tensor],
                     out: Optional[ValueOutputs]) -> PolicyStep:
        """``PolicyStep`` of ``train_step``/``bootstrap_step``: the target
        network's value of ``exp.observation`` (at the online network's
        greedy action, from ``out``, for double Q-learning), with
        ``q_value`` [B] ([B, N]; zeros if ``None``); ``state`` the (online,
        target) states, the target's advanced here."""
        q_state, target_state = state
        target, target_state = self._outputs(self._target_q_network,
                                             exp.observation, 'target',
                                             target_state)
        state = (q_state, target_state) if self._recurrent else ()
        # Double Q: the online network's greedy action; else the target's
        # (its value there is max_a Q_target for scalar values).
        greedy = out.q if self._use_double_q and out is not None else target.q
        best = tf.argmax(greedy, axis=-1, output_type=tf.int32)
        target_value = self._distribution.to_target(
            self._taken_q(target.values, best))
        tau = out.tau if out is not None else ()
        if q_value is None:
            q_value, tau = self._distribution.zero_prediction(target_value)
        return PolicyStep(action=self._to_action(best),
                          state=state,
                          info=DqnInfo(
                              q_value=q_value,
                              target_value=tf.stop_gradient(target_value),
                              tau=tau))

    def calc_loss(self, training_info: TrainingInfo,
                  importance_weights: Optional[tf.Tensor] = None) -> LossInfo:
        """TD loss of rows 0..T-2 against n-step targets; last row padded.

        The loss is ``value_distribution``'s: ``td_error_loss_fn(G_t,
        Q(s_t, a_t))`` for scalar values, the distributional loss
        otherwise (then also ``extra.td_error``, the priority).

        Args:
            training_info: ``TrainingInfo`` with [T, B] leaves and
                ``info`` a ``DqnInfo`` of [T, B] (or [T, B, N]) tensors.
            importance_weights: optional [B] or [T, B] float32 per-sample
                weights multiplied into the loss (prioritized replay), for
                callers that do not fold them into the loss mask.
        Returns:
            ``LossInfo(loss [T, B], extra=DqnLossInfo)``.
        """
        info = training_info.info
        loss, td_error = self._distribution.loss(
            training_info, self._gamma, self._td_error_loss_fn)
        loss = pad_last_row(loss)
        if importance_weights is not None:
            loss = loss * tf.cast(importance_weights, loss.dtype)
        return LossInfo(loss=loss,
                        extra=DqnLossInfo(
                            td_error=pad_last_row(td_error),
                            q_value=self._distribution.mean(info.q_value)))

    def after_train(self, training_info: TrainingInfo) -> None:
        """Updates the target network when due; noisy heads draw the next
        update's noise (``noise_resampling`` with ``'update'``).

        Args:
            training_info: the ``TrainingInfo`` trained on (unused).
        """
        del training_info
        self._target_updater()
        self._resample_noise(
            'update', [self._q_network, self._target_q_network.network])
