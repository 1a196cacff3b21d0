"""ActorCriticLoss(off_policy_correction='vtrace'): the loss on hand-built
training info, and an actor-critic trained from replayed experience."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp
import tf_keras

from alf_rl.algorithms import ActorCriticAlgorithm
from alf_rl.algorithms.actor_critic_algorithm import ActorCriticInfo
from alf_rl.algorithms.actor_critic_loss import ActorCriticLoss
from alf_rl.data_structures import StepType, TrainingInfo
from alf_rl.drivers.on_policy_driver import OnPolicyDriver
from alf_rl.networks import ActorDistributionNetwork, ValueNetwork
from alf_rl.ops import value_ops
from alf_rl.specs import BoundedTensorSpec
from alf_rl.utils.common import set_random_seed
from alf_rl.utils.schedules import LinearSchedule

F, M, L = StepType.FIRST, StepType.MID, StepType.LAST


def _categorical(p_of_action_0):
    """[T, B] Categorical over 2 actions with P(a=0) given."""
    p = tf.constant(p_of_action_0, tf.float32)
    return tfp.distributions.Categorical(probs=tf.stack([p, 1. - p], -1))


def _training_info(pi, mu, reward, value, step_type=None, action=None):
    """[T, B] training info: current policy ``pi``, behaviour ``mu`` (both
    distributions, ``mu`` None for on-policy info), discount 1."""
    shape = np.shape(reward)
    return TrainingInfo(
        action=(tf.zeros(shape, tf.int32) if action is None else
                tf.constant(action, tf.int32)),
        step_type=(tf.fill(shape, M) if step_type is None else
                   tf.constant(step_type, tf.int32)),
        reward=tf.constant(reward, tf.float32),
        discount=tf.ones(shape),
        info=ActorCriticInfo(action_distribution=pi,
                             value=tf.constant(value, tf.float32)),
        rollout_info=(() if mu is None else ActorCriticInfo(
            action_distribution=mu, value=tf.zeros(shape))))


def _random_info(seed, same_policy):
    rng = np.random.RandomState(seed)
    shape = (6, 3)
    step_type = rng.choice([M, M, M, L], size=shape)
    step_type[0] = F
    pi = _categorical(rng.uniform(.1, .9, shape))
    mu = pi if same_policy else _categorical(rng.uniform(.1, .9, shape))
    return _training_info(pi, mu, rng.normal(size=shape),
                          rng.normal(size=shape), step_type=step_type,
                          action=rng.randint(0, 2, size=shape))


def test_vtrace_weights_the_one_step_advantage_by_the_truncated_ratio():
    # T=2: A^pg_0 = min(1, pi/mu) (r_1 + g v_1 - v_0), vs_0 = v_0 + same.
    # pi/mu = 0.5 in column 0 and 2 (truncated to 1) in column 1.
    gamma = 0.5
    pi = _categorical([[0.3, 0.6], [0.5, 0.5]])
    mu = _categorical([[0.6, 0.3], [0.5, 0.5]])
    ti = _training_info(pi, mu, [[0., 0.], [1., 1.]], [[1., 1.], [2., 2.]])
    loss = ActorCriticLoss(gamma=gamma, off_policy_correction='vtrace')
    info = loss(ti, ti.info.value)
    delta = 1. + gamma * 2. - 1.
    adv = np.array([0.5 * delta, 1.0 * delta])
    np.testing.assert_allclose(info.extra.pg_loss.numpy(),
                               [-adv * np.log([0.3, 0.6]), [0., 0.]],
                               rtol=1e-6)
    np.testing.assert_allclose(info.extra.td_loss.numpy(),
                               [0.5 * adv**2, [0., 0.]], rtol=1e-6)
    r = np.array([0.5, 2.0])
    np.testing.assert_allclose(info.extra.approx_kl.numpy()[0],
                               (r - 1) - np.log(r), rtol=1e-5)
    # Without truncation the ratio 2 doubles column 1's advantage.
    untruncated = ActorCriticLoss(gamma=gamma, off_policy_correction='vtrace',
                                  vtrace_clip_rho=None,
                                  vtrace_clip_pg_rho=None)(ti, ti.info.value)
    np.testing.assert_allclose(untruncated.extra.pg_loss.numpy()[0],
                               -np.array([0.5, 2.0]) * delta *
                               np.log([0.3, 0.6]), rtol=1e-6)


@pytest.mark.parametrize('seed', [0, 1])
def test_vtrace_on_behaviour_data_equals_the_uncorrected_n_step_loss(seed):
    ti = _random_info(seed, same_policy=True)
    plain = ActorCriticLoss(use_gae=False, entropy_regularization=0.01)
    vtrace = ActorCriticLoss(use_gae=False, entropy_regularization=0.01,
                             off_policy_correction='vtrace')
    expected = plain(ti, ti.info.value)
    got = vtrace(ti, ti.info.value)
    np.testing.assert_allclose(got.loss.numpy(), expected.loss.numpy(),
                               atol=1e-6)
    np.testing.assert_allclose(got.extra.approx_kl.numpy(), 0.0, atol=1e-7)
    assert expected.extra.approx_kl == ()


def test_vtrace_with_gae_keeps_the_td_lambda_value_target_on_policy():
    """use_gae: V-trace's lambda is td_lambda; on-policy its value target is
    the TD(lambda) return, its advantage delta_t + d A^lambda_{t+1}."""
    ti = _random_info(2, same_policy=True)
    gamma, lam = 0.9, 0.8
    plain = ActorCriticLoss(gamma=gamma, use_gae=True, td_lambda=lam)
    vtrace = ActorCriticLoss(gamma=gamma, use_gae=True, td_lambda=lam,
                             off_policy_correction='vtrace')
    np.testing.assert_allclose(
        vtrace(ti, ti.info.value).extra.td_loss.numpy(),
        plain(ti, ti.info.value).extra.td_loss.numpy(), atol=1e-6)
    adv, _ = vtrace.advantages_and_returns(ti, ti.info.value)
    args = (ti.reward, ti.info.value, ti.step_type, ti.discount * gamma)
    gae = value_ops.generalized_advantage_estimation(*args, td_lambda=lam)
    one_step = value_ops.generalized_advantage_estimation(*args,
                                                          td_lambda=0.)
    gae_tp1 = tf.concat([gae[1:], tf.zeros_like(gae[:1])], 0)
    expected = tf.where(ti.step_type[:-1] == L, 0.,
                        one_step + gamma * gae_tp1)
    np.testing.assert_allclose(adv.numpy(), expected.numpy(), atol=1e-6)


def test_vtrace_policy_gradient_goes_through_log_pi_only():
    """The gradient of the vtrace loss is -A^pg grad log pi (+ the value
    loss): the ratios and targets are constants."""
    ti = _random_info(3, same_policy=False)
    probs = ti.info.action_distribution.probs_parameter()
    logits = tf.Variable(tf.math.log(probs))
    loss = ActorCriticLoss(off_policy_correction='vtrace')
    with tf.GradientTape(persistent=True) as tape:
        pi = tfp.distributions.Categorical(logits=logits)
        total = tf.reduce_sum(loss(ti, ti.info.value, pi).loss)
        adv, _ = loss.advantages_and_returns(ti, ti.info.value)
        log_pi = pi.log_prob(ti.action)[:-1]
        expected = -tf.reduce_sum(tf.stop_gradient(adv) * log_pi)
    np.testing.assert_allclose(tape.gradient(total, logits).numpy(),
                               tape.gradient(expected, logits).numpy(),
                               atol=1e-6)
    assert np.abs(tape.gradient(total, logits).numpy()).max() > 1e-3


def test_vtrace_without_a_behaviour_policy_raises():
    ti = _random_info(0, same_policy=True)
    loss = ActorCriticLoss(off_policy_correction='vtrace')
    for rollout_info in ((), ActorCriticInfo(value=ti.info.value)):
        with pytest.raises(ValueError,
                           match="vtrace needs the behaviour policy's action "
                           "distribution in rollout_info.*OffPolicyTrainer"):
            loss(ti._replace(rollout_info=rollout_info), ti.info.value)


def test_bad_off_policy_options_are_refused():
    with pytest.raises(ValueError, match="off_policy_correction: expected "
                       "one of None, 'vtrace', got 'retrace'"):
        ActorCriticLoss(off_policy_correction='retrace')
    with pytest.raises(ValueError, match='vtrace_clip_rho: .* got 0'):
        ActorCriticLoss(off_policy_correction='vtrace', vtrace_clip_rho=0.)
    with pytest.raises(ValueError, match='vtrace_clip_pg_rho: .* got -1'):
        ActorCriticLoss(off_policy_correction='vtrace',
                        vtrace_clip_pg_rho=-1.)
    with pytest.raises(ValueError, match='use_td_lambda_return=False'):
        ActorCriticLoss(off_policy_correction='vtrace', use_gae=True,
                        use_td_lambda_return=False)


def _algorithm(env, loss):
    return ActorCriticAlgorithm(
        env.observation_spec(), env.action_spec(),
        actor_network_ctor=lambda o, a: ActorDistributionNetwork(
            o, a, fc_layer_params=(8, )),
        value_network_ctor=lambda o: ValueNetwork(o, fc_layer_params=(8, )),
        loss=loss,
        optimizer=tf_keras.optimizers.SGD(0.5))


def _gradients(alg, experience, spy):
    calls = spy([alg.optimizer])
    loss_info = alg.train(experience)
    assert np.isfinite(float(loss_info.loss))
    (_, grads_and_vars), = calls
    return [g.numpy() for g, _ in grads_and_vars]


def test_vtrace_from_replay_corrects_stale_data_only(
        policy_unittest_env, collect_experience, spy_apply_gradients):
    """Two actor-critics with the same weights, one with V-trace, trained
    from replay: on data of their own policy the updates are the same; on
    data of an older copy of the policy they differ (and stay finite)."""
    set_random_seed(0)
    env = policy_unittest_env(batch_size=4, episode_length=5)
    plain = _algorithm(env, ActorCriticLoss(use_gae=False))
    vtrace = _algorithm(env, ActorCriticLoss(
        use_gae=False, off_policy_correction='vtrace'))
    collect_experience(vtrace, env, 1)  # builds its variables
    experience = collect_experience(plain, env, 6)
    for target, source in zip(vtrace.trainable_variables,
                              plain.trainable_variables):
        target.assign(source)

    fresh_plain = _gradients(plain, experience, spy_apply_gradients)
    fresh_vtrace = _gradients(vtrace, experience, spy_apply_gradients)
    assert len(fresh_plain) == len(plain.trainable_variables)
    for g_plain, g_vtrace in zip(fresh_plain, fresh_vtrace):
        np.testing.assert_allclose(g_vtrace, g_plain, atol=1e-6)

    # Both moved one SGD step: ``experience`` is now an older policy's.
    for target, source in zip(vtrace.trainable_variables,
                              plain.trainable_variables):
        target.assign(source)
    stale_plain = _gradients(plain, experience, spy_apply_gradients)
    stale_vtrace = _gradients(vtrace, experience, spy_apply_gradients)
    assert all(np.all(np.isfinite(g)) for g in stale_vtrace)
    difference = max(np.abs(a - b).max()
                     for a, b in zip(stale_plain, stale_vtrace))
    assert difference > 1e-3


def test_vtrace_in_the_on_policy_driver_is_refused_at_trace_time(
        policy_unittest_env):
    """The on-policy driver's training info has no rollout_info: the loss
    says how to train instead, when the driver's step is traced."""
    set_random_seed(0)
    env = policy_unittest_env(batch_size=2, episode_length=3)
    alg = _algorithm(env, ActorCriticLoss(off_policy_correction='vtrace'))
    driver = OnPolicyDriver(env, alg, train_interval=2)
    with pytest.raises(ValueError, match="vtrace needs the behaviour "
                       "policy's.*train through OffPolicyTrainer"):
        driver.run()


