"""PrioritizedReplayBuffer: proportional sampling, importance weights,
priority updates, sequence windows and tf.function."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.replay import PrioritizedReplayBuffer

SCALAR = tf.TensorSpec((), tf.int64)


def _fill(buffer, steps, env_ids):
    for _ in range(steps):
        ids = np.asarray(env_ids, np.int32)
        pos = buffer.end_positions.numpy()[ids]
        buffer.add_batch(tf.constant(100 * ids + pos, tf.int64),
                         tf.constant(ids))


def _frequencies(buffer, batch_length, draws=20000, batch_size=1000):
    """{(env, position): frequency} over ``draws`` sampled starts."""

    @tf.function
    def sample():
        return buffer.get_batch(batch_size, batch_length)

    keys = []
    for _ in range(draws // batch_size):
        data, info = sample()
        env_ids, positions = info.env_ids.numpy(), info.positions.numpy()
        np.testing.assert_array_equal(
            data.numpy(), 100 * env_ids[None, :] + positions[None, :] +
            np.arange(batch_length)[:, None])
        keys += list(zip(env_ids.tolist(), positions.tolist()))
    pairs, counts = np.unique(np.array(keys), axis=0, return_counts=True)
    return {tuple(p): c / len(keys) for p, c in zip(pairs.tolist(), counts)}


def test_new_steps_get_max_priority_and_sampling_is_proportional():
    buffer = PrioritizedReplayBuffer(SCALAR, 2, 8, alpha=0.5, epsilon=0.,
                                     seed=0)
    _fill(buffer, 3, [0, 1])
    np.testing.assert_allclose(buffer.leaf_priorities(),
                               [[1, 1, 1, 0], [1, 1, 1, 0]])
    buffer.update_priority([0, 0, 1, 1], [0, 2, 1, 2], [4., 16., 0., 9.])
    assert float(buffer.max_priority) == 16.
    _fill(buffer, 1, [1])  # new step: max priority 16 -> 16^0.5 = 4
    expected = {(0, 0): 2., (0, 1): 1., (0, 2): 4., (1, 0): 1., (1, 2): 3.,
                (1, 3): 4.}
    np.testing.assert_allclose(buffer.leaf_priorities(),
                               [[2, 1, 4, 0], [1, 0, 3, 4]])
    total = sum(expected.values())
    freqs = _frequencies(buffer, batch_length=1)
    assert set(freqs) == set(expected)  # (1, 1) has priority 0
    for key, p in expected.items():
        assert abs(freqs[key] - p / total) < 0.01, (key, freqs[key], p / total)


def test_importance_weights_match_the_formula():
    buffer = PrioritizedReplayBuffer(SCALAR, 1, 4, alpha=1., beta=0.5,
                                     epsilon=0., seed=1)
    _fill(buffer, 4, [0])
    buffer.update_priority([0, 0, 0, 0], [0, 1, 2, 3], [1., 2., 3., 4.])
    _, info = buffer.get_batch(64, 1)
    p = info.positions.numpy() + 1.  # priority of position i is i + 1
    w = (4 * p / 10.)**-0.5
    np.testing.assert_allclose(info.importance_weights, w / w.max(),
                               rtol=1e-6)
    assert info.positions.numpy().min() == 0  # stratified: all present
    assert info.positions.numpy().max() == 3


def test_beta_schedule_and_alpha_zero():
    uniform = PrioritizedReplayBuffer(SCALAR, 1, 4, alpha=0., seed=2)
    _fill(uniform, 4, [0])
    uniform.update_priority([0, 0], [0, 1], [100., 0.])
    np.testing.assert_allclose(uniform.leaf_priorities(), [[1, 1, 1, 1]])
    _, info = uniform.get_batch(8, 1)
    np.testing.assert_allclose(info.importance_weights, np.ones(8))
    np.testing.assert_array_equal(np.sort(info.positions),
                                  np.repeat(np.arange(4), 2))

    beta = tf.Variable(0.)  # e.g. annealed towards 1 by the trainer
    buffer = PrioritizedReplayBuffer(SCALAR, 1, 2, alpha=1., epsilon=0.,
                                     beta=beta.read_value, seed=2)
    _fill(buffer, 2, [0])
    buffer.update_priority([0, 0], [0, 1], [1., 3.])

    @tf.function
    def weights():
        _, info = buffer.get_batch(8, 1)
        return info.positions, info.importance_weights

    positions, w = weights()
    np.testing.assert_allclose(w, np.ones(8))
    beta.assign(1.)
    positions, w = weights()
    # (N * P)^-1 with P = 1/4, 3/4, normalized: 1 and 1/3.
    np.testing.assert_allclose(w, np.where(positions == 0, 1., 1. / 3.),
                               rtol=1e-6)


def test_update_priority_changes_the_distribution_and_ignores_stale():
    buffer = PrioritizedReplayBuffer(SCALAR, 1, 4, alpha=1., epsilon=0.,
                                     seed=3)
    _fill(buffer, 4, [0])
    buffer.update_priority([0, 0, 0, 0], [0, 1, 2, 3], [0., 0., 0., 1.])
    _, info = buffer.get_batch(100, 1)
    np.testing.assert_array_equal(info.positions, np.full(100, 3))
    buffer.update_priority([0, 0], [0, 3], [1., 0.])
    _, info = buffer.get_batch(100, 1)
    np.testing.assert_array_equal(info.positions, np.zeros(100))
    _fill(buffer, 1, [0])  # position 4 overwrites position 0's slot
    before = buffer.leaf_priorities().numpy()
    np.testing.assert_allclose(before, [[1, 0, 0, 0]])  # new step, max 1
    buffer.update_priority([0], [0], [7.])  # stale: position 0 is gone
    np.testing.assert_array_equal(buffer.leaf_priorities(), before)
    assert float(buffer.max_priority) == 1.
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match='finite and non-negative'):
        buffer.update_priority([0], [4], [-1.])
    buffer.update_priority([0, 0, 0, 0], [1, 2, 3, 4], [0., 0., 0., 0.])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r'priority 0 \(use epsilon > 0\).*\[4\]'):
        buffer.get_batch(2, 1)
    buffer.clear()
    np.testing.assert_array_equal(buffer.leaf_priorities(), [[0, 0, 0, 0]])


def test_sequences_exclude_starts_near_the_head():
    # 3 envs x 6 slots (padded to an 8-leaf-wide level inside the tree).
    buffer = PrioritizedReplayBuffer(SCALAR, 3, 18, alpha=1., epsilon=0.,
                                     seed=4)
    _fill(buffer, 9, [0])  # env 0 wrapped: positions 3..8
    _fill(buffer, 4, [1])  # env 1: positions 0..3
    _fill(buffer, 2, [2])  # env 2: too short for length 3
    length = 3
    # Huge priorities on the excluded starts must not leak into sampling.
    buffer.update_priority([0, 0, 1, 1, 2, 2], [7, 8, 2, 3, 0, 1],
                           [1e6] * 6)
    buffer.update_priority([0, 0, 0, 0, 1, 1], [3, 4, 5, 6, 0, 1],
                           [1., 2., 3., 4., 5., 5.])
    freqs = _frequencies(buffer, length)
    expected = {(0, 3): 1., (0, 4): 2., (0, 5): 3., (0, 6): 4., (1, 0): 5.,
                (1, 1): 5.}
    assert set(freqs) == set(expected)
    for key, p in expected.items():
        assert abs(freqs[key] - p / 20.) < 0.01, (key, freqs[key])
    _, info = buffer.get_batch(20, length)
    p = np.array([expected[k] for k in zip(info.env_ids.numpy().tolist(),
                                           info.positions.numpy().tolist())])
    w = (6 * p / 20.)**-0.4  # N = 6 valid starts, default beta 0.4
    np.testing.assert_allclose(info.importance_weights, w / w.max(),
                               rtol=1e-5)
    # A tree whose samplable starts are all excluded is an error.
    buffer.clear()
    _fill(buffer, 5, [0])
    _fill(buffer, 2, [1])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r'batch_length=6.*\[5 2 0\]'):
        buffer.get_batch(4, 6)
    _fill(buffer, 1, [0])
    _, info = buffer.get_batch(4, 6)
    np.testing.assert_array_equal(info.positions, [9, 9, 9, 9])  # 9..14


def test_prioritized_sampling_and_updates_in_tf_function():
    buffer = PrioritizedReplayBuffer(SCALAR, 2, 8, alpha=1., epsilon=0.,
                                     seed=5)
    traces = []

    @tf.function
    def step(values, env_ids, priority_of_first):
        traces.append(1)
        buffer.add_batch(values, env_ids)
        data, info = buffer.get_batch(16, 1)
        # Priority = priority_of_first for starts at position 0, else 0.
        buffer.update_priority(
            info.env_ids, info.positions,
            tf.where(info.positions == 0, priority_of_first, 0.))
        return data, info

    for t in range(3):
        data, info = step(tf.constant([t, 100 + t], tf.int64),
                          tf.constant([0, 1]), tf.constant(2.))
    assert len(traces) == 1
    np.testing.assert_array_equal(
        data[0], 100 * info.env_ids.numpy() + info.positions.numpy())
    # Stratified draws over equal masses hit every samplable step each
    # round: position 0 keeps priority 2, every later step (added at the max
    # priority 2) is sampled in its own round and set to 0.
    np.testing.assert_array_equal(buffer.leaf_priorities(),
                                  [[2, 0, 0, 0], [2, 0, 0, 0]])
