"""PPOLoss and PPOAlgorithm: clipping, GAE preprocessing, training."""

import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp
import tf_keras

from alf_rl.algorithms import PPOAlgorithm, PPOLoss
from alf_rl.algorithms.ppo_algorithm import PPOInfo
from alf_rl.bin.train import train as train_example
from alf_rl.data_structures import (Experience, StepType, TrainingInfo,
                                    make_experience)
from alf_rl.environments.suite_unittest import PolicyUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.networks import ActorDistributionNetwork, ValueNetwork
from alf_rl.ops import distributions as dist_ops
from alf_rl.ops import policy_losses, value_ops
from alf_rl.ops.masks import masked_mean
from alf_rl.utils.common import set_random_seed

F, M, L = StepType.FIRST, StepType.MID, StepType.LAST
EXAMPLE = os.path.join(os.path.dirname(__file__), '..', '..', 'examples',
                       'ppo_cart_pole.gin')


def _categorical(p_of_action_0):
    """[T, B] Categorical over 2 actions with P(a=0) given."""
    p = tf.constant(p_of_action_0, tf.float32)
    return tfp.distributions.Categorical(probs=tf.stack([p, 1. - p], -1))


def _training_info(new_p, old_p, advantages, value=None, old_value=None,
                   returns=None, step_type=None):
    shape = np.shape(advantages)
    zeros = tf.zeros(shape)
    value = zeros if value is None else tf.constant(value, tf.float32)
    return TrainingInfo(
        action=tf.zeros(shape, tf.int32),
        step_type=(tf.fill(shape, M) if step_type is None else
                   tf.constant(step_type, tf.int32)),
        reward=zeros,
        discount=tf.ones(shape),
        info=PPOInfo(action_distribution=_categorical(new_p), value=value),
        rollout_info=PPOInfo(
            action_distribution=_categorical(old_p),
            value=(zeros if old_value is None else tf.constant(
                old_value, tf.float32)),
            returns=zeros if returns is None else tf.constant(
                returns, tf.float32),
            advantages=tf.constant(advantages, tf.float32)))


def test_ppo_loss_clips_the_ratio_on_both_sides():
    # ratio = new / old = 1.5 (above 1 + 0.2) or 0.5 (below 1 - 0.2), with
    # positive and negative advantages.
    new_p = [[0.6, 0.6, 0.3, 0.3]]
    old_p = [[0.4, 0.4, 0.6, 0.6]]
    adv = [[2.0, -2.0, 2.0, -2.0]]
    loss = PPOLoss(normalize_advantages=False)
    ti = _training_info(new_p, old_p, adv)
    loss_info = loss(ti, ti.info.value)
    # -min(r A, clip(r) A):
    #   r=1.5, A=+2: clipped, -1.2*2 = -2.4
    #   r=1.5, A=-2: unclipped, 1.5*2 = 3.0
    #   r=0.5, A=+2: unclipped, -0.5*2 = -1.0
    #   r=0.5, A=-2: clipped, 0.8*2 = 1.6
    np.testing.assert_allclose(loss_info.extra.pg_loss.numpy(),
                               [[-2.4, 3.0, -1.0, 1.6]], rtol=1e-5)
    np.testing.assert_allclose(loss_info.extra.clip_fraction.numpy(),
                               [[1., 1., 1., 1.]])
    # (r - 1) - log r with r = 1.5, 1.5, 0.5, 0.5: >= 0 either way.
    r = np.array([1.5, 1.5, 0.5, 0.5])
    np.testing.assert_allclose(loss_info.extra.approx_kl.numpy(),
                               [(r - 1) - np.log(r)], rtol=1e-5)
    assert np.all(loss_info.extra.approx_kl.numpy() >= 0)
    # Zero values and returns: no value loss; total = pg_loss.
    np.testing.assert_allclose(loss_info.loss.numpy(),
                               loss_info.extra.pg_loss.numpy())


def test_ppo_loss_gradient_vanishes_only_where_clipped():
    logits = tf.Variable(np.log([[[0.6, 0.4], [0.6, 0.4], [0.3, 0.7],
                                  [0.3, 0.7]]]).astype(np.float32))
    old_p = [[0.4, 0.4, 0.6, 0.6]]
    ti = _training_info([[0.5] * 4], old_p, [[2.0, -2.0, 2.0, -2.0]])
    with tf.GradientTape() as tape:
        dist = tfp.distributions.Categorical(logits=logits)
        loss = PPOLoss(normalize_advantages=False)(ti, ti.info.value, dist)
        total = tf.reduce_sum(loss.loss)
    grad = tape.gradient(total, logits).numpy()[0]
    np.testing.assert_allclose(grad[[0, 3]], 0.0, atol=1e-7)
    assert np.all(np.abs(grad[[1, 2]]) > 0.1)


