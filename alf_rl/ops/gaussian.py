"""Diagonal Gaussian math of variational auto-encoders: the
reparameterized sample and the KL divergence between two diagonal
Gaussians (Kingma & Welling 2014, "Auto-Encoding Variational Bayes").

A diagonal Gaussian is given by its mean ``mu`` and log-variance
``log_var`` (``sigma^2 = exp(log_var)``), both [..., D] float32.
"""

from typing import Optional

import tensorflow as tf


def reparameterized_sample(
    mu: tf.Tensor, log_var: tf.Tensor, noise: tf.Tensor
) -> tf.Tensor:
    """``z = mu + exp(log_var / 2) * eps``: a sample through which
    gradients reach ``mu`` and ``log_var``.

    Args:
        mu: [..., D] float32 mean.
        log_var: [..., D] float32 log-variance.
        noise: [..., D] float32 eps ~ N(0, I) (the caller draws it, with a
            stateless seed where runs must be reproducible).
    Returns:
        [..., D] float32 z.
    """
    return mu + tf.exp(0.5 * log_var) * noise


def diagonal_gaussian_kl(
    mu_q: tf.Tensor,
    log_var_q: tf.Tensor,
    mu_p: Optional[tf.Tensor] = None,
    log_var_p: Optional[tf.Tensor] = None,
) -> tf.Tensor:
    """``KL(q || p)`` of diagonal Gaussians, summed over the last axis.

    ``KL = 0.5 * sum_d [log_var_p - log_var_q
    + (exp(log_var_q) + (mu_q - mu_p)^2) / exp(log_var_p) - 1]``;
    with ``p = N(0, I)`` (``mu_p``, ``log_var_p`` None) this is
    ``0.5 * sum_d [exp(log_var_q) + mu_q^2 - 1 - log_var_q]``.

    Args:
        mu_q: [..., D] float32 mean of q.
        log_var_q: [..., D] float32 log-variance of q.
        mu_p: [..., D] float32 mean of p; None for 0.
        log_var_p: [..., D] float32 log-variance of p; None for 0.
    Returns:
        [...] float32 KL divergence (nats), >= 0.
    """
    if mu_p is None:
        mu_p = tf.zeros_like(mu_q)
    if log_var_p is None:
        log_var_p = tf.zeros_like(log_var_q)
    kl = (
        log_var_p
        - log_var_q
        + (tf.exp(log_var_q) + tf.square(mu_q - mu_p)) * tf.exp(-log_var_p)
        - 1.0
    )
    return 0.5 * tf.reduce_sum(kl, axis=-1)
