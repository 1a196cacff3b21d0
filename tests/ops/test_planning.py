"""ops/planning.py against numpy references."""

import numpy as np
import tensorflow as tf

from alf_rl.ops.planning import best_sequence, cem_update, gaussian_nll


def test_gaussian_nll_matches_the_density():
    rng = np.random.RandomState(0)
    y, mu = rng.randn(6, 3), rng.randn(6, 3)
    log_var = rng.uniform(-2, 1, size=(6, 3))
    got = gaussian_nll(
        tf.constant(y, tf.float32),
        tf.constant(mu, tf.float32),
        tf.constant(log_var, tf.float32),
    ).numpy()
    # -log N(y; mu, exp(log_var)) per entry, minus log(2 pi) / 2, averaged.
    var = np.exp(log_var)
    density = np.exp(-((y - mu) ** 2) / (2 * var)) / np.sqrt(2 * np.pi * var)
    expected = np.mean(-np.log(density) - 0.5 * np.log(2 * np.pi), -1)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_best_sequence_picks_the_highest_return_per_row():
    samples = tf.reshape(
        tf.range(2 * 3 * 2 * 1, dtype=tf.float32), [2, 3, 2, 1]
    )
    returns = tf.constant([[0.0, 5.0, 1.0], [7.0, -1.0, 2.0]])
    got = best_sequence(samples, returns).numpy()
    np.testing.assert_array_equal(got, samples.numpy()[[0, 1], [1, 0]])


def test_cem_update_refits_to_the_elites():
    rng = np.random.RandomState(1)
    samples = rng.randn(2, 10, 3, 2).astype(np.float32)
    returns = rng.randn(2, 10).astype(np.float32)
    mean = rng.randn(2, 3, 2).astype(np.float32)
    std = rng.uniform(0.5, 1, size=(2, 3, 2)).astype(np.float32)
    got_mean, got_std = cem_update(
        tf.constant(samples),
        tf.constant(returns),
        4,
        tf.constant(mean),
        tf.constant(std),
        smoothing=0.25,
    )
    for b in range(2):
        elites = samples[b, np.argsort(-returns[b])[:4]]
        np.testing.assert_allclose(
            got_mean[b], 0.25 * mean[b] + 0.75 * elites.mean(0), rtol=1e-5
        )
        np.testing.assert_allclose(
            got_std[b], 0.25 * std[b] + 0.75 * elites.std(0), rtol=1e-4
        )
