"""``OfflineTrainer``: trains an off-policy algorithm from a dataset, with
no environment steps.

The dataset (``alf_rl.offline``) is streamed once into a replay buffer of
``num_lanes`` lanes; one iteration then runs ``num_updates_per_train_step``
updates, each sampling ``mini_batch_size`` sequences of
``mini_batch_length`` steps and calling ``algorithm.train``. Around it,
the run is the same as an online one, built from the same parts:
``RunCheckpoints`` (lock, atomic saves, exact resume: the replay buffer
and its sampler's state are checkpointed), ``RunSummaries``,
``Evaluator`` (greedy episodes in an evaluation environment, optional)
and ``RunClock``. Evaluation also reports ``Metrics/NormalizedScore``,
``100 * (return - random) / (expert - random)``, when the dataset's
metadata holds ``random_return`` and ``expert_return``.

With ``alf-train``::

    TrainerConfig.trainer = @OfflineTrainer
    OfflineTrainer.dataset = '/path/to/dataset'
"""

import threading
import time
from typing import Any, Dict, Optional

import gin
import tensorflow as tf

from alf_rl.metrics.training_metrics import TrainingMetrics
from alf_rl.offline.dataset import Dataset
from alf_rl.offline.replay_feed import fill_replayer, lane_capacity
from alf_rl.offline.scores import normalized_score, reference_returns
from alf_rl.replay import SyncUniformExperienceReplayer
from alf_rl.trainers.checkpoints import RunCheckpoints
from alf_rl.trainers.config import TrainerConfig
from alf_rl.trainers.env_sources import EnvSource
from alf_rl.trainers.errors import TrainingError, raise_training_error
from alf_rl.trainers.evaluation import Evaluator, create_eval_env
from alf_rl.trainers.gin_scope import GinState, own_gin_config
from alf_rl.trainers.progress import RunClock, format_secs, say_if_nothing_left
from alf_rl.trainers.summaries import RunSummaries
from alf_rl.utils import summary as summary_utils
from alf_rl.utils.common import loop_traced_once, set_random_seed


def _check_offline_config(
    config: TrainerConfig, dataset: Optional[str]
) -> None:
    """Refuses, in one line, settings an offline run cannot honour."""
    if not dataset:
        raise ValueError(
            "OfflineTrainer.dataset is required: the directory "
            "of a dataset written by alf-collect"
        )
    for name in ('num_env_steps', 'stop_at_env_steps'):
        if getattr(config, name):
            raise ValueError(
                "TrainerConfig.%s=%d: an offline run "
                "takes no environment steps; set num_iterations"
                % (name, getattr(config, name))
            )
    if config.stop_at_average_return is not None:
        raise ValueError(
            "TrainerConfig.stop_at_average_return: an offline "
            "run plays no training episodes; leave it None"
        )
    if config.algorithm_ctor is None:
        raise ValueError(
            "TrainerConfig.algorithm_ctor is required: e.g. @BcAlgorithm"
        )
    if config.num_iterations <= 0:
        raise ValueError(
            "TrainerConfig.num_iterations=%d: an offline run "
            "needs a positive number of iterations" % config.num_iterations
        )


def offline_progress_line(
    iteration: int,
    loss_info: Any,
    last_eval: Dict[str, float],
    eta_secs: Optional[float],
) -> str:
    """``iter N | loss L | eval R | score S | ETA H:MM:SS``, the parts
    known so far.

    Args:
        iteration: iterations done.
        loss_info: the last reduced ``LossInfo`` (or None).
        last_eval: the last evaluation's scalars (or ``{}``).
        eta_secs: the time left, if known.
    """
    parts = ['iter %d' % iteration]
    if loss_info is not None:
        parts.append('loss %.4g' % float(loss_info.loss))
    for key, fmt in (
        ('Metrics/AverageReturn', 'eval %.2f'),
        ('Metrics/NormalizedScore', 'score %.1f'),
    ):
        if key in last_eval:
            parts.append(fmt % last_eval[key])
    if eta_secs is not None:
        parts.append('ETA %s' % format_secs(eta_secs))
    return ' | '.join(parts)


def _train_scalars(loss_info: Any, clock: RunClock, now: float) -> dict:
    """The losses and the seconds and CPU seconds so far (no env steps
    offline; the benchmark table takes a run's training time from them)."""
    scalars = summary_utils.loss_scalars(loss_info)
    rates = clock.summary_rates(now, 0)
    del rates['time/env_steps_per_sec']
    scalars.update(rates)
    return scalars


