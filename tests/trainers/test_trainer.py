"""Trainer end to end on CartPole: outputs, resume, checkpoints, errors."""

import glob
import os

import gin
import numpy as np
import pytest
import tensorflow as tf

from alf_rl.bin.train import train
from alf_rl.trainers.trainer import TrainingError
from alf_rl.utils.checkpoint import CheckpointError

EXAMPLE = os.path.join(os.path.dirname(__file__), '..', '..', 'examples',
                       'ac_cart_pole.gin')
SMALL = [
    'create_environment.num_parallel_environments=2',
    'TrainerConfig.num_env_steps=0',
    'TrainerConfig.num_iterations=6',
    'TrainerConfig.unroll_length=4',
    'TrainerConfig.summary_interval=2',
    'TrainerConfig.checkpoint_interval=3',
    'TrainerConfig.eval_interval=3',
    'TrainerConfig.num_eval_episodes=2',
    "create_environment.max_episode_steps=20",
    'ActorDistributionNetwork.fc_layer_params=(8,)',
    'ValueNetwork.fc_layer_params=(8,)',
]


def _events(root, sub):
    """{tag: [(step, value)]} from the event files under root/sub."""
    result = {}
    for path in glob.glob(os.path.join(root, sub, 'events.*')):
        for event in tf.compat.v1.train.summary_iterator(path):
            for v in event.summary.value:
                value = float(tf.make_ndarray(v.tensor)) if v.HasField(
                    'tensor') else v.simple_value
                result.setdefault(v.tag, []).append((event.step, value))
    return result


def test_train_writes_outputs_and_resumes(tmp_path):
    root = str(tmp_path / 'run')
    result = train(root, [EXAMPLE], SMALL)
    assert result['iterations'] == 6
    assert os.path.exists(os.path.join(root, 'config.gin'))
    config = open(os.path.join(root, 'config.gin')).read()
    assert 'TrainerConfig.num_iterations = 6' in config
    assert open(os.path.join(root, 'ckpt', 'latest')).read() == 'ckpt-6'
    train_events = _events(root, 'train')
    for tag in ('Metrics/AverageReturn', 'Metrics/EnvironmentSteps',
                'Metrics/NumberOfEpisodes', 'Metrics/AverageEpisodeLength',
                'loss/total', 'loss/pg_loss', 'time/env_steps_per_sec'):
        assert tag in train_events, tag
    assert [s for s, _ in train_events['Metrics/EnvironmentSteps']] == [2, 4, 6]
    assert 'Metrics/AverageReturn' in _events(root, 'eval')
    steps_before = result['Metrics/EnvironmentSteps']
    assert steps_before == 6 * 4 * 2 - result['Metrics/NumberOfEpisodes']

    gin.clear_config()
    result2 = train(root, [EXAMPLE],
                    SMALL + ['TrainerConfig.num_iterations=9'])
    assert result2['iterations'] == 9
    assert result2['Metrics/EnvironmentSteps'] > steps_before
    assert result2['Metrics/NumberOfEpisodes'] >= result[
        'Metrics/NumberOfEpisodes']
    assert open(os.path.join(root, 'ckpt', 'latest')).read() == 'ckpt-9'


def test_mismatched_checkpoint_is_a_clear_error(tmp_path):
    root = str(tmp_path / 'run')
    train(root, [EXAMPLE], SMALL)
    gin.clear_config()
    with pytest.raises(CheckpointError, match='does not match the model'):
        train(root, [EXAMPLE], SMALL + [
            'TrainerConfig.num_iterations=8',
            'ActorDistributionNetwork.fc_layer_params=(16,)'
        ])
    # Nothing already written was touched.
    assert open(os.path.join(root, 'ckpt', 'latest')).read() == 'ckpt-6'


def test_corrupt_checkpoint_is_a_clear_error(tmp_path):
    root = str(tmp_path / 'run')
    train(root, [EXAMPLE], SMALL)
    data = glob.glob(os.path.join(root, 'ckpt', 'ckpt-6', 'ckpt.data*'))[0]
    with open(data, 'r+b') as f:
        f.truncate(10)
    gin.clear_config()
    with pytest.raises(CheckpointError, match='corrupt'):
        train(root, [EXAMPLE], SMALL + ['TrainerConfig.num_iterations=8'])


def test_unknown_env_id(tmp_path):
    with pytest.raises(ValueError, match='CartPol-v1'):
        train(str(tmp_path), [EXAMPLE],
              SMALL + ["create_environment.env_name='CartPol-v1'"])


def test_bad_gin_binding(tmp_path):
    with pytest.raises(ValueError, match='no_such_param'):
        train(str(tmp_path), [EXAMPLE],
              SMALL + ['ActorCriticLoss.no_such_param=3'])


def test_nan_loss_stops_with_iteration_and_loss_name(tmp_path):
    root = str(tmp_path / 'run')
    with pytest.raises(TrainingError, match='iteration 1: non-finite loss'):
        train(root, [EXAMPLE],
              SMALL + ['ActorCriticLoss.td_loss_weight=1e400'])
    assert not glob.glob(os.path.join(root, 'ckpt', 'ckpt-*'))


def test_eager_mode_trains(tmp_path):
    result = train(str(tmp_path), [EXAMPLE], SMALL + [
        'TrainerConfig.use_tf_functions=False',
        'TrainerConfig.num_iterations=2', 'TrainerConfig.evaluate=False'
    ])
    assert result['iterations'] == 2


def test_legacy_adam_trains_checkpoints_and_resumes(tmp_path):
    """``@LegacyAdam()`` (tf_keras' fused-kernel Adam): its step count and
    moment slots are checkpointed and restored."""
    root = str(tmp_path / 'run')
    legacy = ['ActorCriticAlgorithm.optimizer=@LegacyAdam()',
              'LegacyAdam.learning_rate=1e-3']
    train(root, [EXAMPLE], SMALL + legacy)

    def optimizer_values(step):
        path = os.path.join(root, 'ckpt', 'ckpt-%d' % step, 'ckpt')
        names = [n for n, _ in tf.train.list_variables(path)]
        iters = [n for n in names if 'optimizer' in n and n.endswith(
            'iter/.ATTRIBUTES/VARIABLE_VALUE')]
        slots = [n for n in names if '.OPTIMIZER_SLOT' in n]
        assert len(iters) == 1 and slots, names
        return (int(tf.train.load_variable(path, iters[0])),
                {n: tf.train.load_variable(path, n) for n in slots})

    iterations, slots = optimizer_values(6)
    assert iterations == 6  # one update per on-policy iteration
    assert all(np.any(v != 0) for v in slots.values())
    gin.clear_config()
    train(root, [EXAMPLE], SMALL + legacy + ['TrainerConfig.num_iterations=9'])
    iterations, slots2 = optimizer_values(9)
    assert iterations == 9  # resumed from 6, not restarted
    assert slots2.keys() == slots.keys()
