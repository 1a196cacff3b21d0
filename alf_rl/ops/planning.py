"""Ops of model-based RL: the Gaussian likelihood a dynamics model is fitted
with, and the sampling-based planners' update steps (pure TF, no state).

Shapes: B rows (environments), P candidate action sequences per row, H
planning steps, A action entries, d predicted entries.
"""

from typing import Tuple

import tensorflow as tf


def gaussian_nll(
    target: tf.Tensor, mean: tf.Tensor, log_var: tf.Tensor
) -> tf.Tensor:
    """Negative log-likelihood of a diagonal Gaussian without its constant,
    averaged over the last axis:

        nll = mean_i [ (y_i - mu_i)^2 * exp(-log_var_i) + log_var_i ] / 2

    (the exact NLL is this plus ``log(2 pi) / 2``).

    Args:
        target: [..., d] observed values y.
        mean: [..., d] predicted means mu.
        log_var: [..., d] predicted log-variances.
    Returns:
        [...] float32.
    """
    squared = tf.square(target - mean) * tf.exp(-log_var)
    return 0.5 * tf.reduce_mean(squared + log_var, axis=-1)


def best_sequence(samples: tf.Tensor, returns: tf.Tensor) -> tf.Tensor:
    """Random shooting's choice: the sequence with the highest return.

    Args:
        samples: [B, P, H, A] candidate action sequences.
        returns: [B, P] their returns.
    Returns:
        [B, H, A]: ``samples[b, argmax_p returns[b, p]]``.
    """
    best = tf.argmax(returns, axis=1, output_type=tf.int32)
    return tf.gather(samples, best, batch_dims=1)


def cem_update(
    samples: tf.Tensor,
    returns: tf.Tensor,
    num_elites: int,
    mean: tf.Tensor,
    std: tf.Tensor,
    smoothing: float = 0.0,
) -> Tuple[tf.Tensor, tf.Tensor]:
    """One cross-entropy-method step: refit the sampling Gaussian to the
    ``num_elites`` best sequences, smoothed towards the previous one:

        mu' = s * mu + (1 - s) * mean(elites)
        sigma' = s * sigma + (1 - s) * std(elites)

    Args:
        samples: [B, P, H, A] candidate action sequences.
        returns: [B, P] their returns.
        num_elites: E <= P, the number of best sequences kept.
        mean: [B, H, A] the Gaussian's current mean.
        std: [B, H, A] its current standard deviation.
        smoothing: s in [0, 1); 0 replaces the Gaussian by the elites'.
    Returns:
        ``(mean', std')``, [B, H, A] each.
    """
    _, elite_index = tf.math.top_k(returns, k=num_elites)
    elites = tf.gather(samples, elite_index, batch_dims=1)  # [B, E, H, A]
    elite_mean, elite_var = tf.nn.moments(elites, axes=[1])
    new_mean = smoothing * mean + (1.0 - smoothing) * elite_mean
    new_std = smoothing * std + (1.0 - smoothing) * tf.sqrt(elite_var)
    return new_mean, new_std