def test_entropy_schedule_weights_the_bonus_by_the_update_counter():
    """entropy_regularization = LinearSchedule(0.01 -> 0 over 10 updates):
    at counter 4 the loss is the constant-0.006 loss; the counter is the
    one ActorCriticAlgorithm counts in after_train."""
    ti = _random_info(3, same_policy=True)
    scheduled = ActorCriticLoss(
        use_gae=False, entropy_regularization=LinearSchedule(0.01, 0.0, 10))
    with pytest.raises(ValueError, match='no step counter was set'):
        scheduled(ti, ti.info.value)
    counter = tf.Variable(4, dtype=tf.int64)
    scheduled.set_step_counter(counter)
    np.testing.assert_allclose(scheduled.entropy_weight().numpy(), 0.006,
                               rtol=1e-6)
    neg_entropy = -ti.info.action_distribution.entropy().numpy()
    plain = ActorCriticLoss(use_gae=False)(ti, ti.info.value).loss.numpy()
    np.testing.assert_allclose(
        scheduled(ti, ti.info.value).loss.numpy(),
        plain + 0.006 * neg_entropy, rtol=1e-5, atol=1e-7)
    counter.assign(20)  # past num_steps: the final value, no bonus
    np.testing.assert_allclose(scheduled(ti, ti.info.value).loss.numpy(),
                               plain, rtol=1e-6, atol=1e-7)
    assert ActorCriticLoss(
        entropy_regularization=0.01).entropy_weight().numpy() == \
        pytest.approx(0.01)

    obs = tf.TensorSpec([2], tf.float32)
    act = BoundedTensorSpec([], tf.int32, 0, 1)
    loss = ActorCriticLoss(entropy_regularization=LinearSchedule(0.01, 0.0,
                                                                 10))
    alg = ActorCriticAlgorithm(obs, act, loss=loss)
    for _ in range(3):
        alg.after_train(ti)
    np.testing.assert_allclose(loss.entropy_weight().numpy(), 0.007,
                               rtol=1e-6)
    assert ActorCriticAlgorithm(obs, act)._entropy_updates is None
