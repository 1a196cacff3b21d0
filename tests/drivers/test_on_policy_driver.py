"""OnPolicyDriver: exact counts, tracing, eager == compiled, graph shape."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms import ActorCriticAlgorithm, ActorCriticLoss
from alf_rl.drivers import OnPolicyDriver
from alf_rl.environments.suite_unittest import (PolicyUnittestEnv,
                                                ValueUnittestEnv)
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.networks import ActorDistributionNetwork, ValueNetwork
from alf_rl.utils.common import set_random_seed


def _make(env_cls=ValueUnittestEnv, batch_size=4, episode_length=5,
          lr=1e-2, entropy=None, seed=0):
    set_random_seed(seed)
    env = TFPyEnvironment(env_cls(batch_size, episode_length, seed=seed))
    alg = ActorCriticAlgorithm(
        env.observation_spec(),
        env.action_spec(),
        actor_network_ctor=lambda o, a: ActorDistributionNetwork(
            o, a, fc_layer_params=(16, )),
        value_network_ctor=lambda o: ValueNetwork(o, fc_layer_params=(16, )),
        loss=ActorCriticLoss(entropy_regularization=entropy),
        optimizer=tf_keras.optimizers.Adam(lr))
    return env, alg


def _metric(driver, name):
    return float([m for m in driver.metrics if m.name == name][0].result())


@pytest.mark.parametrize('mode,steps_per_iter', [('redo', 3), ('skip', 4),
                                                 ('none', 3)])
def test_exact_step_and_episode_counts(mode, steps_per_iter):
    env, alg = _make()
    driver = OnPolicyDriver(env, alg, train_interval=3, final_step_mode=mode)
    assert driver.env_steps_per_iteration == steps_per_iter * 4
    for _ in range(10):
        driver.run()
    total = 10 * steps_per_iter  # env.step calls per environment
    # Episodes of 5 steps: FIRST + 4 transitions; the step after LAST is a
    # reset (FIRST), not a transition.
    # Each cycle of 5 env.step calls: 4 transitions (the 4th is LAST), then
    # the reset; a partial cycle of `rem` calls has `rem` transitions and
    # ends an episode only if rem == 4.
    cycles, rem = divmod(total, 5)
    transitions = cycles * 4 + rem
    assert _metric(driver, 'EnvironmentSteps') == transitions * 4
    assert _metric(driver, 'NumberOfEpisodes') == cycles * 4 + (
        4 if rem == 4 else 0)
    assert _metric(driver, 'AverageReturn') == pytest.approx(4.0)
    assert _metric(driver, 'AverageEpisodeLength') == pytest.approx(4.0)


def test_traces_once_over_iterations():
    env, alg = _make()
    driver = OnPolicyDriver(env, alg, train_interval=4)
    for _ in range(5):
        driver.run()
    assert driver.num_traces == 1


def test_one_numpy_function_per_env_step_in_graph():
    env, alg = _make()
    driver = OnPolicyDriver(env, alg, train_interval=4)
    driver.run()
    graph = driver._run_fn.get_concrete_function(
        driver._time_step, driver._policy_state,
        tf.constant(1, tf.int32)).graph
    ops = [op.type for op in graph.get_operations()]
    # The whole unroll is one while loop: its body calls the env once.
    assert ops.count('While') + ops.count('StatelessWhile') >= 1
    # Count distinct Python callbacks (the while body may appear twice: as
    # written and as rewritten for the gradient).
    tokens = set()
    for f in graph._functions.values():
        for n in f.cached_definition.node_def:
            if n.op in ('PyFunc', 'PyFuncStateless', 'EagerPyFunc'):
                tokens.add(n.attr['token'].s)
    assert len(tokens) == 1


def test_eager_equals_compiled_under_fixed_seed():
    results = []
    for use_tf_functions in (True, False):
        env, alg = _make(PolicyUnittestEnv, seed=3)
        driver = OnPolicyDriver(env, alg, train_interval=3,
                                use_tf_functions=use_tf_functions)
        losses = [float(driver.run().loss) for _ in range(3)]
        weights = [v.numpy().copy() for v in alg.trainable_variables]
        results.append((losses, weights))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-4)
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_every_variable_gets_a_gradient():
    env, alg = _make(PolicyUnittestEnv)
    before = [v.numpy().copy() for v in alg.trainable_variables]
    driver = OnPolicyDriver(env, alg, train_interval=4)
    loss = driver.run()
    assert np.isfinite(float(loss.loss))
    for b, v in zip(before, alg.trainable_variables):
        assert not np.allclose(b, v.numpy()), v.name


def test_spec_mismatch_is_rejected_before_training():
    env, _ = _make()
    other_env = TFPyEnvironment(ValueUnittestEnv(4, 5, obs_dim=3))
    _, alg = _make()
    alg3 = ActorCriticAlgorithm(other_env.observation_spec(),
                                other_env.action_spec(),
                                optimizer=tf_keras.optimizers.Adam())
    with pytest.raises(ValueError, match='observation_spec mismatch'):
        OnPolicyDriver(env, alg3)


def test_bad_final_step_mode():
    env, alg = _make()
    with pytest.raises(ValueError, match="final_step_mode"):
        OnPolicyDriver(env, alg, final_step_mode='again')


def test_learns_policy_unittest_task():
    """The suite_unittest policy task: copy the observed bit (reward 1)."""
    env, alg = _make(PolicyUnittestEnv, batch_size=32, episode_length=5,
                     lr=1e-2, entropy=0.01, seed=1)
    driver = OnPolicyDriver(env, alg, train_interval=8)
    for _ in range(150):
        driver.run()
    # 4 rewarded transitions per episode: return 4 is the optimum.
    assert _metric(driver, 'AverageReturn') >= 3.9
