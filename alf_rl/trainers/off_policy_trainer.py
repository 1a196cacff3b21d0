"""``OffPolicyTrainer``: collect into a replay buffer, then train from it.

One iteration: ``SyncOffPolicyDriver.run(unroll_length)`` (the first
iteration collects ``initial_collect_steps`` instead), then a compiled
training function:
- with a replay buffer: ``num_updates_per_train_step`` times, sample
  ``mini_batch_size`` sequences of ``mini_batch_length`` steps and call
  ``algorithm.train`` once;
- with ``clear_replay_buffer=True`` (on-policy methods trained from replay,
  e.g. off-policy actor-critic, PPO): take exactly what this iteration
  collected and train ``num_updates_per_train_step`` epochs of mini-batches.
The replay buffer is part of the checkpoint, so a resumed run keeps its data
(unless ``restore_replay=False``: then it starts empty and the first
iteration collects ``initial_collect_steps`` with the collect policy).

With ``TrainerConfig.strategy`` (``alf_rl.distributed.strategy``) the update
is distributed: each mini-batch is split evenly across the process's
replicas, every replica runs the algorithm's update on its slice and the
gradients are summed across all replicas, giving the update of one device
on the global batch. Collection (the driver's rollout) stays on the default
device and the replay buffer on the host; with ``'multi_worker_mirrored'``
every worker collects its own experience (its own seeds) into its own
buffer and contributes its own mini-batches, so the global batch is the N
workers' ``mini_batch_size`` sequences together.
"""

import gin
import tensorflow as tf

from alf_rl.algorithms.replay_training import check_mini_batches
from alf_rl.algorithms.training_kind import check_trainer_pairing
from alf_rl.distributed.strategy import ReplicaRunner, learner_scope
from alf_rl.drivers.off_policy_driver import SyncOffPolicyDriver
from alf_rl.replay import (OnetimeExperienceReplayer,
                           SyncUniformExperienceReplayer)
from alf_rl.trainers.trainer import Trainer
from alf_rl.utils.loss_checks import XLA_UPDATE, check_loss_finite


