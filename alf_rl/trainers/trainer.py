"""The ``Trainer`` base: the training run around a driver.

A trainer builds the environments and the algorithm (``build_run``), then
runs the loop of ``train()``; its parts do the rest, each usable alone:
``RunCheckpoints`` (the lock, atomic saves, resume, the checkpoint before
an error), ``RunSummaries`` (event files, ``config.gin``, pruning after a
resume), ``Evaluator`` (greedy evaluation), ``PeriodicWork`` (what comes
due after each compiled call), ``RunClock`` and ``ProgressReporter``
(timings, ETA, the progress line) and ``TrainingMetrics`` (the standard
metrics and the user's, ``TrainerConfig.metrics``). Subclasses only say
how training iterations run (``_create_driver``, ``_train_iterations``,
several per compiled call) and what else to checkpoint
(``_checkpoint_objects``).

From Python, build the pieces and hand them over (no gin needed)::

    config = TrainerConfig(root_dir=..., algorithm_ctor=make_algorithm,
                           random_seed=0, num_iterations=100)
    trainer = OnPolicyTrainer(
        config, env=lambda seed: create_environment('CartPole-v1', 8,
                                                    seed=seed))
    result = trainer.train()
    trainer.close()

``create_trainer(config, env=..., eval_env=...)`` does the same with the
trainer chosen from the algorithm's ``training_kind`` when
``TrainerConfig.trainer`` is None (``alf_rl.trainers.choice``).
``alf-train`` configures ``TrainerConfig`` and ``create_environment`` with
gin instead. Outputs under ``root_dir``: ``train/``/``eval/`` event files,
``ckpt/``, ``config.gin``, ``modules.json`` (the user modules gin
imported, see ``run_modules``) and the lock ``.alf_rl.lock`` (a run that fails
before its first iteration leaves none of them).
"""

import threading
import time
from typing import Any, Dict, Optional, Sequence

import tensorflow as tf

from alf_rl.environments.tf_environment import TFEnvironment
from alf_rl.metrics.training_metrics import TrainingMetrics
from alf_rl.trainers.callbacks import TrainingCallback
from alf_rl.trainers.checkpoints import RunCheckpoints, run_state_objects
from alf_rl.trainers.config import TrainerConfig
from alf_rl.trainers.env_sources import EnvSource
from alf_rl.trainers.errors import TrainingError, raise_training_error
from alf_rl.trainers.gin_scope import GinState, own_gin_config
from alf_rl.trainers.periodic import PeriodicWork
from alf_rl.trainers.progress import (ProgressReporter, RunClock,
                                      budget_reached, say_if_nothing_left)
from alf_rl.trainers.run_modules import write_run_modules
from alf_rl.trainers.run_setup import BuiltRun, build_run
from alf_rl.trainers.summaries import RunSummaries
from alf_rl.utils.stop_request import WaitCancelled, announce_stop, clear_stop
from alf_rl.utils.traced_memory import release_traced_bijector_cache

#: The per-episode averages among the standard metrics, by name: what
#: ``alf-train``'s closing line leaves out while no episode has ended.
EPISODE_AVERAGES = ('AverageReturn', 'AverageEpisodeLength')


