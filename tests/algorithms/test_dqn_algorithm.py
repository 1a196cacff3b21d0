"""DqnAlgorithm: targets, one training step, exploration, a learning test."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms.dqn_algorithm import DqnAlgorithm, DqnInfo
from alf_rl.data_structures import (StepType, TimeStep, TrainingInfo,
                                    make_experience)
from alf_rl.environments.suite_unittest import PolicyUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.networks import QNetwork
from alf_rl.ops import distributions as dist_ops
from alf_rl.ops.losses import element_wise_squared_loss
from alf_rl.specs import BoundedTensorSpec
from alf_rl.utils.common import set_random_seed

F, M, L = StepType.FIRST, StepType.MID, StepType.LAST


def _make_dqn(env, **kwargs):
    kwargs.setdefault('optimizer', tf_keras.optimizers.Adam(1e-2))
    return DqnAlgorithm(
        env.observation_spec(), env.action_spec(),
        q_network_ctor=lambda o, a: QNetwork(o, a, fc_layer_params=(16, )),
        **kwargs)


def _collect(alg, env, time_step, num_steps, policy=None):
    """Rolls out ``num_steps``; returns (Experience [T, B], last time step)."""
    policy = policy or alg.rollout
    exps = []
    state = alg.get_initial_rollout_state(env.batch_size)
    for _ in range(num_steps):
        step = policy(time_step, state)
        exps.append(
            make_experience(time_step, step._replace(
                info=dist_ops.distributions_to_params(step.info)), state))
        time_step = env.step(step.action)
    exp = tf.nest.map_structure(lambda *x: tf.stack(x), *exps)
    return exp._replace(state=()), time_step


def test_rollout_decays_epsilon_and_predict_is_greedy():
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(64, 5))
    alg = _make_dqn(env, epsilon_greedy=(1.0, 0.0), epsilon_decay_steps=4)
    ts = env.reset()
    greedy = alg.predict(ts, ()).action
    assert greedy.dtype == tf.int64
    q, _ = alg._q_network(ts.observation)
    np.testing.assert_array_equal(greedy, tf.argmax(q, -1))
    first = alg.rollout(ts, ()).action  # epsilon 1: random
    assert 0 < np.mean(first.numpy() != greedy.numpy()) < 1
    for _ in range(4):
        alg.rollout(ts, ())
    assert int(alg._rollout_count.numpy()) == 5
    assert float(alg.epsilon) == 0.0
    np.testing.assert_array_equal(alg.rollout(ts, ()).action, greedy)


def test_action_minimum_offset():
    obs_spec = tf.TensorSpec([2], tf.float32)
    alg = DqnAlgorithm(obs_spec, BoundedTensorSpec((), tf.int32, 3, 5),
                       optimizer=tf_keras.optimizers.Adam(1e-3))
    ts = TimeStep(observation=tf.random.normal([100, 2]))
    a = alg.rollout(ts, ()).action.numpy()
    assert a.dtype == np.int32 and a.min() >= 3 and a.max() <= 5
    assert set(a.tolist()) == {3, 4, 5}


def test_one_training_step_on_a_fixed_batch():
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 5))
    alg = _make_dqn(env, target_update_period=2)
    exp, _ = _collect(alg, env, env.reset(), 6)
    assert exp.step_type.shape == (6, 4)
    variables = alg.trainable_variables
    assert len(variables) == 4  # online network only
    before = [v.numpy().copy() for v in variables]
    target_before = [
        v.numpy().copy() for v in alg._target_q_network.variables
    ]
    # The target starts as a copy of the online network.
    for t, s in zip(target_before, before):
        np.testing.assert_array_equal(t, s)
    loss_info = alg.train(exp, mini_batch_length=3)
    assert np.isfinite(loss_info.loss.numpy())
    assert np.isfinite(loss_info.extra.td_error.numpy())
    for b, v in zip(before, variables):
        assert np.any(b != v.numpy()), v.name
    # period 2: one update leaves the target alone ...
    for t, v in zip(target_before, alg._target_q_network.variables):
        np.testing.assert_array_equal(t, v.numpy())
    # ... the second copies the online network.
    alg.train(exp, mini_batch_length=3)
    for t, s in zip(alg._target_q_network.variables, variables):
        np.testing.assert_array_equal(t.numpy(), s.numpy())


def test_soft_target_update_by_tau():
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 5))
    alg = _make_dqn(env, tau=0.25, target_update_period=1)
    exp, _ = _collect(alg, env, env.reset(), 4)
    old = [v.numpy().copy() for v in alg._q_network.variables]
    alg.train(exp)
    for t, o, s in zip(alg._target_q_network.variables, old,
                       alg._q_network.variables):
        np.testing.assert_allclose(t.numpy(), 0.75 * o + 0.25 * s.numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_calc_loss_values_and_importance_weights():
    env = TFPyEnvironment(PolicyUnittestEnv(1, 5))
    alg = _make_dqn(env, gamma=0.5,
                    td_error_loss_fn=element_wise_squared_loss)
    info = DqnInfo(q_value=tf.constant([[1.], [2.], [3.]]),
                   target_value=tf.constant([[0.], [4.], [8.]]))
    ti = TrainingInfo(action=tf.zeros([3, 1], tf.int64),
                      step_type=tf.constant([[F], [M], [M]]),
                      reward=tf.constant([[0.], [1.], [1.]]),
                      discount=tf.ones([3, 1]),
                      info=info)
    loss_info = alg.calc_loss(ti)
    # G_1 = 1 + 0.5*8 = 5; G_0 = 1 + 0.5*5 = 3.5
    np.testing.assert_allclose(loss_info.extra.td_error.numpy()[:, 0],
                               [2.5, 3.0, 0.0])
    np.testing.assert_allclose(loss_info.loss.numpy()[:, 0],
                               [0.5 * 2.5**2, 0.5 * 9.0, 0.0])
    weighted = alg.calc_loss(ti, importance_weights=tf.constant([0.5]))
    np.testing.assert_allclose(weighted.loss.numpy(),
                               0.5 * loss_info.loss.numpy())


def test_double_q_uses_online_argmax():
    env = TFPyEnvironment(PolicyUnittestEnv(8, 5))
    set_random_seed(1)
    alg = _make_dqn(env)
    # Make the target network differ from the online one.
    for v in alg._target_q_network.variables:
        v.assign(v + tf.random.normal(v.shape))
    exp, _ = _collect(alg, env, env.reset(), 1)
    exp = tf.nest.map_structure(lambda x: x[0], exp)
    info = alg.train_step(exp, ()).info
    q, _ = alg._q_network(exp.observation)
    tq, _ = alg._target_q_network(exp.observation)
    expected = tf.gather(tq, tf.argmax(q, -1)[:, None], batch_dims=1)[:, 0]
    np.testing.assert_allclose(info.target_value, expected, rtol=1e-6)
    np.testing.assert_allclose(
        info.q_value,
        tf.gather(q, exp.action[:, None], batch_dims=1)[:, 0], rtol=1e-6)
    single = _make_dqn(env, use_double_q=False)
    tq, _ = single._target_q_network(exp.observation)
    np.testing.assert_allclose(
        single.train_step(exp, ()).info.target_value,
        tf.reduce_max(tq, -1), rtol=1e-6)


@pytest.mark.parametrize('double_q', [True, False])
def test_bootstrap_step_is_train_steps_target_without_online_q(double_q):
    env = TFPyEnvironment(PolicyUnittestEnv(8, 5))
    set_random_seed(2)
    alg = _make_dqn(env, use_double_q=double_q)
    for v in alg._target_q_network.variables:
        v.assign(v + tf.random.normal(v.shape))
    exp, _ = _collect(alg, env, env.reset(), 1)
    exp = tf.nest.map_structure(lambda x: x[0], exp)
    full = alg.train_step(exp, ())
    calls = []
    online = alg._q_network

    def counted(*args, **kwargs):
        calls.append(1)
        return online(*args, **kwargs)

    alg._q_network = counted
    try:
        boot = alg.bootstrap_step(exp, ())
    finally:
        alg._q_network = online
    # The online network runs only to pick double Q-learning's action.
    assert len(calls) == (1 if double_q else 0)
    np.testing.assert_allclose(boot.info.target_value,
                               full.info.target_value, rtol=1e-6)
    np.testing.assert_array_equal(boot.action, full.action)
    np.testing.assert_array_equal(boot.info.q_value, np.zeros(8))


@pytest.mark.parametrize('spec', [
    BoundedTensorSpec((1, ), tf.float32, 0., 1.),
    BoundedTensorSpec((2, ), tf.int64, 0, 1),
    tf.TensorSpec((), tf.int64),
    (BoundedTensorSpec((), tf.int64, 0, 1), ) * 2,
])
def test_non_scalar_discrete_action_spec_raises(spec):
    with pytest.raises(ValueError, match='action_spec must be one scalar'):
        DqnAlgorithm(tf.TensorSpec([1]), spec)


def test_bad_hyperparameters_raise():
    spec = BoundedTensorSpec((), tf.int64, 0, 1)
    with pytest.raises(ValueError, match='epsilon_greedy must be in'):
        DqnAlgorithm(tf.TensorSpec([1]), spec, epsilon_greedy=(1.5, 0.1))
    with pytest.raises(ValueError, match='epsilon_decay_steps'):
        DqnAlgorithm(tf.TensorSpec([1]), spec, epsilon_decay_steps=0)
