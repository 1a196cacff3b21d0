"""``OffPolicyAlgorithm``: trained from stored experience.

Collection (``rollout``) runs without a tape and its experience goes to a
replay buffer. Training takes a batch-major ``Experience`` ``[B, T, ...]``
(sampled sequences, or everything one iteration collected), applies
``transform_timestep`` and ``preprocess_experience``, cuts it into
mini-batches of sequences, and for each mini-batch runs ``train_step`` over
time in a ``tf.while_loop`` writing ``TrainingInfo`` rows into
``TensorArray``s under a ``GradientTape``, then ``train_complete``.

As in the on-policy driver, the last row of every sequence only bootstraps
the rows before it: losses are padded with zeros there and it is masked, as
are LAST steps. Algorithms whose targets are all computed beforehand in
``preprocess_experience`` (PPO) set ``last_row_only_bootstraps = False``:
then every row is trained and sequences may be one step long.
"""

import tensorflow as tf

from alf_rl.algorithms.rl_algorithm import RLAlgorithm
from alf_rl.data_structures import Experience, TrainingInfo
from alf_rl.ops import distributions as dist_ops
from alf_rl.specs import add_outer_dims, time_step_spec
from alf_rl.utils.common import (loop_traced_once, make_stateless_seed,
                                 reset_state_if_necessary, trace_outputs,
                                 valid_step_mask)


#: Sequences with at most this many ``train_step`` rows are unrolled in
#: Python instead of a ``tf.while_loop``.
_MAX_UNROLLED_ROWS = 2


def _batch_to_time_major(nest):
    return tf.nest.map_structure(
        lambda x: tf.transpose(x, [1, 0] + list(range(2, x.shape.rank))),
        nest)


