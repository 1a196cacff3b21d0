"""suite_tf's environments that are not gymnasium's: 'DeepSea-N' (the
grid walk, the per-cell action mapping, the rewards of the optimal and the
all-left paths, episode ends, rendering) and 'PointMass'."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.data_structures import StepType
from alf_rl.environments import create_environment, suite_tf

N = 5


def _episode(env, actions_fn):
    """Rewards, step types and cells ([row, col]) of one episode of env 0,
    the action of each step chosen by ``actions_fn(row, col)``."""
    time_step = env.reset()
    rewards, step_types, cells = [], [], []
    while True:
        row, col = [int(v) for v in env.physical_state[0].numpy()]
        cells.append((row, col))
        step_types.append(int(time_step.step_type[0]))
        rewards.append(float(time_step.reward[0]))
        if time_step.is_last()[0]:
            return rewards, step_types, cells, time_step
        action = tf.constant([actions_fn(row, col)] * env.batch_size,
                             tf.int64)
        time_step = env.step(action)


def test_optimal_path_pays_one_minus_the_move_costs():
    env = suite_tf.load('DeepSea-%d' % N, 2, seed=0)
    mapping = env.dynamics._right_action.numpy()
    assert 0 < mapping.sum() < N * N  # both actions move right somewhere
    rewards, step_types, cells, last = _episode(
        env, lambda r, c: int(mapping[r, c]))
    assert cells == [(r, r) for r in range(N)] + [(N, N - 1)]
    assert step_types == [StepType.FIRST] + [StepType.MID] * (N - 1) + [
        StepType.LAST]
    np.testing.assert_allclose(rewards[1:-1], [-0.01 / N] * (N - 1),
                               rtol=1e-6)
    np.testing.assert_allclose(rewards[-1], 1.0 - 0.01 / N, rtol=1e-6)
    np.testing.assert_allclose(sum(rewards), 0.99, rtol=1e-6)
    assert float(last.discount[0]) == 0.0  # terminated, not truncated
    # One-hot of the bottom row's cell after the last step.
    np.testing.assert_array_equal(
        np.argmax(last.observation.numpy(), -1), [N * N - 1] * 2)


def test_left_path_returns_zero_and_the_walls_clip():
    env = suite_tf.load('DeepSea-%d' % N, 1, seed=0)
    mapping = env.dynamics._right_action.numpy()
    rewards, _, cells, _ = _episode(env, lambda r, c: 1 - int(mapping[r, c]))
    assert cells == [(r, 0) for r in range(N + 1)]
    assert sum(rewards) == 0.0


def test_observation_is_the_one_hot_cell_and_episodes_restart():
    env = suite_tf.load('DeepSea-%d' % N, 3, seed=0)
    assert env.observation_spec().shape == (N * N, )
    assert env.max_episode_steps == N
    time_step = env.reset()
    np.testing.assert_array_equal(np.argmax(time_step.observation, -1),
                                  [0, 0, 0])
    for _ in range(N):
        time_step = env.step(tf.constant([0, 1, 0], tf.int64))
    assert time_step.is_last().numpy().all()
    time_step = env.step(tf.constant([1, 1, 1], tf.int64))
    assert (time_step.step_type.numpy() == StepType.FIRST).all()
    np.testing.assert_array_equal(np.argmax(time_step.observation, -1),
                                  [0, 0, 0])


def test_same_dynamics_compiled_with_xla():
    env = suite_tf.load('DeepSea-%d' % N, 4, seed=0)
    other = suite_tf.load('DeepSea-%d' % N, 4, seed=0)
    actions = tf.constant(np.random.RandomState(0).randint(0, 2, (12, 4)),
                          tf.int64)

    def run(e):
        e.reset()
        return tf.stack([e.step(a).reward for a in tf.unstack(actions)])

    np.testing.assert_allclose(run(env),
                               tf.function(run, jit_compile=True)(other))


def test_render_and_errors():
    env = create_environment('DeepSea-%d' % N, num_parallel_environments=2,
                             backend='tf', seed=0)
    env.reset()
    frame = env.render()
    assert frame.shape == (8 * N, 8 * N, 3) and frame.dtype == np.uint8
    assert (frame[:8, :8] == 255).all()  # the diver, top-left
    with pytest.raises(ValueError, match="size must be an int >= 2"):
        suite_tf.load('DeepSea-1', 1)
    with pytest.raises(ValueError, match='DeepSea-N'):
        suite_tf.load('DeepSea', 1)


def test_point_mass_moves_by_a_tenth_of_the_action():
    env = suite_tf.load('PointMass', 2, seed=0)
    assert env.max_episode_steps == 50
    start = env.reset().observation.numpy()
    assert np.all(np.abs(start) <= 0.05)
    ts = env.step(tf.constant([[1.0, -0.5], [-1.0, 0.0]]))
    np.testing.assert_allclose(ts.observation.numpy(),
                               start + [[0.1, -0.05], [-0.1, 0.0]],
                               atol=1e-6)
    for _ in range(30):  # the walls clip
        ts = env.step(tf.constant([[1.0, 1.0], [-1.0, -1.0]]))
    np.testing.assert_allclose(ts.observation.numpy(),
                               [[1.0, 1.0], [-1.0, -1.0]])
    assert float(tf.reduce_sum(tf.abs(ts.reward))) == 0.0
    for _ in range(19):  # the 50th step after the reset is LAST
        ts = env.step(tf.zeros([2, 2]))
    assert ts.is_last().numpy().all() and ts.discount.numpy().tolist() == [
        1.0, 1.0]  # truncated at 50 steps, not terminated
    frame = env.render()
    assert frame.shape == (64, 64, 3) and (frame[:5, -5:] == 255).all()
