"""EnsembleNetwork: K members in one batched op."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.networks import EnsembleNetwork


def test_members_are_independent_mlps():
    tf.random.set_seed(0)
    net = EnsembleNetwork(3, 2, ensemble_size=4, hidden_layers=(8, 8))
    x = tf.random.normal([1, 5, 3])
    mean, log_var = net(tf.tile(x, [4, 1, 1]))
    assert mean.shape == log_var.shape == (4, 5, 2)
    # Same input, different members: different predictions.
    assert np.abs(mean[0] - mean[1]).max() > 1e-3
    # Member k is an MLP of its own slices of the weights.
    k = 2
    h = x[0]
    kernels, biases = net._kernels, net._biases
    for i in range(len(kernels)):
        h = tf.matmul(h, kernels[i][k]) + biases[i][k]
        if i < len(kernels) - 1:
            h = tf.nn.silu(h)
    np.testing.assert_allclose(mean[k], h[:, :2], rtol=1e-5, atol=1e-6)


def test_log_var_stays_within_the_learned_bounds():
    net = EnsembleNetwork(2, 3, ensemble_size=2, hidden_layers=(4,))
    _, log_var = net(100.0 * tf.random.normal([2, 50, 2]))
    # Soft bounds: the lower softplus adds up to log(1 + e^(min - max))
    # ~ 2.8e-5 above the maximum.
    assert np.all(log_var.numpy() <= 0.5 + 1e-4)
    assert np.all(log_var.numpy() >= -10.0)
    np.testing.assert_allclose(net.log_var_bound_penalty(), 3 * 0.5 + 3 * 10.0)


def test_deterministic_ensemble_has_no_variance_variables():
    net = EnsembleNetwork(
        2, 3, ensemble_size=2, hidden_layers=(4,), probabilistic=False
    )
    mean, log_var = net(tf.ones([2, 1, 2]))
    assert mean.shape == (2, 1, 3) and np.all(log_var.numpy() == 0)
    assert float(net.log_var_bound_penalty()) == 0.0
    assert not any('log_var' in v.name for v in net.variables)


def test_bad_sizes_are_one_clear_error():
    with pytest.raises(ValueError, match='sizes must be >= 1'):
        EnsembleNetwork(3, 2, ensemble_size=0)
