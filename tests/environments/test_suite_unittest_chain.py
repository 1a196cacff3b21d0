"""suite_unittest.ChainUnittestEnv: deterministic dynamics, the only reward
at the far end, resets, state round trip."""

import numpy as np
import pytest

from alf_rl.data_structures import StepType
from alf_rl.environments.suite_unittest import ChainUnittestEnv

F, M, L = StepType.FIRST, StepType.MID, StepType.LAST


def _episode(env, actions):
    """Time steps of one episode from reset, stepping with [T-1, B]
    ``actions``; returns the list of T time steps."""
    rows = [env.reset()]
    for a in actions:
        rows.append(env.step(np.asarray(a, np.int64)))
    return rows


def test_always_right_reaches_the_end_once():
    env = ChainUnittestEnv(batch_size=2, length=4)  # 8-step episodes
    assert env.length == 4
    assert env.observation_spec().shape.as_list() == [4]
    assert int(env.action_spec().maximum) == 1
    rows = _episode(env, [[1, 1]] * 7)
    assert [r.step_type[0] for r in rows] == [F] + [M] * 6 + [L]
    positions = [int(np.argmax(r.observation[0])) for r in rows]
    assert positions == [0, 1, 2, 3, 3, 3, 3, 3]  # the end is absorbing
    np.testing.assert_array_equal(rows[0].observation,
                                  [[1, 0, 0, 0], [1, 0, 0, 0]])
    rewards = np.stack([r.reward for r in rows])
    np.testing.assert_array_equal(rewards[:, 0],
                                  [0, 0, 0, 1, 0, 0, 0, 0])
    assert rewards.sum() == 2.0  # one per environment
    assert [r.discount[0] for r in rows] == [1.0] * 7 + [0.0]


def test_no_reward_before_the_end_and_left_wall():
    env = ChainUnittestEnv(batch_size=3, length=5, episode_length=6)
    # env 0: left, right x4 -> 0,0,1,2,3,4 ; env 1: alternating ;
    # env 2: right x3, left, right -> never reaches 4 in 5 actions.
    actions = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 1], [1, 0, 0],
                        [1, 1, 1]])
    rows = _episode(env, actions)
    positions = np.stack([np.argmax(r.observation, -1) for r in rows])
    np.testing.assert_array_equal(positions[:, 0], [0, 0, 1, 2, 3, 4])
    np.testing.assert_array_equal(positions[:, 1], [0, 1, 0, 1, 0, 1])
    np.testing.assert_array_equal(positions[:, 2], [0, 1, 2, 3, 2, 3])
    rewards = np.stack([r.reward for r in rows])
    np.testing.assert_array_equal(rewards[:, 0], [0, 0, 0, 0, 0, 1])
    assert not rewards[:, 1:].any()
    np.testing.assert_array_equal(env.position, [4, 1, 3])


def test_reset_each_episode_and_deterministic():
    env = ChainUnittestEnv(batch_size=1, length=3, episode_length=3)
    ts = env.reset()
    seen = []
    for _ in range(7):  # FIRST, MID, LAST, FIRST, ...: position back to 0
        seen.append((int(ts.step_type[0]), int(np.argmax(ts.observation[0])),
                     float(ts.reward[0])))
        ts = env.step(np.ones(1, np.int64))
    assert seen == [(F, 0, 0.), (M, 1, 0.), (L, 2, 1.), (F, 0, 0.),
                    (M, 1, 0.), (L, 2, 1.), (F, 0, 0.)]
    other = ChainUnittestEnv(batch_size=1, length=3, episode_length=3,
                             seed=5)
    assert [(int(r.step_type[0]), float(r.reward[0])) for r in _episode(
        other, [[1], [1]])] == [(F, 0.), (M, 0.), (L, 1.)]


def test_state_round_trip():
    env = ChainUnittestEnv(batch_size=2, length=4)
    _episode(env, [[1, 0], [1, 1]])
    state = env.get_state()
    after = [env.step(np.array([1, 1], np.int64)) for _ in range(3)]
    restored = ChainUnittestEnv(batch_size=2, length=4)
    restored.reset()
    restored.set_state(state)
    again = [restored.step(np.array([1, 1], np.int64)) for _ in range(3)]
    for a, b in zip(after, again):
        np.testing.assert_array_equal(a.observation, b.observation)
        np.testing.assert_array_equal(a.reward, b.reward)


def test_rejects_bad_arguments():
    with pytest.raises(ValueError, match='length must be >= 2'):
        ChainUnittestEnv(batch_size=1, length=1)
    with pytest.raises(ValueError, match='episode_length must be >= length'):
        ChainUnittestEnv(batch_size=1, length=5, episode_length=4)
