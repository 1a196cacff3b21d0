"""create_environment: validation, seeding, in-process vs subprocess."""

import gin
import numpy as np
import pytest
import tensorflow as tf

from alf_rl.environments import suite_gym
from alf_rl.environments.batched_environment import BatchedPyEnvironment
from alf_rl.environments.parallel_environment import ParallelPyEnvironment
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.environments.utils import create_environment


def test_unknown_env_id_raises_before_any_worker_starts(monkeypatch):
    started = []
    monkeypatch.setattr(ParallelPyEnvironment, '__init__',
                        lambda *a, **k: started.append(1))
    with pytest.raises(ValueError, match=r"'CartPoleX-v1'"):
        create_environment('CartPoleX-v1', num_parallel_environments=4,
                           use_subprocess=True)
    assert started == []


def test_unknown_env_id_with_wrapped_gym_loader_raises_early(monkeypatch):
    import functools
    started = []
    monkeypatch.setattr(ParallelPyEnvironment, '__init__',
                        lambda *a, **k: started.append(1))
    loader = functools.partial(suite_gym.load, gym_env_wrappers=())
    with pytest.raises(ValueError, match=r"'CartPoleX-v1'"):
        create_environment('CartPoleX-v1', num_parallel_environments=2,
                           use_subprocess=True, env_load_fn=loader)
    assert started == []


def test_in_process_env_i_is_seeded_with_seed_plus_i():
    env = create_environment('CartPole-v1', num_parallel_environments=3,
                             seed=7, max_episode_steps=20)
    assert isinstance(env, TFPyEnvironment)
    assert isinstance(env.pyenv, BatchedPyEnvironment)
    assert env.batch_size == 3
    ts = env.reset()
    expected = np.stack([
        suite_gym.load('CartPole-v1', seed=7 + i).reset().observation
        for i in range(3)
    ])
    np.testing.assert_array_equal(ts.observation.numpy(), expected)
    assert ts.env_id.numpy().tolist() == [0, 1, 2]
    assert [e.gym_env.spec.max_episode_steps for e in env.pyenv.envs] == [20] * 3
    env.close()


def test_subprocess_environment_matches_in_process():
    remote = create_environment('CartPole-v1', num_parallel_environments=2,
                                seed=3, use_subprocess=True)
    local = create_environment('CartPole-v1', num_parallel_environments=2,
                               seed=3)
    try:
        assert isinstance(remote.pyenv, ParallelPyEnvironment)
        np.testing.assert_array_equal(remote.reset().observation.numpy(),
                                      local.reset().observation.numpy())
        action = tf.constant([1, 0], tf.int64)
        np.testing.assert_array_equal(remote.step(action).observation.numpy(),
                                      local.step(action).observation.numpy())
    finally:
        remote.close()
        local.close()


def test_gin_configures_create_environment():
    try:
        gin.parse_config(['create_environment.num_parallel_environments = 2',
                          'create_environment.seed = 1'])
        env = create_environment()
        assert env.batch_size == 2
        np.testing.assert_array_equal(
            env.reset().observation.numpy()[1],
            suite_gym.load('CartPole-v1', seed=2).reset().observation)
    finally:
        gin.clear_config()


def test_seed_none_draws_from_numpy():
    np.random.seed(5)
    a = create_environment(num_parallel_environments=2).reset().observation
    np.random.seed(5)
    b = create_environment(num_parallel_environments=2).reset().observation
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(ValueError, match='num_parallel_environments'):
        create_environment(num_parallel_environments=0)
