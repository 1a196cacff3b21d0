"""GymWrapper and suite_gym: specs, ALF step conventions, errors."""

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf
from gymnasium import spaces

from alf_rl.data_structures import StepType
from alf_rl.environments import suite_gym
from alf_rl.environments.gym_wrapper import GymWrapper
from alf_rl.specs import BoundedTensorSpec


class BadDtypeEnv(gym.Env):
    """Declares float32 observations, returns ``self.value`` instead."""

    def __init__(self, value):
        self.observation_space = spaces.Box(-10, 10, (2, ), np.float32)
        self.action_space = spaces.Discrete(2)
        self.value = value

    def reset(self, seed=None, options=None):
        return self.value, {}

    def step(self, action):
        return self.value, 0.0, False, False, {}


def test_spec_conversion_of_nested_spaces(nested_env_cls):
    env = GymWrapper(nested_env_cls())
    obs_spec = env.observation_spec()
    assert sorted(obs_spec) == ['image', 'mb', 'md', 'pos', 'tup']
    assert obs_spec['pos'] == BoundedTensorSpec((3, ), tf.float32, -1, 1)
    assert obs_spec['image'].dtype == tf.uint8
    assert obs_spec['image'].shape == (4, 4, 3)
    assert obs_spec['image'].maximum.max() == 255
    assert obs_spec['md'] == BoundedTensorSpec((2, ), tf.int64, 0, [2, 3])
    assert obs_spec['mb'] == BoundedTensorSpec((5, ), tf.int8, 0, 1)
    assert obs_spec['tup'][0] == BoundedTensorSpec((), tf.int64, 0, 2)
    assert obs_spec['tup'][1].dtype == tf.float64
    action_spec = env.action_spec()
    assert action_spec[0] == BoundedTensorSpec((), tf.int64, 1, 3)
    assert action_spec[1] == BoundedTensorSpec((2, ), tf.float32, -2, 2)
    ts_spec = env.time_step_spec()
    assert ts_spec.observation is obs_spec
    assert ts_spec.prev_action is action_spec
    assert ts_spec.step_type == tf.TensorSpec((), tf.int32)


def test_nested_time_steps_have_spec_dtypes_and_conventions(
        nested_env_cls):
    env = GymWrapper(nested_env_cls(episode_length=2), env_id=7)
    ts = env.reset()
    assert ts.step_type == StepType.FIRST and ts.step_type.dtype == np.int32
    assert ts.env_id == 7 and ts.env_id.dtype == np.int32
    assert ts.observation['tup'][0].dtype == np.int64  # Discrete int -> int64
    assert ts.observation['image'].dtype == np.uint8
    assert ts.prev_action[0] == 0 and ts.prev_action[0].dtype == np.int64
    np.testing.assert_array_equal(ts.prev_action[1], [0, 0])
    action = (np.int64(2), np.array([0.5, -0.5], np.float32))
    ts = env.step(action)
    assert ts.step_type == StepType.MID
    assert ts.reward == 2.0 and ts.reward.dtype == np.float32
    np.testing.assert_array_equal(ts.observation['image'],
                                  np.ones((4, 4, 3), np.uint8))
    assert ts.prev_action[0] == 2
    np.testing.assert_array_equal(ts.prev_action[1], [0.5, -0.5])
    ts = env.step(action)
    assert (ts.step_type, ts.discount) == (StepType.LAST, 0.0)
    ts = env.step(action)  # auto-reset: the action is ignored
    assert (ts.step_type, ts.reward, ts.discount) == (StepType.FIRST, 0., 1.)
    assert ts.prev_action[0] == 0
    np.testing.assert_array_equal(ts.observation['pos'], [0, 0, 0])


