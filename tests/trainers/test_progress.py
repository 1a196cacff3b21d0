"""RunClock, the progress line and the done checks, alone."""

import time

import pytest
import tensorflow as tf

from alf_rl.data_structures import StepType, TimeStep
from alf_rl.metrics import TrainingMetrics
from alf_rl.trainers import TrainerConfig
from alf_rl.trainers.callbacks import StopAtAverageReturn
from alf_rl.trainers.progress import (ProgressReporter, RunClock,
                                      budget_reached, format_secs,
                                      nothing_left_line, progress_line,
                                      stop_condition)


def _step(step_type, reward):
    step_type = tf.constant(step_type, tf.int32)
    zeros = tf.zeros_like(step_type, tf.float32)
    return TimeStep(step_type=step_type, reward=tf.constant(reward,
                                                            tf.float32),
                    discount=zeros, observation=zeros, prev_action=zeros,
                    env_id=tf.range(2))


def _metrics_after_one_episode():
    """2 envs; env 0 ends an episode of return 3 (two steps)."""
    metrics = TrainingMetrics(2)
    for step in (_step([StepType.FIRST] * 2, [0, 0]),
                 _step([StepType.MID] * 2, [1, 1]),
                 _step([StepType.LAST, StepType.MID], [2, 1])):
        for m in metrics.step_metrics:
            m(step)
    return metrics


def test_clock_times_calls_and_extrapolates_the_eta():
    clock = RunClock(start_time=100.0, start_steps=10)
    assert clock.eta_secs(101.0, 0.1) is None  # no steady state yet
    assert clock.steps_per_sec(101.0, 20) is None
    clock.record_call(110.0, 100.0, 1, 0.1, env_steps=30)  # the tracing call
    assert clock.first_iteration_secs == 10.0
    assert clock.steps_per_sec(110.0, 30) is None  # nothing since
    clock.record_call(120.0, 110.0, 5, 0.3, env_steps=80)
    assert clock.secs_per_iteration == 2.0
    assert clock.steps_per_sec(120.0, 80) == 5.0  # 50 steps in 10 s
    # 0.2 of the run in 10 s since the first call: 0.7 left takes 35 s.
    assert clock.eta_secs(120.0, 0.3) == 35.0
    assert clock.summary_rates(120.0, 110, cpu_secs=12.5) == {
        'time/env_steps_per_sec': 5.0, 'time/elapsed_secs': 20.0,
        'time/cpu_secs': 12.5}
    cpu = clock.summary_rates(121.0, 110)['time/cpu_secs']
    assert 0 < cpu <= time.process_time()  # this process's own
    clock.last_eval = {'Metrics/AverageReturn': 7.0}
    result = clock.result({'Metrics/X': 1.0}, 6, False, now=130.0)
    assert result == {'Metrics/X': 1.0, 'eval/Metrics/AverageReturn': 7.0,
                      'iterations': 6, 'train_secs': 30.0,
                      'first_iteration_secs': 10.0, 'stopped_early': False}


def test_a_progress_line_is_due_after_the_first_call_then_by_interval():
    clock = RunClock(start_time=100.0, start_steps=0)
    assert clock.report_due(100.5, 5.0)  # the first call, however fast
    assert not clock.report_due(104.0, 5.0)
    assert clock.report_due(105.5, 5.0)
    assert not clock.report_due(110.0, 5.0)
    assert clock.report_due(110.5, 5.0)


def test_progress_line_parts():
    assert format_secs(3725.9) == '1:02:05'
    assert progress_line(3, 120, 60.4, None) == (
        'iter 3 | env steps 120 | 60 steps/s | no episode ended yet')
    assert progress_line(3, 120, 60.4, 2.5, game_score=12.0,
                         eval_return=3.25, extra=[('Entropy', 0.61)],
                         eta_secs=62) == (
        'iter 3 | env steps 120 | 60 steps/s | AverageReturn 2.50 | game '
        'score 12.0 | eval 3.25 | Entropy 0.61 | ETA 0:01:02')


def test_reporter_reads_the_metrics_it_is_given():
    metrics = _metrics_after_one_episode()
    reporter = ProgressReporter(metrics, ['NumberOfEpisodes'])
    clock = RunClock(start_time=0.0, start_steps=0)
    clock.record_call(1.0, 0.0, 1, 0.25, env_steps=2)
    assert reporter.line(clock, 1, 0.5, now=5.0) == (
        'iter 1 | env steps 4 | 0.5 steps/s | AverageReturn 3.00 | '
        'NumberOfEpisodes 1 | ETA 0:00:08')


