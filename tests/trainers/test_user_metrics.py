"""A user's own metric end to end: updated in the graph by the driver,
checkpointed, written to TensorBoard and shown in the progress line."""


import gin
import pytest
import tensorflow as tf

from alf_rl.environments.suite_unittest import ValueUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.metrics import EpisodeAverageMetric, StepMetric
from alf_rl.trainers import OnPolicyTrainer, TrainerConfig
from alf_rl.utils.checkpoint import CheckpointError
from small_algorithms import small_actor_critic

from test_trainer import _events


@gin.configurable
class RewardSum(StepMetric):
    """The sum of every reward over all environments."""

    def __init__(self, batch_size, name='RewardSum'):
        super().__init__(name)
        with self.name_scope:
            self._sum = tf.Variable(0.0, trainable=False, name='sum')

    def _update(self, time_step):
        return self._sum.assign_add(tf.reduce_sum(time_step.reward))

    def result(self):
        return self._sum.read_value()


class PositiveRewards(EpisodeAverageMetric):
    """Mean number of positive rewards per episode (docs/training.md)."""

    def __init__(self, batch_size, buffer_size=10, name='PositiveRewards'):
        super().__init__(batch_size, buffer_size, name)

    def _step_value(self, time_step):
        return tf.cast(time_step.reward > 0, tf.float32)


_actor_critic = small_actor_critic


def _trainer(root, num_iterations, metrics):
    # 2 envs, episodes FIRST, MID, MID, LAST with reward 1 on each non-FIRST
    # step; 4 steps an iteration: 3 transitions per env per iteration.
    config = TrainerConfig(root_dir=root, algorithm_ctor=_actor_critic,
                           num_iterations=num_iterations, unroll_length=4,
                           random_seed=0, summary_interval=1,
                           checkpoint_interval=100, metrics=metrics,
                           progress_metrics=[m.__name__ for m in metrics],
                           progress_interval_secs=0)
    return OnPolicyTrainer(config, env=lambda seed: TFPyEnvironment(
        ValueUnittestEnv(batch_size=2, episode_length=4)))


def test_a_user_metric_is_updated_checkpointed_and_written(tmp_path,
                                                           capsys):
    root = str(tmp_path / 'run')
    trainer = _trainer(root, 3, [RewardSum, PositiveRewards])
    try:
        result = trainer.train()
    finally:
        trainer.close()
    # Reward 1 on each of the 2 x 3 x 3 transitions.
    assert result['Metrics/RewardSum'] == 18.0
    assert result['Metrics/RewardSum'] == result['Metrics/EnvironmentSteps']
    assert result['Metrics/PositiveRewards'] == 3.0
    lines = [l for l in capsys.readouterr().out.splitlines()
             if l.startswith('iter ')]
    assert lines[-1].endswith('| RewardSum 18 | PositiveRewards 3'), lines
    events = _events(root, 'train')
    assert events['Metrics/RewardSum'] == [(1, 6.0), (2, 12.0), (3, 18.0)]
    assert events['Metrics_vs_EnvironmentSteps/RewardSum'][-1] == (18, 18.0)
    # Checkpointed: a resumed run continues the sum where it stopped.
    trainer = _trainer(root, 5, [RewardSum, PositiveRewards])
    try:
        assert trainer.train()['Metrics/RewardSum'] == 30.0
    finally:
        trainer.close()
    # A run resumed with a metric added is refused like a model change.
    trainer = _trainer(str(tmp_path / 'other'), 1, [])
    try:
        trainer.train()
    finally:
        trainer.close()
    trainer = _trainer(str(tmp_path / 'other'), 2, [RewardSum])
    try:
        with pytest.raises(CheckpointError, match='does not match'):
            trainer.train()
    finally:
        trainer.close()


def test_metrics_from_gin(tmp_path):
    gin.parse_config(['TrainerConfig.metrics = [@RewardSum]',
                      "TrainerConfig.progress_metrics = ['RewardSum']"])
    config = TrainerConfig(root_dir=str(tmp_path),
                           algorithm_ctor=_actor_critic, num_iterations=1,
                           unroll_length=4)
    assert config.metrics == [RewardSum]
    trainer = OnPolicyTrainer(config, env=lambda seed: TFPyEnvironment(
        ValueUnittestEnv(batch_size=2, episode_length=4)))
    try:
        assert isinstance(trainer.metrics.extra[0], RewardSum)
        assert trainer.train()['Metrics/RewardSum'] == 6.0
    finally:
        trainer.close()


def test_an_unknown_progress_metric_is_refused(tmp_path):
    config = TrainerConfig(root_dir=str(tmp_path),
                           algorithm_ctor=_actor_critic, num_iterations=1,
                           progress_metrics=['Entropy'])
    with pytest.raises(ValueError, match="progress_metrics: no metric named "
                       "'Entropy'"):
        OnPolicyTrainer(config, env=lambda seed: TFPyEnvironment(
            ValueUnittestEnv(batch_size=2, episode_length=4)))
