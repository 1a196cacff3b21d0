"""Training from stored experience: ``ReplayTrainingMixin``.

Mixed into ``OffPolicyAlgorithm`` and ``OnPolicyAlgorithm`` (so an
actor-critic can also be trained from a replay buffer, and PPO trains epochs
of mini-batches over what one iteration collected).

``train`` takes a time-major ``Experience`` ``[T, B, ...]`` as the replay
buffer reads it (sampled sequences, or everything one iteration
collected), applies ``transform_timestep`` and ``preprocess_experience``,
cuts it into mini-batches of sequences, and for each mini-batch unrolls
``train_step`` over time (``alf_rl.algorithms.unroll``, shared with the
drivers) under a ``GradientTape``, computes ``calc_loss`` there (kept for
``calc_priority``) and hands it to ``train_complete``. Nothing is
transposed here: a mini-batch ``[L, b, ...]`` is one gather of sequences
along B (none for one update over the whole batch).

Distributions travel as their parameters (``rollout_info`` in the
experience; each step's info through the unroll's arrays): each row
rebuilds its ``rollout_info`` for the step, and the update's
``TrainingInfo`` rebuilds the stacked info and the mini-batch's
``rollout_info`` once.

The last row of every sequence only bootstraps the rows before it: it runs
``bootstrap_step`` and is masked, as are LAST steps. A stored step followed
by a FIRST step is made LAST first (``alf_rl.ops.masks.cut_seams``): a
collector that started over (a resumed run with Python environments, a
restarted worker) leaves a MID step there, with no transition after it.
The first row is never a bootstrap value: it runs ``first_train_step``,
which may skip the target values. Algorithms whose targets are all
computed beforehand in ``preprocess_experience`` (PPO) set
``last_row_only_bootstraps = False``: then every row is trained and
sequences may be one step long.

The hooks a method may override and the capabilities it declares with
them (``bootstrap_step``; ``first_train_step`` with
``has_first_train_step``; ``calc_priority`` with ``gives_priorities``;
``continue_training``) are the ``ReplayHooks`` protocol of
``alf_rl.algorithms.protocols``.
"""

import functools
from typing import Any, Callable, NamedTuple, Optional, Tuple

import tensorflow as tf

from alf_rl.algorithms.algorithm import describe_returned
from alf_rl.algorithms.mini_batches import mini_batch, shuffled_orders
from alf_rl.algorithms.unroll import unroll
from alf_rl.data_structures import (AlgStep, Experience, LossInfo,
                                    PolicyStep, TrainingInfo)
from alf_rl.ops import distributions as dist_ops
from alf_rl.ops.masks import cut_seams, mask_last_row
from alf_rl.ops.recurrent_replay import sequence_priority
from alf_rl.specs import add_outer_dims, time_step_spec
from alf_rl.utils.common import (loop_traced_once,
                                 reset_state_if_necessary, trace_outputs,
                                 valid_step_mask)
from alf_rl.utils.nest import assert_same_structure


class MiniBatchShape(NamedTuple):
    """How a batch of experience is cut into mini-batches of sequences."""
    mini_batch_length: int  # L, steps per sequence
    num_sequences: int  # sequences of length L in the batch
    mini_batch_size: int  # sequences per update


