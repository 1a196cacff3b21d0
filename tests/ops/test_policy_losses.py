"""Tests for alf_rl.ops.policy_losses: hand-computed arrays and identities."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.ops import losses, policy_losses

# Ratios inside, at the edges of and outside [0.8, 1.2], with both signs of
# advantage.
R = np.array([[0.5, 0.9, 1.0, 1.2, 1.5],
              [0.5, 0.9, 1.0, 1.2, 1.5]], np.float32)
ADV = np.array([[2.0, 2.0, 2.0, 2.0, 2.0],
                [-2.0, -2.0, -2.0, -2.0, -2.0]], np.float32)


def test_policy_gradient_loss_hand_computed_and_gradient():
    log_pi = tf.Variable([[-0.5, -2.0], [-1.0, -0.1]])
    adv = tf.constant([[1.0, -3.0], [0.0, 2.0]])
    with tf.GradientTape() as tape:
        loss = policy_losses.policy_gradient_loss(log_pi, adv)
    np.testing.assert_allclose(loss.numpy(), [[0.5, -6.0], [0.0, 0.2]],
                               rtol=1e-6)
    # d/dlog_pi (-A log_pi) = -A: ascent on log_pi where A > 0.
    np.testing.assert_allclose(tape.gradient(loss, log_pi).numpy(),
                               -adv.numpy())


def test_clipped_surrogate_hand_computed():
    loss = policy_losses.clipped_surrogate_loss(R, ADV, 0.2).numpy()
    # -min(r A, clip(r, 0.8, 1.2) A):
    #   A = +2: r=0.5 -> -min(1.0, 1.6) = -1.0; r=1.5 -> -min(3.0, 2.4)
    #   A = -2: r=0.5 -> -min(-1.0, -1.6) = 1.6; r=1.5 -> -min(-3, -2.4) = 3
    expected = np.array([[-1.0, -1.8, -2.0, -2.4, -2.4],
                         [1.6, 1.8, 2.0, 2.4, 3.0]], np.float32)
    np.testing.assert_allclose(loss, expected, rtol=1e-6)


def test_clipped_surrogate_equals_plain_inside_the_clip_range():
    rng = np.random.RandomState(0)
    r = rng.uniform(0.8, 1.2, size=(6, 4)).astype(np.float32)
    adv = rng.randn(6, 4).astype(np.float32)
    np.testing.assert_allclose(
        policy_losses.clipped_surrogate_loss(r, adv, 0.2).numpy(), -r * adv,
        rtol=1e-6)
    # And it never exceeds the plain surrogate (a pessimistic bound).
    r = rng.uniform(0.0, 3.0, size=(6, 4)).astype(np.float32)
    assert np.all(policy_losses.clipped_surrogate_loss(r, adv, 0.2).numpy()
                  >= -r * adv - 1e-6)


def test_clipped_surrogate_gradient_vanishes_only_where_clipped():
    r = tf.Variable(R)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(policy_losses.clipped_surrogate_loss(r, ADV,
                                                                  0.2))
    grad = tape.gradient(loss, r).numpy()
    # A > 0 is clipped above 1.2 (r = 1.5), A < 0 below 0.8 (r = 0.5).
    assert grad[0, 4] == 0.0 and grad[1, 0] == 0.0
    np.testing.assert_allclose(grad[0, :4], -2.0)
    np.testing.assert_allclose(grad[1, 1:], 2.0)


def test_approx_kl_hand_computed_and_identities():
    log_ratio = np.log(np.array([0.5, 1.0, 1.5, 3.0], np.float32))
    kl = policy_losses.approx_kl(log_ratio).numpy()
    r = np.exp(log_ratio)
    np.testing.assert_allclose(kl, (r - 1) - np.log(r), rtol=1e-5)
    assert kl[1] == 0.0  # r = 1: no change, no divergence
    rng = np.random.RandomState(1)
    assert np.all(policy_losses.approx_kl(
        rng.randn(100).astype(np.float32) * 3).numpy() >= 0.0)
    # Second order: (r - 1) - log r ~ (log r)^2 / 2 for small changes.
    small = np.float32(1e-2)
    np.testing.assert_allclose(policy_losses.approx_kl(small).numpy(),
                               small**2 / 2, rtol=1e-2)


def test_approx_kl_is_unbiased_for_samples_of_the_old_policy():
    # pi_old = (1/2, 1/2), pi = (3/4, 1/4): E_old[k3] = KL(old || new).
    log_ratio = np.log(np.array([1.5, 0.5], np.float32))
    mean = float(np.mean(policy_losses.approx_kl(log_ratio).numpy()))
    kl = 0.5 * np.log(0.5 / 0.75) + 0.5 * np.log(0.5 / 0.25)
    assert mean == pytest.approx(kl, rel=1e-5)


def test_clip_fraction():
    # (The edge itself, 1.2f - 1, rounds above 0.2f in float32: avoid it.)
    r = np.array([0.5, 0.9, 1.0, 1.1, 1.5], np.float32)
    np.testing.assert_array_equal(
        policy_losses.clip_fraction(r, 0.2).numpy(), [1., 0., 0., 0., 1.])


def test_clipped_value_loss_hand_computed_and_identity():
    # v_old = 0, G = 2, eps = 0.2: v = 1 -> clipped v 0.2; losses 0.5 and
    # 0.5 * 1.8^2 = 1.62, the max is taken. v = 0.1 is inside: 0.5 * 1.9^2.
    v = np.array([1.0, 0.1], np.float32)
    v_old = np.zeros(2, np.float32)
    target = np.array([2.0, 2.0], np.float32)
    loss = policy_losses.clipped_value_loss(v, v_old, target, 0.2)
    np.testing.assert_allclose(loss.numpy(), [1.62, 1.805], rtol=1e-5)
    # Within eps of the old value it is the plain loss, for any loss_fn.
    v = np.array([0.15, -0.2, 0.0], np.float32)
    target = np.array([3.0, -1.0, 0.5], np.float32)
    for fn in (losses.element_wise_squared_loss,
               losses.element_wise_huber_loss):
        np.testing.assert_allclose(
            policy_losses.clipped_value_loss(v, np.zeros(3, np.float32),
                                             target, 0.2, fn).numpy(),
            fn(target, v).numpy(), rtol=1e-6)


def test_normalize_advantages_over_valid_steps_then_clip():
    adv = np.array([[1.0, 3.0], [5.0, 100.0]], np.float32)
    mask = np.array([[1.0, 1.0], [1.0, 0.0]], np.float32)
    out = policy_losses.normalize_advantages(adv, mask).numpy()
    # Moments of (1, 3, 5): mean 3, std sqrt(8/3).
    std = np.sqrt(8.0 / 3.0)
    np.testing.assert_allclose(out[0], [-2.0 / std, 0.0], rtol=1e-5)
    np.testing.assert_allclose(out[1, 0], 2.0 / std, rtol=1e-5)
    clipped = policy_losses.normalize_advantages(adv, mask, normalize=False,
                                                 clip=2.0).numpy()
    np.testing.assert_array_equal(clipped, [[1.0, 2.0], [2.0, 2.0]])
    # Neither option: unchanged.
    np.testing.assert_array_equal(
        policy_losses.normalize_advantages(adv, mask, normalize=False).numpy(),
        adv)


def test_ops_run_compiled_with_a_tensor_epsilon():

    @tf.function
    def compute(r, adv, eps):
        return (policy_losses.clipped_surrogate_loss(r, adv, eps),
                policy_losses.clip_fraction(r, eps))

    loss, frac = compute(tf.constant(R), tf.constant(ADV), tf.constant(0.2))
    np.testing.assert_allclose(
        loss.numpy(), policy_losses.clipped_surrogate_loss(R, ADV, 0.2),
        rtol=1e-6)
    np.testing.assert_array_equal(
        frac.numpy(), policy_losses.clip_fraction(R, 0.2).numpy())