def test_ppo_loss_value_clipping_and_normalization():
    # v_old = 0, v = 1, G = 2, c = 0.2: unclipped 0.5 * 1^2, clipped
    # value 0.2 gives 0.5 * 1.8^2 = 1.62; the max is taken.
    ti = _training_info([[0.5, 0.5]], [[0.5, 0.5]], [[1.0, 3.0]],
                        value=[[1.0, 0.1]], old_value=[[0.0, 0.0]],
                        returns=[[2.0, 0.0]])
    loss = PPOLoss(value_clipping=0.2, td_loss_weight=1.0)
    info = loss(ti, ti.info.value)
    np.testing.assert_allclose(info.extra.td_loss.numpy(),
                               [[1.62, 0.005]], rtol=1e-5)
    # ratio 1 everywhere: pg_loss = -normalized advantage = -(+-1).
    np.testing.assert_allclose(info.extra.pg_loss.numpy(), [[1.0, -1.0]],
                               rtol=1e-5)
    with pytest.raises(ValueError, match='importance_ratio_clipping'):
        PPOLoss(importance_ratio_clipping=0.0)


def test_ppo_loss_without_precomputed_advantages_raises():
    ti = _training_info([[0.5]], [[0.5]], [[1.0]])
    ti = ti._replace(rollout_info=())
    with pytest.raises(ValueError, match='precomputed'):
        PPOLoss()(ti, ti.info.value)


def test_kl_early_stop_reads_the_loss_approx_kl_from_training_info():
    """``continue_training`` computes the loss's ``approx_kl`` (same ops,
    same tensors) from the training info and the valid mask: the stop
    triggers exactly when the reported mean passes 1.5 * target_kl."""
    new_p = [[0.6, 0.3, 0.5], [0.2, 0.5, 0.9]]
    old_p = [[0.4, 0.6, 0.5], [0.5, 0.5, 0.1]]
    ti = _training_info(new_p, old_p, [[1.0] * 3] * 2,
                        step_type=[[M, M, M], [M, L, M]])
    mask = tf.constant([[1., 1., 1.], [1., 0., 1.]])
    loss = PPOLoss()
    extra = loss(ti, ti.info.value).extra
    np.testing.assert_array_equal(
        extra.approx_kl.numpy(),
        policy_losses.approx_kl(loss.log_importance_ratio(ti)).numpy())
    kl = float(masked_mean(extra.approx_kl, mask))
    assert kl > 0.0
    for target_kl, keep_going in ((kl / 1.5 * 1.001, True),
                                  (kl / 1.5 * 0.999, False)):
        alg = PPOAlgorithm(tf.TensorSpec([2]), _discrete_spec(), loss=loss,
                           target_kl=target_kl)
        assert bool(alg.continue_training(ti, mask)) is keep_going
    assert bool(PPOAlgorithm(tf.TensorSpec([2]), _discrete_spec())
                .continue_training(ti, mask))


