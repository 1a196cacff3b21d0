"""Tests for suite_unittest.load / unittest_load_fn: the unittest
environments as unbatched environments for create_environment."""

import numpy as np
import pytest

from alf_rl.data_structures import StepType
from alf_rl.environments import suite_unittest
from alf_rl.environments.suite_unittest import RNNPolicyUnittestEnv
from alf_rl.environments.utils import create_environment


def test_unbatched_environment_matches_the_batched_one():
    single = suite_unittest.load(
        'RNNPolicyUnittest', seed=5, episode_length=4, obs_dim=2, gap=2
    )
    batched = RNNPolicyUnittestEnv(1, 4, obs_dim=2, seed=5, gap=2)
    assert not single.batched
    a, b = single.reset(), batched.reset()
    for t in range(6):
        assert a.observation.shape == (2,)
        np.testing.assert_array_equal(a.observation, b.observation[0])
        assert a.step_type == b.step_type[0]
        assert a.reward == b.reward[0]
        action = np.int64(t % 2)
        a, b = single.step(action), batched.step(np.array([action]))


def test_create_environment_batches_it_and_trains_the_cue_task_shape():
    env = create_environment(
        'RNNPolicyUnittest',
        num_parallel_environments=3,
        seed=0,
        env_load_fn=suite_unittest.unittest_load_fn(
            episode_length=15, obs_dim=3, gap=10
        ),
    )
    time_step = env.reset()
    assert env.batch_size == 3
    assert time_step.observation.shape == (3, 3)
    np.testing.assert_array_equal(time_step.step_type, [StepType.FIRST] * 3)
    # The cue is +/-1 at FIRST, zeros after.
    assert np.all(np.abs(time_step.observation.numpy()) == 1)
    time_step = env.step(np.zeros([3], np.int64))
    assert np.all(time_step.observation.numpy() == 0)


def test_unknown_name_is_refused():
    with pytest.raises(ValueError, match="env_name must be one of"):
        suite_unittest.load('Nope')
