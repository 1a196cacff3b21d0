"""SacAlgorithm: math, one update (continuous and discrete), gradient
routing, bad specs, and learning the continuous PolicyUnittestEnv."""

import functools

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms.sac_algorithm import (SacAlgorithm,
                                             default_target_entropy)
from alf_rl.data_structures import make_experience
from alf_rl.environments.suite_unittest import PolicyUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.networks import (ActorDistributionNetwork, CriticNetwork,
                             NormalProjectionNetwork, QNetwork)
from alf_rl.ops import distributions as dist_ops
from alf_rl.replay.replay_buffer import ReplayBuffer
from alf_rl.specs import BoundedTensorSpec
from alf_rl.utils.common import set_random_seed

OBS_SPEC = BoundedTensorSpec((1, ), tf.float32, -1, 1)


def _actor_ctor(hidden=(16, )):
    return functools.partial(
        ActorDistributionNetwork,
        fc_layer_params=hidden,
        continuous_projection_net_ctor=functools.partial(
            NormalProjectionNetwork, scale_distribution=True,
            state_dependent_std=True))


def _make_alg(action_spec, lr=1e-3, hidden=(16, ), **kwargs):
    discrete = action_spec.dtype.is_integer
    critic_ctor = (functools.partial(QNetwork, fc_layer_params=hidden)
                   if discrete else functools.partial(
                       CriticNetwork, joint_fc_layer_params=hidden))
    return SacAlgorithm(OBS_SPEC,
                        action_spec,
                        actor_network_ctor=_actor_ctor(hidden),
                        critic_network_ctor=critic_ctor,
                        actor_optimizer=tf_keras.optimizers.Adam(lr),
                        critic_optimizer=tf_keras.optimizers.Adam(lr),
                        alpha_optimizer=tf_keras.optimizers.Adam(lr),
                        **kwargs)


def _rollout_experience(alg, env, num_steps):
    """[num_steps, B] Experience collected with ``alg.rollout``."""
    time_step = env.reset()
    steps = []
    for _ in range(num_steps):
        policy_step = alg.rollout(time_step, ())
        exp = make_experience(time_step, policy_step, ())
        steps.append(exp._replace(rollout_info=dist_ops.
                                  distributions_to_params(exp.rollout_info)))
        time_step = env.step(policy_step.action)
    return tf.nest.map_structure(lambda *x: tf.stack(x), *steps)


def _values(variables):
    return [v.numpy().copy() for v in variables]


# ---------------------------------------------------------------- math


def test_default_target_entropy():
    assert default_target_entropy(
        BoundedTensorSpec((3, ), tf.float32, -1, 1)) == -3.0
    assert default_target_entropy(
        (BoundedTensorSpec((2, ), tf.float32, -1, 1),
         BoundedTensorSpec((), tf.float32, 0, 1))) == -3.0
    two = default_target_entropy(BoundedTensorSpec((), tf.int64, 0, 1))
    assert two == pytest.approx(0.01 * -np.log(0.01))
    five = default_target_entropy(BoundedTensorSpec((), tf.int32, 0, 4))
    assert five == pytest.approx(0.01 * (np.log(4) - np.log(0.01)))


# ---------------------------------------------------------------- specs
@pytest.mark.parametrize('spec', [
    BoundedTensorSpec((2, ), tf.int64, 0, 1),
    tf.TensorSpec((), tf.int32),
    (BoundedTensorSpec((), tf.int64, 0, 1),
     BoundedTensorSpec((1, ), tf.float32, 0, 1)),
    (BoundedTensorSpec((), tf.int64, 0, 1),
     BoundedTensorSpec((), tf.int64, 0, 1)),
])
def test_unsupported_action_spec_raises(spec):
    with pytest.raises(ValueError, match='SacAlgorithm'):
        SacAlgorithm(OBS_SPEC, spec,
                     actor_optimizer=tf_keras.optimizers.Adam())


# ---------------------------------------------------------------- updates
def test_one_update_continuous_trains_everything_and_soft_updates_targets():
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 5, action_type='continuous'))
    tau = 0.3
    alg = _make_alg(env.action_spec(), tau=tau)
    assert alg.target_entropy == -1.0
    assert len(alg.get_optimizer_and_variable_sets()) == 3
    exp = _rollout_experience(alg, env, 6)
    before = _values(alg.trainable_variables)
    target_before = _values(alg._target_critic1.variables +
                            alg._target_critic2.variables)
    # Targets start as exact copies of the critics.
    for t, s in zip(target_before,
                    _values(alg._critic1.variables +
                            alg._critic2.variables)):
        np.testing.assert_array_equal(t, s)
    loss_info = alg.train(exp, mini_batch_length=2)
    assert np.isfinite(float(loss_info.loss))
    assert np.isfinite(float(loss_info.extra.critic))
    for b, v in zip(before, alg.trainable_variables):
        assert np.any(b != v.numpy()), v.name
    # target <- (1 - tau) target + tau critic
    critic_after = _values(alg._critic1.variables + alg._critic2.variables)
    for t0, s1, v in zip(target_before, critic_after,
                         alg._target_critic1.variables +
                         alg._target_critic2.variables):
        np.testing.assert_allclose(v.numpy(), (1 - tau) * t0 + tau * s1,
                                   rtol=1e-5, atol=1e-6)
    # Target variables are not trained.
    trained = {v.ref() for v in alg.trainable_variables}
    assert not any(v.ref() in trained
                   for v in alg._target_critic1.variables)


