"""ops.exploration: noise statistics, seeds, clipping and identities."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.ops.exploration import (epsilon_greedy_action, exploration_noise,
                                    half_range, ou_step,
                                    smoothed_target_action)
from alf_rl.specs import BoundedTensorSpec

SEED = tf.constant([1, 2])


def test_half_range_broadcasts_the_bounds():
    spec = BoundedTensorSpec((2, ), tf.float32, [-1.0, 0.0], [1.0, 6.0])
    np.testing.assert_array_equal(half_range(spec), [1.0, 3.0])
    spec = BoundedTensorSpec((3, ), tf.float32, -2.0, 2.0)
    np.testing.assert_array_equal(half_range(spec), [2.0, 2.0, 2.0])


def test_ou_step_decays_without_noise_and_is_seeded():
    x = tf.constant([[1.0, -2.0]])
    np.testing.assert_allclose(ou_step(x, 0.25, 0.0, SEED), [[0.75, -1.5]])
    a = ou_step(tf.zeros([5000, 1]), 0.15, 0.3, SEED)
    np.testing.assert_array_equal(a, ou_step(tf.zeros([5000, 1]), 0.15, 0.3,
                                             SEED))
    assert np.std(a) == pytest.approx(0.3, rel=0.05)


def test_exploration_noise_gaussian_scaled_by_half_range():
    a_t = [tf.zeros([4000, 2])]
    noisy, new_ou = exploration_noise(a_t, None, [tf.constant([1.0, 3.0])],
                                      'gaussian', 0.1, 0.15, [SEED])
    assert new_ou is None
    np.testing.assert_allclose(np.std(noisy[0], 0), [0.1, 0.3], rtol=0.06)
    # stddev 0: the action itself.
    noisy, _ = exploration_noise([tf.ones([3, 2])], None,
                                 [tf.constant([1.0, 3.0])], 'gaussian', 0.0,
                                 0.15, [SEED])
    np.testing.assert_array_equal(noisy[0], np.ones([3, 2]))


def test_exploration_noise_ou_returns_the_process_value():
    a_t = [tf.constant([[0.5]])]
    ou_tm1 = [tf.constant([[2.0]])]
    noisy, new_ou = exploration_noise(a_t, ou_tm1, [tf.constant([2.0])],
                                      'ou', 0.0, 0.5, [SEED])
    # x_t = 2 * (1 - 0.5) = 1; action 0.5 + 1 * half range 2 = 2.5.
    np.testing.assert_allclose(new_ou[0], [[1.0]])
    np.testing.assert_allclose(noisy[0], [[2.5]])
    with pytest.raises(ValueError, match="kind must be 'gaussian' or 'ou'"):
        exploration_noise(a_t, None, [tf.constant([1.0])], 'uniform', 0.1,
                          0.1, [SEED])


def test_smoothed_target_action_is_clipped_and_scaled():
    a_t = tf.zeros([2000, 2])
    s = smoothed_target_action(a_t, tf.constant([1., 3.]), 0.2, 0.5,
                               SEED).numpy()
    assert np.all(np.abs(s[:, 0]) <= 0.5 + 1e-6)
    assert np.all(np.abs(s[:, 1]) <= 1.5 + 1e-6)
    # sigma = 0 (or c = 0): no smoothing.
    a_t = tf.constant([[0.3, -0.7]])
    np.testing.assert_array_equal(
        smoothed_target_action(a_t, tf.constant([1., 3.]), 0.0, 0.5, SEED),
        a_t)
    np.testing.assert_array_equal(
        smoothed_target_action(a_t, tf.constant([1., 3.]), 0.2, 0.0, SEED),
        a_t)


def test_epsilon_greedy_action():
    q_t = tf.tile(tf.constant([[0., 3., 1.]]), [2000, 1])
    np.testing.assert_array_equal(epsilon_greedy_action(q_t, 0.0, SEED), 1)
    a = epsilon_greedy_action(q_t, 1.0, SEED).numpy()
    counts = np.bincount(a, minlength=3) / a.size
    np.testing.assert_allclose(counts, [1 / 3] * 3, atol=0.05)
    # epsilon 0.3: a random action is not the greedy one 2/3 of the time.
    a = epsilon_greedy_action(q_t, 0.3, SEED).numpy()
    assert np.mean(a != 1) == pytest.approx(0.2, abs=0.04)