@gin.configurable
class OffPolicyTrainer(Trainer):
    """Trains an algorithm from replayed experience.

    Args:
        config: a ``TrainerConfig``; uses ``unroll_length``,
            ``initial_collect_steps``, ``initial_collect_policy``,
            ``num_updates_per_train_step``,
            ``mini_batch_size``, ``mini_batch_length``,
            ``replay_buffer_capacity``, ``clear_replay_buffer``,
            ``prioritized_replay``, ``replay_frame_stack``, ``strategy``
            (then ``mini_batch_size``, per worker, must be a multiple of
            the number of replicas in a worker's process).
    """

    def _create_driver(self):
        c, r, e = self._config, self._config.replay, self._config.execution
        batch_size = self._replay_batch_size()
        check_trainer_pairing(self._algorithm, type(self).__name__,
                              from_unroll=False,
                              clear_replay_buffer=r.clear_replay_buffer,
                              prioritized_replay=r.prioritized_replay)
        exp_spec = self._algorithm.prepare_off_policy_specs(batch_size)
        self._check_frame_stack(exp_spec)
        if r.clear_replay_buffer:
            self._replayer = OnetimeExperienceReplayer(
                exp_spec, batch_size, max_length=c.unroll_length)
            if r.initial_collect_steps:
                raise ValueError("initial_collect_steps must be 0 with "
                                 "clear_replay_buffer=True (nothing is kept)")
        else:
            # Seeded from the run's seed: a seeded run replays the same
            # batches (the sampler's state is checkpointed with the buffer).
            self._replayer = SyncUniformExperienceReplayer(
                exp_spec, batch_size, capacity=r.replay_buffer_capacity,
                prioritized=r.prioritized_replay,
                seed=(self._seed + 104729) % 2**31,
                frame_stack=('experience.observation'
                             if r.replay_frame_stack else None))
        self._check_batch_sizes(batch_size)
        with learner_scope(self._strategy):
            self._algorithm.build_optimizers()
        # XLA compiles the update (not the replay sampling, whose resource
        # gathers XLA cannot compile): ~1.7x faster SAC updates on CPU.
        self._update_fn = (tf.function(self._update, autograph=False,
                                       jit_compile=True)
                           if e.jit_compile and e.use_tf_functions else
                           self._update)
        return SyncOffPolicyDriver(self._env,
                                   self._algorithm,
                                   self._replayer,
                                   metrics=self._metrics.step_metrics,
                                   use_tf_functions=e.use_tf_functions,
                                   jit_compile=e.jit_compile)

    def _check_frame_stack(self, exp_spec) -> None:
        """Refuses ``replay_frame_stack`` in one line where it cannot apply:
        without a replay buffer, or with an observation that is not one
        [..., N] tensor of frames of rank >= 1 (N >= 2 on the last axis)."""
        r = self._config.replay
        if not r.replay_frame_stack:
            return
        if r.clear_replay_buffer:
            raise ValueError("TrainerConfig.replay_frame_stack applies to a "
                             "replay buffer; clear_replay_buffer=True keeps "
                             "only one iteration (leave it False)")
        obs = exp_spec.observation
        if (not isinstance(obs, tf.TensorSpec) or obs.shape.rank < 2
                or (obs.shape[-1] or 0) < 2):
            raise ValueError(
                "TrainerConfig.replay_frame_stack needs the observation to "
                "be one tensor stacking N >= 2 frames on its last axis (e.g. "
                "suite_atari's [84, 84, 4]); got %s" % (obs, ))

    def _replay_batch_size(self) -> int:
        """The number of environments the replayer holds (and the batch
        the mini-batch settings are checked against): the training
        environment's B."""
        return self._env.batch_size

    def _check_batch_sizes(self, batch_size: int) -> None:
        """Refuses, in one line each, mini-batch settings that cannot work
        with B = ``batch_size`` environments: more sequences than one
        iteration collects (one-time replay), sequences longer than the
        buffer keeps per environment, or more sequences per batch than a
        full buffer holds (uniform replay draws with replacement and would
        repeat them)."""
        c, r = self._config, self._config.replay
        bootstraps = self._algorithm.last_row_only_bootstraps
        if r.clear_replay_buffer:
            # Exactly what one iteration collects, cut into mini-batches.
            length = check_mini_batches(
                batch_size, c.unroll_length, r.mini_batch_size,
                r.mini_batch_length, bootstraps,
                what='what one iteration collects', prefix='TrainerConfig.',
                length_name='unroll_length').mini_batch_length
        else:
            length = r.mini_batch_length or 2
            if not r.mini_batch_size:
                raise ValueError("TrainerConfig.mini_batch_size is required "
                                 "for replay-buffer training")
            # Sampled batches hold mini_batch_size sequences of length L.
            check_mini_batches(r.mini_batch_size, length, None, None,
                               bootstraps, prefix='TrainerConfig.')
            per_env = r.replay_buffer_capacity // batch_size
            if length > per_env:
                raise ValueError(
                    "mini_batch_length %d exceeds the replay buffer's %d "
                    "steps per environment (capacity %d over %d envs)" %
                    (length, per_env, r.replay_buffer_capacity, batch_size))
            # Uniform sampling draws with replacement, so a larger batch
            # "works" but repeats sequences in every update, even once the
            # buffer is full: refuse it.
            distinct = batch_size * (per_env - length + 1)
            if r.mini_batch_size > distinct:
                raise ValueError(
                    "TrainerConfig.mini_batch_size %d is larger than the "
                    "replay buffer can ever hold: replay_buffer_capacity %d "
                    "over %d envs keeps %d steps per env, %d distinct "
                    "sequences of length %d; lower mini_batch_size or raise "
                    "replay_buffer_capacity" %
                    (r.mini_batch_size, r.replay_buffer_capacity, batch_size,
                     per_env, distinct, length))
        self._check_recurrent_setting(length)
        self._mini_batch_length = length

    def _check_recurrent_setting(self, length):
        """Recurrent networks need their state carried into training."""
        alg = self._algorithm
        state = tf.nest.flatten(alg.recurrent_state_spec)
        if not state:
            return
        name = type(alg).__name__
        shapes = [s.shape.as_list() for s in state]
        if not alg.use_rollout_state:
            raise ValueError(
                "%s has recurrent state (train_state_spec shapes %s) but "
                "use_rollout_state=False: replayed sequences would start "
                "from a zero state in mid-episode. Set "
                "%s.use_rollout_state = True (and mini_batch_length > 1)" %
                (name, shapes, name))
        if length < 2:
            raise ValueError(
                "TrainerConfig.mini_batch_length=%d with the recurrent %s "
                "(state shapes %s) drops the state at every step: use "
                "sequences, e.g. mini_batch_length = unroll_length = %d" %
                (length, name, shapes, self._config.unroll_length))

    def _checkpoint_objects(self):
        """The base trainer's objects and the replayer (buffer and sampler
        state)."""
        objects = super()._checkpoint_objects()
        objects['replayer'] = self._replayer
        return objects

    def _train(self):
        r = self._config.replay
        if r.clear_replay_buffer:
            # Exactly unroll_length steps of every env were collected.
            return self._train_on(self._replayer.replay_all(full=True))

        def _one_update():
            experience, batch_info = self._replayer.replay(
                r.mini_batch_size, self._mini_batch_length)
            if not r.prioritized_replay:
                return self._checked_update(experience)[0]
            loss_info, priorities = self._checked_update(
                experience, batch_info.importance_weights)
            with tf.control_dependencies(tf.nest.flatten(loss_info)):
                self._replayer.update_priority(batch_info.env_ids,
                                               batch_info.positions,
                                               priorities)
            return loss_info

        loss_info = _one_update()
        if r.num_updates_per_train_step > 1:
            loss_info = tf.while_loop(
                lambda i, _: i < r.num_updates_per_train_step,
                lambda i, _: (i + 1, _one_update()),
                (tf.constant(1), loss_info))[1]
        return loss_info

    def _train_on(self, experience):
        """``num_updates_per_train_step`` epochs of mini-batches over
        exactly ``experience`` ([T, B, ...], time-major): on-policy
        methods trained from replay (``clear_replay_buffer``)."""
        r = self._config.replay
        return self._algorithm.train(
            experience,
            num_updates=r.num_updates_per_train_step,
            mini_batch_size=r.mini_batch_size,
            mini_batch_length=self._mini_batch_length,
            update_runner=self._update_runner())

    def _checked_update(self, experience, sample_weights=None):
        loss_info, priorities = self._update_fn(experience, sample_weights)
        if self._config.execution.jit_compile:
            # XLA drops CheckNumerics: check outside the compiled update.
            # (The update itself was already applied; the run stops before
            # any checkpoint is written.)
            loss_info = loss_info._replace(loss=check_loss_finite(
                loss_info.loss, self._algorithm.name, xla=XLA_UPDATE))
        return loss_info, priorities

    def _update_runner(self):
        """Runs each update across the strategy's replicas (a stateless
        ``ReplicaRunner``), or None without a strategy (runs it here)."""
        return (None if self._strategy is None else
                ReplicaRunner(self._strategy))

    def _update(self, experience, sample_weights=None):
        """One ``algorithm.train`` call; returns (loss_info, priorities)."""
        if sample_weights is None:
            return self._algorithm.train(experience,
                                         update_runner=self._update_runner()), ()
        return self._algorithm.train_with_priority(
            experience, sample_weights=sample_weights,
            update_runner=self._update_runner())

    def _train_iterations(self, num_iterations):
        c = self._config
        collect = c.replay.initial_collect_steps
        it = int(self._iteration.numpy())
        refill = self._drop_restored_replay()
        if collect and (refill or (it == 0 and
                                   not self._restored_replay_data())):
            self._driver.run(max(collect // self._env.batch_size, 1),
                             uniform_actions=(it == 0 and
                                              c.replay.initial_collect_policy
                                              == 'uniform'))
        return self._driver.run_and_train_iterations(
            c.unroll_length, self._train, num_iterations,
            stop_fn=self._stop_condition)

    def _restored_replay_data(self):
        return int(self._replayer.buffer.total_size) > 0

    def _drop_restored_replay(self) -> bool:
        """On a run resumed with ``restore_replay=False``, once: clears the
        replay buffer, whose restored counters describe experience that
        was not restored, and returns True (refill it with the collect
        policy); else False."""
        if (self._config.checkpoint.restore_replay
                or int(self._iteration.numpy()) == 0
                or getattr(self, '_replay_dropped', False)):
            return False
        self._replay_dropped = True
        self._replayer.clear()
        return True
