"""SarsaAlgorithm: SARSA targets, one training step, exploration, learning."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms.sarsa_algorithm import (SarsaAlgorithm, SarsaInfo,
                                               SarsaRolloutState)
from alf_rl.data_structures import StepType, TrainingInfo, make_experience
from alf_rl.environments.suite_unittest import PolicyUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.networks import ActorNetwork, CriticNetwork
from alf_rl.specs import BoundedTensorSpec
from alf_rl.utils.common import set_random_seed

F, M, L = StepType.FIRST, StepType.MID, StepType.LAST


def _make_sarsa(env, **kwargs):
    kwargs.setdefault('actor_optimizer', tf_keras.optimizers.Adam(1e-3))
    kwargs.setdefault('critic_optimizer', tf_keras.optimizers.Adam(1e-2))
    return SarsaAlgorithm(
        env.observation_spec(), env.action_spec(),
        actor_network_ctor=lambda o, a: ActorNetwork(o, a,
                                                     fc_layer_params=(16, )),
        critic_network_ctor=lambda s: CriticNetwork(
            s, joint_fc_layer_params=(16, )),
        **kwargs)


def _collect(alg, env, time_step, state, num_steps, policy=None):
    """Rolls out; returns (Experience [T, B], last time step, state)."""
    policy = policy or alg.rollout
    exps = []
    for _ in range(num_steps):
        step = policy(time_step, state)
        exps.append(make_experience(time_step, step, ()))
        state = step.state
        time_step = env.step(step.action)
    exp = tf.nest.map_structure(lambda *x: tf.stack(x), *exps)
    return exp, time_step, state


def test_calc_loss_uses_the_next_stored_action():
    env = TFPyEnvironment(PolicyUnittestEnv(1, 5, action_type='continuous'))
    alg = _make_sarsa(env, gamma=0.5)
    info = SarsaInfo(critic=tf.constant([[1.], [2.], [3.]]),
                     target_critic=tf.constant([[7.], [4.], [8.]]),
                     actor_loss=tf.constant([[0.1], [0.2], [0.3]]))
    ti = TrainingInfo(action=tf.zeros([3, 1, 1]),
                      step_type=tf.constant([[F], [M], [L]]),
                      reward=tf.constant([[0.], [1.], [2.]]),
                      discount=tf.constant([[1.], [1.], [0.]]),
                      info=info)
    loss_info = alg.calc_loss(ti)
    # y_0 = 1 + 0.5 * 1 * 4 = 3; y_1 = 2 + 0.5 * 0 * 8 = 2.
    np.testing.assert_allclose(loss_info.extra.td_error.numpy()[:, 0],
                               [2.0, 0.0, 0.0])
    np.testing.assert_allclose(loss_info.extra.critic.numpy()[:, 0],
                               [0.5 * 4.0, 0.0, 0.0])
    np.testing.assert_allclose(loss_info.loss.numpy()[:, 0],
                               [2.1, 0.2, 0.3], rtol=1e-6)


def test_train_step_evaluates_target_critic_at_stored_action():
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(8, 5, action_type='continuous'))
    alg = _make_sarsa(env)
    for v in alg._target_critic_network.variables:
        v.assign(v + 0.1 * tf.random.normal(v.shape))
    exp, _, _ = _collect(alg, env, env.reset(),
                         alg.get_initial_rollout_state(8), 1)
    exp = tf.nest.map_structure(lambda x: x[0], exp)
    info = alg.train_step(exp, ()).info
    expected, _ = alg._target_critic_network((exp.observation, exp.action))
    np.testing.assert_allclose(info.target_critic, expected, rtol=1e-6)
    q, _ = alg._critic_network((exp.observation, exp.action))
    np.testing.assert_allclose(info.critic, q, rtol=1e-6)


def test_one_training_step_on_a_fixed_batch():
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 5, action_type='continuous'))
    alg = _make_sarsa(env, tau=0.25, target_update_period=1)
    exp, _, _ = _collect(alg, env, env.reset(),
                         alg.get_initial_rollout_state(4), 6)
    variables = alg.trainable_variables
    assert len(variables) == 8  # actor (2 layers) + critic (2 layers) only
    before = [v.numpy().copy() for v in variables]
    critic_before = [
        v.numpy().copy() for v in alg._critic_network.trainable_variables
    ]
    target = alg._target_critic_network.trainable_variables
    for t, s in zip(target, critic_before):
        np.testing.assert_array_equal(t.numpy(), s)
    loss_info = alg.train(exp, mini_batch_length=3)
    assert np.isfinite(loss_info.loss.numpy())
    for b, v in zip(before, variables):
        assert np.any(b != v.numpy()), v.name
    for t, o, s in zip(target, critic_before,
                       alg._critic_network.trainable_variables):
        np.testing.assert_allclose(t.numpy(), 0.75 * o + 0.25 * s.numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_actor_loss_does_not_reach_the_critic():
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 5, action_type='continuous'))
    alg = _make_sarsa(env)
    exp, _, _ = _collect(alg, env, env.reset(),
                         alg.get_initial_rollout_state(4), 1)
    exp = tf.nest.map_structure(lambda x: x[0], exp)
    with tf.GradientTape(persistent=True) as tape:
        info = alg.train_step(exp, ()).info
        actor_loss = tf.reduce_sum(info.actor_loss)
    grads = tape.gradient(actor_loss,
                          alg._critic_network.trainable_variables)
    assert all(g is None for g in grads)
    grads = tape.gradient(actor_loss, alg._actor_network.trainable_variables)
    assert all(g is not None for g in grads)


@pytest.mark.parametrize('noise', ['ou', 'gaussian'])
def test_rollout_noise_stays_in_bounds(noise):
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(64, 5, action_type='continuous'))
    alg = _make_sarsa(env, exploration_noise=noise, noise_stddev=0.5)
    state = alg.get_initial_rollout_state(64)
    if noise == 'ou':
        assert isinstance(state, SarsaRolloutState)
        assert state.ou_noise.shape == (64, 1)
    ts = env.reset()
    greedy = alg.predict(ts, ()).action
    step = alg.rollout(ts, state)
    a = step.action.numpy()
    assert a.dtype == np.float32 and a.min() >= 0.0 and a.max() <= 1.0
    assert np.mean(np.abs(a - greedy.numpy()) > 1e-3) > 0.5
    if noise == 'ou':
        assert np.any(step.state.ou_noise.numpy() != 0)


@pytest.mark.parametrize('spec', [
    BoundedTensorSpec((), tf.int64, 0, 1),
    tf.TensorSpec((1, ), tf.float32),
])
def test_discrete_or_unbounded_action_spec_raises(spec):
    with pytest.raises(ValueError, match='needs continuous actions'):
        SarsaAlgorithm(tf.TensorSpec([1]), spec)


def test_bad_exploration_noise_raises():
    with pytest.raises(ValueError, match="exploration_noise"):
        SarsaAlgorithm(tf.TensorSpec([1]),
                       BoundedTensorSpec((1, ), tf.float32, 0., 1.),
                       exploration_noise='uniform')


def test_sarsa_learns_policy_unittest_env():
    """Continuous copy-the-observation task: reward -> ~1 in seconds."""
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(16, 6, action_type='continuous'))
    alg = _make_sarsa(env, gamma=0.5, exploration_noise='gaussian',
                      noise_stddev=0.3, tau=0.1,
                      target_update_period=1,
                      actor_optimizer=tf_keras.optimizers.Adam(1e-2))
    alg.prepare_off_policy_specs(16)
    rollout = tf.function(alg.rollout, autograph=False)
    train = tf.function(lambda exp: alg.train(
        exp, mini_batch_size=16, mini_batch_length=2), autograph=False)
    time_step = env.reset()
    state = alg.get_initial_rollout_state(16)
    for _ in range(60):
        exp, time_step, state = _collect(alg, env, time_step, state, 4,
                                         rollout)
        for _ in range(4):
            train(exp)
    exp, _, _ = _collect(alg, env, env.reset(), (), 12, alg.predict)
    valid = exp.step_type.numpy() != StepType.FIRST
    # The initial actor (a ~ 0.5) and a random one average 0.5.
    assert exp.reward.numpy()[valid].mean() >= 0.85
