"""A user's own environment, from their own module, everywhere: an id
their module registers with ``gym.register``, a ``gymnasium.Env`` class and
a factory all build with ``create_environment``, in this process and in
subprocess workers alike."""

import sys
import textwrap

import numpy as np
import pytest

from alf_rl.environments.utils import create_environment
from alf_rl.utils.worker_config import WorkerConfig

USER_MODULE = textwrap.dedent('''
    import gymnasium as gym
    import numpy as np


    class Corridor(gym.Env):
        """Walk right along 5 cells: reward 1 at the end (episode over)."""

        def __init__(self, length=5, render_mode=None):
            self.length = length
            self.observation_space = gym.spaces.Box(0., 10., (1, ),
                                                    np.float32)
            self.action_space = gym.spaces.Discrete(2)
            self.pos = 0

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            self.pos = 0
            return np.array([0.], np.float32), {}

        def step(self, action):
            self.pos = max(0, self.pos + (1 if action == 1 else -1))
            done = self.pos >= self.length
            return (np.array([self.pos], np.float32), float(done), done,
                    False, {})


    def make_corridor():
        return Corridor(length=3)


    gym.register('UserCorridor-v0', entry_point='user_envs:Corridor',
                 max_episode_steps=20, kwargs={'length': 4})
''')


@pytest.fixture
def user_envs(tmp_path, monkeypatch):
    (tmp_path / 'user_envs.py').write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    # Another test module's own ``user_envs`` may be loaded in this worker.
    sys.modules.pop('user_envs', None)
    module = importlib.import_module('user_envs')
    yield module
    import gymnasium

    gymnasium.registry.pop('UserCorridor-v0', None)
    sys.modules.pop('user_envs', None)


def _walk_right(env, steps):
    """Rewards (B, steps) of always moving right."""
    import tensorflow as tf

    env.reset()
    rewards = []
    for _ in range(steps):
        action = tf.ones([env.batch_size], tf.int64)
        rewards.append(env.step(action).reward.numpy())
    return np.stack(rewards, axis=1)


@pytest.mark.parametrize('use_subprocess', [False, True])
def test_registered_id_class_and_factory(user_envs, use_subprocess):
    expected = {  # the step of the first reward 1: the corridor's length
        'UserCorridor-v0': 4,
        user_envs.Corridor: 5,
        user_envs.make_corridor: 3,
    }
    for env_name, length in expected.items():
        env = create_environment(
            env_name,
            num_parallel_environments=2,
            seed=0,
            use_subprocess=use_subprocess,
        )
        try:
            rewards = _walk_right(env, length)
        finally:
            env.close()
        np.testing.assert_array_equal(
            rewards, np.tile([0.0] * (length - 1) + [1.0], (2, 1))
        )


def test_worker_config_carries_the_users_registrations(user_envs):
    config = WorkerConfig.capture()
    ids = [env_id for env_id, _ in config.gym_registrations]
    assert ids == ['UserCorridor-v0']  # gymnasium's own are not carried
    import gymnasium

    del gymnasium.registry['UserCorridor-v0']
    config.apply()  # as a worker does: the id is known again
    spec = gymnasium.registry['UserCorridor-v0']
    assert spec.entry_point == 'user_envs:Corridor'
    assert spec.kwargs == {'length': 4} and spec.max_episode_steps == 20


def test_a_factory_returning_something_else_is_one_line():
    with pytest.raises(
        TypeError,
        match=r"create_environment.env_name: .* "
        r"returned 3; expected a gymnasium.Env",
    ):
        create_environment(lambda: 3)
