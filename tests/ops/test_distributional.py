"""ops.distributional against numpy references written loop by loop, and
identities with the scalar n-step returns."""

import math

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.data_structures import StepType
from alf_rl.ops.distributional import (
    categorical_cross_entropy,
    categorical_n_step_targets,
    categorical_projection,
    cosine_embedding,
    quantile_huber_loss,
    quantile_midpoints,
    quantile_n_step_targets,
)
from alf_rl.ops.td_targets import n_step_returns

F, M, L = StepType.FIRST, StepType.MID, StepType.LAST


def _np_projection(z_target, p_target, z):
    """Bellemare et al. 2017, Algorithm 1 (floor/ceil split), one row."""
    n = len(z)
    v_min, v_max = z[0], z[-1]
    dz = (v_max - v_min) / (n - 1)
    m = np.zeros(n)
    for zj, pj in zip(z_target, p_target):
        tz = min(max(zj, v_min), v_max)
        b = (tz - v_min) / dz
        lo, hi = int(np.floor(b)), int(np.ceil(b))
        if lo == hi:
            m[lo] += pj
        else:
            m[lo] += pj * (hi - b)
            m[hi] += pj * (b - lo)
    return m


def test_categorical_projection_matches_algorithm_1():
    rng = np.random.RandomState(0)
    z = np.linspace(-10.0, 10.0, 11)
    for _ in range(20):
        z_target = rng.uniform(-14, 14, size=7)
        p = rng.dirichlet(np.ones(7))
        got = categorical_projection(
            tf.constant(z_target, tf.float32),
            tf.constant(p, tf.float32),
            tf.constant(z, tf.float32),
        ).numpy()
        np.testing.assert_allclose(
            got, _np_projection(z_target, p, z), atol=1e-6
        )
        # Probability mass is preserved.
        np.testing.assert_allclose(got.sum(), 1.0, atol=1e-6)


def test_categorical_projection_by_hand_and_batched():
    z = tf.constant([0.0, 1.0, 2.0])
    # 0.5 -> half on atoms 0 and 1; 5 -> clipped to atom 2; -3 -> atom 0.
    got = categorical_projection(
        tf.constant([[0.5, 5.0, -3.0]]), tf.constant([[0.5, 0.25, 0.25]]), z
    )
    np.testing.assert_allclose(got.numpy(), [[0.5, 0.25, 0.25]])
    # The identity shift projects onto itself.
    p = tf.constant([[0.2, 0.3, 0.5]])
    np.testing.assert_allclose(
        categorical_projection(tf.broadcast_to(z, [1, 3]), p, z), p
    )


def _np_quantile_huber(theta, targets, tau, kappa):
    n, m = len(theta), len(targets)
    total = 0.0
    for i in range(n):
        row = 0.0
        for j in range(m):
            u = targets[j] - theta[i]
            if kappa > 0:
                h = (
                    0.5 * u * u
                    if abs(u) <= kappa
                    else kappa * (abs(u) - 0.5 * kappa)
                ) / kappa
            else:
                h = abs(u)
            row += abs(tau[i] - (1.0 if u < 0 else 0.0)) * h
        total += row / m
    return total


@pytest.mark.parametrize('kappa', [0.0, 1.0, 2.5])
def test_quantile_huber_loss_matches_numpy(kappa):
    rng = np.random.RandomState(1)
    theta = rng.normal(size=(3, 4)) * 3
    targets = rng.normal(size=(3, 5)) * 3
    tau = rng.uniform(size=(3, 4))
    got = quantile_huber_loss(
        tf.constant(theta, tf.float32),
        tf.constant(targets, tf.float32),
        tf.constant(tau, tf.float32),
        kappa,
    ).numpy()
    want = [
        _np_quantile_huber(theta[b], targets[b], tau[b], kappa)
        for b in range(3)
    ]
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_quantile_loss_minimum_is_the_quantile():
    # The pinball loss of one quantile over samples 0..9 is smallest at
    # the tau-quantile of the samples.
    samples = tf.range(10, dtype=tf.float32)[None]
    thetas = tf.linspace(0.0, 9.0, 91)[:, None]
    losses = quantile_huber_loss(
        thetas,
        tf.broadcast_to(samples, [91, 10]),
        tf.constant([0.25]),
        kappa=0.0,
    ).numpy()
    best = thetas.numpy()[np.argmin(losses), 0]
    assert 2.0 <= best <= 3.0


