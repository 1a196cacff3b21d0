"""Learning test: MERLIN solves a memory task with a gap of 10 steps that
a feed-forward actor-critic cannot.

``RNNPolicyUnittestEnv(episode_length=15, obs_dim=3, gap=10)`` (the task of
ALF's MERLIN test) shows a +/-1 cue only at FIRST, then zeros; the rewards
arriving with episode steps 10 to 14 are 1 for the action matching the cue
and 0 for the other. Optimal return 5.0; without memory the observation at
those steps carries no information: chance is 2.5.
"""

import functools

import numpy as np
import tf_keras

from alf_rl.algorithms import ActorCriticLoss
from alf_rl.algorithms.merlin_algorithm import (
    MemoryBasedPredictor,
    MerlinAlgorithm,
)
from alf_rl.drivers import OnPolicyDriver
from alf_rl.environments.suite_unittest import RNNPolicyUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.utils.common import set_random_seed
from small_algorithms import small_actor_critic

EPISODE_LENGTH, GAP = 15, 10
OPTIMAL_RETURN = 5.0  # rewarded steps 10..14
CHANCE_RETURN = 2.5


def _a2c(observation_spec, action_spec, optimizer=None):
    """A feed-forward A2C (64 units), gamma 1, entropy bonus 0.01, trained
    by Adam(1e-2) (Adam keeps its moments per variable, so an optimizer of
    its own equals its owner's of the same rate)."""
    return small_actor_critic(
        observation_spec,
        action_spec,
        optimizer=optimizer or tf_keras.optimizers.Adam(1e-2),
        fc_layer_params=(64,),
        loss=ActorCriticLoss(gamma=1.0, entropy_regularization=0.01),
    )


def _merlin(observation_spec, action_spec):
    return MerlinAlgorithm(
        observation_spec,
        action_spec,
        predictor_ctor=functools.partial(
            MemoryBasedPredictor,
            z_dim=8,
            memory_size=16,
            num_read_keys=2,
            lstm_size=(32,),
        ),
        rl_algorithm_ctor=_a2c,
        optimizer=tf_keras.optimizers.Adam(1e-2),
    )


def _feed_forward(observation_spec, action_spec):
    return _a2c(observation_spec, action_spec, tf_keras.optimizers.Adam(1e-2))


def _train(algorithm_ctor, seed, iterations, batch_size=32):
    """Mean AverageReturn of the last 10 iterations."""
    set_random_seed(seed)
    env = TFPyEnvironment(
        RNNPolicyUnittestEnv(
            batch_size, EPISODE_LENGTH, obs_dim=3, gap=GAP, seed=seed
        )
    )
    alg = algorithm_ctor(env.observation_spec(), env.action_spec())
    driver = OnPolicyDriver(env, alg, train_interval=EPISODE_LENGTH)
    metric = [m for m in driver.metrics if m.name == 'AverageReturn'][0]
    returns = []
    for i in range(iterations):
        driver.run()
        if i >= iterations - 10:
            # AverageReturn covers the last 10 episodes; each iteration
            # (15 steps x 32 envs) finishes 32 new ones.
            returns.append(float(metric.result()))
    return float(np.mean(returns))


def test_merlin_remembers_the_cue_and_feed_forward_does_not():
    merlin = _train(_merlin, 0, iterations=400)
    feed_forward = _train(_feed_forward, 0, iterations=200)
    assert merlin >= 0.9 * OPTIMAL_RETURN, (merlin, feed_forward)
    assert feed_forward <= CHANCE_RETURN + 0.5, (merlin, feed_forward)
