"""OfflineTrainer with behaviour cloning on CartPole datasets of a scripted
expert: exact resume, evaluation with the normalized score, refusals, and
one learning test."""

import functools
import importlib.util
import os
from typing import Any, List

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.algorithms import BcAlgorithm
from alf_rl.environments.utils import create_environment
from alf_rl.networks import ActorDistributionNetwork
from alf_rl.trainers import OfflineTrainer, TrainerConfig
from offline_helpers import expert_dataset, short_config, train_on_expert


def _bc(observation_spec: Any, action_spec: Any) -> BcAlgorithm:
    return BcAlgorithm(
        observation_spec,
        action_spec,
        actor_network_ctor=functools.partial(
            ActorDistributionNetwork, fc_layer_params=(64, 64)
        ),
        optimizer=tf.keras.optimizers.Adam(1e-3),
    )


def _config(root: str, iterations: int, **kwargs: Any) -> TrainerConfig:
    return short_config(root, iterations, _bc, **kwargs)


def _eval_env(seed: int) -> Any:
    return create_environment(
        'CartPole-v1', 2, seed=seed, max_episode_steps=30
    )


@pytest.fixture(scope='module')
def small(tmp_path_factory):
    path = str(tmp_path_factory.mktemp('offline') / 'data')
    expert_dataset(path, 6, max_steps=40)
    return path


def _benchmark_table() -> Any:
    """benchmarks/benchmark_table.py as a module."""
    path = os.path.join(
        os.path.dirname(__file__),
        '..',
        '..',
        'benchmarks',
        'benchmark_table.py',
    )
    spec = importlib.util.spec_from_file_location('benchmark_table', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _weights(trainer: OfflineTrainer) -> List[np.ndarray]:
    return [v.numpy() for v in trainer.algorithm.trainable_variables]


def test_resume_continues_exactly_and_evaluates_normalized_score(
    small, tmp_path, capsys
):
    eval_kwargs = dict(evaluate=True, eval_interval=2, num_eval_episodes=2)
    whole = OfflineTrainer(
        _config(str(tmp_path / 'a'), 4, **eval_kwargs),
        dataset=small,
        eval_env=_eval_env,
    )
    result = whole.train()
    whole.close()
    assert result['iterations'] == 4
    score = result['eval/Metrics/NormalizedScore']
    ret = result['eval/Metrics/AverageReturn']
    assert score == pytest.approx(100 * (ret - 22.0) / (500.0 - 22.0))
    assert os.listdir(str(tmp_path / 'a' / 'train'))
    # The training time is summarized as online (no env-step rate).
    secs, wall_from = _benchmark_table().training_wall_secs(
        str(tmp_path / 'a'), 'AverageReturn', 'eval'
    )
    assert wall_from == 'time/elapsed_secs' and secs > 0
    assert os.listdir(str(tmp_path / 'a' / 'eval'))
    assert 'score %.1f' % score in capsys.readouterr().out

    root = str(tmp_path / 'b')
    first = OfflineTrainer(
        _config(root, 2, **eval_kwargs), dataset=small, eval_env=_eval_env
    )
    first.train()
    first.close()
    second = OfflineTrainer(
        _config(root, 4, **eval_kwargs), dataset=small, eval_env=_eval_env
    )
    assert second.train()['iterations'] == 4
    second.close()
    for a, b in zip(_weights(whole), _weights(second)):
        np.testing.assert_array_equal(a, b)
    # Without the replay buffer's chunk files (restore_replay=False): the
    # buffer holds the dataset again, as it did, so the resume is as exact.
    for iterations, restore_replay in ((2, True), (4, False)):
        part = OfflineTrainer(
            _config(
                str(tmp_path / 'c'), iterations, restore_replay=restore_replay
            ),
            dataset=small,
        )
        part.train()
        part.close()
    assert 'without its replay buffer' in capsys.readouterr().out
    for a, b in zip(_weights(whole), _weights(part)):
        np.testing.assert_array_equal(a, b)
    # Once more with the same budget: nothing trains, and a line says so.
    capsys.readouterr()
    third = OfflineTrainer(
        _config(root, 4, **eval_kwargs), dataset=small, eval_env=_eval_env
    )
    assert third.train()['iterations'] == 4
    third.close()
    assert (
        'alf_rl: nothing to train: the run is already at its num_iterations '
        '4 (at iteration 4); raise TrainerConfig.num_iterations to train on'
        in capsys.readouterr().out
    )


def test_offline_settings_are_refused_in_one_line(small, tmp_path):
    root = str(tmp_path / 'r')
    with pytest.raises(ValueError, match='OfflineTrainer.dataset is required'):
        OfflineTrainer(_config(root, 2))
    with pytest.raises(
        ValueError,
        match='num_env_steps=100: an offline run takes no environment steps',
    ):
        OfflineTrainer(_config(root, 2, num_env_steps=100), dataset=small)
    with pytest.raises(
        ValueError,
        match='stop_at_env_steps=100: an offline run takes no environment',
    ):
        OfflineTrainer(_config(root, 2, stop_at_env_steps=100), dataset=small)
    with pytest.raises(
        ValueError,
        match=r"observation: expected \[4\] "
        r"float32, got \[3\] float32",
    ):
        OfflineTrainer(
            _config(root, 2, evaluate=True, num_eval_episodes=1),
            dataset=small,
            eval_env=lambda s: create_environment('Pendulum-v1', 1, seed=s),
        )
    assert not os.path.exists(root)


def test_bc_clones_the_cartpole_expert(tmp_path):
    """Learning test: BC on 5 episodes of an epsilon=0.1 scripted expert
    reaches a greedy return of 475 (CartPole's solved threshold)."""
    result = train_on_expert(
        tmp_path, _bc, 150, mini_batch_size=256, num_updates_per_train_step=4
    )
    assert result['eval/Metrics/AverageReturn'] >= 475, result


@pytest.mark.parametrize(
    'name', ['bc_cart_pole.gin', 'cql_cart_pole.gin', 'iql_cart_pole.gin']
)
def test_offline_example_trains_with_alf_train(small, tmp_path, name):
    import gin

    from alf_rl.bin.train import train

    example = os.path.join(
        os.path.dirname(__file__),
        '..',
        '..',
        'examples',
        'offline',
        name,
    )
    try:
        result = train(
            str(tmp_path / 'run'),
            [example],
            [
                "OfflineTrainer.dataset='%s'" % small,
                'TrainerConfig.num_iterations=2',
                'TrainerConfig.eval_interval=2',
                'TrainerConfig.num_eval_episodes=1',
                'create_environment.max_episode_steps=20',
            ],
        )
    finally:
        gin.clear_config()
    assert result['iterations'] == 2
    # config.gin is the run's operative configuration (with its seed).
    with open(tmp_path / 'run' / 'config.gin') as f:
        assert 'TrainerConfig.random_seed = 1' in f.read()
    assert 1 <= result['eval/Metrics/AverageReturn'] <= 20
    assert result["eval/Metrics/NormalizedScore"] == pytest.approx(
        100 * (result["eval/Metrics/AverageReturn"] - 22.0) / 478.0
    )