def check_mini_batches(batch_size: int,
                       length: int,
                       mini_batch_size: Optional[int],
                       mini_batch_length: Optional[int],
                       last_row_only_bootstraps: bool,
                       what: str = 'this batch',
                       prefix: str = 'train: ',
                       length_name: str = 'sequence length'
                       ) -> MiniBatchShape:
    """Validates a mini-batch configuration; one clear line per mistake.

    The one check used by ``ReplayTrainingMixin.train`` (at trace time) and
    by the off-policy trainer (before training starts).

    Args:
        batch_size: B, sequences (environments) in the batch.
        length: T, steps per sequence in the batch.
        mini_batch_size: sequences per update (None/0: all).
        mini_batch_length: L, steps per training sequence (None/0: T).
        last_row_only_bootstraps: whether the last row of a sequence only
            bootstraps (then L >= 2).
        what: how the message names the batch ('this batch', 'what one
            iteration collects').
        prefix: start of every message (names the caller's settings).
        length_name: how the message names T.
    Returns:
        ``MiniBatchShape``.
    Raises:
        ValueError: T not a multiple of L; L < 2 with a bootstrap row; more
            sequences per update than the batch holds.
    """
    mini_batch_length = mini_batch_length or length
    if mini_batch_length < 2 and last_row_only_bootstraps:
        raise ValueError("%smini_batch_length must be >= 2 (the last step "
                         "of a sequence only bootstraps), got %d" %
                         (prefix, mini_batch_length))
    if length % mini_batch_length:
        raise ValueError("%s%s %d is not a multiple of mini_batch_length %d"
                         % (prefix, length_name, length, mini_batch_length))
    num_sequences = batch_size * (length // mini_batch_length)
    mini_batch_size = mini_batch_size or num_sequences
    if mini_batch_size > num_sequences:
        raise ValueError(
            "%smini_batch_size %d is larger than %s: %d envs x %d steps = "
            "%d sequences of length %d" %
            (prefix, mini_batch_size, what, batch_size, length,
             num_sequences, mini_batch_length))
    return MiniBatchShape(mini_batch_length, num_sequences, mini_batch_size)


def check_step_result(result: Any, algorithm: Any, method: str,
                      state_spec: Any) -> Any:
    """Checks (in Python, at trace time) what a step method returned.

    Args:
        result: what ``<algorithm>.<method>`` returned.
        algorithm: the algorithm (for the message).
        method: ``'rollout'``, ``'train_step'``, ``'first_train_step'`` or
            ``'bootstrap_step'``.
        state_spec: the state spec the returned ``state`` must have the
            structure of.
    Returns:
        ``result``.
    Raises:
        TypeError: ``result`` is not a ``PolicyStep``/``AlgStep``.
        ValueError: its ``state`` does not have ``state_spec``'s
            structure (naming the path).
    """
    where = '%s.%s' % (type(algorithm).__name__, method)
    if not isinstance(result, (PolicyStep, AlgStep)):
        raise TypeError(
            "%s must return a PolicyStep(action, state, info) (or an "
            "AlgStep), got %s" % (where, describe_returned(result)))
    assert_same_structure(result.state, state_spec, '%s state' % where,
                          'its state spec', prefix='state')
    return result


def check_burn_in(burn_in_steps: int, mini_batch_length: int,
                  last_row_only_bootstraps: bool) -> None:
    """Refuses training sequences too short for their burn-in.

    Args:
        burn_in_steps: rows that only refresh the state.
        mini_batch_length: L, rows per training sequence (with burn-in).
        last_row_only_bootstraps: whether the last trained row only
            bootstraps (then 2 rows must remain after the burn-in).
    Raises:
        ValueError: fewer rows than needed remain after the burn-in.
    """
    need = burn_in_steps + (2 if last_row_only_bootstraps else 1)
    if burn_in_steps and mini_batch_length < need:
        raise ValueError(
            "train: mini_batch_length %d leaves too few rows after "
            "burn_in_steps %d: it must be >= %d" %
            (mini_batch_length, burn_in_steps, need))


class UpdateResult(NamedTuple):
    """What one replay update returns (values, not attributes)."""
    loss_info: LossInfo  # scalar leaves, as from update_with_gradient
    priority: Any  # [b] float32 from calc_priority, or ()
    keep_going: tf.Tensor  # [] bool from continue_training


#: Runs one update on a time-major mini-batch: ``runner(update_fn, batch,
#: sample_weights) -> UpdateResult``, where ``update_fn(batch,
#: sample_weights)`` does the update on [L, b, ...] experience and [b]
#: weights (or None). The distributed learner's runner splits the batch
#: across replicas (``alf_rl.distributed.strategy.ReplicaRunner``).
UpdateRunner = Callable[..., UpdateResult]


class ReplayTrainingMixin(object):
    """Training from stored experience, for any ``RLAlgorithm``.

    Args:
        use_rollout_state: store the rollout state in the experience and
            start each training sequence from it (RNN policies); else
            sequences start from the initial train state.
        burn_in_steps: rows at the start of every training sequence that
            only refresh the recurrent state (R2D2's burn-in; see
            ``training_start_state``): no loss, no gradient.
        sequence_priority_eta: η of R2D2's sequence priority (see
            ``TDErrorPriority``); None: ``|δ_0|``.
        *args: passed on to the next class (``RLAlgorithm``).
        **kwargs: passed on to the next class (``RLAlgorithm``).
    """

    #: Whether the last row of every training sequence only bootstraps the
    #: rows before it (it runs ``bootstrap_step`` and its loss is masked, so
    #: sequences need >= 2 steps). ``False`` for algorithms whose targets
    #: come precomputed from ``preprocess_experience`` (PPO): every row runs
    #: ``train_step`` and counts, and ``mini_batch_length`` may be 1. A
    #: property of the method, fixed per class.
    last_row_only_bootstraps = True

    #: Whether the class provides its own ``first_train_step`` (row 0 of a
    #: sequence then runs it; see ``ReplayHooks``).
    has_first_train_step = False

    #: Whether ``calc_priority`` returns priorities (``TDErrorPriority``
    #: sets it): prioritized replay is refused before training otherwise.
    gives_priorities = False

    def __init__(self, *args: Any, use_rollout_state: bool = False,
                 burn_in_steps: int = 0,
                 sequence_priority_eta: Optional[float] = None,
                 **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._use_rollout_state = bool(use_rollout_state)
        self.burn_in_steps, self.sequence_priority_eta = (
            _checked_recurrent_replay_args(type(self).__name__,
                                           burn_in_steps,
                                           sequence_priority_eta))
        self._rollout_info_spec = None
        self._train_info_spec = None

    @property
    def use_rollout_state(self) -> bool:
        """Whether experience carries the rollout state (RNN policies)."""
        return self._use_rollout_state

    @use_rollout_state.setter
    def use_rollout_state(self, value: bool) -> None:
        self._use_rollout_state = bool(value)

    def train_state_from_rollout_state(self, state: Any) -> Any:
        """The train state ([b, ...] leaves) a replayed sequence starts
        from, given the rollout ``state`` stored with its first step (the
        identity by default; DQN maps it to (online, target) states)."""
        return state

    @property
    def recurrent_state_spec(self) -> Any:
        """The part of ``train_state_spec`` that carries memory across
        steps (recurrent networks): training needs sequences of >= 2 steps
        to learn through it. All of the train state by default; a
        composite whose state is partly a stored input (an ``Agent``'s
        intrinsic-reward module) narrows it.
        """
        return self.train_state_spec

    # ------------------------------------------------------------ specs
    def prepare_off_policy_specs(self,
                                 batch_size: Optional[int] = None
                                 ) -> Experience:
        """Finds the rollout-info and train-info specs by tracing.

        Traces ``rollout`` on the time-step spec and ``train_step`` on the
        resulting experience spec with ``get_concrete_function``: no op runs
        and nothing (normalizers, buffers) is mutated.

        Args:
            batch_size: static batch size to trace with (None: unknown).
        Returns:
            The ``Experience`` spec (no batch dim) that a replay buffer
            stores: distributions in ``rollout_info`` as parameter specs.
        """
        self._rollout_info_spec = _traced_rollout_info_spec(self, batch_size)
        exp_spec = self.experience_spec
        self._train_info_spec = _traced_train_info_spec(
            self, exp_spec, self._rollout_info_spec, batch_size)
        return exp_spec

    @property
    def rollout_info_spec(self) -> Any:
        """Spec of rollout's info (``DistributionSpec`` for distributions)."""
        if self._rollout_info_spec is None:
            self.prepare_off_policy_specs()
        return self._rollout_info_spec

    @property
    def experience_spec(self) -> Experience:
        """Spec of one stored ``Experience`` step (no batch dim)."""
        ts = time_step_spec(self.observation_spec, self.action_spec)
        return Experience(
            step_type=ts.step_type,
            reward=ts.reward,
            discount=ts.discount,
            observation=ts.observation,
            prev_action=ts.prev_action,
            env_id=ts.env_id,
            action=self.action_spec,
            rollout_info=dist_ops.to_params_spec(self.rollout_info_spec),
            state=self.rollout_state_spec if self.use_rollout_state else ())

    # ------------------------------------------------------------ hooks
    def bootstrap_step(self, experience: Experience, state: Any) -> Any:
        """``train_step`` for the last row of a sequence (bootstrap only).

        The last step of every training sequence only provides targets for
        the steps before it; its own losses are masked. Override this to
        compute only what the targets need (e.g. target values) and return
        zeros for the rest of the info -- same structure as
        ``train_step``'s. Defaults to ``train_step``.

        Args/returns: as ``train_step`` ([B, ...] leaves).
        """
        return self.train_step(experience, state)

    def first_train_step(self, experience: Experience, state: Any) -> Any:
        """``train_step`` for the first row of a sequence (never a target).

        With ``last_row_only_bootstraps``, row t's targets come from rows
        after t, so the first row's target values are never read. Override
        this to skip them (zeros in their place, same structure as
        ``train_step``'s) and keep everything the row's own losses need,
        and declare ``has_first_train_step = True``: only then is row 0
        run by it. Defaults to ``train_step``.

        Args/returns: as ``train_step`` ([B, ...] leaves).
        """
        return self.train_step(experience, state)

    def training_rows(self, experience: Experience) -> Experience:
        """The [L', b, ...] rows an update unrolls from a replayed [L, b,
        ...] mini-batch after its burn-in: all of them by default. A method
        training only row 0 on its n-step return folds them into two (see
        ``alf_rl.ops.td_targets.fold_n_step``)."""
        return experience

    def calc_priority(self, training_info: TrainingInfo,
                      per_step_loss_info: LossInfo) -> Optional[tf.Tensor]:
        """Per-sequence priorities for prioritized replay, or None.

        Called after each update on its [L, b] training info and the
        per-step ``LossInfo`` from ``calc_loss``. Prioritized replay
        (``TrainerConfig.prioritized_replay``) needs an algorithm that
        returns priorities here and declares ``gives_priorities = True``;
        the default returns None (the trainer then refuses prioritized
        replay before training starts).

        Args:
            training_info: ``TrainingInfo`` with [L, b, ...] leaves.
            per_step_loss_info: ``LossInfo`` with [L, b] leaves.
        Returns:
            [b] float32 non-negative priorities, or None.
        """
        del training_info, per_step_loss_info
        return None

    def continue_training(self, training_info: TrainingInfo,
                          valid_masks: tf.Tensor) -> tf.Tensor:
        """Whether ``train`` goes on after an update (early stopping).

        Args:
            training_info: the [L, b] ``TrainingInfo`` of the update just
                done (its ``info`` computed before the update).
            valid_masks: [L, b] float32 mask of the steps that counted.
        Returns:
            bool scalar tensor; the default always continues.
        """
        del training_info, valid_masks
        return tf.constant(True)

    # ------------------------------------------------------------ training
    def train(self,
              experience: Experience,
              num_updates: int = 1,
              mini_batch_size: Optional[int] = None,
              mini_batch_length: Optional[int] = None,
              shuffle: bool = True,
              seed: Optional[int] = None,
              sample_weights: Optional[tf.Tensor] = None,
              update_runner: Optional[UpdateRunner] = None) -> LossInfo:
        """Trains on a batch of stored experience.

        Args:
            experience: ``Experience`` with time-major [T, B, ...] leaves as
                replayed (raw observations; ``rollout_info`` as parameters).
            num_updates: passes (epochs) over the sequences.
            mini_batch_size: sequences per update (default: all).
            mini_batch_length: L, steps per sequence (default T); T must be
                a multiple of L; L >= 2 unless ``last_row_only_bootstraps``
                is False.
            shuffle: shuffle sequences before each pass.
            seed: optional int seed for shuffling (default: drawn from the
                global generator).
            sample_weights: optional [B] float32 per-sequence weights (the
                importance weights of prioritized replay); only with one
                update over whole sequences (no mini-batching).
            update_runner: runs each mini-batch's update (see
                ``UpdateRunner``); None runs it here, on one device.
        Returns:
            ``LossInfo`` (scalars) of the last update (updates stop early
            once ``continue_training`` says so).
        """
        return self._train(experience, num_updates, mini_batch_size,
                           mini_batch_length, shuffle, seed,
                           sample_weights, update_runner).loss_info

    def train_with_priority(self, experience: Experience,
                            sample_weights: Optional[tf.Tensor] = None,
                            update_runner: Optional[UpdateRunner] = None
                            ) -> Tuple[LossInfo, tf.Tensor]:
        """One update over whole sampled sequences, for prioritized replay.

        Args:
            experience: ``Experience`` with time-major [T, B, ...] leaves as
                replayed.
            sample_weights: optional [B] float32 importance weights.
            update_runner: as for ``train``.
        Returns:
            ``(loss_info, priority)``: scalar ``LossInfo`` and the [B]
            float32 priorities from ``calc_priority``.
        Raises:
            ValueError: ``calc_priority`` returns None for this algorithm.
        """
        result = self._train(experience, sample_weights=sample_weights,
                             update_runner=update_runner)
        if isinstance(result.priority, tuple):
            raise ValueError(
                "prioritized replay needs %s.calc_priority to return "
                "per-sequence priorities; it returns None" %
                type(self).__name__)
        return result.loss_info, result.priority

    def _train(self, experience, num_updates=1, mini_batch_size=None,
               mini_batch_length=None, shuffle=True, seed=None,
               sample_weights=None, update_runner=None):
        """``train``, returning the last update's ``UpdateResult``."""
        if self._train_info_spec is None:
            self.prepare_off_policy_specs()
        experience = _preprocessed(self, experience)
        shape = _checked_mini_batches(experience, num_updates,
                                      mini_batch_size, mini_batch_length,
                                      sample_weights, self)
        num_batches = shape.num_sequences // shape.mini_batch_size
        num_steps = int(num_updates) * num_batches
        orders = shuffled_orders(int(num_updates), shape.num_sequences,
                                 shuffle and num_batches > 1, seed)

        def _step(i):
            batch = mini_batch(experience, orders, i, num_batches,
                               shape.mini_batch_size, shape.mini_batch_length)
            if update_runner is None:
                return self._update(batch, sample_weights)
            return update_runner(self._update, batch, sample_weights)

        if num_steps == 1:
            return _step(tf.constant(0))
        # All passes and mini-batches run in one while loop whose body (the
        # update) is traced once, not once per mini-batch (which cost ~1-2 s
        # of tracing each). Priorities of mini-batch updates are not kept.
        result = loop_traced_once(
            lambda i, carry: (carry, _step(i)._replace(priority=())), (),
            num_steps,
            keep_going=lambda result: result.keep_going)[1]
        return result

    def _update(self, experience, sample_weights=None):
        """One gradient update on time-major experience [L, b, ...]
        (``rollout_info`` as parameters); see ``_replay_update``."""
        return _replay_update(self, experience, sample_weights)


def _replay_update(algorithm: Any, experience: Experience,
                  sample_weights: Optional[tf.Tensor] = None) -> UpdateResult:
    """One gradient update of a ``ReplayTrainingMixin`` ``algorithm`` on
    time-major experience [L, b, ...] (``rollout_info`` as parameters):
    the rows of ``training_rows`` unrolled under a tape, ``calc_loss``,
    ``train_complete`` with LAST steps, the bootstrap row and zero-weight
    sequences masked, then ``calc_priority`` and ``continue_training``.

    Args:
        algorithm: the algorithm (its specs prepared).
        experience: ``Experience`` with [L, b, ...] leaves.
        sample_weights: optional [b] float32 importance weights.
    Returns:
        The update's ``UpdateResult``.
    """
    state, experience = training_start_state(algorithm, experience)
    experience = algorithm.training_rows(experience)
    variables = algorithm.trainable_variables
    persistent = len(algorithm.get_optimizer_and_variable_sets()) > 1
    with tf.GradientTape(watch_accessed_variables=False,
                         persistent=persistent) as tape:
        tape.watch(variables)
        training_info = unroll_training_rows(
            algorithm, experience, state, algorithm._rollout_info_spec,
            algorithm._train_info_spec)
        per_step = algorithm.calc_loss(training_info)
    valid = valid_step_mask(training_info.step_type)
    if algorithm.last_row_only_bootstraps:
        valid = mask_last_row(valid)
    if sample_weights is not None:
        # Importance weights scale each sequence's share of the mean.
        valid = valid * tf.cast(sample_weights, tf.float32)[tf.newaxis]
    loss_info, _ = algorithm.train_complete(tape, training_info, valid,
                                            per_step_loss_info=per_step)
    del tape
    priority = algorithm.calc_priority(training_info, per_step)
    return UpdateResult(
        loss_info=loss_info,
        priority=() if priority is None else priority,
        keep_going=algorithm.continue_training(training_info, valid))


def _preprocessed(algorithm: Any, experience: Experience) -> Experience:
    """``cut_seams``, ``transform_timestep`` and ``preprocess_experience``
    of ``algorithm`` on stored [T, B] experience; distributions back to
    parameters afterwards (mini-batches and rows are cut from the
    parameters)."""
    experience = experience._replace(
        step_type=cut_seams(experience.step_type),
        rollout_info=dist_ops.params_to_distributions(
            experience.rollout_info, algorithm.rollout_info_spec))
    experience = algorithm.transform_timestep(experience)
    experience = algorithm.preprocess_experience(experience)
    return experience._replace(
        rollout_info=dist_ops.distributions_to_params(
            experience.rollout_info))


def _checked_recurrent_replay_args(name: str, burn_in_steps: int,
                                   sequence_priority_eta: Optional[float]
                                   ) -> Tuple[int, Optional[float]]:
    """``(burn_in_steps, sequence_priority_eta)`` validated (see
    ``ReplayTrainingMixin``); one clear line per bad value."""
    if int(burn_in_steps) < 0:
        raise ValueError("%s: burn_in_steps must be >= 0, got %r" %
                         (name, burn_in_steps))
    if sequence_priority_eta is not None and not (
            0.0 <= float(sequence_priority_eta) <= 1.0):
        raise ValueError("%s: sequence_priority_eta must be in [0, 1] or "
                         "None, got %r" % (name, sequence_priority_eta))
    return int(burn_in_steps), (None if sequence_priority_eta is None else
                                float(sequence_priority_eta))


def training_start_state(algorithm: Any,
                         experience: Experience) -> Tuple[Any, Experience]:
    """The train state at the first trained row of a replayed mini-batch,
    and the rows to train on.

    The state stored with row 0 (``use_rollout_state``, mapped by
    ``train_state_from_rollout_state``; else the initial train state),
    refreshed by ``train_step`` over the algorithm's ``burn_in_steps``
    rows (reset at FIRST steps), which are then cut off. Run it outside
    the update's tape: the burn-in gets no loss and no gradient (the state
    is also ``stop_gradient``-ed).

    Args:
        algorithm: the ``ReplayTrainingMixin`` algorithm (its specs
            prepared).
        experience: ``Experience`` with [L, b, ...] leaves
            (``rollout_info`` as parameters).
    Returns:
        ``(state, rows)``: the train state ([b, ...] leaves) and the
        experience's rows after the burn-in ([L - burn_in_steps, b, ...]).
    """
    batch_size = tf.shape(experience.step_type)[1]
    if algorithm.use_rollout_state:
        state = algorithm.train_state_from_rollout_state(
            tf.nest.map_structure(lambda x: x[0], experience.state))
    else:
        state = algorithm.get_initial_train_state(batch_size)
    k = getattr(algorithm, 'burn_in_steps', 0)
    if not k:
        return state, experience
    initial_state = algorithm.get_initial_train_state(batch_size)
    for t in range(k):
        exp_t = tf.nest.map_structure(lambda x, t=t: x[t], experience)
        state = reset_state_if_necessary(state, initial_state,
                                         exp_t.is_first())
        state = algorithm.train_step(exp_t._replace(
            rollout_info=dist_ops.params_to_distributions(
                exp_t.rollout_info, algorithm.rollout_info_spec)),
                                     state).state
    return (tf.nest.map_structure(tf.stop_gradient, state),
            tf.nest.map_structure(lambda x: x[k:], experience))


def _traced_rollout_info_spec(algorithm: Any,
                              batch_size: Optional[int]) -> Any:
    """The spec of ``rollout``'s info (distributions as
    ``DistributionSpec``s, no batch dim), by tracing ``rollout`` on the
    time-step spec (no op runs)."""
    ts_spec = add_outer_dims(algorithm.time_step_spec, [batch_size])
    state_spec = add_outer_dims(algorithm.rollout_state_spec, [batch_size])

    def _rollout(time_step, state):
        return check_step_result(
            algorithm.rollout(algorithm.transform_timestep(time_step), state),
            algorithm, 'rollout', algorithm.rollout_state_spec).info

    return dist_ops.extract_spec(
        trace_outputs(_rollout, ts_spec, state_spec), from_dim=1)


def _traced_train_info_spec(algorithm: Any, exp_spec: Experience,
                            rollout_info_spec: Any,
                            batch_size: Optional[int]) -> Any:
    """The spec of ``train_step``'s info (no batch dim), by tracing
    ``train_step`` on the experience spec (no op runs)."""
    train_state_spec = add_outer_dims(algorithm.train_state_spec,
                                      [batch_size])

    def _train(exp, state):
        exp = exp._replace(rollout_info=dist_ops.params_to_distributions(
            exp.rollout_info, rollout_info_spec))
        return check_step_result(
            algorithm.train_step(algorithm.transform_timestep(exp), state),
            algorithm, 'train_step', algorithm.train_state_spec).info

    return dist_ops.extract_spec(
        trace_outputs(_train, add_outer_dims(exp_spec, [batch_size]),
                      train_state_spec),
        from_dim=1)


def _checked_mini_batches(experience: Experience, num_updates: int,
                          mini_batch_size: Optional[int],
                          mini_batch_length: Optional[int],
                          sample_weights: Optional[tf.Tensor],
                          algorithm: Any) -> MiniBatchShape:
    """``check_mini_batches`` on experience of static [T, B] outer dims
    (and ``check_burn_in`` for ``algorithm``'s settings); sample weights
    only with one update over whole sequences."""
    last_row_only_bootstraps = algorithm.last_row_only_bootstraps
    length, batch_size = experience.step_type.shape[:2]
    if batch_size is None or length is None:
        raise ValueError("train: experience must have static [T, B] "
                         "outer dims, got %s" %
                         experience.step_type.shape)
    shape = check_mini_batches(batch_size, length, mini_batch_size,
                               mini_batch_length, last_row_only_bootstraps)
    check_burn_in(getattr(algorithm, 'burn_in_steps', 0),
                  shape.mini_batch_length,
                  last_row_only_bootstraps)
    if sample_weights is not None and (
            num_updates != 1 or shape.mini_batch_length != length
            or shape.mini_batch_size != batch_size):
        raise ValueError("train: sample_weights need one update over "
                         "whole sequences")
    return shape


def _checked_step(step_fn: Callable, algorithm: Any, method: str
                  ) -> Callable:
    """``step_fn`` (a train-time step hook of ``algorithm``), what it
    returns checked (at trace time) by ``check_step_result``."""
    return lambda experience, state: check_step_result(
        step_fn(experience, state), algorithm, method,
        algorithm.train_state_spec)


def unroll_training_rows(algorithm: Any, experience: Experience, state: Any,
                         rollout_info_spec: Any,
                         train_info_spec: Any) -> TrainingInfo:
    """The step hooks of a replay-trained ``algorithm`` over time-major
    experience [L, b, ...] from ``state`` (reset at FIRST steps).

    Row 0 runs ``first_train_step`` when the class declares
    ``has_first_train_step`` (with ``last_row_only_bootstraps``), the last
    row ``bootstrap_step`` (with ``last_row_only_bootstraps``), the others
    ``train_step``; what each returns is checked. Only the steps' infos
    are unrolled; the other fields are the experience's. Run it under the
    update's tape.

    Args:
        algorithm: the ``ReplayTrainingMixin`` algorithm.
        experience: ``Experience`` with [L, b, ...] leaves
            (``rollout_info`` as parameters).
        state: the train state at row 0 ([b, ...] leaves).
        rollout_info_spec: spec of rollout's info (distributions rebuilt
            from it).
        train_info_spec: spec of ``train_step``'s info (no batch dim).
    Returns:
        The [L, b] ``TrainingInfo`` (distributions rebuilt).
    """
    length = experience.step_type.shape[0]
    initial_state = algorithm.get_initial_train_state(
        tf.shape(experience.step_type)[1])

    def _row(t, state, step_fn):
        exp_t = tf.nest.map_structure(lambda x: x[t], experience)
        state = reset_state_if_necessary(state, initial_state,
                                         exp_t.is_first())
        policy_step = step_fn(exp_t._replace(
            rollout_info=dist_ops.params_to_distributions(
                exp_t.rollout_info, rollout_info_spec)), state)
        return policy_step.state, policy_step.info

    bootstraps = algorithm.last_row_only_bootstraps
    train_step = _checked_step(algorithm.train_step, algorithm, 'train_step')
    first_row_fn = None
    if bootstraps and algorithm.has_first_train_step:
        first_row_fn = functools.partial(_row, 0, step_fn=_checked_step(
            algorithm.first_train_step, algorithm, 'first_train_step'))
    final_row_fn = None
    if bootstraps:
        final_row_fn = functools.partial(
            _row, length - 1, step_fn=_checked_step(
                algorithm.bootstrap_step, algorithm, 'bootstrap_step'))
    _, info = unroll(
        lambda t, state: _row(t, state, train_step), state,
        num_rows=length - 1 if bootstraps else length,
        row_spec=train_info_spec,
        batch_size=experience.step_type.shape[1],
        final_row_fn=final_row_fn, first_row_fn=first_row_fn)
    return TrainingInfo(
        action=experience.action, step_type=experience.step_type,
        reward=experience.reward, discount=experience.discount,
        info=info, env_id=experience.env_id,
        rollout_info=dist_ops.params_to_distributions(
            experience.rollout_info, rollout_info_spec))


class TDErrorPriority(object):
    """``calc_priority`` from a per-step ``td_error`` of ``LossInfo.extra``.

    Mix it in (before the algorithm base) to opt an algorithm whose
    ``calc_loss`` reports ``extra.td_error`` ([L, b]) into prioritized
    replay: the priority of a sampled sequence is ``|td_error|`` at its
    first step (the transition it was sampled for), or, with the
    algorithm's ``sequence_priority_eta`` η set, R2D2's ``η max + (1 - η)
    mean`` of ``|td_error|`` over its trained rows
    (``alf_rl.ops.recurrent_replay.sequence_priority``).
    """

    gives_priorities = True

    def calc_priority(self, training_info: TrainingInfo,
                      per_step_loss_info: LossInfo) -> tf.Tensor:
        """[b] float32 priorities (see the class docstring).

        Args:
            training_info: the [L, b] ``TrainingInfo`` (its step types
                mask LAST steps and the bootstrap row for the sequence
                priority).
            per_step_loss_info: ``LossInfo`` whose ``extra.td_error`` is
                [L, b] float32.
        """
        td_error = tf.convert_to_tensor(per_step_loss_info.extra.td_error)
        eta = getattr(self, 'sequence_priority_eta', None)
        if eta is None:
            return tf.abs(td_error[0])
        mask = valid_step_mask(training_info.step_type)
        if getattr(self, 'last_row_only_bootstraps', True):
            mask = mask_last_row(mask)
        return sequence_priority(td_error, float(eta), mask)