def test_cartpole_truncation_keeps_discount_and_auto_resets():
    env = suite_gym.load('CartPole-v1', max_episode_steps=3, seed=5)
    ref = gym.make('CartPole-v1')
    ts = env.reset()
    obs, _ = ref.reset(seed=5)
    np.testing.assert_array_equal(ts.observation, obs)
    assert ts.observation.dtype == np.float32
    got = []
    for action in [0, 1, 0, 1, 1]:
        ts = env.step(np.int64(action))
        got.append((int(ts.step_type), float(ts.reward), float(ts.discount),
                    int(ts.prev_action)))
    # Three steps (time limit) end with LAST and discount 1; the next step
    # ignores action 1 and returns FIRST with reward 0 and prev_action 0.
    assert got == [(1, 1., 1., 0), (1, 1., 1., 1), (2, 1., 1., 0),
                   (0, 0., 1., 0), (1, 1., 1., 1)]
    for action in [0, 1, 0]:
        obs, *_ = ref.step(action)
    obs, _ = ref.reset()
    obs, *_ = ref.step(1)
    np.testing.assert_array_equal(ts.observation, obs)


def test_cartpole_termination_gives_discount_zero():
    env = suite_gym.load('CartPole-v1', seed=0, discount=0.9)
    ts = env.reset()
    for n in range(1, 100):  # noqa: B007 (n is read after the loop)
        ts = env.step(1)  # always pushing right topples the pole
        if ts.is_last():
            break
        assert ts.discount == np.float32(0.9)
    assert ts.step_type == StepType.LAST and ts.discount == 0.0
    assert 5 < n < 30
    ts = env.step(1)
    assert (ts.step_type, ts.reward, ts.discount) == (StepType.FIRST, 0., 1.)


def test_observation_cast_within_kind_and_refused_across_kinds():
    env = GymWrapper(BadDtypeEnv(np.array([1.5, 2.5], np.float64)))
    ts = env.reset()
    assert ts.observation.dtype == np.float32
    np.testing.assert_array_equal(ts.observation, [1.5, 2.5])
    env = GymWrapper(BadDtypeEnv(np.array([1, 2], np.int64)))
    with pytest.raises(ValueError, match=r"observation: .*int64.*float32"):
        env.reset()


def test_unknown_env_id_names_id_and_suggestion():
    with pytest.raises(ValueError, match=r"'CartPol-v1'.*Did you mean"):
        suite_gym.load('CartPol-v1')
    with pytest.raises(ValueError, match=r"'CartPole-v9'.*v1"):
        suite_gym.check_env_id('CartPole-v9')


def test_seed_gives_identical_episodes():
    a = suite_gym.load('CartPole-v1', seed=3)
    b = suite_gym.load('CartPole-v1', seed=3)
    c = suite_gym.load('CartPole-v1', seed=4)
    oa, ob, oc = a.reset().observation, b.reset().observation, \
        c.reset().observation
    np.testing.assert_array_equal(oa, ob)
    assert not np.array_equal(oa, oc)


def test_render_returns_rgb_frame_only_with_render_mode():
    assert suite_gym.load('CartPole-v1').render() is None
    env = suite_gym.load('CartPole-v1', render_mode='rgb_array', seed=0)
    env.reset()
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    env.close()
    env.close()  # closing twice is fine


def test_suite_gym_and_package_import_without_tensorflow():
    code = ("import sys; import alf_rl.environments as e; "
            "from alf_rl.environments import suite_gym; "
            "env = suite_gym.load('CartPole-v1', seed=0); env.reset(); "
            "env.step(1); print('tensorflow' in sys.modules)")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == 'False'


def test_game_scores_of_envs_with_and_without_a_score_wrapper():
    import gymnasium as gym
    from alf_rl.environments.gym_wrapper import GymWrapper

    class Scored(gym.Wrapper):
        def pop_game_scores(self):
            return [3.0]

    plain = GymWrapper(gym.make('CartPole-v1'))
    assert not plain.reports_game_scores and plain.pop_game_scores() == []
    scored = GymWrapper(gym.wrappers.TimeLimit(Scored(gym.make('CartPole-v1')),
                                               10))
    assert scored.reports_game_scores and scored.pop_game_scores() == [3.0]
