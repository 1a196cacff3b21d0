"""CqlDqnAlgorithm's learning test on a CartPole expert dataset (its
penalty and loss: test_cql_lagrangian.py)."""

import functools

import tensorflow as tf

from alf_rl.algorithms import CqlDqnAlgorithm
from alf_rl.networks import QNetwork
from offline_helpers import train_on_expert


def test_cql_dqn_learns_the_cartpole_expert(tmp_path):
    """Learning test: CQL-DQN on 5 episodes of an epsilon=0.1 scripted
    expert reaches a greedy return of 475 (CartPole's solved threshold)."""
    ctor = functools.partial(
        CqlDqnAlgorithm,
        q_network_ctor=functools.partial(QNetwork, fc_layer_params=(256, 256)),
        optimizer=tf.keras.optimizers.Adam(5e-4),
        target_update_period=128,
    )
    result = train_on_expert(
        tmp_path, ctor, 100, mini_batch_size=64, num_updates_per_train_step=8
    )
    assert result['eval/Metrics/AverageReturn'] >= 475, result
