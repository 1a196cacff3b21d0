"""Offline losses against numpy references."""

import numpy as np
import tensorflow as tf

from alf_rl.ops.offline_losses import (
    advantage_weights,
    cql_penalty,
    discrete_cql_penalty,
    expectile_loss,
    squared_action_error,
)


def logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    """numpy reference: log(sum(exp(x))) along ``axis``, stably."""
    m = np.max(x, axis=axis)
    return m + np.log(np.sum(np.exp(x - np.expand_dims(m, axis)), axis=axis))


def test_expectile_loss_matches_numpy_and_halves_mse_at_one_half():
    u = np.array([[-2.0, -0.5, 0.0, 0.5, 3.0]], np.float32)
    for tau in (0.5, 0.7, 0.9):
        expected = np.where(u < 0, 1 - tau, tau) * u**2
        np.testing.assert_allclose(
            expectile_loss(tf.constant(u), tau), expected, rtol=1e-6
        )
    np.testing.assert_allclose(
        expectile_loss(tf.constant(u), 0.5), 0.5 * u**2, rtol=1e-6
    )


def test_expectile_regression_finds_the_expectile():
    # Minimizing sum_i L_tau(x_i - m) over m gives the tau-expectile, the m
    # with tau * sum_{x>m} (x - m) = (1 - tau) * sum_{x<m} (m - x).
    x = np.array([0.0, 1.0, 2.0, 10.0], np.float32)
    m = tf.Variable(0.0)
    for _ in range(300):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(expectile_loss(x - m, 0.8))
        m.assign_sub(0.05 * tape.gradient(loss, m))
    m = float(m.numpy())
    above = 0.8 * np.sum(np.maximum(x - m, 0))
    below = 0.2 * np.sum(np.maximum(m - x, 0))
    assert abs(above - below) < 1e-3 and m > np.mean(x)


def test_advantage_weights_are_clipped_exponentials():
    adv = np.array([-1.0, 0.0, 0.3, 10.0], np.float32)
    np.testing.assert_allclose(
        advantage_weights(tf.constant(adv), 0.5, 100.0),
        np.minimum(np.exp(adv / 0.5), 100.0),
        rtol=1e-6,
    )


def test_cql_penalty_is_importance_sampled_logsumexp_minus_data_q():
    rng = np.random.default_rng(0)
    q = rng.normal(size=[6, 3]).astype(np.float32)
    log_mu = rng.normal(size=[6, 3]).astype(np.float32)
    q_data = rng.normal(size=[3]).astype(np.float32)
    expected = logsumexp(q - log_mu, axis=0) - np.log(6) - q_data
    np.testing.assert_allclose(
        cql_penalty(q, log_mu, q_data), expected, rtol=1e-5
    )
    # Uniform proposal over a discrete set of K actions, all sampled once:
    # log mu = -log K, and the estimate is the exact log-sum-exp.
    k = q.shape[0]
    exact = logsumexp(q, axis=0) - q_data
    np.testing.assert_allclose(
        cql_penalty(q, np.full_like(q, -np.log(k)), q_data), exact, rtol=1e-5
    )


def test_squared_action_error_sums_over_action_dims():
    a = np.array([[0.0, 1.0], [2.0, -1.0]], np.float32)
    b = np.array([[1.0, 1.0], [0.0, 0.0]], np.float32)
    np.testing.assert_allclose(squared_action_error(a, b), [1.0, 5.0])


def test_discrete_cql_penalty_is_logsumexp_minus_data_q():
    rng = np.random.default_rng(1)
    q = rng.normal(size=[4, 3]).astype(np.float32)  # [B, A]
    taken = np.array([0, 2, 1, 2])
    q_data = q[np.arange(4), taken]
    expected = np.array(
        [np.log(np.sum(np.exp(q[b]))) - q_data[b] for b in range(4)]
    )
    got = discrete_cql_penalty(q, q_data).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    assert np.all(got > 0)  # log-sum-exp exceeds every column
    # Identity: the importance-sampled penalty, every action sampled once
    # under the uniform proposal.
    q_t = q.T
    np.testing.assert_allclose(
        got,
        cql_penalty(q_t, np.full_like(q_t, -np.log(3)), q_data),
        rtol=1e-5,
    )
    # Hand-computed: Q = (0, 0), data Q 0 -> log 2.
    np.testing.assert_allclose(
        discrete_cql_penalty(
            np.zeros([1, 2], np.float32), np.zeros([1], np.float32)
        ),
        [np.log(2.0)],
        rtol=1e-6,
    )