class Trainer(object):
    """Base of trainers: environment, algorithm and the training loop.

    ``env`` and ``eval_env`` are ``TFEnvironment``s or, better, factories
    ``(seed: int) -> TFEnvironment`` called with the run's seed
    (``eval_env``: seed + 7919); ``None``: the gin-configured
    ``create_environment``. ``close()`` closes them.

    Args:
        config: a ``TrainerConfig``.
        env: the training environment (batch size B = its number of
            parallel environments), or ``None`` for
            ``create_environment(seed=seed)``.
        eval_env: the evaluation environment; its batch size must be
            ``num_eval_episodes`` (one greedy episode per environment).
            ``None``: ``create_environment(num_parallel_environments=
            num_eval_episodes, seed=seed + 7919, use_subprocess=False)``,
            allowed only when ``env`` is ``None`` too. Not built (a factory
            is not called) unless ``config.evaluation.evaluate``.
        built: the run already built from ``config``, ``env`` and
            ``eval_env`` (``create_trainer`` builds it to choose the
            trainer); None: built here (``build_run``).

    Raises:
        TypeError: if ``env``/``eval_env`` is neither a ``TFEnvironment``
            nor a factory returning one.
        ValueError: if ``env`` is given without ``eval_env`` while
            evaluating, ``eval_env``'s batch size is not
            ``num_eval_episodes``, or ``progress_metrics`` names no metric.
    """

    def __init__(self, config: TrainerConfig,
                 env: Optional[EnvSource] = None,
                 eval_env: Optional[EnvSource] = None,
                 built: Optional[BuiltRun] = None):
        if not isinstance(config, TrainerConfig):
            raise TypeError("%s: config must be a TrainerConfig, got %s" %
                            (type(self).__name__, type(config).__name__))
        self._config = config
        self._root_dir = config.root_dir
        self._stop_requested = threading.Event()
        (self._strategy, self._seed, self._env, self._algorithm,
         self._evaluator) = (built if built is not None else
                             build_run(config, env, eval_env))
        self._iteration = tf.Variable(0, dtype=tf.int64, trainable=False,
                                      name='iteration')
        # Games (e.g. Atari's, over all lives, unclipped) are folded in
        # from Python after each compiled call.
        self._metrics = TrainingMetrics(
            self._metrics_batch_size(), config.metrics,
            game_score=self._env.reports_game_scores)
        self._progress = ProgressReporter(self._metrics,
                                          config.report.progress_metrics)
        self._driver = self._create_driver()
        self._checkpoints = RunCheckpoints(
            self._root_dir, config.checkpoint, self._iteration,
            algorithm=self._algorithm,
            optimizers=[o for o, _ in
                        self._algorithm.get_optimizer_and_variable_sets()],
            **self._metrics.checkpoint_objects(),
            **self._checkpoint_objects())
        self._checkpointer = self._checkpoints.checkpointer
        self._summaries = RunSummaries(self._root_dir,
                                       config.report.summaries_flush_secs,
                                       config.evaluation.evaluate)
        self._periodic = PeriodicWork(
            config, self._metrics, self._summaries, self._checkpoints,
            self.evaluate, self._extra_summaries, self._report_progress)
        # train() runs in the gin configuration the run was built in.
        self._gin_state = [GinState.capture()]

    # ------------------------------------------------------------ to override
    def _create_driver(self) -> Any:
        """Builds the training driver (once, in ``__init__``), which updates
        ``self._metrics.step_metrics``; ``self._env``, ``_algorithm``,
        ``_config``, ``_seed``, ``_metrics`` and ``_iteration`` exist."""
        raise NotImplementedError()

    def _train_iterations(self, num_iterations: int) -> Any:
        """Runs up to ``num_iterations`` iterations in one compiled call,
        stopping early once ``_stop_condition()`` holds; returns
        ``(loss_info, iterations_done)``, the last iteration's reduced
        ``LossInfo`` and how many iterations ran."""
        raise NotImplementedError()

    def _metrics_batch_size(self) -> int:
        """The number of environments the driver's metrics count over."""
        return self._env.batch_size

    def _extra_summaries(self) -> Dict[str, float]:
        """More ``{tag: value}`` scalars written with every training
        summary (e.g. an asynchronous driver's policy lag); none here."""
        return {}

    def _checkpoint_objects(self) -> Dict[str, Any]:
        """Trackable objects checkpointed besides the algorithm, metrics,
        iteration and optimizers (``checkpoints.run_state_objects``);
        subclasses add theirs (e.g. a replay buffer)."""
        return run_state_objects(self._driver, self._env, self._algorithm,
                                 self._evaluator)

    def _stop_condition(self) -> tf.Tensor:
        """In-graph: the run is done (``PeriodicWork.stop_condition``)."""
        return self._periodic.stop_condition()

    # ------------------------------------------------------------ public
    @property
    def algorithm(self) -> Any:
        """The algorithm being trained (an ``RLAlgorithm``)."""
        return self._algorithm

    @property
    def env(self) -> TFEnvironment:
        """The training environment."""
        return self._env

    @property
    def eval_env(self) -> Optional[TFEnvironment]:
        """The evaluation environment (``None`` unless evaluating)."""
        return self._evaluator.env if self._evaluator is not None else None

    @property
    def metrics(self) -> TrainingMetrics:
        """The run's metrics (the standard four, the user's, games)."""
        return self._metrics

    def request_stop(self) -> None:
        """Asks a running ``train()`` to stop after its current call.

        Safe from a signal handler or another thread (``alf-train`` calls it
        on the first Ctrl-C; a ``KeyboardInterrupt`` could land inside an
        environment's callback mid-call): ``train()`` finishes the call in
        progress, writes a checkpoint and returns with ``stopped_early``.
        """
        self._stop_requested.set()
        announce_stop()  # waits for a hung environment or actor end soon

    def evaluate(self) -> Dict[str, float]:
        """Plays one greedy (``algorithm.predict``) episode in each
        evaluation environment (see ``Evaluator.evaluate``).

        Raises:
            ValueError: the trainer was built without evaluation.
        """
        if self._evaluator is None:
            raise ValueError("Trainer.evaluate: no evaluation environment; "
                             "build the trainer with TrainerConfig("
                             "evaluate=True)")
        return self._evaluator.evaluate()

    def close(self) -> None:
        """Closes the environments (also those passed in) and releases
        what the run's traced graphs left in TFP's global bijector cache
        (``release_traced_bijector_cache``)."""
        self._env.close()
        if self._evaluator is not None:
            self._evaluator.close()
        release_traced_bijector_cache()

    # ------------------------------------------------------------ main loop
    def train(self, callbacks: Sequence[TrainingCallback] = ()
              ) -> Dict[str, Any]:
        """Trains until ``num_iterations`` or ``num_env_steps`` (or a
        callback asks to stop); resumable.

        Args:
            callbacks: ``TrainingCallback`` objects (``Callback``
                subclasses), called after those of ``TrainerConfig``
                (``StopAtAverageReturn``) and before the gin-configured
                ones (``training_callbacks``); see ``alf_rl.trainers.callbacks``.

        Holds the run directory's lock (``RunDirLock``) while it runs.
        Resumes from the newest checkpoint that reads back completely (see
        ``RunCheckpoints.restore``); summaries written after it are
        removed first, so TensorBoard shows one value per step.

        Returns:
            the final ``'Metrics/...'`` values, the last evaluation's as
            ``'eval/Metrics/...'``, ``iterations``, ``train_secs``,
            ``first_iteration_secs`` (tracing and XLA compilation included)
            and ``stopped_early`` (``request_stop()`` ended it, after a
            checkpoint).

        Raises:
            TrainingError: a ``NonFiniteLossError``, an
                ``EnvironmentStepError`` or a ``CallbackError``, after a
                checkpoint when the model is still good (see
                ``RunCheckpoints.save_after_error``).
            RunDirLockedError: another process trains in ``root_dir``.
            RunDirError: ``root_dir`` cannot be written (e.g. a full disk:
                ``CheckpointSaveError``, the last good checkpoint kept).
            NoUsableCheckpointError, CheckpointError: see
                ``RunCheckpoints.restore``.

        It runs in the gin configuration the trainer was built in; the
        caller's is back when it returns.
        """
        with own_gin_config(self._gin_state.pop(), keep=self._gin_state), \
                self._checkpoints.locked():
            self._periodic.use_callbacks(callbacks)
            return self._train_locked()

    def _train_locked(self):
        checkpoints, summaries = self._checkpoints, self._summaries
        restored = checkpoints.restore(
            lambda: ', %d env steps' % self._env_steps())
        summaries.drop_after(checkpoints.saved_wall_time(restored)
                             if restored else None)
        if restored:
            say_if_nothing_left(self._config, self._env_steps(),
                                self._iteration_count())
        summaries.open()  # event files come with their first summary
        clock = RunClock(time.time(), self._env_steps())
        loss_info, config_written = None, False
        callbacks = self._periodic.callbacks
        try:
            callbacks.call('on_training_start', *[self._iteration_count()] * 2)
            while not self._done() and not self._stop_requested.is_set():
                try:
                    loss_info, now = self._run_call(clock)
                    if not config_written:  # a failed first call: none
                        summaries.write_config()
                        write_run_modules(self._root_dir)
                        config_written = True
                    self._after_call(clock, loss_info, now)
                except WaitCancelled:  # between calls: nothing half done
                    break
                except TrainingError as error:
                    summaries.flush()
                    checkpoints.save_after_error(
                        error, getattr(self._algorithm, 'variables', ()))
                    raise
            if loss_info is not None and self._done():
                self._after_call(clock, loss_info, time.time(), final=True)
            self._report_progress(clock)
            self._periodic.save_checkpoint(self._iteration_count())
        finally:
            summaries.flush()
            clear_stop()
        stopped = self._stop_requested.is_set()
        self._stop_requested.clear()  # handled: the next train() runs
        result = clock.result(self._metrics.scalars(),
                              self._iteration_count(), stopped)
        callbacks.call('on_training_end', self._iteration_count(), result)
        return result

    def _run_call(self, clock):
        """One compiled call of one or more training iterations.

        Returns:
            ``(loss_info, now)``: the last iteration's reduced ``LossInfo``
            and the wall-clock at the end of the call.

        Raises:
            TrainingError: see ``raise_training_error``.
        """
        it = self._iteration_count()
        n = (1 if clock.first_iteration_secs is None else
             self._config.iterations_for_call(it, clock.secs_per_iteration))
        # An error the environment kept from before this call (e.g. from
        # a user's own eager use of it) must not be blamed for this one.
        self._env.last_error = None
        call_start = time.time()
        try:
            loss_info, done = self._train_iterations(n)
            done = int(done)
        except tf.errors.OpError as e:
            raise_training_error(e, it + 1, n, self._env.last_error)
        self._iteration.assign_add(done)
        if self._metrics.game_score is not None:
            self._metrics.game_score.add(self._env.pop_game_scores())
        now = time.time()
        clock.record_call(now, call_start, done, self._fraction_done(),
                          self._env_steps())
        return loss_info, now

    def _after_call(self, clock, loss_info, now, final=False):
        self._periodic.after_call(clock, loss_info, self._iteration_count(),
                                  now, final)

    def _report_progress(self, clock):
        self._progress.report(clock, self._iteration_count(),
                              self._fraction_done())

    def _iteration_count(self):
        return int(self._iteration.numpy())

    def _env_steps(self):
        return self._metrics.num_env_steps()

    def _done(self):  # the budget, or a callback's stop request
        return self._periodic.callbacks.stop_requested or budget_reached(
            self._config, self._metrics, self._iteration_count())

    def _fraction_done(self):
        return self._config.fraction_done(self._iteration_count(),
                                          self._env_steps())
