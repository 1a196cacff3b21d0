"""CqlDqnAlgorithm's penalty and its weight (``CqlWeight``, shared with
CqlSacAlgorithm), fixed and Lagrangian: the steps' penalty, the loss and
the gradients against numpy on one replayed window, bad settings refused
in one line, and alpha' moving the right way in a short offline run."""

import functools

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.algorithms import CqlDqnAlgorithm, DqnAlgorithm
from alf_rl.algorithms.value_distributions import QuantileValues
from alf_rl.data_structures import Experience, StepType, TrainingInfo
from alf_rl.networks import QNetwork
from alf_rl.trainers import OfflineTrainer
from alf_rl.specs import BoundedTensorSpec
from offline_helpers import expert_dataset, short_config

OBS = tf.TensorSpec([3], tf.float32)
DISCRETE = BoundedTensorSpec((), tf.int64, 0, 2)
B = 5


def _cql_dqn(observation_spec, action_spec, **kwargs):
    return CqlDqnAlgorithm(
        observation_spec,
        action_spec,
        q_network_ctor=functools.partial(QNetwork, fc_layer_params=(8,)),
        optimizer=tf.keras.optimizers.Adam(1e-3),
        **kwargs,
    )


def _window(alg):
    """A [T=2, B] ``TrainingInfo``: row 0 from ``train_step``, row 1 from
    ``bootstrap_step``; and the observations."""
    rng = np.random.default_rng(0)
    action = tf.constant([0, 2, 1, 1, 0], tf.int64)
    exp = Experience(
        step_type=tf.fill([B], StepType.MID),
        reward=tf.constant(rng.normal(size=[B]), tf.float32),
        discount=tf.ones([B]),
        observation=tf.constant(rng.normal(size=[B, 3]), tf.float32),
        prev_action=action,
        env_id=tf.zeros([B], tf.int32),
        action=action,
    )
    rows = [alg.train_step(exp, ()), alg.bootstrap_step(exp, ())]
    info = tf.nest.map_structure(
        lambda *x: tf.stack(x), *[r.info for r in rows]
    )
    return TrainingInfo(
        action=tf.stack([exp.action] * 2),
        step_type=tf.stack([exp.step_type] * 2),
        reward=tf.stack([exp.reward] * 2),
        discount=tf.stack([exp.discount] * 2),
        info=info,
    ), exp


def test_lagrangian_loss_and_gradients_match_numpy():
    """Row 0's loss is DQN's plus alpha' (p - gap) - alpha' (p - gap) (its
    value: DQN's); the network gets alpha' * grad p; log alpha' gets
    -alpha' * mean(p - gap) over the row's batch."""
    gap = 0.3
    alg = _cql_dqn(OBS, DISCRETE, cql_alpha=0.5, cql_target_gap=gap)
    assert alg._log_cql_alpha.trainable
    with tf.GradientTape(persistent=True) as tape:
        training_info, exp = _window(alg)
        loss = alg.calc_loss(training_info)
        row0 = tf.reduce_mean(loss.loss[0])
        dqn = DqnAlgorithm.calc_loss(alg, training_info)
        # The reference objective of the network: DQN's + alpha' p.
        reference = tf.reduce_mean(
            dqn.loss[0] + 0.5 * training_info.info.cql_penalty[0]
        )
    q_all = alg._q_network(exp.observation)[0].numpy()
    penalty = (
        np.log(np.exp(q_all).sum(-1)) - q_all[np.arange(B), [0, 2, 1, 1, 0]]
    )
    np.testing.assert_allclose(loss.extra.cql_penalty[0], penalty, rtol=1e-5)
    np.testing.assert_allclose(loss.loss[0], dqn.loss[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss.loss[1], 0.0)
    assert loss.extra.cql_weight.numpy() == pytest.approx(0.5)
    grad_alpha = tape.gradient(row0, alg._log_cql_alpha).numpy()
    assert grad_alpha == pytest.approx(-0.5 * np.mean(penalty - gap), rel=1e-4)
    variables = alg._q_network.trainable_variables
    for got, want in zip(
        tape.gradient(row0, variables), tape.gradient(reference, variables)
    ):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-7)


def test_steps_carry_the_exact_penalty():
    """``train_step`` and ``first_train_step`` carry Q(s, a_data) and the
    penalty logsumexp_a Q(s, a) - Q(s, a_data); ``bootstrap_step`` zeros."""
    alg = _cql_dqn(OBS, DISCRETE, cql_alpha=0.5)
    _, exp = _window(alg)
    q_all = alg._q_network(exp.observation)[0].numpy()  # [B, A]
    q_data = q_all[np.arange(B), exp.action.numpy()]
    expected = np.log(np.exp(q_all).sum(-1)) - q_data
    for hook in (alg.train_step, alg.first_train_step):
        info = hook(exp, ()).info
        np.testing.assert_allclose(info.q_value, q_data, rtol=1e-6)
        np.testing.assert_allclose(info.cql_penalty, expected, rtol=1e-5)
    assert not np.any(alg.bootstrap_step(exp, ()).info.cql_penalty)


def test_fixed_weight_is_not_trained_and_bad_settings_are_refused():
    """Fixed alpha': row 0's loss is DQN's plus alpha' p, the bootstrap
    row's is 0; alpha' <= 0 and a non-scalar value distribution are
    refused in one line."""
    alg = _cql_dqn(OBS, DISCRETE, cql_alpha=0.5)
    assert not alg._log_cql_alpha.trainable
    training_info, _ = _window(alg)
    loss = alg.calc_loss(training_info)
    dqn = DqnAlgorithm.calc_loss(alg, training_info)
    np.testing.assert_allclose(
        loss.loss[0],
        dqn.loss[0] + 0.5 * training_info.info.cql_penalty[0],
        rtol=1e-6,
    )
    np.testing.assert_allclose(loss.loss[1], 0.0)
    with pytest.raises(ValueError, match='cql_alpha must be > 0, got -1'):
        _cql_dqn(OBS, DISCRETE, cql_alpha=-1.0)
    with pytest.raises(
        ValueError, match='value_distribution must be ScalarValues'
    ):
        _cql_dqn(OBS, DISCRETE, value_distribution=QuantileValues(4))


@pytest.mark.parametrize('gap, grows', [(0.0, True), (10.0, False)])
def test_alpha_moves_towards_the_gap_in_an_offline_run(tmp_path, gap, grows):
    """The penalty is > 0 and, on a fresh network, near log 2 < 10: with
    gap 0 alpha' grows, with gap 10 it shrinks (its own optimizer)."""
    path = str(tmp_path / 'data')
    expert_dataset(path, 2, max_steps=40)
    ctor = functools.partial(
        CqlDqnAlgorithm,
        q_network_ctor=functools.partial(QNetwork, fc_layer_params=(16,)),
        optimizer=tf.keras.optimizers.Adam(1e-3),
        cql_alpha=1.0,
        cql_target_gap=gap,
        cql_alpha_optimizer=tf.keras.optimizers.Adam(1e-2),
    )
    trainer = OfflineTrainer(
        short_config(str(tmp_path / 'run'), 5, ctor), dataset=path
    )
    trainer.train()
    alpha = float(trainer.algorithm.cql_alpha.numpy())
    trainer.close()
    assert (alpha > 1.0) if grows else (alpha < 1.0), alpha
    # 10 Adam steps of about 1e-2 each on log alpha'.
    assert abs(np.log(alpha)) == pytest.approx(0.1, abs=0.02), alpha
