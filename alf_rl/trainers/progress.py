"""Progress of a training run: its timings, the ETA, the progress line and
when the run is done.

``RunClock`` keeps the wall-clock bookkeeping of one ``Trainer.train()``
call (the first, tracing call apart, the time per iteration after it, the
steady-state rate and ETA); ``ProgressReporter`` prints what the terminal
shows (the rate and the ETA from the second call on)::

    iter 120 | env steps 7680 | 1502 steps/s | AverageReturn 87.30 |
    game score 12.0 | eval 95.10 | Entropy 0.61 | ETA 0:01:02

``budget_reached`` and ``stop_condition`` say when a run is done, in
Python and in the graph.
"""

import sys
import time
from typing import Any, Dict, Optional, Sequence, Tuple

import tensorflow as tf

from alf_rl.metrics.training_metrics import TrainingMetrics
from alf_rl.trainers.config import TrainerConfig


class RunClock(object):
    """Wall-clock and progress bookkeeping of one ``Trainer.train()`` call.

    Args:
        start_time: ``time.time()`` at the start of the training loop.
        start_steps: environment steps done before it (non-zero when
            resumed).
    """

    def __init__(self, start_time: float, start_steps: int):
        self.start_time = start_time
        self.start_steps = start_steps
        self.last_report = start_time
        self.reported = False  # no progress line yet
        self.last_summary_time = start_time
        self.last_summary_steps = start_steps
        # The first call (one iteration) includes tracing and XLA
        # compilation; later calls measure the time per iteration.
        self.first_iteration_secs: Optional[float] = None
        self.secs_per_iteration: Optional[float] = None
        self.last_eval: Dict[str, float] = {}
        # (wall-clock, fraction of the run done) at the end of the first
        # call: the ETA extrapolates from there (steady state only).
        self.steady_start: Optional[Tuple[float, float]] = None
        # Env steps at the end of the first call: the rate counts from
        # there (steady state only).
        self.steady_steps: Optional[int] = None

    def record_call(self, now: float, call_start: float, iterations: int,
                    fraction_done: float, env_steps: Optional[int] = None
                    ) -> None:
        """Updates the timings after a call that ran ``iterations``.

        Args:
            now: ``time.time()`` at the end of the call.
            call_start: ``time.time()`` at its start.
            iterations: iterations it ran.
            fraction_done: the run's progress after it, in [0, 1].
            env_steps: environment steps done after it (for
                ``steps_per_sec``).
        """
        if self.first_iteration_secs is None:
            self.first_iteration_secs = now - self.start_time
            self.steady_start = (now, fraction_done)
            self.steady_steps = env_steps
        else:
            self.secs_per_iteration = (now - call_start) / max(iterations, 1)

    def eta_secs(self, now: float, fraction_done: float) -> Optional[float]:
        """Seconds left at this process's steady-state rate: the progress
        made since its first (tracing) call over the time it took. None
        until that is measurable or once done.

        Args:
            now: ``time.time()``.
            fraction_done: the run's progress now, in [0, 1].
        """
        if self.steady_start is None or not 0 <= fraction_done < 1:
            return None
        t0, f0 = self.steady_start
        if fraction_done <= f0 or now <= t0:
            return None
        return (1 - fraction_done) * (now - t0) / (fraction_done - f0)

    def report_due(self, now: float, interval: float) -> bool:
        """Whether a progress line is due: after the first call (so that
        a run shows it has started however fast that call was), then
        every ``interval`` seconds; marks it reported.

        Args:
            now: ``time.time()``.
            interval: seconds between progress lines.
        """
        if self.reported and now - self.last_report < interval:
            return False
        self.reported, self.last_report = True, now
        return True

    def steps_per_sec(self, now: float, env_steps: int) -> Optional[float]:
        """This process's steady-state env steps per second: the steps made
        since its first (tracing) call over the time since. None until
        that is measurable: before a step after the first call, so a
        resumed run never shows the ``0 steps/s`` of one step over its
        tracing time.

        Args:
            now: ``time.time()``.
            env_steps: environment steps so far.
        """
        if self.steady_start is None or self.steady_steps is None:
            return None
        secs = now - self.steady_start[0]
        steps = env_steps - self.steady_steps
        return steps / secs if steps > 0 and secs > 0 else None

    def summary_rates(self, now: float, env_steps: int,
                      cpu_secs: Optional[float] = None) -> Dict[str, float]:
        """The throughput scalars of a training summary (env steps per
        second since the last one, seconds since the start, this process's
        CPU seconds); starts the next interval.

        Args:
            now: ``time.time()``.
            env_steps: environment steps so far.
            cpu_secs: CPU seconds this process (all its threads, not its
                environment worker processes) has used since it started
                (default: ``time.process_time()``); with
                ``time/elapsed_secs`` it gives throughput per CPU-second,
                which machine load distorts far less than wall time.
        """
        dt = max(now - self.last_summary_time, 1e-9)
        rates = {
            'time/env_steps_per_sec': (env_steps - self.last_summary_steps)
                                      / dt,
            'time/elapsed_secs': now - self.start_time,
            'time/cpu_secs': (time.process_time() if cpu_secs is None
                              else cpu_secs),
        }
        self.last_summary_time, self.last_summary_steps = now, env_steps
        return rates

    def result(self, metric_scalars: Dict[str, float], iterations: int,
               stopped_early: bool, now: Optional[float] = None
               ) -> Dict[str, Any]:
        """What ``Trainer.train()`` returns.

        Args:
            metric_scalars: the final ``{'Metrics/<name>': value}``.
            iterations: iterations done.
            stopped_early: whether a stop request ended the call.
            now: ``time.time()`` (default: now).

        Returns:
            ``metric_scalars`` with the last evaluation's as
            ``'eval/Metrics/...'``, ``iterations``, ``train_secs``,
            ``first_iteration_secs`` and ``stopped_early``.
        """
        result = dict(metric_scalars)
        result.update({'eval/' + k: v for k, v in self.last_eval.items()})
        result['iterations'] = iterations
        result['train_secs'] = (time.time() if now is None else
                                now) - self.start_time
        result['first_iteration_secs'] = self.first_iteration_secs or 0.0
        result['stopped_early'] = stopped_early
        return result


