"""OfflineToOnlineTrainer: an online run starts from an offline run's
weights (restored equal), optionally with the dataset in its replay
buffer, trains on, and resumes from its own checkpoint afterwards."""

import functools
import os
from typing import Any, List

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.algorithms import IqlAlgorithm
from alf_rl.environments.utils import create_environment
from alf_rl.networks import ActorDistributionNetwork, QNetwork, ValueNetwork
from alf_rl.offline import Dataset
from alf_rl.trainers import OfflineToOnlineTrainer, OfflineTrainer
from alf_rl.trainers.callbacks import Callback
from offline_helpers import expert_dataset, short_config

SMALL = functools.partial(ActorDistributionNetwork, fc_layer_params=(8,))


def _iql(observation_spec: Any, action_spec: Any) -> IqlAlgorithm:
    return IqlAlgorithm(
        observation_spec,
        action_spec,
        actor_network_ctor=SMALL,
        critic_network_ctor=functools.partial(QNetwork, fc_layer_params=(8,)),
        value_network_ctor=functools.partial(
            ValueNetwork, fc_layer_params=(8,)
        ),
        optimizer=tf.keras.optimizers.Adam(1e-2),
    )


def _env(seed: int) -> Any:
    return create_environment(
        'CartPole-v1', 2, seed=seed, max_episode_steps=20
    )


def _values(algorithm: Any) -> List[np.ndarray]:
    return [v.numpy() for v in algorithm.trainable_variables]


class _Snapshot(Callback):
    """Keeps the weights and replay size at the start of training."""

    def __init__(self, trainer: OfflineToOnlineTrainer):
        self.trainer = trainer
        self.weights: List[np.ndarray] = []
        self.replay_size = -1

    def on_training_start(self, iteration: int) -> None:
        self.weights = _values(self.trainer.algorithm)
        self.replay_size = int(self.trainer._replayer.buffer.total_size)
        self.optimizer_steps = [
            int(o.iterations.numpy())
            for o, _ in self.trainer.algorithm.get_optimizer_and_variable_sets()
        ]


@pytest.fixture(scope='module')
def offline_run(tmp_path_factory):
    base = tmp_path_factory.mktemp('o2o')
    data = str(base / 'data')
    expert_dataset(data, 4, max_steps=30)
    root = str(base / 'offline')
    trainer = OfflineTrainer(short_config(root, 2, _iql), dataset=data)
    trainer.train()
    weights = _values(trainer.algorithm)
    trainer.close()
    return root, data, weights


def _online(root: str, iterations: int, offline_run: Any, **kwargs: Any):
    init_from, data, _ = offline_run
    config = short_config(
        root,
        iterations,
        _iql,
        unroll_length=4,
        replay_buffer_capacity=1000,
        initial_collect_steps=64,
    )
    return OfflineToOnlineTrainer(
        config, env=_env, init_from=init_from, dataset=data, **kwargs
    )


def test_online_run_starts_from_the_offline_weights_and_dataset(
    offline_run, tmp_path, capsys
):
    _, data, offline_weights = offline_run
    steps = Dataset(data).num_steps
    root = str(tmp_path / 'online')
    trainer = _online(root, 2, offline_run)
    snapshot = _Snapshot(trainer)
    result = trainer.train([snapshot])
    trainer.close()
    # Restored equal, the replay buffer seeded with the whole dataset...
    for a, b in zip(snapshot.weights, offline_weights):
        np.testing.assert_array_equal(a, b)
    assert snapshot.replay_size == steps
    # Not the offline optimizer's state: its 4 updates are not counted.
    assert snapshot.optimizer_steps == [0]
    out = capsys.readouterr().out
    assert 'initialized the algorithm from %s' % offline_run[0] in out
    assert 'seeded the replay buffer with %d steps (4 episodes)' % steps in out
    # ... then trained on online: 2 iterations of 4 steps in 2 envs (the
    # initial collection is skipped: the buffer is not empty).
    assert result['iterations'] == 2
    assert result['Metrics/EnvironmentSteps'] == 16
    assert int(trainer._replayer.buffer.total_size) == steps + 16
    assert any(
        not np.array_equal(a, b)
        for a, b in zip(_values(trainer.algorithm), offline_weights)
    )
    # Rerun: resumes its own checkpoint, no second initialization.
    again = _online(root, 4, offline_run)
    assert again.train()['iterations'] == 4
    out = capsys.readouterr().out
    assert 'resumed from' in out and 'initialized the algorithm' not in out
    assert int(again._replayer.buffer.total_size) == steps + 32
    again.close()


def test_refusals_are_one_line(offline_run, tmp_path):
    root = str(tmp_path / 'r')
    config = short_config(root, 1, _iql)
    with pytest.raises(ValueError, match='init_from is required'):
        OfflineToOnlineTrainer(config, env=_env)
    with pytest.raises(ValueError, match='no checkpoint in .*nowhere'):
        OfflineToOnlineTrainer(
            config, env=_env, init_from=str(tmp_path / 'nowhere')
        )
    with pytest.raises(
        ValueError, match=r'observation: expected \[4\] float32, got \[3\]'
    ):
        OfflineToOnlineTrainer(
            short_config(
                root,
                1,
                functools.partial(
                    IqlAlgorithm, optimizer=tf.keras.optimizers.Adam()
                ),
            ),
            env=lambda s: create_environment('Pendulum-v1', 1, seed=s),
            init_from=offline_run[0],
            dataset=offline_run[1],
        )
    assert not os.path.exists(root)


def test_gin_examples_offline_then_online(tmp_path):
    """cql_dqn_cart_pole.gin offline, then cql_dqn_cart_pole_online.gin
    from it with the bindings ``alf-train --init_from`` adds."""
    from alf_rl.bin.train import train

    data = str(tmp_path / 'data')
    expert_dataset(data, 3, max_steps=30)
    examples = os.path.join(
        os.path.dirname(__file__), '..', '..', 'examples', 'offline'
    )
    offline = str(tmp_path / 'offline')
    short = ['create_environment.max_episode_steps=20']
    result = train(
        offline,
        [os.path.join(examples, 'cql_dqn_cart_pole.gin')],
        short
        + [
            "OfflineTrainer.dataset='%s'" % data,
            'TrainerConfig.num_iterations=2',
            'TrainerConfig.num_eval_episodes=1',
        ],
    )
    assert result['iterations'] == 2
    result = train(
        str(tmp_path / 'online'),
        [os.path.join(examples, 'cql_dqn_cart_pole_online.gin')],
        short
        + [
            'TrainerConfig.trainer=@OfflineToOnlineTrainer',
            "OfflineToOnlineTrainer.init_from='%s'" % offline,
            "OfflineToOnlineTrainer.dataset='%s'" % data,
            'TrainerConfig.num_env_steps=0',
            'TrainerConfig.num_iterations=2',
            'TrainerConfig.unroll_length=8',
            'TrainerConfig.num_updates_per_train_step=2',
            'TrainerConfig.eval_interval=2',
            'TrainerConfig.num_eval_episodes=1',
        ],
    )
    assert result['iterations'] == 2
    assert result['Metrics/EnvironmentSteps'] == 16
    assert 1 <= result['eval/Metrics/AverageReturn'] <= 20
