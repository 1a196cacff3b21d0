"""ops.mutual_information: each bound, loss and pointwise estimate against
numpy on hand-made scores, MINE's corrected gradient, the log-space moving
average, and the bounds at the optimal critic of correlated Gaussians."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.ops.mutual_information import (dv_bound, dv_loss, dv_pointwise_mi,
                                           gaussian_mutual_information,
                                           jsd_bound, jsd_loss, log_mean_exp,
                                           next_log_moving_average, nwj_bound,
                                           nwj_loss, nwj_pointwise_mi)

T_JOINT = np.array([1.5, 0.25, -0.5, 2.0], np.float32)
T_MARGINAL = np.array([0.5, -1.0, 0.75, -0.25], np.float32)
T_PAIRS = np.array([[1.5, -0.5, 0.0], [0.25, 2.0, -1.0], [0.5, 0.0, 1.0]],
                   np.float32)


def _softplus(x):
    return np.log1p(np.exp(x))


def _np_lme(t):
    return np.log(np.mean(np.exp(t.astype(np.float64))))


@pytest.mark.parametrize('t_marginal', [T_MARGINAL, T_PAIRS],
                         ids=['marginal_B', 'marginal_BxB'])
def test_bounds_against_numpy(t_marginal):
    t_joint = T_JOINT[:t_marginal.shape[0]]
    j = t_joint.astype(np.float64)
    m = t_marginal.astype(np.float64)
    dv = np.mean(j) - _np_lme(m)
    nwj = np.mean(j) - np.mean(np.exp(m - 1))
    jsd = -np.mean(_softplus(-j)) - np.mean(_softplus(m))
    np.testing.assert_allclose(log_mean_exp(t_marginal), _np_lme(m),
                               rtol=1e-6)
    np.testing.assert_allclose(dv_bound(t_joint, t_marginal), dv, rtol=1e-6)
    np.testing.assert_allclose(nwj_bound(t_joint, t_marginal), nwj,
                               rtol=1e-6)
    np.testing.assert_allclose(jsd_bound(t_joint, t_marginal), jsd,
                               rtol=1e-6)
    # Pointwise estimates: per sample, their means are the bounds.
    np.testing.assert_allclose(dv_pointwise_mi(t_joint, t_marginal),
                               j - _np_lme(m), rtol=1e-6)
    np.testing.assert_allclose(nwj_pointwise_mi(t_joint, t_marginal),
                               j - np.mean(np.exp(m - 1)), rtol=1e-6)
    # Per-sample losses have t_joint's shape and mean -bound.
    for loss_fn, bound in ((dv_loss, dv), (nwj_loss, nwj), (jsd_loss, jsd)):
        loss = loss_fn(t_joint, t_marginal)
        assert loss.shape == t_joint.shape
        np.testing.assert_allclose(np.mean(loss), -bound, rtol=1e-6)
    np.testing.assert_allclose(jsd_loss(t_joint, t_marginal),
                               _softplus(-j) + np.mean(_softplus(m)),
                               rtol=1e-6)


def test_log_mean_exp_is_stable_for_large_scores():
    t = tf.constant([1000.0, 1000.0 + np.log(3.0)])
    np.testing.assert_allclose(log_mean_exp(t), 1000.0 + np.log(2.0),
                               rtol=1e-7)
    # float32 carries 1001 - 1000.69 to ~1e-4 (its ulp at 1000 is 6e-5).
    np.testing.assert_allclose(dv_bound(tf.constant([1001.0]), t),
                               1.0 - np.log(2.0), atol=2e-4)


def _grads(loss_fn, *args):
    t_joint, t_marginal = tf.constant(T_JOINT), tf.constant(T_MARGINAL)
    with tf.GradientTape() as tape:
        tape.watch([t_joint, t_marginal])
        total = tf.reduce_mean(loss_fn(t_joint, t_marginal, *args))
    return total, tape.gradient(total, [t_joint, t_marginal])


def test_dv_loss_gradient_divides_by_the_given_denominator():
    log_d = np.float32(0.3)
    total, (g_joint, g_marginal) = _grads(dv_loss, tf.constant(log_d))
    e = np.exp(T_MARGINAL.astype(np.float64))
    # Value: -DV bound, whatever the denominator.
    np.testing.assert_allclose(total, -(np.mean(T_JOINT) - np.log(np.mean(e))),
                               rtol=1e-6)
    # d/dt_joint mean(loss) = -1/B; d/dt_marginal = e^t / (M D).
    np.testing.assert_allclose(g_joint, np.full(4, -0.25), rtol=1e-6)
    np.testing.assert_allclose(g_marginal, e / (4 * np.exp(0.3)), rtol=1e-6)


def test_dv_loss_without_denominator_is_the_plain_dv_gradient():
    _, (g_joint, g_marginal) = _grads(dv_loss)
    t_joint, t_marginal = tf.constant(T_JOINT), tf.constant(T_MARGINAL)
    with tf.GradientTape() as tape:
        tape.watch([t_joint, t_marginal])
        neg_bound = -dv_bound(t_joint, t_marginal)
    want = tape.gradient(neg_bound, [t_joint, t_marginal])
    e = np.exp(T_MARGINAL.astype(np.float64))
    np.testing.assert_allclose(g_marginal, e / e.sum(), rtol=1e-6)  # softmax
    np.testing.assert_allclose(g_joint, want[0], rtol=1e-6)
    np.testing.assert_allclose(g_marginal, want[1], rtol=1e-6)


@pytest.mark.parametrize('loss_fn, bound_fn', [(nwj_loss, nwj_bound),
                                               (jsd_loss, jsd_bound)],
                         ids=['nwj', 'jsd'])
def test_unbiased_losses_have_minus_the_bounds_gradient(loss_fn, bound_fn):
    _, grads = _grads(loss_fn)
    t_joint, t_marginal = tf.constant(T_JOINT), tf.constant(T_MARGINAL)
    with tf.GradientTape() as tape:
        tape.watch([t_joint, t_marginal])
        neg_bound = -bound_fn(t_joint, t_marginal)
    for g, w in zip(grads, tape.gradient(neg_bound, [t_joint, t_marginal])):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    if loss_fn is nwj_loss:
        np.testing.assert_allclose(grads[1],
                                   np.exp(T_MARGINAL - 1) / 4, rtol=1e-6)


def test_next_log_moving_average():
    a, v = np.float32(0.7), np.float32(-0.4)
    want = np.log(0.9 * np.exp(0.7) + 0.1 * np.exp(-0.4))
    np.testing.assert_allclose(
        next_log_moving_average(tf.constant(a), tf.constant(v), 0.1, True),
        want, rtol=1e-6)
    # Before the first update the average is the value itself.
    np.testing.assert_allclose(
        next_log_moving_average(tf.constant(a), tf.constant(v), 0.1, False),
        v)
    np.testing.assert_allclose(
        next_log_moving_average(tf.constant(a), tf.constant(v), 1.0, True), v)
    # Log space: averages of e^500 do not overflow.
    np.testing.assert_allclose(
        next_log_moving_average(tf.constant(500.0), tf.constant(500.0),
                                0.01, tf.constant(True)), 500.0, rtol=1e-7)


def test_bounds_at_the_optimal_critic_of_correlated_gaussians():
    """At ``T* = log p(x, y) / (p(x) p(y))`` the DV bound, the NWJ bound of
    ``T* + 1`` and ``mean T*`` (the JSD estimate) are the MI, up to the
    sampling error of 200,000 samples."""
    rho, n = 0.9, 200000
    rng = np.random.RandomState(0)
    x = rng.randn(n)
    y = rho * x + np.sqrt(1 - rho**2) * rng.randn(n)
    y_marginal = rng.permutation(y)

    def log_ratio(x, y):
        return (-0.5 * np.log(1 - rho**2) -
                (rho**2 * (x**2 + y**2) - 2 * rho * x * y) /
                (2 * (1 - rho**2)))

    t_joint = tf.constant(log_ratio(x, y), tf.float32)
    t_marginal = tf.constant(log_ratio(x, y_marginal), tf.float32)
    mi = gaussian_mutual_information(rho, 1)
    np.testing.assert_allclose(mi, 0.830366, rtol=1e-5)
    np.testing.assert_allclose(tf.reduce_mean(t_joint), mi, atol=0.01)
    np.testing.assert_allclose(dv_bound(t_joint, t_marginal), mi, atol=0.02)
    np.testing.assert_allclose(nwj_bound(t_joint + 1, t_marginal + 1), mi,
                               atol=0.02)
    # JSD's optimum: 2 JSD - 2 log 2 lies in [-2 log 2, 0].
    assert -2 * np.log(2) < float(jsd_bound(t_joint, t_marginal)) < 0


def test_gaussian_mutual_information_values_and_errors():
    np.testing.assert_allclose(gaussian_mutual_information(0.5, 10),
                               -5 * np.log(0.75))
    with pytest.raises(ValueError, match='rho must be in'):
        gaussian_mutual_information(1.0, 1)
    with pytest.raises(ValueError, match='dim must be >= 1, got 0'):
        gaussian_mutual_information(0.5, 0)
