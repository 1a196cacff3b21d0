"""EntropyTargetAlgorithm: the controller's direction, gradient routing,
defaults, checkpointing, and use inside A2C, PPO and SAC."""

import collections
import functools

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp
import tf_keras

from alf_rl.algorithms import (ActorCriticAlgorithm, ActorCriticLoss,
                               EntropyTargetAlgorithm, PPOAlgorithm, PPOLoss,
                               SacAlgorithm)
from alf_rl.algorithms.entropy_target_algorithm import (ADJUST_STAGE,
                                                        FREE_STAGE,
                                                        INIT_STAGE,
                                                        default_target_entropy)
from alf_rl.data_structures import StepType, TrainingInfo, make_experience
from alf_rl.drivers import OnPolicyDriver
from alf_rl.environments.suite_unittest import PolicyUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.networks import (ActorDistributionNetwork, CriticNetwork,
                             NormalProjectionNetwork, ValueNetwork)
from alf_rl.ops import distributions as dist_ops
from alf_rl.specs import BoundedTensorSpec, TensorSpec
from alf_rl.utils.common import set_random_seed

tfd = tfp.distributions
DISCRETE = BoundedTensorSpec((), tf.int64, 0, 1)


def _categorical(p0, shape=(3, 4)):
    """[T, B] two-action categorical with P(a=0) = p0, entropy known."""
    logits = tf.Variable(
        tf.fill(list(shape) + [2], 0.0) +
        tf.constant([np.log(p0), np.log(1 - p0)], tf.float32))
    return logits, tfd.Categorical(logits=logits)


def _entropy(p0):
    return float(-(p0 * np.log(p0) + (1 - p0) * np.log(1 - p0)))


_Info = collections.namedtuple('_Info', ['action_distribution'])


def _update(alg, dist, step_type=None):
    """One update as an owner runs it: ``calc_loss`` (no state change),
    then ``after_train`` (the controller step). Returns the LossInfo."""
    if step_type is None:
        step_type = tf.fill(dist.batch_shape, StepType.MID)
    loss_info = alg.calc_loss(dist, step_type)
    alg.after_train(TrainingInfo(step_type=step_type,
                                 info=_Info(action_distribution=dist)))
    return loss_info


# ---------------------------------------------------------------- control
def test_alpha_rises_below_target_and_falls_above():
    target = 0.3
    alg = EntropyTargetAlgorithm(DISCRETE, initial_alpha=0.1,
                                 target_entropy=target, max_entropy=0.6)
    _, low = _categorical(0.99)  # H = 0.056 < target
    _, high = _categorical(0.5)  # H = 0.693 > target
    step_type = tf.fill([3, 4], StepType.MID)
    alphas = [float(alg.alpha)]
    for _ in range(3):
        _update(alg, low, step_type)
        alphas.append(float(alg.alpha))
    assert int(alg.stage) == ADJUST_STAGE
    assert alphas[1] > alphas[0] and alphas[2] > alphas[1] and (
        alphas[3] > alphas[2]), alphas
    for _ in range(3):
        _update(alg, high, step_type)
        alphas.append(float(alg.alpha))
    # Once adjusting, an entropy above the target lowers alpha every call.
    assert alphas[4] < alphas[3] and alphas[5] < alphas[4] and (
        alphas[6] < alphas[5]), alphas


def test_init_stage_lowers_alpha_until_entropy_below_max_then_frees():
    alg = EntropyTargetAlgorithm(DISCRETE, initial_alpha=0.1,
                                 target_entropy=0.1, max_entropy=0.5,
                                 slow_update_rate=0.01)
    _, uniform = _categorical(0.5)  # H = 0.693 > max_entropy
    _, middle = _categorical(0.85)  # H = 0.423: between target and max
    for i in range(3):
        _update(alg, uniform)
        assert int(alg.stage) == INIT_STAGE
        np.testing.assert_allclose(float(alg.log_alpha),
                                   np.log(0.1) - 0.01 * (i + 1), rtol=1e-5)
    alpha = float(alg.alpha)
    _update(alg, middle)
    assert int(alg.stage) == FREE_STAGE
    _update(alg, middle)  # free stage: alpha left alone
    assert float(alg.alpha) == pytest.approx(alpha)


