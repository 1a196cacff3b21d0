"""NoisyDense against the factorized-Gaussian formula in numpy, both ways of
computing it (few rows: factorized product; many rows: noisy kernel)."""

import threading

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.networks.noisy import FACTORIZED_ROWS, NoisyDense, without_noise
from alf_rl.utils.common import set_random_seed


def _f(x):
    return np.sign(x) * np.sqrt(np.abs(x))


def _reference(layer, x):
    """y = x (μ_w + σ_w ⊙ f(ε_in) f(ε_out)^T) + μ_b + σ_b ⊙ f(ε_out)."""
    eps_in, eps_out = (
        _f(layer.epsilon_in.numpy()),
        _f(layer.epsilon_out.numpy()),
    )
    kernel = layer.kernel_mu.numpy() + layer.kernel_sigma.numpy() * np.outer(
        eps_in, eps_out
    )
    bias = layer.bias_mu.numpy() + layer.bias_sigma.numpy() * eps_out
    return x @ kernel + bias


def _layer(seed=0):
    set_random_seed(seed)
    layer = NoisyDense(6, 5, sigma0=0.5)
    # Larger σ than the initial σ0/sqrt(p), so that the noise term counts.
    layer.kernel_sigma.assign(tf.random.uniform([6, 5], 0.1, 1.0))
    layer.bias_sigma.assign(tf.random.uniform([5], 0.1, 1.0))
    return layer


@pytest.mark.parametrize(
    'shape', [[1, 6], [3, 6], [2, 4, 6], [FACTORIZED_ROWS + 1, 6], [64, 6]]
)
def test_output_matches_the_formula_for_few_and_many_rows(shape):
    layer = _layer()
    x = np.random.default_rng(1).normal(size=shape).astype(np.float32)
    np.testing.assert_allclose(
        layer(tf.constant(x)).numpy(),
        _reference(layer, x),
        rtol=1e-5,
        atol=1e-5,
    )
    # Compiled (static shapes) as eagerly.
    compiled = tf.function(layer.__call__)(tf.constant(x))
    np.testing.assert_allclose(
        compiled.numpy(), _reference(layer, x), rtol=1e-5, atol=1e-5
    )


def test_both_ways_give_the_same_gradients():
    layer = _layer(2)
    x = tf.constant(
        np.random.default_rng(3).normal(size=[4, 6]).astype(np.float32)
    )
    trainable = [
        layer.kernel_mu,
        layer.kernel_sigma,
        layer.bias_mu,
        layer.bias_sigma,
    ]

    def grads(inputs):
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            loss = tf.reduce_sum(tf.square(layer(inputs)))
        return tape.gradient(loss, [inputs] + trainable)

    few = grads(x)  # 4 rows: the factorized product
    # The same rows repeated past FACTORIZED_ROWS take the kernel: the
    # gradients of the variables add up over the copies.
    copies = FACTORIZED_ROWS // 4 + 1
    many = grads(tf.tile(x, [copies, 1]))
    np.testing.assert_allclose(
        many[0][:4].numpy(), few[0].numpy(), rtol=1e-5, atol=1e-5
    )
    for a, b in zip(few[1:], many[1:]):
        np.testing.assert_allclose(
            b.numpy(), copies * a.numpy(), rtol=1e-4, atol=1e-4
        )


def test_resample_changes_the_noise_and_the_output_only_when_called():
    layer = _layer(4)
    x = tf.ones([1, 6])
    y = layer(x).numpy()
    np.testing.assert_array_equal(layer(x).numpy(), y)
    noise = [layer.epsilon_in.numpy().copy(), layer.epsilon_out.numpy().copy()]
    layer.resample()
    assert np.all(layer.epsilon_in.numpy() != noise[0])
    assert np.all(layer.epsilon_out.numpy() != noise[1])
    assert np.any(layer(x).numpy() != y)


def test_initialization_follows_the_paper():
    set_random_seed(5)
    layer = NoisyDense(16, 3, sigma0=0.5)
    bound = 1 / np.sqrt(16)
    assert np.all(np.abs(layer.kernel_mu.numpy()) <= bound)
    np.testing.assert_allclose(layer.kernel_sigma.numpy(), 0.5 / np.sqrt(16))
    np.testing.assert_allclose(layer.bias_sigma.numpy(), 0.5 / np.sqrt(16))


@pytest.mark.parametrize('args', [(0, 3), (4, 0), (4, 3, None, -0.1)])
def test_bad_sizes_are_refused(args):
    with pytest.raises(ValueError, match='expected input_size >= 1'):
        NoisyDense(*args)


@pytest.mark.parametrize('rows', [1, FACTORIZED_ROWS + 1])
def test_without_noise_computes_with_the_mean_weights(rows):
    layer = _layer(5)
    module = tf.Module()
    module.head = [layer]  # found as a submodule, as in a Q network
    x = np.random.default_rng(6).normal(size=[rows, 6]).astype(np.float32)
    mean = x @ layer.kernel_mu.numpy() + layer.bias_mu.numpy()
    seen = []
    with without_noise([module]):
        assert not layer.noisy
        np.testing.assert_allclose(layer(tf.constant(x)), mean, rtol=1e-5)
        # A graph traced inside keeps the mean weights.
        compiled = tf.function(layer.__call__)
        compiled(tf.constant(x))
        with without_noise([layer]):  # nested
            assert not layer.noisy
        assert not layer.noisy
        # Another thread (a replica traced in parallel) keeps the noise.
        other = threading.Thread(target=lambda: seen.append(layer.noisy))
        other.start()
        other.join()
    assert seen == [True]
    assert layer.noisy
    np.testing.assert_allclose(compiled(tf.constant(x)), mean, rtol=1e-5)
    np.testing.assert_allclose(
        layer(tf.constant(x)), _reference(layer, x), rtol=1e-5, atol=1e-5
    )
    assert np.abs(_reference(layer, x) - mean).max() > 0.1
    # The layer is noisy again after an error inside, too; a module
    # without noisy layers is left alone.
    with pytest.raises(RuntimeError):
        with without_noise([layer, tf.Module()]):
            raise RuntimeError('inside')
    assert layer.noisy