def test_preprocess_experience_matches_value_ops_gae():
    alg = PPOAlgorithm(tf.TensorSpec([2]), _discrete_spec(),
                       loss=PPOLoss(gamma=0.9, td_lambda=0.7))
    step_type = tf.constant([[F, M, M, L, F, M], [M, M, M, M, M, M]])
    reward = tf.constant([[0., 1., 2., 3., 0., 1.], [1., 0., 1., 0., 1., 0.]])
    discount = tf.constant([[1., 1., 1., 0., 1., 1.], [1.] * 6])
    value = tf.constant([[.5, .4, .3, .2, .1, .6], [1., 2., 3., 4., 5., 6.]])
    zeros = tf.zeros([6, 2])
    # Written [B, T] above for reading; preprocess_experience takes the
    # time-major [T, B] experience, its results are read back as [B, T].
    exp = Experience(step_type=tf.transpose(step_type),
                     reward=tf.transpose(reward),
                     discount=tf.transpose(discount),
                     observation=tf.zeros([6, 2, 2]), prev_action=zeros,
                     env_id=tf.zeros([6, 2], tf.int32), action=zeros,
                     rollout_info=PPOInfo(
                         action_distribution=_categorical(zeros + 0.5),
                         value=tf.transpose(value), returns=zeros,
                         advantages=zeros),
                     state=())
    out = alg.preprocess_experience(exp)
    expected = value_ops.generalized_advantage_estimation(
        tf.transpose(reward), tf.transpose(value), tf.transpose(step_type),
        tf.transpose(discount) * 0.9, 0.7)
    adv = out.rollout_info.advantages.numpy().T
    np.testing.assert_allclose(adv[:, :-1], tf.transpose(expected),
                               rtol=1e-6)
    np.testing.assert_array_equal(adv[:, -1], 0.0)
    # Hand check, env 0: A_2 = r_3 + d_3 * 0.9 * v_3 - v_2 = 3 - 0.3.
    np.testing.assert_allclose(adv[0, 2], 2.7, rtol=1e-6)
    np.testing.assert_allclose(out.rollout_info.returns.numpy().T,
                               adv + value.numpy(), rtol=1e-6)
    # The last column has no successor: marked LAST so it is masked.
    np.testing.assert_array_equal(out.step_type.numpy().T[:, :-1],
                                  step_type.numpy()[:, :-1])
    np.testing.assert_array_equal(out.step_type.numpy()[-1], [L, L])
    # lambda = 1: A = discounted return - value (a value_ops identity).
    alg1 = PPOAlgorithm(tf.TensorSpec([2]), _discrete_spec(),
                        loss=PPOLoss(gamma=0.9, td_lambda=1.0))
    ret = value_ops.discounted_return(reward, value, step_type,
                                      discount * 0.9, time_major=False)
    np.testing.assert_allclose(
        alg1.preprocess_experience(exp).rollout_info.advantages.numpy().T[
            :, :-1],
        ret - value[:, :-1], rtol=1e-5, atol=1e-6)


def _discrete_spec():
    from alf_rl.specs import BoundedTensorSpec
    return BoundedTensorSpec((), tf.int64, 0, 1)


def _make_ppo(env, lr=1e-3, **loss_kwargs):
    return PPOAlgorithm(
        env.observation_spec(), env.action_spec(),
        actor_network_ctor=lambda o, a: ActorDistributionNetwork(
            o, a, fc_layer_params=(16, )),
        value_network_ctor=lambda o: ValueNetwork(o, fc_layer_params=(16, )),
        loss=PPOLoss(**loss_kwargs),
        optimizer=tf_keras.optimizers.Adam(lr))


def _collect(alg, env, time_step, state, num_steps, policy=None):
    """Rolls out; returns (Experience [T, B] as replayed, time step, state)."""
    policy = policy or alg.rollout
    exps = []
    for _ in range(num_steps):
        step = policy(time_step, state)
        exp = make_experience(time_step, step, ())
        exps.append(exp._replace(rollout_info=dist_ops.distributions_to_params(
            exp.rollout_info)))
        state = step.state
        time_step = env.step(alg.env_action(step.action))
    exp = tf.nest.map_structure(lambda *x: tf.stack(x), *exps)
    return exp, time_step, state


@pytest.mark.parametrize('mini_batch_length', [1, 3])
def test_one_training_step_on_a_rolled_out_batch(mini_batch_length):
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 5, action_type='discrete'))
    alg = _make_ppo(env, entropy_regularization=0.01)
    alg.prepare_off_policy_specs(4)
    exp, _, _ = _collect(alg, env, env.reset(),
                         alg.get_initial_rollout_state(4), 6)
    variables = alg.trainable_variables
    assert len(variables) == 8  # actor and value: 2 layers each
    before = [v.numpy().copy() for v in variables]
    loss_info = alg.train(exp, num_updates=2, mini_batch_size=4,
                          mini_batch_length=mini_batch_length)
    assert np.isfinite(loss_info.loss.numpy())
    assert np.isfinite(loss_info.extra.approx_kl.numpy())
    for b, v in zip(before, variables):
        assert np.any(b != v.numpy()), v.name


ITERATIONS = 30


def test_ppo_learns_policy_unittest_env():
    """Discrete copy-the-observation task: reward -> ~1 in seconds."""
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(16, 6, action_type='discrete'))
    alg = _make_ppo(env, lr=1e-2, gamma=0.5)
    alg.prepare_off_policy_specs(16)
    rollout = tf.function(alg.rollout, autograph=False)
    # Few graph copies: each (epoch, mini-batch) update is traced once.
    train = tf.function(lambda exp: alg.train(
        exp, num_updates=2, mini_batch_size=128, mini_batch_length=1),
                        autograph=False)
    time_step = env.reset()
    state = alg.get_initial_rollout_state(16)
    for _ in range(ITERATIONS):
        exp, time_step, state = _collect(alg, env, time_step, state, 8,
                                         rollout)
        train(exp)
    exp, _, _ = _collect(alg, env, env.reset(),
                         alg.get_initial_predict_state(16), 12, alg.predict)
    valid = exp.step_type.numpy() != StepType.FIRST
    # A random policy averages 0.5.
    assert exp.reward.numpy()[valid].mean() >= 0.95


