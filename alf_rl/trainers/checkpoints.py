"""``RunCheckpoints``: the checkpoints of a training run and its lock.

One object for everything a run writes under ``root_dir/ckpt`` and for
the lock on ``root_dir``: atomic saves (``alf_rl.utils.checkpoint``),
resuming from the newest usable checkpoint (corrupt newer ones moved
aside), the rescues (``from_checkpoint``: an earlier checkpoint, the newer
ones set aside; ``fresh_start``: the whole earlier run set aside), and
the checkpoint written before a ``TrainingError`` ends a run, unless the
model may hold non-finite values.

Nothing non-finite is checkpointed or resumed from: a save from NaN/Inf
values (the model, its optimizer slots, the replay buffer) stops training
with a ``NonFiniteModelError`` naming the variable and writes nothing; a
non-finite loss or update writes no checkpoint either (the model that
produced it is suspect); a checkpoint holding NaN/Inf is refused on
restore. Each message names the newest earlier checkpoint whose values
are all finite to resume from (``--from_checkpoint N``), if one is kept.
"""

import contextlib
import os
import sys
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

import tensorflow as tf

from alf_rl.specs import add_outer_dims
from alf_rl.trainers.config import CheckpointConfig
from alf_rl.environments.tf_environment import NonFiniteActionError
from alf_rl.trainers.errors import (EnvironmentStepError, NonFiniteLossError,
                                    NonFiniteModelError, NonFiniteUpdateError,
                                    TrainingError)
from alf_rl.utils.checkpoint import (Checkpointer, CheckpointError,
                                     CheckpointSaveError, NonFiniteStateError,
                                     NoUsableCheckpointError, RunDirLock,
                                     put_back_replay_damaged, rerun_advice,
                                     set_aside_run)
from alf_rl.utils.chunked_state import chunks_left_out
from alf_rl.utils.checkpoint_contents import (finite_checkpoint_before,
                                              non_finite_variable, read_back)
from alf_rl.utils.common import NestState

__all__ = ['RunCheckpoints', 'driver_loop_state', 'non_finite_variable',
           'run_state_objects']


def driver_loop_state(driver: Any, env: Any, algorithm: Any) -> NestState:
    """A driver's ``loop_state`` (the last ``TimeStep`` and policy state,
    [B, ...] leaves) as a checkpointable ``NestState``: with the
    environment's own state, what an exact resume needs.

    Args:
        driver: a driver with a settable ``loop_state``.
        env: its environment (B = ``env.batch_size``).
        algorithm: its algorithm (the rollout state's nest).
    """
    batch = env.batch_size
    # The nest types the driver keeps (lists stay lists: a restored state
    # must not retrace the compiled iteration).
    initial_state = algorithm.get_initial_rollout_state(batch)
    spec = (add_outer_dims(env.time_step_spec(), [batch]),
            tf.nest.map_structure(lambda x: tf.TensorSpec(x.shape, x.dtype),
                                  initial_state))

    def _set(value):
        driver.loop_state = value

    return NestState(spec, lambda: driver.loop_state, _set)


def run_state_objects(driver: Any, env: Any, algorithm: Any,
                      evaluator: Any) -> dict:
    """Trackable objects a trainer checkpoints besides the algorithm,
    metrics, iteration and optimizers, for a resumed run to continue as the
    uninterrupted one would: ``rng`` (the global generator), ``eval_rng``
    (a placeholder without evaluation), and ``env_state``/``driver_state``
    when the environment can save its state (``suite_tf``,
    ``suite_unittest``; gymnasium episodes restart).

    Args:
        driver: the training driver (see ``driver_loop_state``).
        env: the training environment.
        algorithm: the algorithm.
        evaluator: the run's ``Evaluator``, or None.
    """
    objects = {
        'rng': tf.random.get_global_generator(),
        'eval_rng': (evaluator.generator if evaluator is not None else
                     tf.random.Generator.from_seed(0)),
    }
    env_state = env.checkpoint_state()
    if env_state is not None:
        objects['env_state'] = env_state
        objects['driver_state'] = driver_loop_state(driver, env, algorithm)
    return objects


