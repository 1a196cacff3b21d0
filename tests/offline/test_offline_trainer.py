"""OfflineTrainer with behaviour cloning on CartPole datasets of a scripted
expert: exact resume, evaluation with the normalized score, refusals, and
one learning test."""

import functools
import os
from typing import Any, List

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.algorithms import BcAlgorithm
from alf_rl.environments.utils import create_environment
from alf_rl.networks import ActorDistributionNetwork
from alf_rl.offline import DatasetWriter
from alf_rl.offline.collection import (
    Exploration,
    collect_episodes,
    episode_return,
)
from alf_rl.trainers import OfflineTrainer, TrainerConfig


def expert_policy(time_step: Any, state: Any) -> Any:
    """CartPole's scripted expert: push towards 3 theta + theta_dot (500
    in every episode we measured)."""
    obs = time_step.observation
    action = tf.cast(3.0 * obs[:, 2] + obs[:, 3] > 0, tf.int64)
    return action, state


def _dataset(path: str, episodes: int, max_steps: int = 0) -> List[float]:
    env = create_environment(
        'CartPole-v1', 1, seed=3, max_episode_steps=max_steps or None
    )
    recorded = collect_episodes(
        env,
        expert_policy,
        lambda b: (),
        episodes,
        Exploration('epsilon', 0.1),
        seed=3,
    )
    env.close()
    writer = DatasetWriter(
        path,
        env.observation_spec(),
        env.action_spec(),
        {'random_return': 22.0, 'expert_return': 500.0},
    )
    for e in recorded:
        writer.add_episode(e)
    writer.flush()
    return [episode_return(e) for e in recorded]


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
    settings = dict(
        root_dir=root,
        algorithm_ctor=_bc,
        num_iterations=iterations,
        random_seed=1,
        mini_batch_size=32,
        mini_batch_length=2,
        num_updates_per_train_step=2,
        checkpoint_interval=2,
        summary_interval=1,
        iterations_per_call=1,
    )
    settings.update(kwargs)
    return TrainerConfig(**settings)


def _eval_env(seed: int) -> Any:
    return create_environment(
        'CartPole-v1', 2, seed=seed, max_episode_steps=30
    )


@pytest.fixture(scope='module')
def small(tmp_path_factory):
    path = str(tmp_path_factory.mktemp('offline') / 'data')
    _dataset(path, 6, max_steps=40)
    return path


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
    path = str(tmp_path / 'expert')
    returns = _dataset(path, 5)
    assert np.mean(returns) > 300  # epsilon-perturbed, still good
    trainer = OfflineTrainer(
        _config(
            str(tmp_path / 'bc'),
            150,
            evaluate=True,
            eval_interval=150,
            num_eval_episodes=4,
            mini_batch_size=256,
            num_updates_per_train_step=4,
            summary_interval=100,
            checkpoint_interval=150,
            iterations_per_call='auto',
        ),
        dataset=path,
        eval_env=lambda s: create_environment('CartPole-v1', 4, seed=s),
    )
    result = trainer.train()
    trainer.close()
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
    assert 1 <= result['eval/Metrics/AverageReturn'] <= 20
    assert result["eval/Metrics/NormalizedScore"] == pytest.approx(
        100 * (result["eval/Metrics/AverageReturn"] - 22.0) / 478.0
    )