def test_quantile_huber_loss_gradient_only_through_theta():
    theta = tf.constant([[0.0, 1.0]])
    targets = tf.constant([[0.5, 2.0, -1.0]])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([theta, targets])
        loss = quantile_huber_loss(theta, targets, tf.constant([0.25, 0.75]))
    assert tape.gradient(loss, targets) is None
    g = tape.gradient(loss, theta).numpy()
    # d/dθ_0: u = .5, 2, -1 (|u| <= 1 only for .5 and -1):
    # -(.25*.5 + .25*1 + .75*(-1))/3 ; θ_1: u = -.5, 1, -2.
    np.testing.assert_allclose(
        g,
        [
            [
                -(0.25 * 0.5 + 0.25 * 1.0 - 0.75 * 1.0) / 3,
                -(-0.25 * 0.5 + 0.75 * 1.0 - 0.25 * 1.0) / 3,
            ]
        ],
        rtol=1e-6,
    )


def _autodiff_quantile_huber(theta, targets, tau, kappa):
    """The loss written op by op (TensorFlow differentiates it)."""
    u = tf.stop_gradient(targets)[..., None, :] - theta[..., :, None]
    if kappa > 0:
        huber = (
            tf.where(
                tf.abs(u) <= kappa,
                0.5 * tf.square(u),
                kappa * (tf.abs(u) - 0.5 * kappa),
            )
            / kappa
        )
    else:
        huber = tf.abs(u)
    weight = tf.stop_gradient(
        tf.abs(tau[..., :, None] - tf.cast(u < 0.0, theta.dtype))
    )
    return tf.reduce_sum(tf.reduce_mean(weight * huber, -1), -1)


@pytest.mark.parametrize('kappa', [0.0, 1.0, 2.5])
@pytest.mark.parametrize('tau_shape', ['[N]', '[..., N]'])
def test_quantile_huber_loss_gradient_matches_autodiff(kappa, tau_shape):
    # Closed-form gradient against TensorFlow's autodiff of the op-by-op
    # loss, leading dims [2, 3], N = 7 quantiles, M = 5 targets, a
    # non-uniform upstream gradient, in a compiled (XLA) call too.
    rng = np.random.RandomState(2)
    theta = tf.constant(rng.normal(size=(2, 3, 7)) * 2, tf.float32)
    targets = tf.constant(rng.normal(size=(2, 3, 5)) * 2, tf.float32)
    shape = (7,) if tau_shape == '[N]' else (2, 3, 7)
    tau = tf.constant(rng.uniform(size=shape), tf.float32)
    upstream = tf.constant(rng.uniform(size=(2, 3)), tf.float32)

    def both(theta):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(theta)
            got = quantile_huber_loss(theta, targets, tau, kappa)
            want = _autodiff_quantile_huber(theta, targets, tau, kappa)
            got_sum = tf.reduce_sum(upstream * got)
            want_sum = tf.reduce_sum(upstream * want)
        return (
            got,
            want,
            tape.gradient(got_sum, theta),
            tape.gradient(want_sum, theta),
        )

    compiled = tf.function(both, jit_compile=True)
    for fn in (both, compiled):
        got, want, got_grad, want_grad = fn(theta)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
        np.testing.assert_allclose(
            got_grad.numpy(), want_grad.numpy(), rtol=1e-5, atol=1e-7
        )
        assert np.abs(got_grad.numpy()).min() > 0  # every entry checked


def test_quantile_midpoints():
    np.testing.assert_allclose(
        quantile_midpoints(4), [0.125, 0.375, 0.625, 0.875]
    )


def test_cosine_embedding_matches_numpy():
    tau = np.array([[0.1, 0.7], [0.0, 1.0]], np.float32)
    got = cosine_embedding(tf.constant(tau), 5).numpy()
    assert got.shape == (2, 2, 5)
    for b in range(2):
        for k in range(2):
            for i in range(5):
                assert got[b, k, i] == pytest.approx(
                    math.cos(math.pi * i * tau[b, k]), abs=1e-6
                )