class RunCheckpoints(object):
    """Checkpoints of one run, and the run directory's lock.

    Args:
        root_dir: the run's directory (checkpoints go to ``ckpt/``).
        config: a ``CheckpointConfig`` (``checkpoint_max_to_keep``,
            ``fresh_start``, ``from_checkpoint``).
        iteration: the run's [] int64 iteration counter (checkpointed).
        **objects: the other trackables to checkpoint, by name (the
            algorithm, metrics, optimizers...).
    """

    def __init__(self, root_dir: str, config: CheckpointConfig,
                 iteration: tf.Variable, **objects: Any):
        self._root_dir = root_dir
        self._config = config
        self._iteration = iteration
        # Nothing is written under root_dir before train() takes the lock:
        # a trainer that fails to build (unknown env...) leaves no trace.
        self._lock = RunDirLock(root_dir)
        self.checkpointer = Checkpointer(
            os.path.join(root_dir, 'ckpt'),
            max_to_keep=config.checkpoint_max_to_keep, iteration=iteration,
            **objects)
        # The iteration of the newest save.
        self.saved_iteration: Optional[int] = None
        self._replay = 'replayer' in objects

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Holds the run directory's lock (``RunDirLock``) inside; on an
        error, a lock file (and an empty ``root_dir``) it created is
        removed.

        Raises:
            RunDirLockedError: another process trains in ``root_dir``.
        """
        self._lock.acquire()
        try:
            yield
        except BaseException:
            self._lock.release(remove_if_unused=True)
            raise
        self._lock.release()

    def restore(self, describe: Callable[[], str] = lambda: '') -> \
            Optional[str]:
        """Restores the newest usable checkpoint, if any, and says so on
        stdout; removes stale temporaries of interrupted saves first. With
        ``fresh_start``, first moves the earlier run aside
        (``set_aside_run``) and restores nothing; with ``from_checkpoint``,
        restores that checkpoint and sets the newer ones aside
        (``Checkpointer.restore_from``). What a rescue moved is said in one
        line on stderr. With ``restore_replay=False``, the chunk files (the
        replay buffer's contents) are neither read back nor restored
        (``chunks_left_out``); otherwise, when no checkpoint reads back and
        some are damaged in their chunk files alone, those are put back in
        place and the refusal names ``--without_replay``.

        Args:
            describe: what to add to the resume line, e.g. ``', 512 env
                steps'`` (called after restoring).

        Returns:
            the prefix restored, or None (starting from iteration 0).

        Raises:
            NoUsableCheckpointError: checkpoints are on disk and none reads
                back.
            CheckpointError: the checkpoint does not match the model, or
                ``from_checkpoint`` names none that reads back.
            NonFiniteStateError: the checkpoint holds NaN/Inf (the message
                names the tensor and an earlier finite checkpoint).
            RunDirError: setting the earlier run aside failed.
        """
        config, checkpointer = self._config, self.checkpointer
        if config.fresh_start:
            self._set_aside_run()
            return None
        checkpointer.remove_stale_temporaries()
        with (contextlib.nullcontext() if config.restore_replay else
              chunks_left_out()):
            restored, moved = self._restore_checkpoint()
        if config.from_checkpoint is not None:
            _say("alf_rl: from_checkpoint=%d: %s" % (
                config.from_checkpoint,
                'set the newer checkpoints aside in %s (kept, nothing '
                'deleted): %s' % (checkpointer.directory, ', '.join(moved))
                if moved else 'no newer checkpoint to set aside'))
        if restored:
            self.saved_iteration = int(self._iteration.numpy())
            print("alf_rl: resumed from %s at iteration %d%s%s" % (
                restored, self.saved_iteration, describe(),
                '' if config.restore_replay or not self._replay else
                ', without its replay buffer (restore_replay=False)'),
                flush=True)
        return restored

    def _restore_checkpoint(self) -> Tuple[Optional[str], List[str]]:
        """``restore``'s restore: ``(the prefix restored or None, the
        names of the checkpoints ``from_checkpoint`` set aside)``."""
        config, checkpointer = self._config, self.checkpointer
        try:
            if config.from_checkpoint is None:
                return checkpointer.restore(move_corrupt=True), []
            return checkpointer.restore_from(config.from_checkpoint)
        except NonFiniteStateError as e:
            step = _step_of(e.checkpoint)
            raise NonFiniteStateError('%s: %s' % (e, self._resume_advice(
                step)), e.variable, e.checkpoint) from None
        except CheckpointError as e:
            if not config.restore_replay:
                raise
            if isinstance(e, NoUsableCheckpointError):
                back = put_back_replay_damaged(
                    checkpointer.directory, [name for name, _ in e.problems])
                if back:
                    raise NoUsableCheckpointError('%s. %s' % (
                        e, _without_replay_advice(back, put_back=True)),
                        e.problems) from None
            elif config.from_checkpoint is not None:
                name = 'ckpt-%d' % config.from_checkpoint
                if _only_chunks_damaged(os.path.join(checkpointer.directory,
                                                     name, 'ckpt')):
                    raise CheckpointError('%s. %s' % (
                        e, _without_replay_advice([name]))) from None
            raise

    def _set_aside_run(self) -> None:
        """``fresh_start``: the earlier run moved aside, in one line."""
        root_dir = self._root_dir
        dest, moved = set_aside_run(root_dir)
        _say("alf_rl: fresh_start: %s; starting from iteration 0" % (
            'moved the earlier run aside to %s (kept, nothing deleted): %s'
            % (dest, ', '.join(moved)) if dest else
            'no earlier run in %s' % root_dir))

    def _resume_advice(self, before: int) -> str:
        """How to resume from a checkpoint older than ``before``: ``'to
        resume from ckpt-N (...), rerun with --from_checkpoint N'``, or
        how to start over when none is kept."""
        step = finite_checkpoint_before(self.checkpointer.directory,
                                        self.checkpointer.checkpoints(),
                                        before)
        if step is None:
            return ('no earlier checkpoint with finite values is kept: to '
                    'start over, rerun with --fresh_start (the run is moved '
                    'aside, nothing deleted)')
        return ('to resume from ckpt-%d, the newest earlier checkpoint '
                'whose values are finite, rerun with --from_checkpoint %d '
                '(TrainerConfig.from_checkpoint; the newer ones are set '
                'aside, nothing deleted)' % (step, step))

    def _set_aside_current(self, it: int) -> str:
        """After an error that shows the model at iteration ``it`` computes
        NaN/Inf: its checkpoint, if written, set aside (kept) so that no
        run resumes from it.

        Returns:
            ``'ckpt-N was set aside as ckpt-N.non_finite (kept, not resumed
            from)'``, or ``''`` when there was none.
        """
        if it != self.saved_iteration or \
                it not in self.checkpointer.checkpoints():
            return ''
        aside = self.checkpointer.set_aside(it)
        self.saved_iteration = None
        return ('ckpt-%d was set aside as %s (kept, not resumed from)' %
                (it, aside))

    def _rerun_advice(self) -> str:
        """How to resume this run later: ``'rerun the same command'``, or
        without the rescue setting that would set the progress aside
        again."""
        c = self._config
        return rerun_advice(c.fresh_start, c.from_checkpoint is not None,
                            not c.restore_replay)

    def saved_wall_time(self, prefix: str) -> float:
        """``time.time()`` when the checkpoint ``prefix`` was saved."""
        return self.checkpointer.saved_wall_time(prefix)

    def save(self, iteration: int, before: Callable[[], None] = lambda: None
             ) -> None:
        """Checkpoints ``iteration`` unless it is the newest save.

        Args:
            iteration: the iteration the model state is at.
            before: called first when a save is due (e.g. flushing the
                summaries, so that a kill loses at most what came after
                the checkpoint).

        Raises:
            CheckpointSaveError: the save failed (the last good checkpoint
                is kept).
            NonFiniteModelError: a variable to save (the model, an
                optimizer slot, the replay buffer) holds NaN/Inf; nothing
                was written.
        """
        if iteration == self.saved_iteration:
            return
        before()
        try:
            self.checkpointer.save(iteration)
        except NonFiniteStateError as e:
            raise NonFiniteModelError(
                'training stopped at iteration %d: %s holds NaN/Inf values, '
                'so no checkpoint was written; %s.' % (
                    iteration, e.variable, self._resume_advice(iteration)),
                iteration, e.variable) from None
        self.saved_iteration = iteration

    def save_after_error(self, error: TrainingError,
                         variables: Sequence[tf.Variable]) -> None:
        """Writes a checkpoint before ``error`` ends the run when the model
        state is still good, and adds to the error's message what was (or
        why nothing was) written.

        Args:
            error: what stopped the run.
            variables: the model's variables, checked for NaN/Inf first.
        """
        it = int(self._iteration.numpy())
        last = self.checkpointer.latest_path()
        last_good = ('the last good checkpoint is %s' % last if last else
                     'there is no earlier checkpoint')
        path = None
        if isinstance(error, NonFiniteModelError):
            return  # its message says what was (not) written
        if it == 0:
            note = "No checkpoint was written: no iteration had completed."
        elif isinstance(error, NonFiniteLossError) and error.update_applied:
            aside = self._set_aside_current(it)
            note = ("No checkpoint was written: the update with the "
                    "non-finite loss was already applied (XLA), so the model "
                    "may hold NaN/Inf values; %s%s." % (
                        'the checkpoint of the model that produced it, %s; '
                        % aside if aside else '', self._resume_advice(it)))
        elif _model_suspect(error):
            aside = self._set_aside_current(it)
            note = "No checkpoint was written: %s; %s." % (
                'the model that produced it computes NaN/Inf, so its '
                'checkpoint %s' % aside if aside else 'the model that '
                'produced it may itself compute NaN/Inf',
                self._resume_advice(it))
        elif (bad := non_finite_variable(variables)) is not None:
            note = ("No checkpoint was written: the model variable %s holds "
                    "non-finite values; %s." % (bad, last_good))
        elif it == self.saved_iteration:
            path = last
            note = ("The checkpoint of iteration %d (%s) is current: %s "
                    "to resume from it." % (it, path, self._rerun_advice()))
        else:
            try:
                path = self.checkpointer.save(it)
                self.saved_iteration = it
                note = ("A checkpoint was written at iteration %d (%s): "
                        "%s to resume from it." %
                        (it, path, self._rerun_advice()))
            except CheckpointSaveError as e:
                note = "Writing a checkpoint failed too: %s." % e
        error.add_checkpoint_note(note, path)


def _only_chunks_damaged(prefix: str) -> bool:
    """Whether the checkpoint at ``prefix`` fails to read back in its chunk
    files (the replay data) alone."""
    return (read_back(prefix, chunks=False).problem is None
            and read_back(prefix).problem is not None)


def _without_replay_advice(names: Sequence[str], put_back: bool = False
                           ) -> str:
    """The advice to resume from ``names[0]`` (of the checkpoints
    ``names``, damaged in their chunk files alone) without the replay
    buffer's contents; ``put_back``: they were just put back in place."""
    return ('The rest of %s reads back: only the replay buffer (its chunk '
            'files) is damaged%s. To resume from %s with the replay buffer '
            'refilled by initial_collect_steps of the current collect '
            'policy, %s --without_replay (TrainerConfig.restore_replay='
            'False)' % (', '.join(names), ', and %s back in place' % (
                'it is' if len(names) == 1 else 'they are')
                        if put_back else '', names[0],
                        'rerun with' if put_back else 'add'))


def _model_suspect(error: TrainingError) -> bool:
    """Whether ``error`` shows the model computes NaN/Inf: a non-finite
    loss or update, or a NaN/Inf action."""
    return isinstance(error, (NonFiniteLossError, NonFiniteUpdateError)) or (
        isinstance(error, EnvironmentStepError)
        and isinstance(error.env_error, NonFiniteActionError))


def _step_of(prefix: Optional[str]) -> int:
    """The step of a checkpoint prefix ``.../ckpt-<step>/ckpt``."""
    name = os.path.basename(os.path.dirname(prefix or ''))
    digits = name[len('ckpt-'):]
    return int(digits) if digits.isdigit() else 0


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
