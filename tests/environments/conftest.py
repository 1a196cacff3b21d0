"""Shared helpers of the environment tests."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces


class NestedEnv(gym.Env):
    """Dict/Tuple/MultiDiscrete/MultiBinary/uint8 observations."""

    def __init__(self, episode_length=3):
        self.observation_space = spaces.Dict({
            'pos': spaces.Box(-1.0, 1.0, (3, ), np.float32),
            'image': spaces.Box(0, 255, (4, 4, 3), np.uint8),
            'md': spaces.MultiDiscrete([3, 4]),
            'mb': spaces.MultiBinary(5),
            'tup': spaces.Tuple((spaces.Discrete(3),
                                 spaces.Box(-2.0, 2.0, (2, ), np.float64))),
        })
        self.action_space = spaces.Tuple(
            (spaces.Discrete(3, start=1), spaces.Box(-2.0, 2.0, (2, ),
                                                     np.float32)))
        self._length = episode_length
        self._t = 0

    def _obs(self):
        t = self._t
        return {
            'pos': np.full(3, 0.1 * t, np.float32),
            'image': np.full((4, 4, 3), t, np.uint8),
            'md': np.array([t % 3, t % 4], np.int64),
            'mb': np.array([t % 2] * 5, np.int8),
            'tup': (t % 3, np.full(2, -0.5 * t, np.float64)),
        }

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return self._obs(), {}

    def step(self, action):
        assert self.action_space.contains(
            (action[0], np.asarray(action[1], np.float32))), action
        self._t += 1
        return (self._obs(), float(action[0]), self._t >= self._length,
                False, {})


@pytest.fixture
def nested_env_cls():
    """The ``NestedEnv`` class (nested Dict/Tuple spaces of every kind)."""
    return NestedEnv