class ReplayTrainingMixin(object):
    """Training from stored experience, for any ``RLAlgorithm``.

    Mixed into ``OffPolicyAlgorithm`` and ``OnPolicyAlgorithm`` (so an
    actor-critic can also be trained from a replay buffer, and PPO trains
    epochs of mini-batches over what one iteration collected).
    """

    _use_rollout_state = False
    _rollout_info_spec = None
    #: Whether the last row of every training sequence only bootstraps the
    #: rows before it (it runs ``bootstrap_step`` and its loss is masked, so
    #: sequences need >= 2 steps). ``False`` for algorithms whose targets
    #: come precomputed from ``preprocess_experience`` (PPO): every row runs
    #: ``train_step`` and counts, and ``mini_batch_length`` may be 1.
    last_row_only_bootstraps = True
    _train_info_spec = None

    @property
    def use_rollout_state(self):
        """Whether experience carries the rollout state (RNN policies)."""
        return self._use_rollout_state

    @use_rollout_state.setter
    def use_rollout_state(self, value):
        self._use_rollout_state = bool(value)

    # ------------------------------------------------------------ specs
    def prepare_off_policy_specs(self, batch_size=None):
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
        ts_spec = add_outer_dims(self.time_step_spec, [batch_size])
        state_spec = add_outer_dims(self.rollout_state_spec, [batch_size])

        def _rollout(time_step, state):
            return self.rollout(self.transform_timestep(time_step),
                                state).info

        self._rollout_info_spec = dist_ops.extract_spec(
            trace_outputs(_rollout, ts_spec, state_spec), from_dim=1)
        exp_spec = self.experience_spec
        train_state_spec = add_outer_dims(self.train_state_spec,
                                          [batch_size])

        def _train(exp, state):
            exp = exp._replace(rollout_info=dist_ops.params_to_distributions(
                exp.rollout_info, self._rollout_info_spec))
            return self.train_step(self.transform_timestep(exp), state).info

        self._train_info_spec = dist_ops.extract_spec(
            trace_outputs(_train, add_outer_dims(exp_spec, [batch_size]),
                          train_state_spec),
            from_dim=1)
        return exp_spec

    @property
    def rollout_info_spec(self):
        """Spec of rollout's info (``DistributionSpec`` for distributions)."""
        if self._rollout_info_spec is None:
            self.prepare_off_policy_specs()
        return self._rollout_info_spec

    @property
    def experience_spec(self):
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
            state=self.rollout_state_spec if self._use_rollout_state else ())

    # ------------------------------------------------------------ training
    def continue_training(self, loss_info):
        """Whether ``train`` goes on after an update (early stopping).

        Args:
            loss_info: the reduced ``LossInfo`` of the update just done.
        Returns:
            bool scalar tensor; the default always continues.
        """
        return tf.constant(True)

    def bootstrap_step(self, experience, state):
        """``train_step`` for the last row of a sequence (bootstrap only).

        The last step of every training sequence only provides targets for
        the steps before it; its own losses are masked. Override this to
        compute only what the targets need (e.g. target values) and return
        zeros for the rest of the info -- same structure as
        ``train_step``'s. Defaults to ``train_step``.

        Args/returns: as ``train_step``.
        """
        return self.train_step(experience, state)

    def train(self, experience, num_updates=1, mini_batch_size=None,
              mini_batch_length=None, shuffle=True, seed=None,
              sample_weights=None):
        """Trains on a batch of stored experience.

        Args:
            experience: ``Experience`` with [B, T, ...] leaves as stored
                (raw observations; ``rollout_info`` as parameters).
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
        Returns:
            ``LossInfo`` (scalars) of the last update (updates stop early
            once ``continue_training`` says so). When the algorithm's
            per-step ``LossInfo.extra`` has a ``td_error`` field, the
            [B] priorities ``|td_error|`` of the first step of each
            sequence are available afterwards as ``self.last_priorities``
            (inside the same graph), for ``update_priority``.
        """
        if self._train_info_spec is None:
            self.prepare_off_policy_specs()
        experience = experience._replace(
            rollout_info=dist_ops.params_to_distributions(
                experience.rollout_info, self._rollout_info_spec))
        experience = self.transform_timestep(experience)
        experience = self.preprocess_experience(experience)
        experience = experience._replace(
            rollout_info=dist_ops.distributions_to_params(
                experience.rollout_info))
        step_type = experience.step_type
        batch_size = step_type.shape[0]
        length = step_type.shape[1]
        if batch_size is None or length is None:
            raise ValueError("train: experience must have static [B, T] "
                             "outer dims, got %s" % step_type.shape)
        mini_batch_length = mini_batch_length or length
        if length % mini_batch_length:
            raise ValueError("train: sequence length %d is not a multiple of "
                             "mini_batch_length %d" %
                             (length, mini_batch_length))
        if mini_batch_length < 2 and self.last_row_only_bootstraps:
            raise ValueError("train: mini_batch_length must be >= 2 (the "
                             "last step of a sequence only bootstraps), got "
                             "%d" % mini_batch_length)
        num_sequences = batch_size * (length // mini_batch_length)
        mini_batch_size = mini_batch_size or num_sequences
        if mini_batch_size > num_sequences:
            raise ValueError(
                "train: mini_batch_size %d is larger than the %d sequences "
                "of length %d in this batch of %d x %d steps" %
                (mini_batch_size, num_sequences, mini_batch_length,
                 batch_size, length))
        if sample_weights is not None and (
                num_updates != 1 or mini_batch_length != length
                or mini_batch_size != batch_size):
            raise ValueError("train: sample_weights need one update over "
                             "whole sequences")
        sequences = tf.nest.map_structure(
            lambda x: tf.reshape(x, [num_sequences, mini_batch_length] +
                                 x.shape[2:].as_list()), experience)
        num_batches = num_sequences // mini_batch_size
        num_steps = int(num_updates) * num_batches
        # One permutation per pass, drawn with stateless ops (the same
        # numbers eagerly and compiled under a fixed seed).
        orders = []
        for epoch in range(int(num_updates)):
            if shuffle and num_batches > 1:
                op_seed = (make_stateless_seed() if seed is None else
                           tf.constant([seed, epoch], tf.int32))
                orders.append(tf.argsort(tf.random.stateless_uniform(
                    [num_sequences], op_seed)))
            else:
                orders.append(tf.range(num_sequences))
        orders = tf.stack(orders)

        def _step(i):
            epoch, b = i // num_batches, i % num_batches
            index = tf.slice(orders[epoch], [b * mini_batch_size],
                             [mini_batch_size])
            batch = tf.nest.map_structure(lambda x: tf.gather(x, index),
                                          sequences)
            return self._update(_batch_to_time_major(batch), sample_weights)

        if num_steps == 1:
            # (``last_priorities`` must stay in this graph.)
            return _step(tf.constant(0))
        # All passes and mini-batches run in one while loop whose body (the
        # update) is traced once, not once per mini-batch (which cost ~1-2 s
        # of tracing each).
        return loop_traced_once(lambda i, carry: (carry, _step(i)), (),
                                num_steps,
                                keep_going=self.continue_training)[1]

    def _update(self, experience, sample_weights=None):
        """One gradient update on time-major experience [L, b, ...]."""
        length = experience.step_type.shape[0]
        batch_size = tf.shape(experience.step_type)[1]
        info_param_spec = dist_ops.to_params_spec(self._train_info_spec)
        rollout_param_spec = dist_ops.to_params_spec(self._rollout_info_spec)
        spec = TrainingInfo(action=self.action_spec,
                            step_type=tf.TensorSpec((), tf.int32),
                            reward=tf.TensorSpec((), tf.float32),
                            discount=tf.TensorSpec((), tf.float32),
                            info=info_param_spec,
                            rollout_info=rollout_param_spec,
                            env_id=tf.TensorSpec((), tf.int32))
        static_b = experience.step_type.shape[1]
        if self._use_rollout_state:
            state = tf.nest.map_structure(lambda x: x[0], experience.state)
        else:
            state = self.get_initial_train_state(batch_size)
        initial_state = self.get_initial_train_state(batch_size)
        variables = self.trainable_variables
        persistent = len(self.get_optimizer_and_variable_sets()) > 1

        def _row(t, state, step_fn):
            exp_t = tf.nest.map_structure(lambda x: x[t], experience)
            state = reset_state_if_necessary(state, initial_state,
                                             exp_t.is_first())
            exp_t = exp_t._replace(
                rollout_info=dist_ops.params_to_distributions(
                    exp_t.rollout_info, self._rollout_info_spec))
            policy_step = step_fn(exp_t, state)
            row = TrainingInfo(action=exp_t.action,
                               step_type=exp_t.step_type,
                               reward=exp_t.reward,
                               discount=exp_t.discount,
                               info=dist_ops.distributions_to_params(
                                   policy_step.info),
                               rollout_info=dist_ops.distributions_to_params(
                                   exp_t.rollout_info),
                               env_id=exp_t.env_id)
            return policy_step.state, row

        def _body(t, state, tensor_arrays):
            state, row = _row(t, state, self.train_step)
            tensor_arrays = tf.nest.map_structure(
                lambda ta, x: ta.write(t, x), tensor_arrays, row)
            return t + 1, state, tensor_arrays

        # Rows run by train_step in the loop; the last one may bootstrap.
        num_rows = length - 1 if self.last_row_only_bootstraps else length
        with tf.GradientTape(watch_accessed_variables=False,
                             persistent=persistent) as tape:
            tape.watch(variables)
            if num_rows <= _MAX_UNROLLED_ROWS:
                # Short sequences (one-step PPO rows, two-step SAC/DQN
                # transitions): plain Python rows, no while loop, which is
                # cheaper to trace, to run and to differentiate.
                rows = []
                for t in range(num_rows):
                    state, row = _row(t, state, self.train_step)
                    rows.append(row)
                if self.last_row_only_bootstraps:
                    rows.append(_row(length - 1, state,
                                     self.bootstrap_step)[1])
                stacked = tf.nest.map_structure(lambda *x: tf.stack(x),
                                                *rows)
            else:
                tensor_arrays = tf.nest.map_structure(
                    lambda s: tf.TensorArray(
                        s.dtype, size=length,
                        element_shape=[static_b] + s.shape.as_list()), spec)
                _, state, tensor_arrays = tf.while_loop(
                    lambda t, *_: t < num_rows, _body,
                    (tf.constant(0), state, tensor_arrays),
                    maximum_iterations=num_rows)
                if self.last_row_only_bootstraps:
                    _, row = _row(length - 1, state, self.bootstrap_step)
                    tensor_arrays = tf.nest.map_structure(
                        lambda ta, x: ta.write(length - 1, x),
                        tensor_arrays, row)
                stacked = tf.nest.map_structure(lambda ta: ta.stack(),
                                                tensor_arrays)
            training_info = stacked._replace(
                info=dist_ops.params_to_distributions(stacked.info,
                                                      self._train_info_spec),
                rollout_info=dist_ops.params_to_distributions(
                    stacked.rollout_info, self._rollout_info_spec))
        valid = valid_step_mask(training_info.step_type)
        if self.last_row_only_bootstraps:
            valid = tf.concat([valid[:-1], tf.zeros_like(valid[-1:])],
                              axis=0)
        if sample_weights is not None:
            # Importance weights scale each sequence's share of the mean.
            valid = valid * tf.cast(sample_weights, tf.float32)[tf.newaxis]
        loss_info, _ = self.train_complete(tape, training_info,
                                           valid_masks=valid)
        del tape
        per_step = self.last_per_step_loss_info
        td_error = getattr(per_step.extra, 'td_error', None)
        self.last_priorities = (None if td_error is None else tf.abs(
            tf.convert_to_tensor(td_error)[0]))
        return loss_info


class OffPolicyAlgorithm(ReplayTrainingMixin, RLAlgorithm):
    """Base class of algorithms trained from replayed experience.

    Subclasses implement ``rollout`` (exploration), ``predict`` (greedy),
    ``train_step(experience, state)`` (recomputation on one replayed step,
    [B, ...] leaves) and ``calc_loss(training_info)`` ([T, B] losses; the
    last row only bootstraps), and ``after_train`` for target updates.

    Args:
        observation_spec: nest of specs of one observation.
        action_spec: nest of specs of one action.
        use_rollout_state: store the rollout state in the experience and
            start each training sequence from it (for RNN policies); else
            sequences start from the initial train state.
        **kwargs: passed to ``RLAlgorithm``.
    """

    def __init__(self, observation_spec, action_spec, use_rollout_state=False,
                 **kwargs):
        super().__init__(observation_spec, action_spec, **kwargs)
        self._use_rollout_state = use_rollout_state