def test_max_entropy_is_estimated_from_the_first_batch():
    target = 0.1
    alg = EntropyTargetAlgorithm(DISCRETE, target_entropy=target)
    _, uniform = _categorical(0.5)
    _update(alg, uniform)
    expected = target + 0.8 * (np.log(2) - target)
    assert float(alg._max_entropy) == pytest.approx(expected, rel=1e-5)
    assert int(alg.stage) == INIT_STAGE


def test_alpha_never_below_min_alpha():
    alg = EntropyTargetAlgorithm(DISCRETE, initial_alpha=1e-3,
                                 target_entropy=0.0, max_entropy=0.0,
                                 slow_update_rate=1.0, fast_update_rate=1.0,
                                 min_alpha=1e-2)
    _, uniform = _categorical(0.5)
    for _ in range(3):
        _update(alg, uniform)
    assert float(alg.alpha) == pytest.approx(1e-2, rel=1e-5)


def test_controller_runs_compiled():
    alg = EntropyTargetAlgorithm(DISCRETE, target_entropy=0.3,
                                 max_entropy=0.6)
    logits, _ = _categorical(0.99)

    @tf.function(autograph=False)
    def step():
        return _update(alg, tfd.Categorical(logits=logits)).extra.alpha

    first = float(step())
    second = float(step())
    assert second > first > 0.1


def test_calc_loss_changes_no_state_and_after_train_moves_to_its_alpha():
    alg = EntropyTargetAlgorithm(DISCRETE, target_entropy=0.3,
                                 max_entropy=0.6, debug_summaries=True)
    _, low = _categorical(0.99)
    step_type = tf.fill([3, 4], StepType.MID)
    _update(alg, low, step_type)  # init -> free -> adjust
    before = [v.numpy() for v in alg.variables]
    loss_info = alg.calc_loss(low, step_type)
    loss_info = alg.calc_loss(low, step_type)  # twice: still no change
    for b, v in zip(before, alg.variables):
        np.testing.assert_array_equal(b, v.numpy())
    assert float(loss_info.extra.alpha) > float(alg.alpha)
    alg.after_train(TrainingInfo(step_type=step_type,
                                 info=_Info(action_distribution=low)))
    # The controller lands exactly on the alpha calc_loss already used.
    assert float(alg.alpha) == float(loss_info.extra.alpha)
    assert float(alg.stage) == float(loss_info.extra.stage) == ADJUST_STAGE
    np.testing.assert_allclose(
        loss_info.loss, -float(alg.alpha) * _entropy(0.99) * np.ones([3, 4]),
        rtol=1e-5)


# ---------------------------------------------------------------- gradients
def test_loss_gradient_reaches_distribution_not_log_alpha():
    alg = EntropyTargetAlgorithm(DISCRETE, target_entropy=0.3,
                                 max_entropy=0.6)
    logits, _ = _categorical(0.9)
    mask = tf.constant([[1., 1., 1., 1.], [1., 1., 1., 1.], [0., 0., 0., 0.]])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(alg.log_alpha)
        loss_info = alg.calc_loss(tfd.Categorical(logits=logits),
                                  valid_mask=mask)
        loss = tf.reduce_sum(loss_info.loss)
    assert loss_info.loss.shape == (3, 4)
    grad = tape.gradient(loss, logits)
    assert grad is not None and float(tf.reduce_sum(tf.abs(grad))) > 0
    assert tape.gradient(loss, alg.log_alpha) is None
    # -alpha * H: descending it raises the entropy (towards p0 = 0.5).
    assert float(grad[0, 0, 0]) > 0
    np.testing.assert_allclose(loss_info.extra.neg_entropy.numpy(),
                               -_entropy(0.9), rtol=1e-5)
    assert not alg.trainable_variables


def test_sampled_entropy_of_tanh_normal_has_gradient():
    spec = BoundedTensorSpec((2, ), tf.float32, -1, 1)
    alg = EntropyTargetAlgorithm(spec)
    loc = tf.Variable(tf.zeros([5, 3, 2]))
    scale = tf.Variable(tf.fill([5, 3, 2], 0.5))
    with tf.GradientTape() as tape:
        dist = tfd.TransformedDistribution(
            tfd.Independent(tfd.Normal(loc, scale), 1),
            tfp.bijectors.Tanh())
        loss_info = alg.calc_loss(dist, tf.fill([5, 3], StepType.MID))
    assert loss_info.loss.shape == (5, 3)
    assert np.all(np.isfinite(loss_info.loss.numpy()))
    grad = tape.gradient(loss_info.loss, scale)
    assert grad is not None and float(tf.reduce_sum(tf.abs(grad))) > 0


