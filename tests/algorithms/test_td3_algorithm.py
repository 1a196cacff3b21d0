"""Tests for Td3Algorithm: delayed actor/targets, twin critics, smoothing,
errors, learning."""

import functools

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms.td3_algorithm import Td3Algorithm
from alf_rl.data_structures import make_experience
from alf_rl.ops.exploration import smoothed_target_action
from alf_rl.environments.suite_unittest import PolicyUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.networks import ActorNetwork, CriticNetwork
from alf_rl.ops import distributions as dist_ops
from alf_rl.replay.replay_buffer import ReplayBuffer
from alf_rl.data_structures import TimeStep
from alf_rl.utils.common import reset_state_if_necessary, set_random_seed


def _env(batch_size=4, episode_length=5, action_type='continuous'):
    return TFPyEnvironment(
        PolicyUnittestEnv(batch_size, episode_length,
                          action_type=action_type))


def _td3(env, **kwargs):
    kwargs.setdefault('actor_network_ctor',
                      lambda o, a: ActorNetwork(o, a, fc_layer_params=(16, )))
    kwargs.setdefault(
        'critic_network_ctor',
        lambda s: CriticNetwork(s, joint_fc_layer_params=(16, )))
    kwargs.setdefault('actor_optimizer', tf_keras.optimizers.Adam(1e-2))
    kwargs.setdefault('critic_optimizer', tf_keras.optimizers.Adam(1e-2))
    return Td3Algorithm(env.observation_spec(), env.action_spec(), **kwargs)


def _collect(alg, env, num_steps):
    """Rolls ``alg`` out for ``num_steps``; Experience [num_steps, B]."""
    time_step = env.reset()
    state = alg.get_initial_rollout_state(env.batch_size)
    rows = []
    for _ in range(num_steps):
        policy_step = alg.rollout(time_step, state)
        rows.append(
            make_experience(
                time_step,
                policy_step._replace(info=dist_ops.distributions_to_params(
                    policy_step.info)), ()))
        state = policy_step.state
        time_step = env.step(policy_step.action)
    return tf.nest.map_structure(lambda *x: tf.stack(x), *rows)


def _values(variables):
    return [v.numpy().copy() for v in variables]


def _changed(variables, before):
    return [not np.allclose(v.numpy(), b) for v, b in zip(variables, before)]


def _targets(alg):
    return list(alg._target_actor_network.trainable_variables) + [
        v for c in alg._target_critic_networks for v in c.trainable_variables
    ]


def _sources(alg):
    return list(alg._actor_network.trainable_variables) + [
        v for c in alg._critic_networks for v in c.trainable_variables
    ]


@pytest.mark.parametrize('compiled', [False, True])
def test_actor_and_targets_move_every_second_update(compiled):
    set_random_seed(0)
    env = _env()
    tau = 0.1
    actor_optimizer = tf_keras.optimizers.Adam(1e-2)
    alg = _td3(env, tau=tau, actor_optimizer=actor_optimizer)
    assert alg.actor_update_period == 2
    assert len(alg._critic_networks) == 2
    alg.build_optimizers()
    exp = _collect(alg, env, 6)
    # autograph=False, as the trainers compile.
    train = (tf.function(alg.train, autograph=False)
             if compiled else alg.train)
    actor_vars = list(alg._actor_network.trainable_variables)
    critic_vars = [
        v for c in alg._critic_networks for v in c.trainable_variables
    ]
    assert len(alg.trainable_variables) == len(actor_vars + critic_vars) == 12
    initial = _values(_sources(alg))

    # Update 1: critics only; actor, its Adam state and targets untouched.
    critic_before = _values(critic_vars)
    loss_info = train(exp)
    assert np.isfinite(loss_info.loss.numpy())
    assert all(_changed(critic_vars, critic_before))
    assert not any(_changed(actor_vars, initial[:len(actor_vars)]))
    assert int(actor_optimizer.iterations) == 0
    for t, old in zip(_targets(alg), initial):
        np.testing.assert_array_equal(t.numpy(), old)

    # Update 2: everything moves; targets by tau towards the sources.
    before = _values(actor_vars + critic_vars)
    loss_info = train(exp)
    assert np.isfinite(loss_info.loss.numpy())
    assert all(_changed(actor_vars + critic_vars, before))
    assert int(actor_optimizer.iterations) == 1
    for t, old, s in zip(_targets(alg), initial, _sources(alg)):
        np.testing.assert_allclose(t.numpy(),
                                   (1 - tau) * old + tau * s.numpy(),
                                   rtol=1e-5, atol=1e-6)

    # Update 3: actor still again.
    before = _values(actor_vars)
    train(exp)
    assert not any(_changed(actor_vars, before))
    assert int(actor_optimizer.iterations) == 1


