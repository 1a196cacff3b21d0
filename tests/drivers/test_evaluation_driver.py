"""EvaluationDriver: exact episode returns and lengths on deterministic
environments, one (first) episode per environment, greedy actions from
``predict``."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.data_structures import PolicyStep, StepType, TimeStep
from alf_rl.drivers.evaluation_driver import EvaluationDriver
from alf_rl.environments.py_environment import PyEnvironment
from alf_rl.environments.suite_unittest import (PolicyUnittestEnv,
                                                ValueUnittestEnv)
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.specs import BoundedTensorSpec


class _StubAlgorithm(object):
    """``predict`` plays ``action_fn(observation)``; ``rollout`` must not
    be used."""

    def __init__(self, action_fn):
        self._action_fn = action_fn
        self.predict_calls = 0

    def get_initial_predict_state(self, batch_size):
        return tf.zeros([batch_size], tf.int32)

    def transform_timestep(self, time_step):
        return time_step

    def predict(self, time_step, state):
        self.predict_calls += 1  # once per trace (or eager step)
        return PolicyStep(action=self._action_fn(time_step.observation),
                          state=state, info=())

    def rollout(self, time_step, state):
        raise AssertionError('evaluation must act with predict')


def _copy_observation(observation):
    return tf.cast(observation[:, 0], tf.int64)


class _UnevenEpisodesEnv(PyEnvironment):
    """Environment i's episodes have ``lengths[i]`` transitions; each
    transition earns ``i + 1``."""

    def __init__(self, lengths):
        self._lengths = np.asarray(lengths)
        self._t = None

    @property
    def batched(self):
        return True

    @property
    def batch_size(self):
        return len(self._lengths)

    def observation_spec(self):
        return BoundedTensorSpec((1, ), 'float32', -1, 1)

    def action_spec(self):
        return BoundedTensorSpec((), 'int64', 0, 1)

    def _time_step(self, action):
        b = self.batch_size
        t = self._t
        step_type = np.where(t == 0, StepType.FIRST,
                             np.where(t == self._lengths, StepType.LAST,
                                      StepType.MID)).astype(np.int32)
        reward = np.where(t == 0, 0, np.arange(1, b + 1)).astype(np.float32)
        return TimeStep(step_type=step_type,
                        reward=reward,
                        discount=np.where(t == self._lengths, 0.,
                                          1.).astype(np.float32),
                        observation=np.zeros((b, 1), np.float32),
                        prev_action=np.asarray(action, np.int64),
                        env_id=np.arange(b, dtype=np.int32))

    def _reset(self):
        self._t = np.zeros(self.batch_size, np.int64)
        return self._time_step(np.zeros(self.batch_size, np.int64))

    def _step(self, action):
        if self._t is None:
            return self._reset()
        self._t = np.where(self._t == self._lengths, 0, self._t + 1)
        return self._time_step(action)


@pytest.mark.parametrize('use_tf_functions', [False, True])
def test_one_episode_per_environment_with_exact_returns(use_tf_functions):
    # ValueUnittestEnv: reward 1 on each of the 4 transitions of an episode.
    env = TFPyEnvironment(ValueUnittestEnv(batch_size=3, episode_length=5))
    driver = EvaluationDriver(env, _StubAlgorithm(_copy_observation),
                              use_tf_functions=use_tf_functions)
    for _ in range(2):  # every run starts from a reset
        returns, lengths = driver.run()
        assert returns.dtype == tf.float32 and lengths.dtype == tf.int32
        np.testing.assert_array_equal(returns.numpy(), [4., 4., 4.])
        np.testing.assert_array_equal(lengths.numpy(), [4, 4, 4])


@pytest.mark.parametrize('use_tf_functions', [False, True])
def test_only_the_first_episode_of_each_environment_counts(
        use_tf_functions):
    # Env 0 finishes (and restarts) three times while env 2 plays its one
    # episode of 4 transitions; env i earns i + 1 per transition.
    env = TFPyEnvironment(_UnevenEpisodesEnv([1, 2, 4]))
    driver = EvaluationDriver(env, _StubAlgorithm(_copy_observation),
                              use_tf_functions=use_tf_functions)
    returns, lengths = driver.run()
    np.testing.assert_array_equal(returns.numpy(), [1., 4., 12.])
    np.testing.assert_array_equal(lengths.numpy(), [1, 2, 4])


def test_actions_come_from_predict():
    # PolicyUnittestEnv pays 1 for copying the previous observation, 0 for
    # the opposite: 5 transitions per episode.
    copying = _StubAlgorithm(_copy_observation)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 6, seed=3))
    returns, lengths = EvaluationDriver(env, copying).run()
    np.testing.assert_array_equal(returns.numpy(), [5.] * 4)
    np.testing.assert_array_equal(lengths.numpy(), [5] * 4)
    assert copying.predict_calls == 1  # traced once

    opposite = _StubAlgorithm(lambda o: tf.cast(1 - o[:, 0], tf.int64))
    env = TFPyEnvironment(PolicyUnittestEnv(4, 6, seed=3))
    returns, _ = EvaluationDriver(env, opposite).run()
    np.testing.assert_array_equal(returns.numpy(), [0.] * 4)


def test_max_steps_bounds_an_episode():
    env = TFPyEnvironment(ValueUnittestEnv(batch_size=2, episode_length=10))
    returns, lengths = EvaluationDriver(env, _StubAlgorithm(_copy_observation),
                                        max_steps=4).run()
    # Cut after 4 of the 9 transitions.
    np.testing.assert_array_equal(returns.numpy(), [4., 4.])
    np.testing.assert_array_equal(lengths.numpy(), [4, 4])


def test_bad_max_steps_is_rejected():
    env = TFPyEnvironment(ValueUnittestEnv(batch_size=1, episode_length=3))
    with pytest.raises(ValueError, match='max_steps must be >= 1, got 0'):
        EvaluationDriver(env, _StubAlgorithm(_copy_observation), max_steps=0)
