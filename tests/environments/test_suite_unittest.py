"""suite_unittest: exact step types, rewards and discounts."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.environments.suite_unittest import (PolicyUnittestEnv,
                                                RNNPolicyUnittestEnv,
                                                ValueUnittestEnv)

F, M, L = 0, 1, 2


def _run(env, policy, num_steps):
    """Returns lists of step_type, reward, discount rows and observations."""
    ts = env.reset()
    rows = [ts]
    for _ in range(num_steps - 1):
        ts = env.step(policy(ts))
        rows.append(ts)
    return rows


def test_value_env_two_episodes():
    env = ValueUnittestEnv(batch_size=2, episode_length=3)
    assert env.batched and env.batch_size == 2
    assert env.action_spec().shape == () and env.action_spec().dtype == \
        tf.int64
    rows = _run(env, lambda ts: np.array([1, 0], np.int64), 6)
    assert [r.step_type.tolist() for r in rows] == [[F, F], [M, M], [L, L],
                                                    [F, F], [M, M], [L, L]]
    assert [r.reward.tolist() for r in rows] == [[0, 0], [1, 1], [1, 1],
                                                 [0, 0], [1, 1], [1, 1]]
    assert [r.discount.tolist() for r in rows] == [[1, 1], [1, 1], [0, 0],
                                                   [1, 1], [1, 1], [0, 0]]
    assert [r.prev_action.tolist() for r in rows] == [[0, 0], [1, 0], [1, 0],
                                                      [0, 0], [1, 0], [1, 0]]
    for r in rows:
        assert r.step_type.dtype == np.int32 and r.reward.dtype == np.float32
        assert r.observation.shape == (2, 1)
        assert r.observation.dtype == np.float32
        assert r.env_id.tolist() == [0, 1]


@pytest.mark.parametrize('action_type', ['discrete', 'continuous'])
def test_policy_env_rewards_copying_the_observation(action_type):
    env = PolicyUnittestEnv(batch_size=3, episode_length=4, obs_dim=2,
                            action_type=action_type, seed=1)

    def copy(ts):
        a = ts.observation[:, 0]
        return (a.astype(np.int64) if action_type == 'discrete' else
                a.reshape(3, 1).astype(np.float32))

    rows = _run(env, copy, 8)
    assert [r.step_type[0] for r in rows] == [F, M, M, L, F, M, M, L]
    assert [r.reward.tolist() for r in rows] == [[0.] * 3, [1.] * 3,
                                                 [1.] * 3, [1.] * 3] * 2
    assert [r.discount[0] for r in rows] == [1, 1, 1, 0, 1, 1, 1, 0]
    obs = np.stack([r.observation for r in rows])
    assert obs.shape == (8, 3, 2)
    assert set(np.unique(obs)) == {0.0, 1.0}
    # The opposite action earns nothing.
    env2 = PolicyUnittestEnv(3, 4, obs_dim=2, action_type=action_type, seed=1)
    rows2 = _run(env2, lambda ts: (1 - copy(ts)).astype(copy(ts).dtype), 8)
    np.testing.assert_array_equal(np.stack([r.observation for r in rows2]),
                                  obs)  # same seed, same observations
    assert [r.reward.tolist() for r in rows2] == [[0.] * 3] * 8


def test_policy_env_depends_on_seed():
    obs = lambda seed: np.stack([
        r.observation for r in _run(PolicyUnittestEnv(4, 5, seed=seed),
                                    lambda ts: np.zeros(4, np.int64), 6)
    ])
    np.testing.assert_array_equal(obs(3), obs(3))
    assert not np.array_equal(obs(3), obs(4))


def test_rnn_policy_env_needs_memory():
    env = RNNPolicyUnittestEnv(batch_size=4, episode_length=5, gap=2, seed=0)
    target = {}

    def remember(ts):
        for i, first in enumerate(ts.is_first()):
            if first:
                target[i] = ts.observation[i, 0]
        return np.array([int(target[i] > 0) for i in range(4)], np.int64)

    rows = _run(env, remember, 10)
    assert [r.step_type[0] for r in rows] == [F, M, M, M, L] * 2
    assert [r.discount[0] for r in rows] == [1, 1, 1, 1, 0] * 2
    # Reward 0 before step `gap`, then 1 for the remembered target.
    assert [r.reward.tolist() for r in rows] == [[0.] * 4, [0.] * 4,
                                                 [1.] * 4, [1.] * 4,
                                                 [1.] * 4] * 2
    first_obs = np.concatenate([rows[0].observation, rows[5].observation])
    assert set(np.unique(first_obs)) == {-1.0, 1.0}
    for r in rows:
        if r.step_type[0] != F:
            np.testing.assert_array_equal(r.observation, 0)
    # The wrong answer earns 0 from step `gap` on.
    env = RNNPolicyUnittestEnv(batch_size=4, episode_length=5, gap=2, seed=0)
    target.clear()
    rows = _run(env, lambda ts: 1 - remember(ts), 5)
    assert [r.reward.tolist() for r in rows] == [[0.] * 4] * 5


def test_rnn_policy_env_continuous_reward_formula():
    env = RNNPolicyUnittestEnv(batch_size=2, episode_length=3, gap=1,
                               action_type='continuous', seed=2)
    ts = env.reset()
    obs0 = ts.observation[:, 0]
    ts = env.step(np.full((2, 1), 0.25, np.float32))
    np.testing.assert_allclose(ts.reward, 1 - 0.5 * np.abs(-0.5 - obs0))
    assert ts.prev_action.shape == (2, 1)


def test_constructor_rejects_bad_arguments():
    with pytest.raises(ValueError, match='episode_length'):
        ValueUnittestEnv(2, 1)
    with pytest.raises(ValueError, match='action_type'):
        ValueUnittestEnv(2, 3, action_type='box')
    with pytest.raises(ValueError, match='gap'):
        RNNPolicyUnittestEnv(2, 3, gap=3)
