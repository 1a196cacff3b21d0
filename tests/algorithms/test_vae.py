"""Tests for VariationalAutoEncoder and DecodingAlgorithm: the ELBO
improves on a fixed dataset; the KL is the closed form; priors."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms.vae import (
    DecodingAlgorithm,
    VAEInfo,
    VariationalAutoEncoder,
)
from alf_rl.data_structures import TrainingInfo
from alf_rl.utils.common import set_random_seed


def _dataset():
    """64 points near a 2-d plane in 6 dimensions (fixed)."""
    rng = np.random.RandomState(0)
    factors = rng.randn(64, 2).astype(np.float32)
    mixing = rng.randn(2, 6).astype(np.float32)
    return tf.constant(
        factors @ mixing + 0.05 * rng.randn(64, 6).astype(np.float32)
    )


def _negative_elbo(vae, decoder, x):
    """Per-sample reconstruction + KL (beta 1) -> [B], and both parts."""
    z = vae.train_step(x)
    recon = decoder.train_step((z.output, x)).info.loss
    return recon + z.info.kl, recon, z.info.kl


def test_elbo_improves_on_a_fixed_dataset():
    set_random_seed(0)
    x = _dataset()
    spec = tf.TensorSpec([6], tf.float32)
    vae = VariationalAutoEncoder(spec, z_dim=2)
    decoder = DecodingAlgorithm(tf.TensorSpec([2], tf.float32), 6)
    variables = vae.trainable_variables + decoder.trainable_variables
    optimizer = tf_keras.optimizers.Adam(1e-2)

    @tf.function
    def train():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(_negative_elbo(vae, decoder, x)[0])
        optimizer.apply_gradients(
            zip(tape.gradient(loss, variables), variables)
        )
        return loss

    def evaluate():
        return float(
            np.mean(
                [
                    np.mean(_negative_elbo(vae, decoder, x)[0])
                    for _ in range(10)
                ]
            )
        )

    before = evaluate()
    for _ in range(300):
        train()
    after = evaluate()
    _, recon, kl = _negative_elbo(vae, decoder, x)
    # A decoder that ignores z does at best the data's total variance
    # (5.07 nats-equivalent of squared error), with KL 0. Observed: -ELBO
    # 5.61 before, 2.44 after 300 steps.
    ignore_z = float(np.sum(np.var(x.numpy(), 0)))
    assert after < 0.6 * before, (before, after)
    assert after < 0.6 * ignore_z, (after, ignore_z)
    assert float(tf.reduce_mean(kl)) > 0.5  # z carries information


def test_kl_is_the_closed_form_of_the_posterior():
    set_random_seed(1)
    vae = VariationalAutoEncoder(tf.TensorSpec([3], tf.float32), z_dim=4)
    step = vae.train_step(tf.random.normal([5, 3]))
    mu, lv = step.info.z_mean.numpy(), step.info.z_log_var.numpy()
    want = 0.5 * np.sum(np.exp(lv) + mu**2 - 1 - lv, -1)
    np.testing.assert_allclose(
        step.info.kl.numpy(), want, rtol=1e-5, atol=1e-6
    )
    assert step.output.shape == (5, 4)


def test_beta_weights_the_kl_in_calc_loss():
    vae = VariationalAutoEncoder(
        tf.TensorSpec([3], tf.float32), z_dim=2, beta=0.25
    )
    info = VAEInfo(kl=tf.constant([[4.0, 8.0]]))
    loss = vae.calc_loss(TrainingInfo(info=info))
    np.testing.assert_allclose(loss.loss.numpy(), [[1.0, 2.0]])
    with pytest.raises(TypeError, match='VAEInfo'):
        vae.calc_loss(TrainingInfo(info=()))


def test_given_and_learned_priors():
    set_random_seed(2)
    spec = tf.TensorSpec([3], tf.float32)
    given = VariationalAutoEncoder(spec, z_dim=2, use_given_prior=True)
    x = tf.random.normal([4, 3])
    mu_p, lv_p = tf.random.normal([4, 2]), tf.random.normal([4, 2])
    _, info = given.encode(x, mu_p, lv_p)
    q_mu, q_lv = info.z_mean.numpy(), info.z_log_var.numpy()
    p_mu, p_lv = mu_p.numpy(), lv_p.numpy()
    want = 0.5 * np.sum(
        p_lv - q_lv + (np.exp(q_lv) + (q_mu - p_mu) ** 2) / np.exp(p_lv) - 1,
        -1,
    )
    np.testing.assert_allclose(info.kl.numpy(), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match='expected the prior'):
        given.encode(x)
    learned = VariationalAutoEncoder(
        spec,
        z_dim=2,
        prior_input_spec=tf.TensorSpec([5], tf.float32),
        prior_network_ctor=lambda input_tensor_spec, last_layer_size: (
            DecodingAlgorithm(input_tensor_spec, last_layer_size).decoder
        ),
    )
    step = learned.train_step((x, tf.ones([4, 5])))
    assert step.output.shape == (4, 2) and step.info.kl.shape == (4,)
    with pytest.raises(ValueError, match='go together'):
        VariationalAutoEncoder(
            spec, z_dim=2, prior_input_spec=tf.TensorSpec([5])
        )
    with pytest.raises(ValueError, match='z_dim must be >= 1'):
        VariationalAutoEncoder(spec, z_dim=0)
