"""BatchedPyEnvironment: stacking, env ids, equality with single envs."""

import numpy as np
import pytest

from alf_rl.data_structures import StepType
from alf_rl.environments import suite_gym
from alf_rl.environments.batched_environment import BatchedPyEnvironment
from alf_rl.environments.suite_unittest import ValueUnittestEnv


def _cartpoles(n, max_episode_steps=4):
    return [
        suite_gym.load('CartPole-v1', max_episode_steps=max_episode_steps,
                       seed=10 + i, env_id=i) for i in range(n)
    ]


def test_batched_equals_individual_envs_under_seeds():
    batch = BatchedPyEnvironment(_cartpoles(3))
    singles = _cartpoles(3)
    assert batch.batched and batch.batch_size == 3
    rng = np.random.RandomState(0)
    ts = batch.reset()
    single_ts = [e.reset() for e in singles]
    for t in range(12):
        for i in range(3):
            for field in ts._fields:
                if field == 'env_id':
                    continue
                np.testing.assert_array_equal(
                    getattr(ts, field)[i], getattr(single_ts[i], field),
                    err_msg='step %d env %d field %s' % (t, i, field))
        assert ts.env_id.tolist() == [0, 1, 2]
        action = rng.randint(0, 2, size=3).astype(np.int64)
        ts = batch.step(action)
        single_ts = [e.step(action[i]) for i, e in enumerate(singles)]
    assert ts.step_type.dtype == np.int32
    assert ts.observation.shape == (3, 4)
    assert ts.observation.dtype == np.float32
    assert ts.prev_action.dtype == np.int64


def test_batched_auto_reset_zeroes_prev_action_of_first_rows():
    batch = BatchedPyEnvironment(_cartpoles(2, max_episode_steps=2))
    batch.reset()
    one = np.ones(2, np.int64)
    types = []
    prev = []
    for _ in range(4):
        ts = batch.step(one)
        types.append(ts.step_type.tolist())
        prev.append(ts.prev_action.tolist())
    assert types == [[1, 1], [2, 2], [0, 0], [1, 1]]
    assert prev == [[1, 1], [1, 1], [0, 0], [1, 1]]
    assert ts.discount.tolist() == [1.0, 1.0]


def test_batched_seed_reseeds_env_i_with_seed_plus_i():
    batch = BatchedPyEnvironment(_cartpoles(2))
    batch.seed(100)
    obs = batch.reset().observation
    ref = BatchedPyEnvironment([
        suite_gym.load('CartPole-v1', seed=100),
        suite_gym.load('CartPole-v1', seed=101)
    ])
    np.testing.assert_array_equal(obs, ref.reset().observation)


def test_batched_rejects_batched_or_mismatched_envs():
    with pytest.raises(ValueError, match='already batched'):
        BatchedPyEnvironment([ValueUnittestEnv(2, 3)])
    with pytest.raises(ValueError, match='at least one'):
        BatchedPyEnvironment([])
    with pytest.raises(ValueError, match=r'observation_spec of environment 1'):
        BatchedPyEnvironment([
            suite_gym.load('CartPole-v1'),
            suite_gym.load('Pendulum-v1')
        ])


def test_batched_context_manager_closes_envs():
    envs = _cartpoles(2)
    with BatchedPyEnvironment(envs) as batch:
        batch.reset()
    assert all(e._closed for e in envs)
    assert StepType.FIRST == 0
