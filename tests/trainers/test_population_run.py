"""``TrainerConfig.num_seeds``: a gin-configured run as one population."""

import os

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.bin.train import train
from alf_rl.trainers.population_trainer import PopulationTrainer

_GIN = 'examples/ppo_tf_cart_pole.gin'
_ONE = 'TrainerConfig.num_iterations=1'
# Tiny and without XLA (its compile takes tens of seconds on 2 cores).
_PARAMS = [
    'TrainerConfig.num_seeds=2',
    'TrainerConfig.random_seed=3',
    'TrainerConfig.jit_compile=False',
    'create_environment.num_parallel_environments=4',
    'TrainerConfig.unroll_length=8',
    'TrainerConfig.mini_batch_size=16',
    'TrainerConfig.num_updates_per_train_step=2',
    'TrainerConfig.summary_interval=1',
    'TrainerConfig.num_env_steps=0',
]


def _tags(root: str) -> set:
    tags = set()
    for name in os.listdir(os.path.join(root, 'train')):
        path = os.path.join(root, 'train', name)
        for event in tf.compat.v1.train.summary_iterator(path):
            tags.update(v.tag for v in event.summary.value)
    return tags


def test_num_seeds_trains_the_population_and_resumes_exactly(tmp_path):
    root = str(tmp_path / 'run')
    first = train(root, [_GIN], _PARAMS + ['TrainerConfig.num_iterations=2'])
    assert first['iterations'] == 2 and first['num_seeds'] == 2
    assert first['Metrics/EnvironmentSteps'] == 2 * 4 * 8
    resumed = train(root, [_GIN], _PARAMS + ['TrainerConfig.num_iterations=3'])
    assert resumed['iterations'] == 3
    # The same three iterations straight, with the gin file's PPO settings
    # (ppo_cart_pole.gin's are PopulationPPO's defaults).
    straight = PopulationTrainer(
        [3, 4],
        num_envs=4,
        unroll_length=8,
        mini_batch_size=16,
        num_epochs=2,
    )
    for _ in range(3):
        straight.run_iteration()
    np.testing.assert_array_equal(
        straight.average_return.numpy(),
        [resumed['seed_%d/Metrics/AverageReturn' % s] for s in (3, 4)],
    )
    ckpt = tf.train.latest_checkpoint(os.path.join(root, 'ckpt'))
    kernel = tf.train.load_variable(
        ckpt, 'trainer/algorithm/actor/kernels/0/.ATTRIBUTES/VARIABLE_VALUE'
    )
    np.testing.assert_array_equal(
        kernel, straight.algorithm.actor.kernels[0].numpy()
    )
    assert {
        'seed_3/Metrics/AverageReturn',
        'seed_4/loss/pg_loss',
    } <= _tags(root)
    assert os.path.exists(os.path.join(root, 'config.gin'))


@pytest.mark.parametrize(
    'param, named',
    [
        ("create_environment.backend='gym'", "backend='gym'"),
        ('PPOLoss.entropy_regularization=0.01', 'entropy_regularization'),
        ('TrainerConfig.evaluate=True', 'evaluate=True'),
    ],
)
def test_num_seeds_refuses_what_it_cannot_train(tmp_path, param, named):
    with pytest.raises(ValueError, match='num_seeds > 1 trains PPO') as e:
        train(str(tmp_path), [_GIN], _PARAMS + [param, _ONE])
    assert named in str(e.value) and '\n' not in str(e.value)


def test_num_seeds_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match='num_seeds must be >= 1, got 0'):
        train(str(tmp_path), [_GIN], ['TrainerConfig.num_seeds=0'])


def test_num_seeds_refuses_the_default_gym_backend(tmp_path):
    # ppo_cart_pole.gin binds no backend: create_environment's default.
    params = _PARAMS + [_ONE, 'TrainerConfig.evaluate=False']
    with pytest.raises(ValueError, match="backend=.gym. .expected 'tf'"):
        train(str(tmp_path), ['examples/ppo_cart_pole.gin'], params)
