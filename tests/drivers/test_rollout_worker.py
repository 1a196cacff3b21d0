"""RolloutWorker: the actor side of asynchronous training."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms import DqnAlgorithm, PPOAlgorithm
from alf_rl.utils.actor_messages import describe_actor
from alf_rl.drivers.rollout_worker import (RolloutWorker,
                                           check_same_variables,
                                           publishable_variables, snapshot)
from alf_rl.environments.suite_unittest import PolicyUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.networks import (ActorDistributionNetwork, QNetwork,
                             ValueNetwork)
from alf_rl.ops import distributions as dist_ops
from alf_rl.utils.common import set_random_seed
from alf_rl.utils.normalizers import StreamingMeanVarNormalizer


def _ppo(env, normalize=False):
    spec = env.observation_spec()
    return PPOAlgorithm(
        spec, env.action_spec(),
        actor_network_ctor=lambda o, a: ActorDistributionNetwork(
            o, a, fc_layer_params=(8, )),
        value_network_ctor=lambda o: ValueNetwork(o, fc_layer_params=(8, )),
        observation_normalizer_ctor=(StreamingMeanVarNormalizer
                                     if normalize else None),
        optimizer=tf_keras.optimizers.Adam(1e-3))


def _env(seed=0):
    return TFPyEnvironment(PolicyUnittestEnv(3, 5, seed=seed))


def test_worker_acts_with_the_published_weights():
    set_random_seed(0)
    learner = _ppo(_env(), normalize=True)
    learner.prepare_off_policy_specs(3)
    learner.build_optimizers()
    # Make the learner's weights differ from a fresh copy's.
    for v in learner.trainable_variables:
        v.assign(v + 0.1)
    worker = RolloutWorker(_env(1), _ppo(_env(), normalize=True),
                           actor_index=2, unroll_length=4, seed=5)
    published = publishable_variables(learner)
    check_same_variables(published, worker.variable_signature(), 'actor 2')
    worker.set_weights(11, snapshot(published, as_numpy=True))
    message = worker.unroll(as_numpy=True)
    exp = message.experience
    assert (message.policy_version, message.actor_index) == (11, 2)
    # Time-major [K, B], as the replay buffer reads it.
    assert exp.step_type.shape == (4, 3)
    # Global environment ids: actor 2 of batch 3 holds envs 6, 7, 8.
    np.testing.assert_array_equal(exp.env_id, [[6, 7, 8]] * 4)
    # The stored behaviour distribution is the learner's on the same
    # (normalized) observations: the worker acts with its weights.
    time_step = tf.nest.map_structure(lambda x: tf.constant(x[0]), exp)
    from alf_rl.data_structures import experience_to_time_step
    step = learner.rollout(learner.transform_timestep(
        experience_to_time_step(time_step)),
                           learner.get_initial_rollout_state(3))
    expected = dist_ops.distributions_to_params(step.info).action_distribution
    np.testing.assert_allclose(
        tf.nest.flatten(exp.rollout_info.action_distribution)[0][0],
        tf.nest.flatten(expected)[0].numpy(), rtol=1e-5)
    # The worker never updates statistics: its normalizer equals the
    # learner's after stepping.
    for mine, theirs in zip(worker._published, published):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def test_rollout_owned_variables_are_not_overwritten():
    env = _env()

    def dqn():
        return DqnAlgorithm(env.observation_spec(), env.action_spec(),
                            q_network_ctor=lambda o, a: QNetwork(
                                o, a, fc_layer_params=(8, )),
                            optimizer=tf_keras.optimizers.Adam(1e-3))

    learner = dqn()
    learner.prepare_off_policy_specs(3)
    worker = RolloutWorker(_env(1), dqn(), 0, unroll_length=3, seed=1)
    counter = learner.rollout_owned_variables()[0]
    assert counter.ref() not in {v.ref() for v in
                                 publishable_variables(learner)}
    worker.set_weights(0, snapshot(publishable_variables(learner)),
                       rollout_owned=[np.int64(40)])
    message = worker.unroll()
    # Three batched rollout calls after the 40 given at start.
    assert [int(x) for x in message.rollout_owned] == [43]
    worker.set_weights(1, snapshot(publishable_variables(learner)))
    assert [int(x) for x in worker.unroll().rollout_owned] == [46]


def test_mismatched_algorithms_and_bad_settings_are_refused():
    env = _env()
    learner = _ppo(env)
    learner.prepare_off_policy_specs(3)
    other = [('w', (3, ), 'float32')]
    with pytest.raises(ValueError, match='actor 1: its algorithm has 1 '
                       'published variables'):
        check_same_variables(publishable_variables(learner), other,
                             'actor 1')
    with pytest.raises(ValueError, match='unroll_length must be >= 1'):
        RolloutWorker(_env(), _ppo(env), 0, unroll_length=0, seed=0)
    worker = RolloutWorker(_env(), _ppo(env), 0, unroll_length=2, seed=0)
    with pytest.raises(ValueError, match='actor 0: got 1 weights'):
        worker.set_weights(0, [np.zeros(3)])
    assert describe_actor(1, 4) == 'actor 1 (environments 4-7)'
    assert describe_actor(3, 1) == 'actor 3 (environment 3)'