def test_no_zero_rate_after_a_resume():
    # Resumed at 4 steps: one step in the first (tracing) call is no rate
    # (it showed '0 steps/s'); a finished run resumed shows none either.
    metrics = _metrics_after_one_episode()
    clock = RunClock(start_time=0.0, start_steps=3)
    clock.record_call(7.0, 0.0, 1, 0.5, env_steps=4)
    assert ProgressReporter(metrics).line(clock, 6, 0.5, now=7.0) == (
        'iter 6 | env steps 4 | AverageReturn 3.00')
    assert progress_line(6, 4, None, None) == (
        'iter 6 | env steps 4 | no episode ended yet')
    assert progress_line(6, 4, 0.14, None) == (
        'iter 6 | env steps 4 | 0.14 steps/s | no episode ended yet')


def test_budget_and_stop_condition():
    metrics = _metrics_after_one_episode()
    config = TrainerConfig(root_dir='/tmp/unused', algorithm_ctor=len,
                           num_iterations=0, num_env_steps=4)
    assert budget_reached(config, metrics, 1)
    assert bool(stop_condition(config, metrics))
    # stop_at_env_steps stops before the budget, which stays as set.
    for stop, reached in ((4, True), (5, False)):
        config = TrainerConfig(root_dir='/tmp/unused', algorithm_ctor=len,
                               num_iterations=0, num_env_steps=100,
                               stop_at_env_steps=stop)
        assert config.num_env_steps == 100
        assert budget_reached(config, metrics, 1) == reached
        assert bool(stop_condition(config, metrics)) == reached
    # The ETA counts to the stop: 4 of 5 steps done.
    assert config.fraction_done(1, 4) == pytest.approx(0.8)
    with pytest.raises(ValueError, match=r'TrainerConfig.stop_at_env_steps '
                       r'must be > 0 \(or None: no stop before the budget\), '
                       r'got 0'):
        TrainerConfig(root_dir='/tmp/unused', algorithm_ctor=len,
                      num_env_steps=100, stop_at_env_steps=0)
    # A resumed run already there says which setting it reached.
    assert nothing_left_line(config, 4, 1) is None  # 4 of 5 steps
    assert nothing_left_line(config, 6, 1) == (
        'alf_rl: nothing to train: the run is already at its '
        'stop_at_env_steps 5 (at 6 env steps); rerun with a larger '
        '--stop_at_env_steps, or without it to train on')
    budget = TrainerConfig(root_dir='/tmp/unused', algorithm_ctor=len,
                           num_iterations=0, num_env_steps=4)
    assert nothing_left_line(budget, 4, 1) == (
        'alf_rl: nothing to train: the run is already at its num_env_steps '
        '4 (at 4 env steps); raise TrainerConfig.num_env_steps to train on')
    iterations = TrainerConfig(root_dir='/tmp/unused', algorithm_ctor=len,
                               num_iterations=3)
    assert nothing_left_line(iterations, 0, 3) == (
        'alf_rl: nothing to train: the run is already at its num_iterations '
        '3 (at iteration 3); raise TrainerConfig.num_iterations to train on')
    assert nothing_left_line(iterations, 0, 2) is None
    # The score is StopAtAverageReturn's (a callback), not the budget's.
    config = TrainerConfig(root_dir='/tmp/unused', algorithm_ctor=len,
                           num_iterations=10, stop_at_average_return=3.0)
    assert not budget_reached(config, metrics, 5)
    assert not bool(stop_condition(config, metrics))
    assert budget_reached(config, metrics, 10)
    stop = StopAtAverageReturn(3.0)
    assert bool(stop.stop_condition(metrics))
    assert stop.on_iterations_end(1, metrics.scalars())
    stop = StopAtAverageReturn(3.5)
    assert not bool(stop.stop_condition(metrics))
    assert not stop.on_iterations_end(1, metrics.scalars())
    # Before any episode ended, AverageReturn's 0 is not a score.
    assert not bool(StopAtAverageReturn(-1.0).stop_condition(
        TrainingMetrics(2)))
