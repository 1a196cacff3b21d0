"""Observation/reward normalization options of RLAlgorithm."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms import ActorCriticAlgorithm, ActorCriticLoss
from alf_rl.data_structures import make_experience
from alf_rl.drivers import OnPolicyDriver
from alf_rl.environments.suite_unittest import PolicyUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.ops import distributions as dist_ops
from alf_rl.utils.common import set_random_seed
from alf_rl.utils.normalizers import (AdaptiveScalarNormalizer,
                                      StreamingMeanVarNormalizer)


def _make(seed=0):
    set_random_seed(seed)
    env = TFPyEnvironment(PolicyUnittestEnv(16, 5, seed=seed))
    alg = ActorCriticAlgorithm(
        env.observation_spec(), env.action_spec(),
        loss=ActorCriticLoss(entropy_regularization=0.01),
        optimizer=tf_keras.optimizers.Adam(1e-2),
        observation_normalizer_ctor=StreamingMeanVarNormalizer,
        reward_normalizer_ctor=lambda: AdaptiveScalarNormalizer(
            update_rate=0.01),
        reward_clip_value=5.0)
    return env, alg


def test_rollout_updates_statistics_and_training_learns():
    env, alg = _make()
    driver = OnPolicyDriver(env, alg, train_interval=8, final_step_mode='none')
    for _ in range(60):
        driver.run()
    norm = alg._observation_normalizer
    # 60 iterations x 8 rollout steps x 16 envs, each seen once.
    assert float(norm.count) == 60 * 8 * 16
    # Observations are random 0/1 bits: mean 0.5, variance 0.25.
    assert float(norm.mean[0]) == pytest.approx(0.5, abs=0.03)
    assert float(norm.variance[0]) == pytest.approx(0.25, abs=0.02)
    assert float(alg._reward_normalizer.variance) > 0
    average_return = [m for m in driver.metrics
                      if m.name == 'AverageReturn'][0].result()
    assert float(average_return) >= 3.5  # of at most 4


@pytest.mark.parametrize('mode, steps_per_iteration', [('redo', 8),
                                                       ('skip', 9)])
def test_each_env_step_is_counted_once(mode, steps_per_iteration):
    # 'redo' runs rollout on the final step twice (to bootstrap, then again
    # as the next iteration's first step): it is counted once. 'skip'
    # executes that final step, so it is a new step every iteration.
    env, alg = _make()
    driver = OnPolicyDriver(env, alg, train_interval=8, final_step_mode=mode)
    for _ in range(3):
        driver.run()
    count = float(alg._observation_normalizer.count)
    assert count == 3 * steps_per_iteration * 16


def test_replay_training_does_not_update_statistics():
    env, alg = _make(1)
    alg.prepare_off_policy_specs()
    ts = env.reset()
    state = alg.get_initial_rollout_state(16)
    steps = []
    for _ in range(4):
        transformed = alg.transform_timestep(ts, update_normalizers=True)
        step = alg.rollout(transformed, state)
        steps.append(make_experience(ts, step._replace(
            info=dist_ops.distributions_to_params(step.info)), ()))
        ts = env.step(step.action)
    experience = tf.nest.map_structure(lambda *x: tf.stack(x), *steps)
    count = float(alg._observation_normalizer.count)
    mean = alg._observation_normalizer.mean.numpy().copy()
    loss = alg.train(experience)
    assert np.isfinite(float(loss.loss))
    assert float(alg._observation_normalizer.count) == count == 4 * 16
    np.testing.assert_array_equal(alg._observation_normalizer.mean, mean)
