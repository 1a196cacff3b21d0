"""Tests for DdpgAlgorithm: one update, targets, noise, loss math, learning."""

import functools

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms.ddpg_algorithm import DdpgAlgorithm, DdpgInfo
from alf_rl.data_structures import (StepType, TimeStep, TrainingInfo,
                                    make_experience)
from alf_rl.environments.suite_unittest import PolicyUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.networks import ActorNetwork, CriticNetwork
from alf_rl.ops import distributions as dist_ops
from alf_rl.replay.replay_buffer import ReplayBuffer
from alf_rl.specs import BoundedTensorSpec
from alf_rl.utils.common import reset_state_if_necessary, set_random_seed


def _env(batch_size=4, episode_length=5, action_type='continuous'):
    return TFPyEnvironment(
        PolicyUnittestEnv(batch_size, episode_length,
                          action_type=action_type))


def _ddpg(env, **kwargs):
    kwargs.setdefault('actor_network_ctor',
                      lambda o, a: ActorNetwork(o, a, fc_layer_params=(16, )))
    kwargs.setdefault(
        'critic_network_ctor',
        lambda s: CriticNetwork(s, joint_fc_layer_params=(16, )))
    return DdpgAlgorithm(env.observation_spec(), env.action_spec(),
                         actor_optimizer=tf_keras.optimizers.Adam(1e-2),
                         critic_optimizer=tf_keras.optimizers.Adam(1e-2),
                         **kwargs)


def _collect(alg, env, num_steps):
    """Rolls ``alg`` out for ``num_steps``; Experience [num_steps, B]."""
    time_step = env.reset()
    state = alg.get_initial_rollout_state(env.batch_size)
    initial = state
    rows = []
    for _ in range(num_steps):
        state = reset_state_if_necessary(state, initial,
                                         time_step.is_first())
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


def _target_variables(alg):
    return list(alg._target_actor_network.trainable_variables) + [
        v for c in alg._target_critic_networks for v in c.trainable_variables
    ]


def _source_variables(alg):
    return list(alg._actor_network.trainable_variables) + [
        v for c in alg._critic_networks for v in c.trainable_variables
    ]


