"""gym_wrappers: SelectObservationIndices and its gin/pickle-friendly factories."""

import pickle

import gin
import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf
from gymnasium import spaces

from alf_rl.environments import suite_gym
from alf_rl.environments.gym_wrappers import (SelectObservationIndices,
                                              gym_load_fn,
                                              select_observation_indices)
from alf_rl.environments.parallel_environment import ParallelPyEnvironment
from alf_rl.environments.utils import create_environment
from alf_rl.specs import BoundedTensorSpec


def test_cart_pole_without_velocities_space_and_values():
    full = gym.make('CartPole-v1')
    env = SelectObservationIndices(gym.make('CartPole-v1'), (0, 2))
    space = env.observation_space
    assert space.shape == (2, ) and space.dtype == np.float32
    np.testing.assert_array_equal(space.low, full.observation_space.low[[0, 2]])
    np.testing.assert_array_equal(space.high,
                                  full.observation_space.high[[0, 2]])
    assert np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))
    assert env.indices == (0, 2)

    obs, _ = env.reset(seed=3)
    full_obs, _ = full.reset(seed=3)
    np.testing.assert_array_equal(obs, full_obs[[0, 2]])
    assert obs.dtype == np.float32
    for action in [1, 0, 1, 1]:
        obs, reward, terminated, truncated, _ = env.step(action)
        full_obs, full_reward, *_ = full.step(action)
        np.testing.assert_array_equal(obs, full_obs[[0, 2]])
        assert reward == full_reward
        assert space.contains(obs)


def test_order_negative_indices_and_other_axes():
    env = SelectObservationIndices(gym.make('CartPole-v1'), [-1, 1])
    assert env.indices == (3, 1)
    obs, _ = env.reset(seed=0)
    full_obs, _ = gym.make('CartPole-v1').reset(seed=0)
    np.testing.assert_array_equal(obs, full_obs[[3, 1]])

    class ImageEnv(gym.Env):
        observation_space = spaces.Box(0, 255, (2, 2, 3), np.uint8)
        action_space = spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            return np.arange(12, dtype=np.uint8).reshape(2, 2, 3), {}

    rows = SelectObservationIndices(ImageEnv(), [1], axis=0)
    assert rows.observation_space.shape == (1, 2, 3)
    assert rows.observation_space.dtype == np.uint8
    np.testing.assert_array_equal(rows.reset()[0],
                                  np.arange(6, 12).reshape(1, 2, 3))
    channels = SelectObservationIndices(ImageEnv(), [2, 0])
    assert channels.observation_space.shape == (2, 2, 2)
    np.testing.assert_array_equal(channels.reset()[0][0, 0], [2, 0])


@pytest.mark.parametrize('indices, match', [
    ((), 'must not be empty'),
    ((0, 4), r'\[4\] are out of range for axis 0 of size 4'),
    ((0, -4, 0), 'repeat'),
    ((1, -3), 'repeat'),
    ('ab', 'sequence of ints'),
])
def test_bad_indices_raise(indices, match):
    with pytest.raises(ValueError, match=match):
        SelectObservationIndices(gym.make('CartPole-v1'), indices)


def test_bad_space_and_axis_raise():
    with pytest.raises(ValueError, match='axis 1 is out of range'):
        SelectObservationIndices(gym.make('CartPole-v1'), (0, ), axis=1)
    with pytest.raises(TypeError, match='Box observation space'):
        SelectObservationIndices(gym.make('FrozenLake-v1'), (0, ))


def test_through_suite_gym_load_specs_and_time_steps():
    env = suite_gym.load('CartPole-v1', seed=5,
                         gym_env_wrappers=[select_observation_indices((0, 2))])
    spec = env.observation_spec()
    assert spec.shape == (2, ) and spec.dtype == tf.float32
    assert isinstance(spec, BoundedTensorSpec)
    np.testing.assert_allclose(spec.maximum, [4.8, 0.41887903], rtol=1e-6)
    full = suite_gym.load('CartPole-v1', seed=5)
    ts, full_ts = env.reset(), full.reset()
    np.testing.assert_array_equal(ts.observation, full_ts.observation[[0, 2]])
    # The time limit is still applied outside the wrapper.
    assert env.gym_env.spec.max_episode_steps == 500
    steps = 0
    while not ts.is_last():
        ts = env.step(np.int64(steps % 2))
        full_ts = full.step(np.int64(steps % 2))
        np.testing.assert_array_equal(ts.observation,
                                      full_ts.observation[[0, 2]])
        assert ts.reward == full_ts.reward and ts.discount == full_ts.discount
        steps += 1
    assert full_ts.is_last() and 5 < steps < 100


def test_load_fn_is_picklable_and_runs_in_subprocesses():
    load_fn = gym_load_fn([select_observation_indices((0, 2))])
    clone = pickle.loads(pickle.dumps(load_fn))
    assert clone('CartPole-v1', seed=1).observation_spec().shape == (2, )
    remote = create_environment('CartPole-v1', num_parallel_environments=2,
                                seed=3, env_load_fn=load_fn,
                                use_subprocess=True)
    local = create_environment('CartPole-v1', num_parallel_environments=2,
                               seed=3)
    try:
        assert isinstance(remote.pyenv, ParallelPyEnvironment)
        assert remote.observation_spec().shape == (2, )
        np.testing.assert_array_equal(
            remote.reset().observation.numpy(),
            local.reset().observation.numpy()[:, [0, 2]])
    finally:
        remote.close()
        local.close()


def test_gym_load_fn_rejects_non_callables():
    with pytest.raises(TypeError, match='callables'):
        gym_load_fn([(0, 2)])


def test_gin_binds_the_wrapper_into_create_environment():
    import alf_rl.configurables  # noqa: F401
    try:
        gin.parse_config([
            'create_environment.env_load_fn = @gym_load_fn()',
            'gym_load_fn.gym_env_wrappers = [@select_observation_indices()]',
            'select_observation_indices.indices = (0, 2)',
            'create_environment.num_parallel_environments = 2',
            'create_environment.seed = 1',
        ])
        env = create_environment()
        assert env.observation_spec().shape == (2, )
        np.testing.assert_array_equal(
            env.reset().observation.numpy()[1],
            suite_gym.load('CartPole-v1', seed=2).reset().observation[[0, 2]])
        env.close()
    finally:
        gin.clear_config()