# ---------------------------------------------------------------- defaults
def test_default_target_entropy():
    assert default_target_entropy(DISCRETE) == pytest.approx(
        0.01 * -np.log(0.01))
    five = BoundedTensorSpec((), tf.int32, 0, 4)
    assert default_target_entropy(five) == pytest.approx(
        0.01 * (np.log(4) - np.log(0.01)))
    box = BoundedTensorSpec((3, ), tf.float32, -1, 1)
    assert default_target_entropy(box) == pytest.approx(3 * np.log(0.02))
    assert default_target_entropy(TensorSpec((2, ), tf.float32)) == -2.0
    assert default_target_entropy((box, DISCRETE)) == pytest.approx(
        3 * np.log(0.02) + 0.01 * -np.log(0.01))


@pytest.mark.parametrize('kwargs', [
    dict(initial_alpha=0.0),
    dict(min_alpha=-1.0),
    dict(slow_update_rate=0.5, fast_update_rate=0.1),
    dict(target_entropy=0.5, max_entropy=0.1),
])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError, match='EntropyTargetAlgorithm'):
        EntropyTargetAlgorithm(DISCRETE, **kwargs)


# ---------------------------------------------------------------- in A2C
def _a2c(env, entropy_target_ctor, loss=None, lr=1e-2):
    return ActorCriticAlgorithm(
        env.observation_spec(),
        env.action_spec(),
        actor_network_ctor=lambda o, a: ActorDistributionNetwork(
            o, a, fc_layer_params=(16, )),
        value_network_ctor=lambda o: ValueNetwork(o, fc_layer_params=(16, )),
        loss=loss or ActorCriticLoss(),
        optimizer=tf_keras.optimizers.Adam(lr),
        entropy_target_ctor=entropy_target_ctor)


def test_a2c_rejects_a_constant_entropy_bonus_too():
    env = TFPyEnvironment(PolicyUnittestEnv(2, 5))
    with pytest.raises(ValueError, match='entropy_regularization'):
        _a2c(env, EntropyTargetAlgorithm,
             loss=ActorCriticLoss(entropy_regularization=0.01))


def test_a2c_checkpoint_holds_log_alpha(tmp_path):
    env = TFPyEnvironment(PolicyUnittestEnv(2, 5))
    alg = _a2c(env, EntropyTargetAlgorithm)
    # Found as a sub-algorithm, trained by nobody, saved with the parent.
    assert alg.entropy_target.log_alpha.ref() not in {
        v.ref() for v in alg.trainable_variables}
    assert len(alg.get_optimizer_and_variable_sets()) == 1
    alg.entropy_target.log_alpha.assign(-1.5)
    path = tf.train.Checkpoint(algorithm=alg).save(str(tmp_path / 'ckpt'))
    names = [name for name, _ in tf.train.list_variables(path)]
    assert any('log_alpha' in n for n in names), names
    other = _a2c(env, EntropyTargetAlgorithm)
    tf.train.Checkpoint(algorithm=other).restore(path).expect_partial()
    assert float(other.entropy_target.log_alpha) == pytest.approx(-1.5)


def test_a2c_learns_and_entropy_tracks_target():
    """Copy-the-bit task: an entropy of 0.3 nat still leaves P(correct)
    ~0.92 (return ~3.7 of 4). Observed over the last 50 of 200 iterations,
    seeds 0-3: mean entropy 0.29-0.33, return 3.61-3.72; ~6 s."""
    set_random_seed(1)
    target = 0.3
    env = TFPyEnvironment(PolicyUnittestEnv(32, 5, seed=1))
    alg = _a2c(env, functools.partial(EntropyTargetAlgorithm,
                                      target_entropy=target))
    driver = OnPolicyDriver(env, alg, train_interval=8)
    metric = [m for m in driver.metrics if m.name == 'AverageReturn'][0]
    entropies, returns = [], []
    for i in range(200):
        loss_info = driver.run()
        if i >= 150:
            entropies.append(-float(loss_info.extra.neg_entropy))
            returns.append(float(metric.result()))
    assert float(loss_info.extra.entropy_target.alpha) > 0
    assert int(alg.entropy_target.stage) == ADJUST_STAGE
    assert abs(np.mean(entropies) - target) < 0.1, np.mean(entropies)
    assert np.mean(returns) >= 3.4, np.mean(returns)