def test_one_update_discrete_respects_target_update_period():
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 5, action_type='discrete'))
    alg = _make_alg(env.action_spec(), tau=0.5, target_update_period=2)
    exp = _rollout_experience(alg, env, 6)
    before = _values(alg.trainable_variables)
    targets = alg._target_critic1.variables + alg._target_critic2.variables
    target_before = _values(targets)
    loss_info = alg.train(exp, mini_batch_length=2)
    assert np.isfinite(float(loss_info.loss))
    assert float(loss_info.extra.entropy) == pytest.approx(np.log(2),
                                                           rel=1e-2)
    for b, v in zip(before, alg.trainable_variables):
        assert np.any(b != v.numpy()), v.name
    for b, v in zip(target_before, targets):
        np.testing.assert_array_equal(b, v.numpy())
    alg.train(exp, mini_batch_length=2)
    assert all(np.any(b != v.numpy()) for b, v in zip(target_before, targets))


@pytest.mark.parametrize('action_type', ['continuous', 'discrete'])
def test_each_loss_reaches_only_its_own_variables(action_type):
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 3, action_type=action_type))
    alg = _make_alg(env.action_spec())
    exp = _rollout_experience(alg, env, 1)
    exp = tf.nest.map_structure(lambda x: x[0], exp)
    actor = list(alg._actor_network.trainable_variables)
    critics = (list(alg._critic1.trainable_variables) +
               list(alg._critic2.trainable_variables))
    alpha = [alg.log_alpha]
    with tf.GradientTape(persistent=True) as tape:
        info = alg.train_step(exp, ()).info
        actor_loss = tf.reduce_sum(info.actor_loss)
        alpha_loss = tf.reduce_sum(info.alpha_loss)
        critic_out = tf.reduce_sum(info.critic1 + info.critic2)
        target_value = tf.reduce_sum(info.target_value)

    def _reached(loss, variables):
        grads = tape.gradient(loss, variables)
        return [g is not None and float(tf.reduce_sum(tf.abs(g))) > 0
                for g in grads]

    assert any(_reached(actor_loss, actor))
    assert not any(_reached(actor_loss, critics + alpha))
    assert _reached(alpha_loss, alpha) == [True]
    assert not any(_reached(alpha_loss, actor + critics))
    assert not any(_reached(critic_out, actor + alpha))
    assert not any(_reached(target_value, actor + critics + alpha))


@pytest.mark.parametrize('action_type', ['continuous', 'discrete'])
def test_actions_are_inside_the_spec(action_type):
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(8, 3, action_type=action_type))
    spec = env.action_spec()
    alg = _make_alg(spec)
    time_step = env.reset()
    for step in (alg.predict(time_step, ()), alg.rollout(time_step, ())):
        action = step.action.numpy()
        assert step.action.dtype == spec.dtype
        assert action.shape == (8, ) + tuple(spec.shape.as_list())
        assert np.all(action >= spec.minimum) and np.all(
            action <= spec.maximum)


def test_saturated_tanh_sample_keeps_log_prob_finite():
    """A huge pre-tanh mean must not give atanh(1) = inf in log pi."""
    set_random_seed(0)
    spec = BoundedTensorSpec((1, ), tf.float32, 0, 1)
    alg = _make_alg(spec)
    proj = alg._actor_network._projections[0]
    proj._mean_layer.bias.assign([30.0])
    env = TFPyEnvironment(PolicyUnittestEnv(4, 3, action_type='continuous'))
    exp = _rollout_experience(alg, env, 4)
    loss_info = alg.train(exp, mini_batch_length=2)
    assert np.isfinite(float(loss_info.loss))


# ---------------------------------------------------------------- learning
def test_learns_continuous_policy_unittest_env():
    """Copy the 0/1 observation with a [0, 1] action: greedy reward > 0.92
    (a uniform policy earns 0.5). A low initial temperature and a tighter
    entropy target than -dim(A) make the greedy action reach the bounds
    within a few hundred updates."""
    set_random_seed(0)
    batch_size, episode_length = 16, 4
    env = TFPyEnvironment(
        PolicyUnittestEnv(batch_size, episode_length,
                          action_type='continuous'))
    alg = _make_alg(env.action_spec(), lr=3e-3, hidden=(32, 32),
                    tau=0.05, gamma=0.5, initial_log_alpha=np.log(0.1),
                    target_entropy=-3.0)
    exp_spec = alg.prepare_off_policy_specs(batch_size)
    buffer = ReplayBuffer(exp_spec, batch_size, capacity=batch_size * 400,
                          seed=0)
    env_ids = tf.range(batch_size)

    @tf.function(autograph=False)
    def collect(time_step):
        policy_step = alg.rollout(time_step, ())
        exp = make_experience(time_step, policy_step, ())
        buffer.add_batch(exp, env_ids)
        return env.step(policy_step.action)

    @tf.function(autograph=False)
    def update():
        exp, _ = buffer.get_batch(64, 2)
        return alg.train(exp)

    @tf.function(autograph=False)
    def greedy_reward(time_step):
        total = tf.zeros([])
        for _ in range(episode_length * 4):
            time_step = env.step(alg.predict(time_step, ()).action)
            total += tf.reduce_sum(
                tf.where(time_step.is_first(), 0.0, time_step.reward))
        return total / (batch_size * episode_length * 3)

    time_step = env.reset()
    for _ in range(8):
        time_step = collect(time_step)
    for _ in range(500):
        time_step = collect(time_step)
        loss_info = update()
    assert np.isfinite(float(loss_info.loss))
    reward = float(greedy_reward(env.reset()))
    assert reward > 0.92, reward
