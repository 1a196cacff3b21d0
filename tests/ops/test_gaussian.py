"""Tests for alf_rl.ops.gaussian against numpy references."""

import numpy as np
import tensorflow as tf

from alf_rl.ops.gaussian import diagonal_gaussian_kl, reparameterized_sample


def _numpy_kl(mu_q, lv_q, mu_p, lv_p):
    """KL(q || p) of diagonal Gaussians, per dimension from the densities'
    closed form: log(s_p / s_q) + (s_q^2 + (m_q - m_p)^2) / (2 s_p^2) - 1/2.
    """
    s_q, s_p = np.sqrt(np.exp(lv_q)), np.sqrt(np.exp(lv_p))
    per_dim = (
        np.log(s_p / s_q) + (s_q**2 + (mu_q - mu_p) ** 2) / (2 * s_p**2) - 0.5
    )
    return per_dim.sum(-1)


def test_kl_to_standard_normal_matches_closed_form():
    rng = np.random.RandomState(0)
    mu, lv = rng.randn(2, 7, 5).astype(np.float32)
    got = diagonal_gaussian_kl(tf.constant(mu), tf.constant(lv)).numpy()
    want = _numpy_kl(mu, lv, np.zeros_like(mu), np.zeros_like(lv))
    assert got.shape == (7,)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_kl_to_given_prior_matches_closed_form():
    rng = np.random.RandomState(1)
    mu_q, lv_q, mu_p, lv_p = rng.randn(4, 3, 6, 4).astype(np.float32)
    got = diagonal_gaussian_kl(*map(tf.constant, (mu_q, lv_q, mu_p, lv_p)))
    assert got.shape == (3, 6)
    np.testing.assert_allclose(
        got.numpy(), _numpy_kl(mu_q, lv_q, mu_p, lv_p), rtol=1e-5, atol=1e-5
    )


def test_kl_is_zero_between_equal_gaussians_and_hand_value():
    mu = tf.constant([[0.3, -1.0]])
    lv = tf.constant([[0.5, -0.2]])
    np.testing.assert_allclose(
        diagonal_gaussian_kl(mu, lv, mu, lv).numpy(), [0.0], atol=1e-6
    )
    # N(1, 1) vs N(0, 1) in one dimension: 0.5 * 1^2.
    np.testing.assert_allclose(
        diagonal_gaussian_kl(tf.constant([[1.0]]), tf.constant([[0.0]])),
        [0.5],
        rtol=1e-6,
    )


def test_reparameterized_sample_and_its_gradients():
    mu = tf.constant([[1.0, -2.0]])
    lv = tf.constant([[np.log(4.0), 0.0]], tf.float32)
    eps = tf.constant([[0.5, -1.0]])
    with tf.GradientTape() as tape:
        tape.watch([mu, lv])
        z = reparameterized_sample(mu, lv, eps)
    np.testing.assert_allclose(z.numpy(), [[1.0 + 2.0 * 0.5, -3.0]], rtol=1e-6)
    d_mu, d_lv = tape.gradient(z, [mu, lv])
    np.testing.assert_allclose(d_mu.numpy(), [[1.0, 1.0]])
    # dz/dlv = 0.5 exp(lv / 2) eps
    np.testing.assert_allclose(
        d_lv.numpy(), [[0.5 * 2.0 * 0.5, -0.5]], rtol=1e-6
    )
