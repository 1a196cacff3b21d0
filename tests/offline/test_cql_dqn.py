"""CqlDqnAlgorithm: the penalty of its steps, its loss (DQN's plus
cql_alpha times the penalty), refusals, and one learning test on a CartPole
expert dataset."""

import functools
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.algorithms import CqlDqnAlgorithm, DqnAlgorithm
from alf_rl.algorithms.value_distributions import QuantileValues
from alf_rl.data_structures import Experience, StepType, TrainingInfo
from alf_rl.environments.utils import create_environment
from alf_rl.networks import QNetwork
from alf_rl.specs import BoundedTensorSpec
from alf_rl.trainers import OfflineTrainer
from offline_helpers import expert_dataset, short_config

OBS = tf.TensorSpec([3], tf.float32)
ACT = BoundedTensorSpec([], tf.int64, 0, 2)


def _cql_dqn(observation_spec: Any, action_spec: Any, **kwargs: Any):
    return CqlDqnAlgorithm(
        observation_spec,
        action_spec,
        q_network_ctor=functools.partial(
            QNetwork, fc_layer_params=kwargs.pop('layers', (8,))
        ),
        optimizer=tf.keras.optimizers.Adam(kwargs.pop('lr', 1e-3)),
        **kwargs,
    )


def _experience(batch: int) -> Experience:
    rng = np.random.default_rng(0)
    return Experience(
        step_type=tf.fill([batch], StepType.MID),
        reward=tf.ones([batch]),
        discount=tf.ones([batch]),
        observation=tf.constant(rng.normal(size=[batch, 3]), tf.float32),
        prev_action=tf.zeros([batch], tf.int64),
        action=tf.constant([0, 2, 1, 1][:batch], tf.int64),
    )


def test_steps_carry_the_penalty_and_the_loss_adds_it():
    alg = _cql_dqn(OBS, ACT, cql_alpha=0.5)
    exp = _experience(4)
    q_all = alg._q_network(exp.observation)[0].numpy()  # [B, A]
    q_data = q_all[np.arange(4), exp.action.numpy()]
    expected = np.log(np.exp(q_all).sum(-1)) - q_data
    for hook in (alg.train_step, alg.first_train_step):
        info = hook(exp, ()).info
        np.testing.assert_allclose(info.q_value, q_data, rtol=1e-6)
        np.testing.assert_allclose(info.cql_penalty, expected, rtol=1e-5)
    assert not np.any(alg.bootstrap_step(exp, ()).info.cql_penalty)
    # A [T=2, B=4] window: row 0 from train_step, row 1 bootstraps.
    rows = [alg.train_step(exp, ()), alg.bootstrap_step(exp, ())]
    info = tf.nest.map_structure(
        lambda *x: tf.stack(x), *[r.info for r in rows]
    )
    training_info = TrainingInfo(
        action=tf.stack([exp.action] * 2),
        step_type=tf.stack([exp.step_type] * 2),
        reward=tf.stack([exp.reward] * 2),
        discount=tf.stack([exp.discount] * 2),
        info=info,
    )
    loss = alg.calc_loss(training_info)
    dqn = DqnAlgorithm.calc_loss(alg, training_info)
    np.testing.assert_allclose(
        loss.loss.numpy(),
        dqn.loss.numpy() + 0.5 * np.stack([expected, np.zeros(4)]),
        rtol=1e-5,
    )
    np.testing.assert_allclose(loss.extra.cql_penalty[0], expected, rtol=1e-5)


def test_bad_settings_are_refused_in_one_line():
    with pytest.raises(ValueError, match='cql_alpha must be > 0, got 0'):
        _cql_dqn(OBS, ACT, cql_alpha=0.0)
    with pytest.raises(
        ValueError, match='value_distribution must be ScalarValues'
    ):
        _cql_dqn(OBS, ACT, value_distribution=QuantileValues(4))


def test_cql_dqn_learns_the_cartpole_expert(tmp_path):
    """Learning test: CQL-DQN on 5 episodes of an epsilon=0.1 scripted
    expert reaches a greedy return of 475 (CartPole's solved threshold)."""
    path = str(tmp_path / 'expert')
    expert_dataset(path, 5)
    ctor = functools.partial(
        _cql_dqn, layers=(256, 256), lr=5e-4, target_update_period=128
    )
    trainer = OfflineTrainer(
        short_config(
            str(tmp_path / 'cql'),
            100,
            ctor,
            evaluate=True,
            eval_interval=100,
            num_eval_episodes=4,
            mini_batch_size=64,
            num_updates_per_train_step=8,
            summary_interval=100,
            checkpoint_interval=100,
            iterations_per_call='auto',
        ),
        dataset=path,
        eval_env=lambda s: create_environment('CartPole-v1', 4, seed=s),
    )
    result = trainer.train()
    trainer.close()
    assert result['eval/Metrics/AverageReturn'] >= 475, result