def format_secs(secs: float) -> str:
    """``'H:MM:SS'`` of a duration in seconds (truncated)."""
    secs = int(secs)
    return '%d:%02d:%02d' % (secs // 3600, secs % 3600 // 60, secs % 60)


def progress_line(iteration: int, env_steps: int,
                  steps_per_sec: Optional[float],
                  average_return: Optional[float],
                  game_score: Optional[float] = None,
                  eval_return: Optional[float] = None,
                  extra: Sequence[Tuple[str, float]] = (),
                  eta_secs: Optional[float] = None) -> str:
    """The one-line progress report.

    Args:
        iteration: iterations done.
        env_steps: environment steps done.
        steps_per_sec: this process's rate (``RunClock.steps_per_sec``),
            or None (left out) while it is not measurable.
        average_return: the training ``AverageReturn``, or None before an
            episode ended (``'no episode ended yet'`` is shown).
        game_score: the mean score of the last games, if any.
        eval_return: the last evaluation's mean return, if any.
        extra: ``(name, value)`` of more metrics to show.
        eta_secs: the time left, if known.
    """
    parts = ['iter %d' % iteration, 'env steps %d' % env_steps]
    if steps_per_sec is not None:
        parts.append(('%.0f' if steps_per_sec >= 10 else '%.2g') %
                     steps_per_sec + ' steps/s')
    parts.append('no episode ended yet' if average_return is None else
                 'AverageReturn %.2f' % average_return)
    if game_score is not None:
        parts.append('game score %.1f' % game_score)
    if eval_return is not None:
        parts.append('eval %.2f' % eval_return)
    parts.extend('%s %.4g' % (name, value) for name, value in extra)
    if eta_secs is not None:
        parts.append('ETA %s' % format_secs(eta_secs))
    return ' | '.join(parts)


class ProgressReporter(object):
    """Prints the progress line of a run (``progress_line``) on stdout.

    Args:
        metrics: the run's ``TrainingMetrics``.
        progress_metrics: names of more metrics to show (any of
            ``metrics.step_metrics``).

    Raises:
        ValueError: a name that is no metric's (naming the metrics).
    """

    def __init__(self, metrics: TrainingMetrics,
                 progress_metrics: Sequence[str] = ()):
        self._metrics = metrics
        self._extra = [metrics.find(name) for name in progress_metrics]

    def line(self, clock: RunClock, iteration: int, fraction_done: float,
             now: Optional[float] = None) -> str:
        """The progress line now (its rate: ``RunClock.steps_per_sec``).

        Args:
            clock: the ``RunClock`` of the ``train()`` call.
            iteration: iterations done.
            fraction_done: the run's progress, in [0, 1].
            now: ``time.time()`` (default: now).
        """
        now = time.time() if now is None else now
        m = self._metrics
        steps = m.num_env_steps()
        return progress_line(
            iteration, steps, clock.steps_per_sec(now, steps),
            float(m.average_return.result()) if m.scored() else None,
            m.game_score_value(),
            clock.last_eval.get('Metrics/AverageReturn'),
            [(x.name, float(x.result())) for x in self._extra],
            clock.eta_secs(now, fraction_done))

    def report(self, clock: RunClock, iteration: int,
               fraction_done: float) -> None:
        """Prints ``line(...)`` on stdout."""
        print(self.line(clock, iteration, fraction_done), file=sys.stdout,
              flush=True)


def budget_reached(config: TrainerConfig, metrics: TrainingMetrics,
                   iteration: int) -> bool:
    """Whether the run's budget is spent: ``num_iterations``,
    ``num_env_steps`` or ``stop_at_env_steps`` reached
    (``stop_at_average_return`` is a callback's, ``StopAtAverageReturn``).

    Args:
        config: the run's settings.
        metrics: its metrics.
        iteration: iterations done.
    """
    return _setting_reached(config, metrics.num_env_steps(),
                            iteration) is not None


def _setting_reached(config: TrainerConfig, env_steps: int,
                     iteration: int) -> Optional[str]:
    """Which of ``num_iterations``, ``stop_at_env_steps`` and
    ``num_env_steps`` the run has reached (the first of those, in that
    order), or None."""
    if 0 < config.num_iterations <= iteration:
        return 'num_iterations'
    if 0 < (config.stop_at_env_steps or 0) <= env_steps:
        return 'stop_at_env_steps'
    if 0 < config.num_env_steps <= env_steps:
        return 'num_env_steps'
    return None


def nothing_left_line(config: TrainerConfig, env_steps: int,
                      iteration: int) -> Optional[str]:
    """The line a resumed run prints when its checkpoint is already at
    its budget or stop (so nothing trains), naming the setting reached and
    how to go on; None when there is training left.

    Args:
        config: the run's settings (an offline run's too: its env-step
            settings are unset).
        env_steps: env steps done (the checkpoint's).
        iteration: iterations done (the checkpoint's).
    """
    setting = _setting_reached(config, env_steps, iteration)
    if setting is None:
        return None
    if setting == 'num_iterations':
        at = 'iteration %d' % iteration
    else:
        at = '%d env steps' % env_steps
    more = ('rerun with a larger --stop_at_env_steps, or without it'
            if setting == 'stop_at_env_steps' else
            'raise TrainerConfig.%s' % setting)
    return ('alf_rl: nothing to train: the run is already at its %s %d (at '
            '%s); %s to train on' % (setting, getattr(config, setting), at,
                                     more))


def say_if_nothing_left(config: TrainerConfig, env_steps: int,
                        iteration: int) -> None:
    """Prints ``nothing_left_line`` (on stdout, beside the "resumed from"
    line) when a resumed run has nothing left to train.

    Args:
        config: the run's settings.
        env_steps: env steps done (the checkpoint's).
        iteration: iterations done (the checkpoint's).
    """
    line = nothing_left_line(config, env_steps, iteration)
    if line is not None:
        print(line, flush=True)


def stop_condition(config: TrainerConfig,
                   metrics: TrainingMetrics) -> tf.Tensor:
    """In-graph: the step budget or ``stop_at_env_steps`` reached (the
    trainer adds its
    callbacks' conditions, ``StopAtAverageReturn.stop_condition``).

    Returns:
        a scalar bool tensor (checked after every iteration of a call).
    """
    c, m = config, metrics
    stop = tf.constant(False)
    for steps in (c.num_env_steps, c.stop_at_env_steps or 0):
        if steps > 0:
            stop = tf.logical_or(stop, m.env_steps.result() >= steps)
    return stop