@pytest.mark.parametrize('noise', ['gaussian', 'ou'])
def test_one_update_changes_every_variable_and_soft_updates_targets(noise):
    set_random_seed(0)
    env = _env()
    tau = 0.1
    alg = _ddpg(env, tau=tau, exploration_noise=noise)
    # Targets start as copies and are not trained.
    for t, s in zip(_target_variables(alg), _source_variables(alg)):
        np.testing.assert_array_equal(t.numpy(), s.numpy())
    target_refs = {v.ref() for v in _target_variables(alg)}
    trainable = alg.trainable_variables
    assert len(trainable) == len(_source_variables(alg)) == 8
    assert not any(v.ref() in target_refs for v in trainable)
    sets = alg.get_optimizer_and_variable_sets()
    assert [len(vs) for _, vs in sets] == [4, 4]  # actor, critic

    exp = _collect(alg, env, 6)
    before = _values(trainable)
    loss_info = alg.train(exp)
    assert np.isfinite(loss_info.loss.numpy())
    np.testing.assert_allclose(
        loss_info.loss, loss_info.extra.critic + loss_info.extra.actor,
        rtol=1e-5)
    for v, b in zip(trainable, before):
        assert not np.allclose(v.numpy(), b), v.name
    # target <- (1 - tau) * target + tau * source
    for t, old, new in zip(_target_variables(alg), before,
                           _source_variables(alg)):
        np.testing.assert_allclose(t.numpy(),
                                   (1 - tau) * old + tau * new.numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_target_update_period_delays_target_updates():
    set_random_seed(0)
    env = _env()
    alg = _ddpg(env, tau=1.0, target_update_period=2)
    exp = _collect(alg, env, 6)
    initial = _values(_source_variables(alg))
    alg.train(exp)
    for t, old in zip(_target_variables(alg), initial):
        np.testing.assert_array_equal(t.numpy(), old)
    alg.train(exp)
    for t, s in zip(_target_variables(alg), _source_variables(alg)):
        np.testing.assert_array_equal(t.numpy(), s.numpy())  # tau = 1


def test_rollout_and_predict_actions_in_bounds():
    set_random_seed(0)
    spec = BoundedTensorSpec((2, ), tf.float32, [-2., 0.], [2., 1.])
    obs_spec = tf.TensorSpec((3, ))
    time_step = TimeStep(step_type=tf.fill([64], StepType.MID),
                         reward=tf.zeros([64]),
                         discount=tf.ones([64]),
                         observation=tf.random.normal([64, 3]),
                         prev_action=tf.zeros([64, 2]),
                         env_id=tf.range(64))
    for noise in ['gaussian', 'ou']:
        alg = DdpgAlgorithm(obs_spec, spec, exploration_noise=noise,
                            noise_stddev=3.0,
                            optimizer=tf_keras.optimizers.Adam())
        state = alg.get_initial_rollout_state(64)
        for _ in range(3):
            policy_step = alg.rollout(time_step, state)
            state = policy_step.state
            a = policy_step.action.numpy()
            assert policy_step.action.dtype == tf.float32
            assert a.shape == (64, 2)
            assert np.all(a >= [-2., 0.]) and np.all(a <= [2., 1.])
            # large noise: many actions are clipped at the bounds
            assert np.mean(a[:, 0] == 2.) > 0.1
        if noise == 'ou':
            assert state.ou_noise.shape == (64, 2)
            assert np.std(state.ou_noise.numpy()) > 1.0
        else:
            assert tf.nest.flatten(state) == []
        greedy = alg.predict(time_step, ()).action
        again = alg.predict(time_step, ()).action
        np.testing.assert_array_equal(greedy, again)
        assert np.all(greedy.numpy() >= [-2., 0.])
        assert np.all(greedy.numpy() <= [2., 1.])


def test_calc_loss_uses_next_step_reward_discount_and_target():
    alg = _ddpg(_env(), gamma=0.5)
    # T = 3, B = 2
    q = tf.constant([[[1.], [2.]], [[0.], [1.]], [[5.], [5.]]])
    target_q = tf.constant([[9., 9.], [2., 4.], [6., 8.]])
    actor_loss = tf.constant([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    info = TrainingInfo(
        action=tf.zeros([3, 2, 1]),
        step_type=tf.constant([[0, 0], [1, 1], [2, 1]]),
        reward=tf.constant([[0., 0.], [1., 2.], [3., 4.]]),
        discount=tf.constant([[1., 1.], [1., 1.], [0., 1.]]),
        info=DdpgInfo(critic=q, target_critic=target_q,
                      actor_loss=actor_loss),
        rollout_info=(),
        env_id=tf.zeros([3, 2], tf.int32))
    loss = alg.calc_loss(info)
    # y_0 = r_1 + 0.5 * d_1 * Q'_1 = [1 + 1, 2 + 2] = [2, 4]
    # y_1 = r_2 + 0.5 * d_2 * Q'_2 = [3 + 0, 4 + 4] = [3, 8]
    expected_critic = 0.5 * np.square(
        np.array([[2., 4.], [3., 8.]]) - np.array([[1., 2.], [0., 1.]]))
    expected_critic = np.concatenate([expected_critic, [[0., 0.]]])
    np.testing.assert_allclose(loss.extra.critic, expected_critic)
    np.testing.assert_allclose(loss.loss, expected_critic + actor_loss)


def test_actor_loss_does_not_reach_the_critic():
    set_random_seed(0)
    env = _env()
    alg = _ddpg(env)
    exp = _collect(alg, env, 4)
    exp_t = tf.nest.map_structure(lambda x: x[0], exp)
    critic_vars = alg._critic_networks[0].trainable_variables
    with tf.GradientTape() as tape:
        info = alg.train_step(exp_t, ()).info
    grads = tape.gradient(info.actor_loss, critic_vars +
                          alg._actor_network.trainable_variables)
    assert all(g is None for g in grads[:len(critic_vars)])
    assert all(g is not None for g in grads[len(critic_vars):])


def test_rejects_bad_configuration():
    env = _env(action_type='discrete')
    with pytest.raises(ValueError,
                       match=r"action_spec: DdpgAlgorithm needs continuous "
                       r"actions.*int64"):
        _ddpg(env)
    with pytest.raises(ValueError, match="exploration_noise must be"):
        _ddpg(_env(), exploration_noise='uniform')


def train_copy_task(alg, num_iterations, batch_size=16, seed=0):
    """Learns PolicyUnittestEnv (continuous): copy the 0/1 observation.

    Reaches > 0.96 in 500 iterations on seeds 0-2 (both DDPG and TD3).
    Each iteration collects one step of every environment into a replay
    buffer and makes one update on 64 sampled (s, a, r', s') pairs.
    Returns the greedy policy's mean reward, 1 - |a - obs|.
    """
    env = _env(batch_size, 5)
    buffer = ReplayBuffer(alg.experience_spec, batch_size, 4096, seed=seed)
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
    for _ in range(2):  # fill the buffer with 2 steps per environment
        policy_step = alg.rollout(time_step, state)
        buffer.add_batch(make_experience(time_step, policy_step, ()),
                         time_step.env_id)
        time_step, state = env.step(policy_step.action), policy_step.state
    for _ in range(num_iterations):
        time_step, state, loss = _iteration(time_step, state)
        assert np.isfinite(loss.numpy())
    observation = tf.constant([[0.], [1.]])
    greedy = alg.predict(
        TimeStep(step_type=tf.ones([2], tf.int32), reward=tf.zeros([2]),
                 discount=tf.ones([2]), observation=observation,
                 prev_action=tf.zeros([2, 1]), env_id=tf.range(2)),
        ()).action
    return float(1. - np.mean(np.abs(greedy.numpy() - observation.numpy())))


def test_learns_the_copy_task():
    set_random_seed(0)
    alg = _ddpg(_env(16), gamma=0.5, noise_stddev=0.3)
    reward = train_copy_task(alg, 500)
    assert reward > 0.9, reward


@pytest.mark.parametrize('algorithm', ['ddpg', 'td3'])
def test_bootstrap_step_changes_only_the_cost(algorithm):
    """The last row's bootstrap_step (target value only) gives the same
    update as running the full train_step there (its other terms are
    masked), with fewer matmuls."""
    from alf_rl.algorithms.td3_algorithm import Td3Algorithm
    results, matmuls = [], []
    for full_last_row in (False, True):
        set_random_seed(0)
        env = _env()
        if algorithm == 'ddpg':
            alg = _ddpg(env)
        else:
            alg = Td3Algorithm(
                env.observation_spec(), env.action_spec(),
                actor_network_ctor=lambda o, a: ActorNetwork(
                    o, a, fc_layer_params=(16, )),
                critic_network_ctor=lambda s: CriticNetwork(
                    s, joint_fc_layer_params=(16, )),
                actor_optimizer=tf_keras.optimizers.Adam(1e-2),
                critic_optimizer=tf_keras.optimizers.Adam(1e-2))
        if full_last_row:
            alg.bootstrap_step = alg.train_step
        exp = tf.nest.map_structure(lambda x: x[:, :2], _collect(alg, env, 4))
        train = tf.function(lambda e, alg=alg: alg.train(e),
                            autograph=False)
        graph = train.get_concrete_function(exp).graph
        matmuls.append(sum(
            1 for f in [graph.as_graph_def()] for n in f.node
            if n.op == 'MatMul'))
        loss_info = train(exp)
        results.append((float(loss_info.loss),
                        _values(alg.trainable_variables)))
    assert matmuls[0] < matmuls[1]
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-5)
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
