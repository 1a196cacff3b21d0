"""Tests for alf_rl.ops.value_ops: hand-computed arrays and identities."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.ops import value_ops

F, M, L = 0, 1, 2

# Four environments (columns), T=5, discount gamma=0.5 already folded in.
#   col 0: one episode, MID steps only.
#   col 1: episode terminates at t=2 (discount 0), a new one starts at t=3.
#   col 2: like col 1 but the LAST at t=2 is a time limit (discount 0.5).
#   col 3: window starts mid-episode; terminal LAST at t=1, then a new
#          episode that is cut by a time limit at t=4 (window's last step).
STEP_TYPES = np.array([[F, F, F, M],
                       [M, M, M, L],
                       [M, L, L, F],
                       [M, F, F, M],
                       [M, M, M, L]], np.int32)
REWARDS = np.array([[0., 0., 0., 5.],
                    [1., 1., 1., 1.],
                    [2., 2., 2., 0.],
                    [3., 0., 0., 2.],
                    [4., 4., 4., 3.]], np.float32)
DISCOUNTS = np.array([[.5, .5, .5, .5],
                      [.5, .5, .5, 0.],
                      [.5, 0., .5, .5],
                      [.5, .5, .5, .5],
                      [.5, .5, .5, .5]], np.float32)
VALUES = np.array([[10., 10., 10., 1.],
                   [20., 20., 20., 2.],
                   [30., 30., 30., 3.],
                   [40., 40., 40., 4.],
                   [50., 50., 50., 6.]], np.float32)

# Worked out by hand from G_t = r_{t+1} + d_{t+1} G_{t+1}, G_LAST = v_LAST.
EXPECTED_RETURNS = np.array([[6.375, 2., 9.5, 1.],
                             [10.75, 2., 17., 2.],
                             [17.5, 30., 30., 5.],
                             [29., 29., 29., 6.]], np.float32)
# delta_t = r_{t+1} + d_{t+1} v_{t+1} - v_t, masked to 0 at LAST steps.
EXPECTED_TD_ERRORS = np.array([[1., 1., 1., 0.],
                               [-3., -18., -3., 0.],
                               [-7., 0., 0., 1.],
                               [-11., -11., -11., 2.]], np.float32)


def _args(time_major=True):
    args = (REWARDS, VALUES, STEP_TYPES, DISCOUNTS)
    if not time_major:
        args = tuple(np.transpose(x) for x in args)
    return args


def _reference_gae(r, v, st, d, lam):
    """Plain-Python GAE, the recursion written out step by step."""
    t_len = r.shape[0]
    adv = np.zeros_like(v[:-1])
    acc = np.zeros_like(v[0])
    for t in reversed(range(t_len - 1)):
        delta = r[t + 1] + d[t + 1] * v[t + 1] - v[t]
        acc = np.where(st[t] == L, 0., delta + lam * d[t + 1] * acc)
        adv[t] = acc
    return adv


def test_discounted_return_hand_computed():
    returns = value_ops.discounted_return(*_args())
    assert returns.shape == (4, 4)
    assert returns.dtype == tf.float32
    np.testing.assert_allclose(returns.numpy(), EXPECTED_RETURNS)


def test_discounted_return_final_value_replaces_bootstrap():
    returns = value_ops.discounted_return(
        *_args(), final_value=np.array([100., 100., 100., 100.], np.float32))
    # G_4 := 100, so G_3 = r_4 + 0.5 * 100 = 54 unless step 3 is LAST; the
    # chain then continues unless cut by a LAST step (cols 1, 2 at t=2).
    # col 3: G_3 = 3 + 50 = 53, G_2 = 2 + 0.5 * 53 = 28.5, then as before.
    expected = np.array([[9.5, 2., 9.5, 1.],
                         [17., 2., 17., 2.],
                         [30., 30., 30., 28.5],
                         [54., 54., 54., 53.]], np.float32)
    np.testing.assert_allclose(returns.numpy(), expected)


def test_gae_hand_computed():
    adv = value_ops.generalized_advantage_estimation(*_args(), td_lambda=0.5)
    # A_t = delta_t + 0.5 * d_{t+1} * A_{t+1} (so λd = 0.25), cut at LAST,
    # starting from the TD errors above.
    expected = np.array([[1. - 0.25 * 5.4375, -3.5, 1. - 0.25 * 3., 0.],
                         [-3. - 0.25 * 9.75, -18., -3., 0.],
                         [-7. - 0.25 * 11., 0., 0., 1. + 0.25 * 2.],
                         [-11., -11., -11., 2.]], np.float32)
    np.testing.assert_allclose(adv.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(adv.numpy(),
                               _reference_gae(*_args(), 0.5),
                               rtol=1e-6)


def test_gae_lambda_one_is_return_minus_value():
    adv = value_ops.generalized_advantage_estimation(*_args(), td_lambda=1.0)
    returns = value_ops.discounted_return(*_args())
    np.testing.assert_allclose(adv.numpy(),
                               returns.numpy() - VALUES[:-1],
                               atol=1e-5)


def test_gae_lambda_zero_is_td_error_masked_at_last():
    adv = value_ops.generalized_advantage_estimation(*_args(), td_lambda=0.0)
    np.testing.assert_allclose(adv.numpy(), EXPECTED_TD_ERRORS)


def test_identities_on_random_episodes():
    rng = np.random.RandomState(0)
    t_len, batch = 12, 5
    st = rng.choice([M, M, M, L], size=(t_len, batch)).astype(np.int32)
    for t in range(1, t_len):  # a FIRST always follows a LAST (in order:
        st[t][st[t - 1] == L] = F  # no FIRST after a FIRST, a seam)
    r = rng.randn(t_len, batch).astype(np.float32)
    v = rng.randn(t_len, batch).astype(np.float32)
    d = np.where((st == L) & (rng.rand(t_len, batch) < 0.5), 0.,
                 0.9).astype(np.float32)
    for lam in (0.0, 0.7, 1.0):
        adv = value_ops.generalized_advantage_estimation(r, v, st, d, lam)
        np.testing.assert_allclose(adv.numpy(),
                                   _reference_gae(r, v, st, d, lam),
                                   atol=1e-5)
        lam_ret = value_ops.td_lambda_return(r, v, st, d, lam)
        np.testing.assert_allclose(lam_ret.numpy(), adv.numpy() + v[:-1],
                                   atol=1e-5)
    np.testing.assert_allclose(
        value_ops.td_lambda_return(r, v, st, d, 1.0).numpy(),
        value_ops.discounted_return(r, v, st, d).numpy(),
        atol=1e-5)


def test_batch_major_equals_transposed():
    for fn, kwargs in ((value_ops.discounted_return, {}),
                       (value_ops.generalized_advantage_estimation,
                        dict(td_lambda=0.5)),
                       (value_ops.td_lambda_return, dict(td_lambda=0.5))):
        tm = fn(*_args(), **kwargs)
        bm = fn(*_args(time_major=False), time_major=False, **kwargs)
        assert bm.shape == (4, 4)
        np.testing.assert_allclose(bm.numpy(), np.transpose(tm.numpy()))
    bm = value_ops.discounted_return(*_args(time_major=False),
                                     time_major=False)
    np.testing.assert_allclose(bm.numpy(), EXPECTED_RETURNS.T)


def test_single_trajectory_rank_one():
    returns = value_ops.discounted_return(REWARDS[:, 1], VALUES[:, 1],
                                          STEP_TYPES[:, 1], DISCOUNTS[:, 1])
    np.testing.assert_allclose(returns.numpy(), EXPECTED_RETURNS[:, 1])


def test_inside_tf_function_with_unknown_shapes():
    spec_f = tf.TensorSpec([None, None], tf.float32)
    spec_i = tf.TensorSpec([None, None], tf.int32)

    @tf.function(input_signature=[spec_f, spec_f, spec_i, spec_f])
    def compute(r, v, st, d):
        return (value_ops.discounted_return(r, v, st, d),
                value_ops.generalized_advantage_estimation(r, v, st, d, 0.0))

    returns, adv = compute(*_args())
    np.testing.assert_allclose(returns.numpy(), EXPECTED_RETURNS)
    np.testing.assert_allclose(adv.numpy(), EXPECTED_TD_ERRORS)


def test_static_shape_preserved_in_graph():

    @tf.function
    def compute(r, v, st, d):
        out = value_ops.generalized_advantage_estimation(r, v, st, d, 0.9)
        assert out.shape == (4, 4), out.shape
        return out

    assert compute(*_args()).shape == (4, 4)


def test_gradients_flow_to_values():
    v = tf.Variable(VALUES)
    with tf.GradientTape() as tape:
        adv = value_ops.generalized_advantage_estimation(
            REWARDS, v, STEP_TYPES, DISCOUNTS, 0.0)
        loss = tf.reduce_sum(adv)
    grad = tape.gradient(loss, v)
    # d/dv_t sum_t' delta_t' = -1 (own delta, if not LAST) + d_t (previous
    # step's delta, if that step is not LAST).
    assert grad is not None
    assert grad.numpy()[0, 0] == -1.
    assert grad.numpy()[4, 0] == 0.5


def test_bad_inputs_are_rejected():
    with pytest.raises(ValueError, match='td_lambda'):
        value_ops.generalized_advantage_estimation(*_args(), td_lambda=1.5)
    with pytest.raises(ValueError, match='at least 2'):
        value_ops.discounted_return(REWARDS[:1], VALUES[:1], STEP_TYPES[:1],
                                    DISCOUNTS[:1])
    with pytest.raises(ValueError, match='rewards'):
        value_ops.discounted_return(REWARDS[:, :2], VALUES, STEP_TYPES,
                                    DISCOUNTS)
    with pytest.raises(TypeError, match='step_types'):
        value_ops.discounted_return(REWARDS, VALUES,
                                    STEP_TYPES.astype(np.float32), DISCOUNTS)


def test_advantages_and_returns_identities():
    adv, ret = value_ops.advantages_and_returns(*_args(), td_lambda=0.5)
    # The advantages are GAE's and G^λ - A^λ is the value, exactly.
    np.testing.assert_array_equal(
        adv.numpy(),
        value_ops.generalized_advantage_estimation(*_args(), 0.5).numpy())
    np.testing.assert_array_equal(ret.numpy(), adv.numpy() + VALUES[:-1])
    np.testing.assert_array_equal(
        ret.numpy(), value_ops.td_lambda_return(*_args(), 0.5).numpy())
    # λ = 1: the discounted return (hand-computed above), and at LAST steps
    # the return is the value.
    _, ret1 = value_ops.advantages_and_returns(*_args(), td_lambda=1.0)
    np.testing.assert_allclose(ret1.numpy(), EXPECTED_RETURNS, atol=1e-5)
    is_last = STEP_TYPES[:-1] == L
    np.testing.assert_array_equal(ret.numpy()[is_last],
                                  VALUES[:-1][is_last])
    # λ = 0: the one-step TD target r + d v', the TD errors plus values.
    _, ret0 = value_ops.advantages_and_returns(*_args(), td_lambda=0.0)
    np.testing.assert_allclose(ret0.numpy(),
                               EXPECTED_TD_ERRORS + VALUES[:-1])
    # Batch-major gives the transpose.
    adv_bm, ret_bm = value_ops.advantages_and_returns(
        *_args(time_major=False), td_lambda=0.5, time_major=False)
    np.testing.assert_allclose(adv_bm.numpy(), adv.numpy().T)
    np.testing.assert_allclose(ret_bm.numpy(), ret.numpy().T)

