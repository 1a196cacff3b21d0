"""``TrainerConfig.num_seeds``: a gin-configured run as one population."""

import contextlib
import os
from typing import Iterator

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.bin.train import train
from alf_rl.runs.gin_files import parse_gin
from alf_rl.trainers.config import TrainerConfig
from alf_rl.trainers.gin_scope import own_gin_config
from alf_rl.trainers.population_run import population_settings
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


@contextlib.contextmanager
def _parsed(files: list, bindings: list, root: str) -> Iterator[None]:
    """The gin configuration of ``files`` and ``bindings`` while inside
    (the caller's is back after)."""
    with own_gin_config():
        parse_gin(files, bindings, root_dir=root)
        yield


def _config() -> TrainerConfig:
    """The ``TrainerConfig`` the current gin configuration builds."""
    return TrainerConfig()


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
    # The first iteration's seconds (tracing included) are part of the run's.
    assert 0 < first['first_iteration_secs'] < first['train_secs']
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
        ('TrainerConfig.evaluate=True', 'TrainerConfig.evaluate=True'),
        (
            'TrainerConfig.algorithm_ctor=@ActorCriticAlgorithm',
            'algorithm_ctor=@ActorCriticAlgorithm (expected @PPOAlgorithm)',
        ),
        # Bindings of parameters the population does not implement.
        ('PPOLoss.advantage_clip=1.0', 'PPOLoss.advantage_clip=1.0'),
        ('LegacyAdam.beta_1=0.8', 'LegacyAdam.beta_1=0.8'),
        ('LegacyAdam.clipnorm=1.0', 'LegacyAdam.clipnorm=1.0'),
        ('PPOAlgorithm.target_kl=0.01', 'PPOAlgorithm.target_kl=0.01'),
        ('PPOAlgorithm.reward_clip_value=1.0', 'reward_clip_value=1.0'),
        (
            'ActorDistributionNetwork.conv_layer_params=((4, 3, 1),)',
            'ActorDistributionNetwork.conv_layer_params=((4, 3, 1),)',
        ),
        ('create_environment.seed=5', 'create_environment.seed=5'),
        ('TrainerConfig.initial_collect_steps=8', 'initial_collect_steps=8'),
        ('TrainerConfig.clear_replay_buffer=False', 'clear_replay_buffer'),
        ('TrainerConfig.use_tf_functions=False', 'use_tf_functions=False'),
        ('PPOAlgorithm.clip_by_global_norm=False', 'clip_by_global_norm'),
        ('ValueNetwork.fc_layer_params=(32,)', 'ValueNetwork [(32,)'),
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


def test_num_seeds_reads_every_option_of_the_minatar_example(tmp_path):
    # ppo_minatar_breakout.gin as it is: entropy bonus, value clipping,
    # sticky actions, the time limit; nothing refused or dropped.
    with _parsed(
        ['examples/ppo_minatar_breakout.gin'],
        [
            'TrainerConfig.num_seeds=3',
            'suite_minatar.load.difficulty_ramping=False',
        ],
        str(tmp_path),
    ):
        trainer, ppo = population_settings(_config())
    assert ppo == dict(
        gamma=0.999,
        td_lambda=0.95,
        importance_ratio_clipping=0.2,
        normalize_advantages=True,
        td_loss_weight=0.5,
        entropy_regularization=0.01,
        value_clipping=0.2,
        gradient_clipping=0.5,
        learning_rate=5e-4,
        adam_epsilon=1e-5,
        hidden_layers=(256, 256),
        activation='relu',
    )
    assert trainer['seeds'] == [0, 1, 2]
    assert trainer['env_name'] == 'MinAtar/Breakout-v1'
    assert (trainer['num_envs'], trainer['unroll_length']) == (64, 128)
    assert (trainer['mini_batch_size'], trainer['num_epochs']) == (1024, 4)
    assert trainer['max_episode_steps'] == 1000
    assert trainer['env_options'] == dict(
        sticky_action_prob=0.1, difficulty_ramping=False
    )


def test_num_seeds_trains_a_minatar_game(tmp_path):
    params = [
        'TrainerConfig.num_seeds=2',
        'TrainerConfig.num_iterations=1',
        'TrainerConfig.num_env_steps=0',
        'create_environment.num_parallel_environments=4',
        'TrainerConfig.unroll_length=8',
        'TrainerConfig.mini_batch_size=16',
        'TrainerConfig.num_updates_per_train_step=1',
        'TrainerConfig.summary_interval=1',
    ]
    result = train(
        str(tmp_path), ['examples/ppo_minatar_breakout.gin'], params
    )
    assert result['iterations'] == 1 and result['num_seeds'] == 2
    assert result['Metrics/EnvironmentSteps'] == 4 * 8
    assert {'seed_0/loss/neg_entropy', 'seed_1/loss/td_loss'} <= _tags(
        str(tmp_path)
    )


def test_progress_line_has_the_rate_and_eta(monkeypatch, capsys):
    """After the first iteration: steps and returns; later lines add the
    env steps per second over all seeds and the ETA, both counted from the
    end of the first iteration (its tracing left out)."""
    from alf_rl.trainers import population_run

    class _Trainer:
        iteration = tf.Variable(1, dtype=tf.int64)
        average_return = tf.Variable([10.0, 30.0])

        @property
        def env_steps_per_seed(self):
            return int(self.iteration.numpy()) * 512

    clock = [100.0]
    monkeypatch.setattr(population_run.time, 'time', lambda: clock[0])
    trainer = _Trainer()
    progress = population_run._Progress(trainer, num_iterations=21)
    assert progress.report() is False
    first = capsys.readouterr().out.strip()
    assert first == (
        'iter 1 | env steps 512 per seed | AverageReturn 20.00 '
        '(10.00-30.00 over 2 seeds)'
    )
    # 10 iterations in 5 s: 2 iterations/s, 2 x 512 x 2 seeds steps/s, and
    # the 10 iterations left take 5 s.
    clock[0] += 5.0
    trainer.iteration.assign(11)
    progress.report()
    assert capsys.readouterr().out.strip() == (
        'iter 11 | env steps 5632 per seed | 2048 steps/s | AverageReturn '
        '20.00 (10.00-30.00 over 2 seeds) | ETA 0:00:05'
    )
    clock[0] += 1.0  # not due yet: nothing printed
    progress.report()
    assert capsys.readouterr().out == ''