def test_target_value_is_min_of_twin_target_critics():
    set_random_seed(0)
    env = _env()
    alg = _td3(env, target_policy_noise=0.0)
    exp = _collect(alg, env, 3)
    exp_t = tf.nest.map_structure(lambda x: x[1], exp)
    info = alg.train_step(exp_t, ()).info
    assert info.critic.shape == (4, 2)
    target_action, _ = alg._target_actor_network(exp_t.observation)
    q1, _ = alg._target_critic_networks[0]((exp_t.observation,
                                            target_action))
    q2, _ = alg._target_critic_networks[1]((exp_t.observation,
                                            target_action))
    assert not np.allclose(q1, q2)
    np.testing.assert_allclose(info.target_critic, np.minimum(q1, q2),
                               rtol=1e-5)


def test_target_smoothing_noise_is_clipped_and_scaled():
    action = tf.zeros([1000, 2])
    half_range = tf.constant([1., 3.])
    smoothed = smoothed_target_action(action, half_range, 0.2, 0.5,
                                      tf.constant([1, 2]))
    s = smoothed.numpy()
    assert np.all(np.abs(s[:, 0]) <= 0.5 + 1e-6)
    assert np.all(np.abs(s[:, 1]) <= 1.5 + 1e-6)
    assert np.max(np.abs(s[:, 1])) > 1.4  # clipping is hit
    np.testing.assert_allclose(np.std(s, 0), [0.2, 0.6], rtol=0.15)
    # The algorithm's smoothed target actions stay inside the spec.
    set_random_seed(0)
    alg = _td3(_env(), target_policy_noise=5.0, target_policy_noise_clip=5.)
    a = alg._target_action(alg._streams.step(()),
                           tf.random.uniform([256, 1])).numpy()
    assert np.all(a >= 0.) and np.all(a <= 1.)
    assert np.mean(a == 1.) > 0.2


def test_rejects_bad_configuration():
    with pytest.raises(ValueError,
                       match=r"action_spec: Td3Algorithm needs continuous "
                       r"actions.*int64"):
        _td3(_env(action_type='discrete'))
    with pytest.raises(ValueError, match='actor_optimizer is required'):
        _td3(_env(), actor_optimizer=None)
    with pytest.raises(ValueError, match='set by actor_update_period'):
        _td3(_env(), target_update_period=3)


def test_learns_the_copy_task():
    """PolicyUnittestEnv (continuous): action should copy the 0/1 obs."""
    set_random_seed(0)
    batch_size = 16
    env = _env(batch_size, 5)
    alg = _td3(env, gamma=0.5, noise_stddev=0.3)
    buffer = ReplayBuffer(alg.experience_spec, batch_size, 4096, seed=0)
    initial = alg.get_initial_rollout_state(batch_size)
    alg.build_optimizers()

    @functools.partial(tf.function, autograph=False)
    def _iteration(time_step, state):
        state = reset_state_if_necessary(state, initial,
                                         time_step.is_first())
        policy_step = alg.rollout(time_step, state)
        buffer.add_batch(make_experience(time_step, policy_step, ()),
                         time_step.env_id)
        loss = alg.train(buffer.get_batch(64, 2)[0]).loss
        return env.step(policy_step.action), policy_step.state, loss

    time_step, state = env.reset(), initial
    for _ in range(2):
        policy_step = alg.rollout(time_step, state)
        buffer.add_batch(make_experience(time_step, policy_step, ()),
                         time_step.env_id)
        time_step, state = env.step(policy_step.action), policy_step.state
    for _ in range(500):
        time_step, state, loss = _iteration(time_step, state)
        assert np.isfinite(loss.numpy())
    observation = tf.constant([[0.], [1.]])
    greedy = alg.predict(
        TimeStep(step_type=tf.ones([2], tf.int32), reward=tf.zeros([2]),
                 discount=tf.ones([2]), observation=observation,
                 prev_action=tf.zeros([2, 1]), env_id=tf.range(2)),
        ()).action
    reward = 1. - np.mean(np.abs(greedy.numpy() - observation.numpy()))
    assert reward > 0.9, reward
