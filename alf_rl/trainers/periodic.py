"""``PeriodicWork``: what comes due after each compiled call of training
iterations, each at its own interval of ``TrainerConfig``: training
summaries (``report.summary_interval``), a greedy evaluation
(``evaluation.eval_interval``), a checkpoint
(``checkpoint.checkpoint_interval``) and the progress line
(``report.progress_interval_secs``), and the user's callbacks
(``alf_rl.trainers.callbacks``) after each of them; and the in-graph
stopping rule of a compiled call (``stop_condition``).
"""

from typing import Any, Callable, Dict, Sequence

import tensorflow as tf

from alf_rl.metrics.training_metrics import TrainingMetrics
from alf_rl.trainers.callbacks import (
    CallbackList,
    TrainingCallback,
    config_callbacks,
    training_callbacks,
)
from alf_rl.trainers.checkpoints import RunCheckpoints
from alf_rl.trainers.config import TrainerConfig
from alf_rl.trainers.progress import RunClock, stop_condition
from alf_rl.trainers.summaries import RunSummaries
from alf_rl.utils import summary as summary_utils


class PeriodicWork(object):
    """The work a ``Trainer`` does between compiled calls.

    Args:
        config: the run's ``TrainerConfig`` (its intervals).
        metrics: the run's ``TrainingMetrics``.
        summaries: the run's ``RunSummaries``.
        checkpoints: the run's ``RunCheckpoints``.
        evaluate: plays the greedy evaluation episodes and returns their
            ``{'Metrics/...': value}`` (called only when evaluating).
        extra_summaries: more ``{tag: value}`` scalars for every training
            summary (e.g. an asynchronous driver's policy lag).
        report_progress: prints the progress line for a ``RunClock``.
    """

    def __init__(
        self,
        config: TrainerConfig,
        metrics: TrainingMetrics,
        summaries: RunSummaries,
        checkpoints: RunCheckpoints,
        evaluate: Callable[[], Dict[str, float]],
        extra_summaries: Callable[[], Dict[str, float]],
        report_progress: Callable[[RunClock], None],
    ):
        self._config = config
        self._metrics = metrics
        self._summaries = summaries
        self._checkpoints = checkpoints
        self._evaluate = evaluate
        self._extra_summaries = extra_summaries
        self._report_progress = report_progress
        #: The callbacks of the current ``Trainer.train``.
        self.callbacks = CallbackList()
        # TrainerConfig's shorthands (stop_at_average_return): first in
        # every train(), their conditions also checked in the graph.
        self._config_callbacks = config_callbacks(
            config.stop_at_average_return
        )

    def use_callbacks(self, callbacks: Sequence[TrainingCallback]) -> None:
        """The callbacks of a ``Trainer.train``: those of ``TrainerConfig``,
        then ``callbacks``, then the gin-configured ones
        (``training_callbacks``).

        Raises:
            TypeError: an object without the ``TrainingCallback`` hooks.
        """
        self.callbacks = CallbackList(
            self._config_callbacks + list(callbacks) + training_callbacks()
        )
        self._summaries.callbacks = self.callbacks  # on_summaries

    def stop_condition(self) -> tf.Tensor:
        """In-graph: the step budget reached (``progress.stop_condition``)
        or a ``TrainerConfig`` callback's condition
        (``StopAtAverageReturn.stop_condition``) holds.

        Returns:
            A scalar bool tensor, checked after every iteration of a call.
        """
        stop = stop_condition(self._config, self._metrics)
        for callback in self._config_callbacks:
            stop = tf.logical_or(stop, callback.stop_condition(self._metrics))
        return stop

    def after_call(
        self,
        clock: RunClock,
        loss_info: Any,
        iteration: int,
        now: float,
        final: bool = False,
    ) -> None:
        """Summaries, evaluation, checkpoint and progress line, each when
        its interval comes due at the iteration the call ended on.

        Args:
            clock: the run's ``RunClock`` (its last evaluation and report
                are updated).
            loss_info: the call's last reduced ``LossInfo``.
            iteration: the iteration the call ended on.
            now: the wall-clock at the end of the call.
            final: the end of training: the summaries and evaluation of
                the last iteration unless their intervals just wrote them,
                so that a run's curves (and tables made from them) end at
                its budget; no checkpoint or progress line (the trainer
                writes those last).
        """
        c, callbacks = self._config, self.callbacks
        if (iteration % c.report.summary_interval == 0) != final:
            self._write_train_summaries(clock, loss_info, iteration, now)
        if callbacks.callbacks and not final:
            scalars = self._metrics.scalars()
            scalars.update(summary_utils.loss_scalars(loss_info))
            callbacks.call('on_iterations_end', iteration, iteration, scalars)
        if (
            c.evaluation.evaluate
            and (iteration % c.evaluation.eval_interval == 0) != final
        ):
            clock.last_eval = self._evaluate()
            self._summaries.write_eval(
                clock.last_eval, iteration, self._metrics.num_env_steps()
            )
            callbacks.call(
                'on_evaluation_end', iteration, iteration, clock.last_eval
            )
        if final:
            return
        if iteration % c.checkpoint.checkpoint_interval == 0:
            self.save_checkpoint(iteration)
        if clock.report_due(now, c.report.progress_interval_secs):
            self._report_progress(clock)

    def save_checkpoint(self, iteration: int) -> None:
        """Checkpoints ``iteration`` (unless it is the newest save) and
        tells the callbacks (``on_checkpoint``)."""
        if iteration != self._checkpoints.saved_iteration:
            self._checkpoints.save(iteration, self._summaries.flush)
            self.callbacks.call('on_checkpoint', iteration, iteration)

    def _write_train_summaries(
        self, clock: RunClock, loss_info: Any, iteration: int, now: float
    ) -> None:
        """Metrics, losses and throughput under ``train/`` at
        ``iteration``; metrics also against environment steps."""
        env_steps = self._metrics.num_env_steps()
        scalars = self._metrics.scalars(scored_only=True)
        scalars.update(summary_utils.loss_scalars(loss_info))
        scalars.update(clock.summary_rates(now, env_steps))
        scalars.update(self._extra_summaries())
        self._summaries.write_train(scalars, iteration, env_steps)
