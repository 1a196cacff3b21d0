"""TrainingMetrics: the standard four by reference, the user's, games."""

import pytest
import tensorflow as tf

from alf_rl.data_structures import StepType, TimeStep
from alf_rl.metrics import (AverageReturn, EnvironmentSteps,
                            EpisodeAverageMetric, NumberOfEpisodes,
                            StepMetric, TrainingMetrics)
from alf_rl.metrics.training_metrics import build_metric


class _MaxReward(StepMetric):
    """The largest reward seen on any step."""

    def __init__(self, name='MaxReward'):
        super().__init__(name)
        with self.name_scope:
            self._max = tf.Variable(-1e9, trainable=False)

    def _update(self, time_step):
        self._max.assign(tf.maximum(self._max,
                                    tf.reduce_max(time_step.reward)))

    def result(self):
        return self._max.read_value()


class _PositiveRewards(EpisodeAverageMetric):
    """Mean number of positive rewards per episode."""

    def __init__(self, batch_size, buffer_size=10, name='PositiveRewards'):
        super().__init__(batch_size, buffer_size, name)

    def _step_value(self, time_step):
        return tf.cast(time_step.reward > 0, tf.float32)


def _step(step_type, reward):
    step_type = tf.constant(step_type, tf.int32)
    zeros = tf.zeros_like(step_type, tf.float32)
    return TimeStep(step_type=step_type,
                    reward=tf.constant(reward, tf.float32), discount=zeros,
                    observation=zeros, prev_action=zeros,
                    env_id=tf.range(len(step_type)))


def _feed(metrics, steps):
    for step in steps:
        for metric in metrics.step_metrics:
            metric(step)


def test_standard_metrics_are_attributes_and_extras_follow():
    metrics = TrainingMetrics(2, [_MaxReward(), _PositiveRewards])
    assert isinstance(metrics.episodes, NumberOfEpisodes)
    assert isinstance(metrics.env_steps, EnvironmentSteps)
    assert isinstance(metrics.average_return, AverageReturn)
    assert [m.name for m in metrics.step_metrics] == [
        'NumberOfEpisodes', 'EnvironmentSteps', 'AverageReturn',
        'AverageEpisodeLength', 'MaxReward', 'PositiveRewards']
    assert metrics.extra[1].batch_size == 2  # built with B
    assert metrics.find('PositiveRewards') is metrics.extra[1]
    with pytest.raises(ValueError, match="no metric named 'Nope' \\(the "
                       "metrics are NumberOfEpisodes, .*PositiveRewards\\)"):
        metrics.find('Nope')


def test_scalars_leave_out_unscored_averages_and_add_games():
    metrics = TrainingMetrics(2, [_MaxReward(), _PositiveRewards],
                              game_score=True)
    _feed(metrics, [_step([StepType.FIRST] * 2, [0, 0]),
                    _step([StepType.MID] * 2, [2, -1])])
    assert not metrics.scored()
    assert metrics.scalars(scored_only=True) == {
        'Metrics/NumberOfEpisodes': 0.0, 'Metrics/EnvironmentSteps': 2.0,
        'Metrics/MaxReward': 2.0}
    _feed(metrics, [_step([StepType.LAST, StepType.MID], [3, 0])])
    metrics.game_score.add([10.0, 20.0])
    assert metrics.scored() and metrics.num_env_steps() == 4
    assert metrics.scalars(scored_only=True) == {
        'Metrics/NumberOfEpisodes': 1.0, 'Metrics/EnvironmentSteps': 4.0,
        'Metrics/AverageReturn': 5.0, 'Metrics/AverageEpisodeLength': 2.0,
        'Metrics/MaxReward': 3.0, 'Metrics/PositiveRewards': 2.0,
        'Metrics/GameScore': 15.0}
    objects = metrics.checkpoint_objects()
    assert objects['metrics'] == metrics.step_metrics
    assert objects['game_score'] is metrics.game_score


def test_bad_metrics_are_refused_in_one_line():
    with pytest.raises(ValueError, match="two metrics are named "
                       "'AverageReturn'"):
        TrainingMetrics(2, [AverageReturn(2)])
    with pytest.raises(TypeError, match='expected a StepMetric or a '
                       r'\(batch_size\) -> StepMetric callable, got 3'):
        build_metric(3, 2)
    with pytest.raises(TypeError, match='returned int, expected a '
                       'StepMetric'):
        build_metric(lambda b: b, 2)