# ---------------------------------------------------------------- in PPO
def test_ppo_forwards_entropy_target_ctor():
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 5))
    alg = PPOAlgorithm(
        env.observation_spec(), env.action_spec(),
        loss=PPOLoss(),
        optimizer=tf_keras.optimizers.Adam(1e-3),
        entropy_target_ctor=functools.partial(EntropyTargetAlgorithm,
                                              target_entropy=1.0,
                                              max_entropy=1.0))
    assert isinstance(alg.entropy_target, EntropyTargetAlgorithm)
    alg.prepare_off_policy_specs(4)
    time_step = env.reset()
    steps = []
    for _ in range(4):
        policy_step = alg.rollout(time_step, alg.get_initial_rollout_state(4))
        exp = make_experience(time_step, policy_step, ())
        steps.append(exp._replace(rollout_info=dist_ops.
                                  distributions_to_params(exp.rollout_info)))
        time_step = env.step(policy_step.action)
    exp = tf.nest.map_structure(lambda *x: tf.stack(x), *steps)
    alpha = float(alg.entropy_target.alpha)
    loss_info = alg.train(exp, mini_batch_length=1)
    assert np.isfinite(float(loss_info.loss))
    # Entropy log(2) < target 1.0: the controller raised alpha.
    assert float(alg.entropy_target.alpha) > alpha
    assert float(loss_info.extra.neg_entropy) == pytest.approx(-np.log(2),
                                                               abs=0.01)


# ---------------------------------------------------------------- in SAC
def test_sac_with_entropy_target_trains_one_step():
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 5, action_type='continuous'))
    actor = functools.partial(
        ActorDistributionNetwork, fc_layer_params=(16, ),
        continuous_projection_net_ctor=functools.partial(
            NormalProjectionNetwork, scale_distribution=True,
            state_dependent_std=True))
    alg = SacAlgorithm(
        env.observation_spec(), env.action_spec(),
        actor_network_ctor=actor,
        critic_network_ctor=functools.partial(CriticNetwork,
                                              joint_fc_layer_params=(16, )),
        actor_optimizer=tf_keras.optimizers.Adam(1e-3),
        critic_optimizer=tf_keras.optimizers.Adam(1e-3),
        entropy_target_ctor=functools.partial(EntropyTargetAlgorithm,
                                              initial_alpha=0.2,
                                              max_entropy=10.0))
    assert alg.log_alpha is alg.entropy_target.log_alpha
    assert alg.target_entropy == pytest.approx(np.log(0.01))
    assert len(alg.get_optimizer_and_variable_sets()) == 2
    time_step = env.reset()
    steps = []
    for _ in range(4):
        policy_step = alg.rollout(time_step, ())
        exp = make_experience(time_step, policy_step, ())
        steps.append(exp._replace(rollout_info=dist_ops.
                                  distributions_to_params(exp.rollout_info)))
        time_step = env.step(policy_step.action)
    exp = tf.nest.map_structure(lambda *x: tf.stack(x), *steps)
    before = [v.numpy().copy() for v in alg.trainable_variables]
    loss_info = alg.train(exp, mini_batch_length=2)
    assert np.isfinite(float(loss_info.loss))
    assert float(loss_info.extra.alpha) == 0.0  # no temperature loss
    for b, v in zip(before, alg.trainable_variables):
        assert np.any(b != v.numpy()), v.name
    # The initial entropy (~ -0.1 nat for std 1 squashed into [0, 1]) is
    # below max_entropy and above the target: free stage, alpha unchanged.
    assert int(alg.entropy_target.stage) == FREE_STAGE
    assert float(alg.entropy_target.alpha) == pytest.approx(0.2)
    assert float(loss_info.extra.temperature) == pytest.approx(0.2)


def test_sac_rejects_alpha_optimizer_with_entropy_target():
    env = TFPyEnvironment(PolicyUnittestEnv(2, 5, action_type='continuous'))
    with pytest.raises(ValueError, match='entropy_target_ctor'):
        SacAlgorithm(env.observation_spec(), env.action_spec(),
                     actor_optimizer=tf_keras.optimizers.Adam(),
                     alpha_optimizer=tf_keras.optimizers.Adam(),
                     entropy_target_ctor=EntropyTargetAlgorithm)