SMALL = [
    'create_environment.num_parallel_environments=2',
    'TrainerConfig.num_env_steps=0',
    'TrainerConfig.num_iterations=2',
    'TrainerConfig.unroll_length=4',
    'TrainerConfig.mini_batch_size=4',
    'TrainerConfig.num_updates_per_train_step=2',
    'TrainerConfig.evaluate=False',
    'TrainerConfig.summary_interval=1',
    'ActorDistributionNetwork.fc_layer_params=(8,)',
    'ValueNetwork.fc_layer_params=(8,)',
]


def test_trainer_path_with_single_step_mini_batches(tmp_path):
    result = train_example(str(tmp_path), [EXAMPLE], SMALL)
    assert result['iterations'] == 2
    # 2 iterations x 4 steps x 2 envs, minus the reset steps.
    assert result['Metrics/EnvironmentSteps'] == 16 - result[
        'Metrics/NumberOfEpisodes']


def test_mini_batch_larger_than_an_iteration_is_rejected(tmp_path):
    # 2 envs x 4 steps = 8 sequences of length 1.
    with pytest.raises(ValueError, match='larger than what one iteration'):
        train_example(str(tmp_path), [EXAMPLE],
                      SMALL + ['TrainerConfig.mini_batch_size=9'])


def test_loss_must_be_ppo_loss():
    from alf_rl.algorithms import ActorCriticLoss
    with pytest.raises(TypeError, match='PPOLoss'):
        PPOAlgorithm(tf.TensorSpec([2]), _discrete_spec(),
                     loss=ActorCriticLoss())
    # And an actor-critic's loss is an ActorCriticLoss (its extra declares
    # the entropy-target fields the algorithm fills in).
    from alf_rl.algorithms import ActorCriticAlgorithm
    with pytest.raises(TypeError, match='ActorCriticLoss'):
        ActorCriticAlgorithm(tf.TensorSpec([2]), _discrete_spec(),
                             loss=lambda training_info, value: None)


def test_continuous_sample_is_stored_and_the_env_gets_it_clipped():
    """An unsquashed normal's sample leaves [0, 1] often (std 2): the
    experience keeps the sample (its log-prob is what PPO trains), the
    environment receives it clipped (it rejects out-of-bound actions)."""
    from functools import partial

    from alf_rl.drivers.driver import Driver
    from alf_rl.networks import NormalProjectionNetwork

    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(16, 5, action_type='continuous'))
    alg = PPOAlgorithm(
        env.observation_spec(), env.action_spec(),
        actor_network_ctor=lambda o, a: ActorDistributionNetwork(
            o, a, fc_layer_params=(8, ),
            continuous_projection_net_ctor=partial(
                NormalProjectionNetwork, init_std=2.0,
                mean_transform=None)),
        value_network_ctor=lambda o: ValueNetwork(o, fc_layer_params=(8, )),
        optimizer=tf_keras.optimizers.Adam(1e-3))
    stored, sent = [], []
    env_step = env.step

    def recording_step(action):
        sent.append(action.numpy())
        return env_step(action)

    env.step = recording_step
    driver = Driver(env, alg, exp_observers=[
        lambda exp: stored.append(exp.action.numpy())],
                    use_tf_functions=False)
    driver.rollout(6)
    env.step = env_step
    stored, sent = np.stack(stored), np.stack(sent)
    assert stored.shape == sent.shape == (6, 16, 1)
    assert np.mean((stored < 0) | (stored > 1)) > 0.3
    np.testing.assert_array_equal(sent, np.clip(stored, 0.0, 1.0))
    np.testing.assert_array_equal(
        alg.env_action(tf.constant(stored[0])).numpy(),
        np.clip(stored[0], 0.0, 1.0))
    # The stored sample trains: finite loss, log-prob of the unclipped
    # action (a clipped one would sit at the bounds).
    alg.prepare_off_policy_specs(16)
    exp, _, _ = _collect(alg, env, env.reset(),
                         alg.get_initial_rollout_state(16), 4)
    assert np.any((exp.action.numpy() < 0) | (exp.action.numpy() > 1))
    loss_info = alg.train(exp, num_updates=1, mini_batch_length=4)
    assert np.isfinite(loss_info.loss.numpy())
