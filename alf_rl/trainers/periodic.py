"""``PeriodicWork``: what comes due after each compiled call of training
iterations, each at its own interval of ``TrainerConfig``: training
summaries (``report.summary_interval``), a greedy evaluation
(``evaluation.eval_interval``), a checkpoint
(``checkpoint.checkpoint_interval``) and the progress line
(``report.progress_interval_secs``), and the user's callbacks
(``alf_rl.trainers.callbacks``) after each of them.
"""

from typing import Any, Callable, Dict

from alf_rl.metrics.training_metrics import TrainingMetrics
from alf_rl.trainers.callbacks import CallbackList
from alf_rl.trainers.checkpoints import RunCheckpoints
from alf_rl.trainers.config import TrainerConfig
from alf_rl.trainers.progress import RunClock
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
        #: The user's callbacks of the current ``Trainer.train``.
        self.callbacks = CallbackList()

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
        if now - clock.last_report >= c.report.progress_interval_secs:
            self._report_progress(clock)
            clock.last_report = now

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
