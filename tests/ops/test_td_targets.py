"""ops.td_targets and the padding helpers of ops.masks: hand-computed
arrays and identities (rlax style)."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.data_structures import StepType
from alf_rl.ops.masks import mask_last_row, pad_last_row
from alf_rl.ops.td_targets import (expected_soft_state_value, fold_n_step,
                                   n_step_returns, one_step_td_target,
                                   soft_state_value)

F, M, L = StepType.FIRST, StepType.MID, StepType.LAST


def test_one_step_td_target_by_hand():
    r_t = tf.constant([[1.0, 2.0]])
    discount_t = tf.constant([[1.0, 0.0]])
    v_t = tf.constant([[10.0, 10.0]])
    # 1 + 0.9 * 1 * 10 = 10; termination: 2 + 0.9 * 0 * 10 = 2.
    np.testing.assert_allclose(one_step_td_target(r_t, discount_t, v_t, 0.9),
                               [[10.0, 2.0]])


def test_one_step_td_target_stops_the_gradient():
    v_t = tf.constant([[3.0]])
    with tf.GradientTape() as tape:
        tape.watch(v_t)
        y = one_step_td_target(tf.ones([1, 1]), tf.ones([1, 1]), v_t, 0.5)
    assert tape.gradient(y, v_t) is None


def test_n_step_returns_by_hand():
    gamma = 0.5
    # One column: F M M L F; values 10, 20, 30, 40, 50.
    step_type = tf.constant([[F], [M], [M], [L], [F]])
    r_t = tf.constant([[0.], [1.], [2.], [3.], [0.]])
    discount_t = tf.constant([[1.], [1.], [1.], [0.], [1.]])
    v_t = tf.constant([[10.], [20.], [30.], [40.], [50.]])
    g = n_step_returns(r_t, discount_t, step_type, v_t, gamma)
    # G_2 = 3 + 0.5 * 0 * 40 = 3; G_1 = 2 + 0.5 * 3 = 3.5;
    # G_0 = 1 + 0.5 * 3.5 = 2.75; G_3 (LAST) = v_3 = 40.
    np.testing.assert_allclose(g.numpy()[:, 0], [2.75, 3.5, 3.0, 40.0])
    # Truncation (discount 1 at LAST) bootstraps from the LAST step's value.
    g = n_step_returns(r_t, tf.ones_like(discount_t), step_type, v_t, gamma)
    np.testing.assert_allclose(g.numpy()[2, 0], 3.0 + 0.5 * 40.0)


@pytest.mark.parametrize('discount', [0.0, 1.0])
def test_n_step_with_two_rows_equals_one_step(discount):
    r_t = tf.constant([[0.0, 0.0], [1.5, -2.0]])
    discount_t = tf.constant([[1.0, 1.0], [discount, 1.0]])
    v_t = tf.constant([[7.0, 8.0], [3.0, -4.0]])
    step_type = tf.constant([[F, M], [M, M]])
    n_step = n_step_returns(r_t, discount_t, step_type, v_t, 0.9)
    one = one_step_td_target(r_t[1:], discount_t[1:], v_t[1:], 0.9)
    # Bit-identical: the same products in the same order.
    np.testing.assert_array_equal(n_step.numpy(), one.numpy())


def _fold_reference(r, d, step_type, gamma):
    """numpy: the first LAST row k >= 1 (T-1 if none), R and D by the
    sums and products of the equation."""
    t, b = r.shape
    ks, rs, ds = [], [], []
    for col in range(b):
        k = next((j for j in range(1, t) if step_type[j, col] == L), t - 1)
        rs.append(sum(gamma**(j - 1) * np.prod(d[1:j, col]) * r[j, col]
                      for j in range(1, k + 1)))
        ds.append(gamma**(k - 1) * np.prod(d[1:k + 1, col]))
        ks.append(k)
    return np.array(ks), np.array(rs), np.array(ds)


def test_fold_n_step_by_hand():
    gamma = 0.5
    # Column 0: F M M M (no end): k = 3, R = 1 + 0.5 * 2 + 0.25 * 3 = 2.75,
    # D = 0.25. Column 1: M L F M (terminated at row 1): k = 1, R = 4, D = 0.
    step_type = tf.constant([[F, M], [M, L], [M, F], [M, M]])
    r_t = tf.constant([[9., 9.], [1., 4.], [2., 5.], [3., 6.]])
    discount_t = tf.constant([[1., 1.], [1., 0.], [1., 1.], [1., 1.]])
    k, reward, discount = fold_n_step(r_t, discount_t, step_type, gamma)
    np.testing.assert_array_equal(k, [3, 1])
    np.testing.assert_allclose(reward, [2.75, 4.0])
    np.testing.assert_allclose(discount, [0.25, 0.0])


def test_fold_n_step_matches_numpy_and_the_n_step_return():
    rng = np.random.default_rng(3)
    t, b, gamma = 5, 64, 0.9
    step_type = rng.choice([M, M, M, L], size=(t, b)).astype(np.int32)
    # A LAST step is followed by a FIRST one, as in a stream.
    step_type[1:][step_type[:-1] == L] = F
    r = rng.normal(size=(t, b)).astype(np.float32)
    d = np.where(step_type == L, rng.choice([0., 1.], size=(t, b)),
                 1.).astype(np.float32)
    v = rng.normal(size=(t, b)).astype(np.float32)
    k, reward, discount = fold_n_step(r, d, tf.constant(step_type), gamma)
    ref_k, ref_r, ref_d = _fold_reference(r, d, step_type, gamma)
    np.testing.assert_array_equal(k, ref_k)
    np.testing.assert_allclose(reward, ref_r, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(discount, ref_d, rtol=1e-5)
    # R + gamma D v_k is row 0's n-step return (rows where row 0 is not
    # itself LAST: those are masked in training).
    folded = reward + gamma * discount * v[ref_k, np.arange(b)]
    g0 = n_step_returns(r, d, tf.constant(step_type), v, gamma)[0]
    live = step_type[0] != L
    assert live.sum() > 30 and (ref_k < t - 1).sum() > 10
    np.testing.assert_allclose(np.asarray(folded)[live],
                               np.asarray(g0)[live], rtol=1e-5, atol=1e-5)


def test_soft_state_value_by_hand_and_alpha_zero():
    q_t = tf.constant([1.0, -2.0])
    log_pi_t = tf.constant([-0.5, -3.0])
    np.testing.assert_allclose(soft_state_value(q_t, log_pi_t, 0.2),
                               [1.1, -1.4], rtol=1e-6)
    np.testing.assert_array_equal(soft_state_value(q_t, log_pi_t, 0.0), q_t)


def test_soft_td_target_with_alpha_zero_is_the_plain_target():
    r_t = tf.constant([[1.0, 0.5]])
    discount_t = tf.constant([[1.0, 0.0]])
    q_t = tf.constant([[4.0, 6.0]])
    log_pi_t = tf.constant([[-1.0, -2.0]])
    soft = one_step_td_target(r_t, discount_t,
                              soft_state_value(q_t, log_pi_t, 0.0), 0.9)
    np.testing.assert_array_equal(soft,
                                  one_step_td_target(r_t, discount_t, q_t,
                                                     0.9))
    # alpha > 0 adds the discounted entropy bonus -gamma * d * alpha * log pi.
    soft = one_step_td_target(r_t, discount_t,
                              soft_state_value(q_t, log_pi_t, 0.5), 0.9)
    np.testing.assert_allclose(soft, [[1.0 + 0.9 * 4.5, 0.5]], rtol=1e-6)


def test_expected_soft_state_value_by_hand():
    pi_t = tf.constant([[0.25, 0.75]])
    log_pi_t = tf.math.log(pi_t)
    q_t = tf.constant([[1.0, 3.0]])
    entropy = -(0.25 * np.log(0.25) + 0.75 * np.log(0.75))
    np.testing.assert_allclose(
        expected_soft_state_value(pi_t, log_pi_t, q_t, 0.5),
        [0.25 * 1.0 + 0.75 * 3.0 + 0.5 * entropy], rtol=1e-6)
    # alpha = 0: the policy's expected Q.
    np.testing.assert_allclose(
        expected_soft_state_value(pi_t, log_pi_t, q_t, 0.0), [2.5],
        rtol=1e-6)
    # A one-hot policy: Q of that action (0 * log 0 would be nan, so the
    # identity is checked on a near one-hot policy).
    pi_t = tf.constant([[1e-7, 1.0 - 1e-7]])
    np.testing.assert_allclose(
        expected_soft_state_value(pi_t, tf.math.log(pi_t), q_t, 0.0), [3.0],
        rtol=1e-5)


def test_pad_last_row_and_mask_last_row():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(pad_last_row(x),
                                  [[1.0, 2.0], [3.0, 4.0], [0.0, 0.0]])
    m = tf.constant([[1.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    np.testing.assert_array_equal(mask_last_row(m),
                                  [[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    # Padding rows 0..T-2 back to T, then masking the last row, is exact.
    padded = pad_last_row(m[:-1])
    np.testing.assert_array_equal(padded, mask_last_row(m))
    assert pad_last_row(tf.zeros([1, 3, 2], tf.int32)).shape == (2, 3, 2)