@gin.configurable
class OfflineTrainer(object):
    """Trains an off-policy algorithm (``algorithm.train`` on replayed
    sequences) from a dataset.

    Args:
        config: a ``TrainerConfig``: ``algorithm_ctor`` (called with the
            dataset's specs), ``num_iterations``, ``random_seed``,
            ``num_updates_per_train_step``, ``mini_batch_size``,
            ``mini_batch_length`` (default 2), the evaluation, checkpoint
            and report settings.
        dataset: the dataset directory.
        eval_env: the evaluation environment or a ``(seed)`` factory
            (``num_eval_episodes`` environments); None: the gin-configured
            ``create_environment``. Only built with ``evaluate=True``.
        num_lanes: replay lanes the episodes are laid out over (at most
            the number of episodes).

    Raises:
        ValueError: a missing dataset, settings an offline run cannot
            honour, an algorithm not trained from replay, or an evaluation
            environment of other specs than the dataset's (one line each).
        DatasetError: an unreadable dataset (naming the file and record).
    """

    def __init__(
        self,
        config: TrainerConfig,
        dataset: Optional[str] = None,
        eval_env: Optional[EnvSource] = None,
        num_lanes: int = 16,
    ):
        _check_offline_config(config, dataset)
        self._config = config
        self._dataset = Dataset(str(dataset))
        self._stop_requested = threading.Event()
        self._seed = set_random_seed(config.random_seed)
        ctor: Any = config.algorithm_ctor
        self._algorithm = ctor(
            observation_spec=self._dataset.observation_spec,
            action_spec=self._dataset.action_spec,
        )
        self._build_replay(num_lanes)
        self._evaluator = self._build_evaluator(eval_env)
        self._references = reference_returns(self._dataset.metadata)
        self._iteration = tf.Variable(
            0, dtype=tf.int64, trainable=False, name='iteration'
        )
        self._checkpoints = self._build_checkpoints()
        self._summaries = RunSummaries(
            config.root_dir,
            config.report.summaries_flush_secs,
            config.evaluation.evaluate,
        )
        # train() runs in the gin configuration the run was built in.
        self._gin_state = [GinState.capture()]
        self._call = (
            tf.function(self._iterations, autograph=False)
            if config.execution.use_tf_functions
            else self._iterations
        )

    def _build_checkpoints(self) -> RunCheckpoints:
        """The run's checkpoints: what an online run's hold (algorithm,
        optimizers, metrics, iteration, generators) and the replayer."""
        config = self._config
        # No environment steps: the standard metrics stay at zero, but are
        # kept so the checkpoint has the layout of an online run's.
        self._metrics = TrainingMetrics(1, config.metrics)
        return RunCheckpoints(
            config.root_dir,
            config.checkpoint,
            self._iteration,
            algorithm=self._algorithm,
            optimizers=[
                o for o, _ in self._algorithm.get_optimizer_and_variable_sets()
            ],
            **self._metrics.checkpoint_objects(),
            rng=tf.random.get_global_generator(),
            eval_rng=(
                self._evaluator.generator
                if self._evaluator
                else tf.random.Generator.from_seed(0)
            ),
            replayer=self._replayer,
        )

    def _build_replay(self, num_lanes: int) -> None:
        """The replay buffer, filled with the whole dataset."""
        alg, ds = self._algorithm, self._dataset
        if not hasattr(alg, 'prepare_off_policy_specs'):
            raise ValueError(
                "OfflineTrainer trains algorithms trained from "
                "replay (SAC, DQN, BC, CQL, IQL...); %s is not "
                "one" % type(alg).__name__
            )
        lanes = max(1, min(num_lanes, ds.num_episodes))
        exp_spec = alg.prepare_off_policy_specs(lanes)
        self._replayer = SyncUniformExperienceReplayer(
            exp_spec,
            lanes,
            lane_capacity(ds, lanes),
            seed=(self._seed + 104729) % 2**31,
        )
        fill_replayer(ds, self._replayer, exp_spec)
        alg.build_optimizers()
        r = self._config.replay
        if not r.mini_batch_size:
            raise ValueError(
                "TrainerConfig.mini_batch_size is required for "
                "offline training"
            )
        self._mini_batch_length = r.mini_batch_length or 2

    def _build_evaluator(
        self, eval_env: Optional[EnvSource]
    ) -> Optional[Evaluator]:
        c = self._config
        if not c.evaluation.evaluate:
            return None
        env = create_eval_env(eval_env, c.evaluation, self._seed)
        try:
            self._dataset.check_specs(
                env.observation_spec(), env.action_spec()
            )
        except ValueError:
            env.close()
            raise
        return Evaluator(
            env, self._algorithm, use_tf_functions=c.execution.use_tf_functions
        )

    # ------------------------------------------------------------ public
    @property
    def algorithm(self) -> Any:
        """The algorithm being trained."""
        return self._algorithm

    @property
    def dataset(self) -> Dataset:
        """The dataset trained from."""
        return self._dataset

    def request_stop(self) -> None:
        """Asks a running ``train()`` to stop (with a checkpoint) after its
        current call; safe from a signal handler."""
        self._stop_requested.set()

    def evaluate(self) -> Dict[str, float]:
        """Greedy episodes in the evaluation environment: the
        ``Evaluator``'s scalars, and ``Metrics/NormalizedScore`` when the
        dataset has reference returns.

        Raises:
            ValueError: built without evaluation.
        """
        if self._evaluator is None:
            raise ValueError(
                "OfflineTrainer.evaluate: no evaluation "
                "environment; set TrainerConfig.evaluate=True"
            )
        scalars = self._evaluator.evaluate()
        if self._references is not None:
            scalars['Metrics/NormalizedScore'] = normalized_score(
                scalars['Metrics/AverageReturn'], **self._references
            )
        return scalars

    def close(self) -> None:
        """Closes the evaluation environment."""
        if self._evaluator is not None:
            self._evaluator.close()

    def train(self) -> Dict[str, Any]:
        """Trains ``num_iterations`` iterations; resumable (as
        ``Trainer.train``).

        Returns:
            the last evaluation's scalars as ``'eval/Metrics/...'``,
            ``iterations``, ``train_secs``, ``first_iteration_secs`` and
            ``stopped_early``.

        Raises:
            TrainingError, RunDirLockedError, RunDirError, CheckpointError:
                as ``Trainer.train``.
        """
        with (
            own_gin_config(self._gin_state.pop(), keep=self._gin_state),
            self._checkpoints.locked(),
        ):
            return self._train_locked()

    # ------------------------------------------------------------ loop
    def _train_locked(self) -> Dict[str, Any]:
        checkpoints, summaries = self._checkpoints, self._summaries
        restored = checkpoints.restore(lambda: ' (offline)')
        summaries.drop_after(
            checkpoints.saved_wall_time(restored) if restored else None
        )
        if restored:
            say_if_nothing_left(self._config, 0, self._iteration_count())
        summaries.open()
        clock = RunClock(time.time(), 0)
        loss_info, config_written = None, False
        try:
            while not self._done() and not self._stop_requested.is_set():
                try:
                    loss_info, now = self._run_call(clock)
                except TrainingError as error:
                    summaries.flush()
                    checkpoints.save_after_error(
                        error, self._algorithm.variables
                    )
                    raise
                if not config_written:
                    summaries.write_config()
                    config_written = True
                self._after_call(clock, loss_info, now)
            if loss_info is not None and self._done():
                self._after_call(clock, loss_info, time.time(), final=True)
            self._report_progress(clock, loss_info)
            checkpoints.save(self._iteration_count(), summaries.flush)
        finally:
            summaries.flush()
        stopped = self._stop_requested.is_set()
        self._stop_requested.clear()
        return clock.result({}, self._iteration_count(), stopped)

    def _one_update(self) -> Any:
        experience, _ = self._replayer.replay(
            self._config.replay.mini_batch_size, self._mini_batch_length
        )
        return self._algorithm.train(experience)

    def _iterations(self, num_updates: tf.Tensor) -> Any:
        """``num_updates`` updates (>= 1); the last one's ``LossInfo``
        (the update traced once: ``loop_traced_once``)."""
        return loop_traced_once(
            lambda i, carry: (carry, self._one_update()), (), num_updates
        )[1]

    def _run_call(self, clock: RunClock) -> Any:
        it = self._iteration_count()
        n = (
            1
            if clock.first_iteration_secs is None
            else self._config.iterations_for_call(it, clock.secs_per_iteration)
        )
        updates = n * self._config.replay.num_updates_per_train_step
        call_start = time.time()
        try:
            loss_info = self._call(tf.constant(updates))
        except tf.errors.OpError as e:
            raise_training_error(e, it + 1, n)
        self._iteration.assign_add(n)
        now = time.time()
        clock.record_call(now, call_start, n, self._fraction_done())
        return loss_info, now

    def _after_call(
        self, clock: RunClock, loss_info: Any, now: float, final: bool = False
    ) -> None:
        """Summaries, evaluation, checkpoint and progress line when their
        intervals come due (as ``Trainer``)."""
        c = self._config
        it = self._iteration_count()
        if (it % c.report.summary_interval == 0) != final:
            self._summaries.write_train(
                _train_scalars(loss_info, clock, now), it, 0
            )
        if (
            c.evaluation.evaluate
            and (it % c.evaluation.eval_interval == 0) != final
        ):
            clock.last_eval = self.evaluate()
            self._summaries.write_eval(clock.last_eval, it, 0)
        if not final and it % c.checkpoint.checkpoint_interval == 0:
            self._checkpoints.save(it, self._summaries.flush)
        if not final and clock.report_due(
            now, c.report.progress_interval_secs
        ):
            self._report_progress(clock, loss_info)

    def _report_progress(self, clock: RunClock, loss_info: Any) -> None:
        eta = clock.eta_secs(time.time(), self._fraction_done())
        print(
            offline_progress_line(
                self._iteration_count(), loss_info, clock.last_eval, eta
            ),
            flush=True,
        )

    def _iteration_count(self) -> int:
        return int(self._iteration.numpy())

    def _done(self) -> bool:
        return self._iteration_count() >= self._config.num_iterations

    def _fraction_done(self) -> float:
        return self._iteration_count() / self._config.num_iterations
