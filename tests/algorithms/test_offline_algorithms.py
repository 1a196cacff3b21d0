"""CQL-SAC's penalty and bootstrap value and IQL's losses inside the
algorithms, against numpy on one replayed step; BC's losses; bad settings
refused in one line (CQL-DQN's: tests/offline/test_cql_lagrangian.py)."""

import functools

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.algorithms import (
    BcAlgorithm,
    CqlSacAlgorithm,
    IqlAlgorithm,
)
from alf_rl.data_structures import Experience, StepType
from alf_rl.networks import (
    ActorDistributionNetwork,
    ActorNetwork,
    CriticNetwork,
    QNetwork,
    ValueNetwork,
)
from alf_rl.specs import BoundedTensorSpec

OBS = tf.TensorSpec([3], tf.float32)
DISCRETE = BoundedTensorSpec((), tf.int64, 0, 2)
CONTINUOUS = BoundedTensorSpec([2], tf.float32, -1.0, 1.0)
B = 5


def _step(action):
    rng = np.random.default_rng(0)
    return Experience(
        step_type=tf.fill([B], StepType.MID),
        reward=tf.zeros([B]),
        discount=tf.ones([B]),
        observation=tf.constant(rng.normal(size=[B, 3]), tf.float32),
        prev_action=action,
        env_id=tf.zeros([B], tf.int32),
        action=action,
    )


def _logsumexp(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(m, axis) + np.log(np.sum(np.exp(x - m), axis=axis))


def test_cql_discrete_penalty_is_exact_logsumexp_minus_data_q():
    alg = CqlSacAlgorithm(
        OBS,
        DISCRETE,
        critic_network_ctor=functools.partial(QNetwork, fc_layer_params=(8,)),
    )
    action = tf.constant([0, 1, 2, 1, 0], tf.int64)
    exp = _step(action)
    info = alg.train_step(exp, ()).info
    for critic, penalty in (
        (alg._critic1, info.cql_penalty1),
        (alg._critic2, info.cql_penalty2),
    ):
        q = critic(exp.observation)[0].numpy()
        expected = _logsumexp(q, 1) - q[np.arange(B), action.numpy()]
        np.testing.assert_allclose(penalty, expected, rtol=1e-5)
        assert np.all(penalty.numpy() >= 0)  # logsumexp >= max >= Q(a)


def test_cql_continuous_penalty_is_finite_and_settings_checked():
    alg = CqlSacAlgorithm(
        OBS, CONTINUOUS, cql_target_gap=5.0, num_sampled_actions=4
    )
    info = alg.train_step(_step(tf.zeros([B, 2])), ()).info
    assert info.cql_penalty1.shape == [B]
    assert np.all(np.isfinite(info.cql_penalty1.numpy()))
    assert alg.cql_alpha.numpy() == pytest.approx(1.0)
    with pytest.raises(ValueError, match='cql_alpha must be > 0, got 0'):
        CqlSacAlgorithm(OBS, CONTINUOUS, cql_alpha=0.0)


@pytest.mark.parametrize('backup_entropy', [True, False])
def test_cql_bootstrap_value_with_and_without_the_entropy(backup_entropy):
    """The bootstrap row's target: SAC's soft value min_i Q'_i(s, a) -
    alpha log pi(a|s) at the fresh action a, or (``backup_entropy=False``)
    min_i Q'_i(s, a) alone."""
    alg = CqlSacAlgorithm(
        OBS, CONTINUOUS, num_sampled_actions=2, backup_entropy=backup_entropy
    )
    alg._log_alpha.assign(np.log(0.5))
    exp = _step(tf.zeros([B, 2]))
    step = alg.bootstrap_step(exp, ())
    obs, action = exp.observation, step.action
    q = np.minimum(
        alg._target_critic1((obs, action))[0].numpy(),
        alg._target_critic2((obs, action))[0].numpy(),
    )
    log_pi = alg.actor_network(obs)[0].log_prob(action).numpy()
    want = q - 0.5 * log_pi if backup_entropy else q
    np.testing.assert_allclose(step.info.target_value, want, rtol=1e-4)
    assert np.all(np.abs(0.5 * log_pi) > 1e-3)  # the two cases differ
    assert not np.any(step.info.cql_penalty1)


def test_iql_losses_match_numpy():
    alg = IqlAlgorithm(
        OBS,
        CONTINUOUS,
        expectile=0.8,
        temperature=0.5,
        actor_network_ctor=functools.partial(
            ActorDistributionNetwork, fc_layer_params=(8,)
        ),
        critic_network_ctor=functools.partial(
            CriticNetwork, joint_fc_layer_params=(8,)
        ),
        value_network_ctor=functools.partial(
            ValueNetwork, fc_layer_params=(8,)
        ),
    )
    action = tf.constant(
        np.linspace(-0.9, 0.9, 2 * B).reshape(B, 2), tf.float32
    )
    exp = _step(action)
    info = alg.train_step(exp, ()).info
    obs = exp.observation
    q = np.minimum(
        alg._target_critic1((obs, action))[0].numpy(),
        alg._target_critic2((obs, action))[0].numpy(),
    )
    v = alg._value_network(obs)[0].numpy()
    u = q - v
    np.testing.assert_allclose(
        info.value_loss, np.where(u < 0, 0.2, 0.8) * u**2, rtol=1e-5
    )
    log_pi = alg._actor_network(obs)[0].log_prob(action).numpy()
    weight = np.minimum(np.exp(u / 0.5), 100.0)
    np.testing.assert_allclose(info.weight, weight, rtol=1e-4)
    np.testing.assert_allclose(info.actor_loss, -weight * log_pi, rtol=1e-4)
    with pytest.raises(ValueError, match=r'expectile must lie in \(0, 1\)'):
        IqlAlgorithm(OBS, CONTINUOUS, expectile=1.0)


def test_bc_losses_and_refusal():
    stochastic = BcAlgorithm(
        OBS,
        DISCRETE,
        actor_network_ctor=functools.partial(
            ActorDistributionNetwork, fc_layer_params=(8,)
        ),
    )
    action = tf.constant([0, 1, 2, 1, 0], tf.int64)
    exp = _step(action)
    loss = stochastic.train_step(exp, ()).info.loss
    logits = stochastic._actor_network(exp.observation)[0].logits.numpy()
    log_p = logits - _logsumexp(logits, 1)[:, None]
    np.testing.assert_allclose(
        loss, -log_p[np.arange(B), action.numpy()], rtol=1e-5
    )
    deterministic = BcAlgorithm(
        OBS,
        CONTINUOUS,
        actor_network_ctor=functools.partial(
            ActorNetwork, fc_layer_params=(8,)
        ),
    )
    target = tf.fill([B, 2], 0.5)
    mu = deterministic._actor_network(exp.observation)[0].numpy()
    np.testing.assert_allclose(
        deterministic.train_step(_step(target), ()).info.loss,
        np.sum((mu - 0.5) ** 2, axis=1),
        rtol=1e-5,
    )
    with pytest.raises(
        ValueError,
        match='a deterministic actor '
        r'\(ActorNetwork\) clones float actions only',
    ):
        BcAlgorithm(
            OBS,
            DISCRETE,
            actor_network_ctor=lambda o, a: ActorNetwork(o, CONTINUOUS),
        )