def _window():
    """One column F M M L F M and one column of MID steps (no end)."""
    step_type = tf.constant([[F, M], [M, M], [M, M], [L, M], [F, M], [M, M]])
    r_t = tf.constant(
        [
            [0.0, 1.0],
            [1.0, -1.0],
            [2.0, 0.5],
            [3.0, 2.0],
            [0.0, 1.0],
            [1.0, 1.0],
        ]
    )
    return step_type, r_t


@pytest.mark.parametrize('terminal_discount', [0.0, 1.0])
def test_quantile_n_step_targets_are_per_sample_scalar_returns(
    terminal_discount,
):
    step_type, r_t = _window()
    discount_t = tf.constant(
        [
            [1.0, 1.0],
            [1.0, 1.0],
            [1.0, 1.0],
            [terminal_discount, 1.0],
            [1.0, 1.0],
            [1.0, 1.0],
        ]
    )
    theta = tf.random.stateless_normal([6, 2, 3], seed=[1, 2])
    got = quantile_n_step_targets(r_t, discount_t, step_type, theta, 0.9)
    assert got.shape == (5, 2, 3)
    for j in range(3):
        want = n_step_returns(r_t, discount_t, step_type, theta[:, :, j], 0.9)
        np.testing.assert_allclose(got[:, :, j], want, rtol=1e-6)
    # Row 2 of column 0 ends at the LAST step 3: 3 + 0.9 * d * θ_3.
    np.testing.assert_allclose(
        got[2, 0], 3.0 + 0.9 * terminal_discount * theta[3, 0], rtol=1e-6
    )


def _np_categorical_targets(r, d, st, p, z, gamma):
    """Loop by loop: walk forward from row t to its bootstrap step."""
    t_len, b_len, _ = p.shape
    out = np.zeros((t_len - 1, b_len, len(z)))
    for b in range(b_len):
        for t in range(t_len - 1):
            if st[t, b] == L:  # a LAST row: its own distribution
                out[t, b] = _np_projection(z, p[t, b], z)
                continue
            ret, scale, k = 0.0, 1.0, t
            while True:
                k += 1
                ret += scale * r[k, b]
                scale *= gamma * d[k, b]
                if st[k, b] == L or k == t_len - 1:
                    break
            out[t, b] = _np_projection(ret + scale * z, p[k, b], z)
    return out


@pytest.mark.parametrize('terminal_discount', [0.0, 1.0])
def test_categorical_n_step_targets_match_numpy(terminal_discount):
    step_type, r_t = _window()
    discount_t = np.ones((6, 2), np.float32)
    discount_t[3, 0] = terminal_discount
    rng = np.random.RandomState(3)
    p = rng.dirichlet(np.ones(5), size=(6, 2)).astype(np.float32)
    z = np.linspace(-2.0, 6.0, 5).astype(np.float32)
    got = categorical_n_step_targets(
        r_t,
        tf.constant(discount_t),
        step_type,
        tf.constant(p),
        tf.constant(z),
        0.8,
    ).numpy()
    want = _np_categorical_targets(
        r_t.numpy(), discount_t, step_type.numpy(), p, z, 0.8
    )
    np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_allclose(got.sum(-1), np.ones((5, 2)), atol=1e-5)
    if terminal_discount == 0.0:
        # Row 2 of column 0: all mass on the return 3 (atoms 2 and 4).
        np.testing.assert_allclose(got[2, 0], [0, 0, 0.5, 0.5, 0], atol=1e-6)


def test_categorical_two_rows_is_one_step_projection():
    z = tf.constant([-1.0, 0.0, 1.0])
    p = tf.constant([[[1.0, 0.0, 0.0]], [[0.2, 0.3, 0.5]]])
    got = categorical_n_step_targets(
        tf.constant([[0.0], [0.5]]),
        tf.constant([[1.0], [1.0]]),
        tf.constant([[F], [M]]),
        p,
        z,
        0.5,
    )
    want = categorical_projection(0.5 + 0.5 * z, p[1, 0], z)
    np.testing.assert_allclose(got[0, 0], want, atol=1e-6)


def test_categorical_cross_entropy():
    p = tf.constant([[0.25, 0.75]])
    log_p = tf.math.log(tf.constant([[0.5, 0.5]]))
    np.testing.assert_allclose(
        categorical_cross_entropy(p, log_p), [math.log(2.0)], rtol=1e-6
    )
