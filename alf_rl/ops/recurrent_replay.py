"""Recurrent replay (R2D2) math: value rescaling and sequence priorities.

Kapturowski et al. 2019, "Recurrent Experience Replay in Distributed
Reinforcement Learning" (R2D2), after Pohlen et al. 2018 ("Observe and Look
Further") for the invertible value rescaling.

Pure TF, no state.
"""

from typing import Optional

import tensorflow as tf

#: ε of the value rescaling (the papers' 1e-3).
DEFAULT_RESCALING_EPSILON = 1e-3


def value_rescale(
    x: tf.Tensor, eps: float = DEFAULT_RESCALING_EPSILON
) -> tf.Tensor:
    """The invertible value rescaling h (element-wise, any shape).

        h(x) = sign(x) (sqrt(|x| + 1) - 1) + ε x

    Args:
        x: float tensor of values (any shape, e.g. [T, B]).
        eps: ε > 0 (keeps h's inverse Lipschitz).
    Returns:
        ``h(x)``, same shape and dtype as ``x``.
    """
    x = tf.convert_to_tensor(x)
    return tf.sign(x) * (tf.sqrt(tf.abs(x) + 1.0) - 1.0) + eps * x


def inverse_value_rescale(
    y: tf.Tensor, eps: float = DEFAULT_RESCALING_EPSILON
) -> tf.Tensor:
    """The inverse of ``value_rescale`` (element-wise, any shape).

        h⁻¹(y) = sign(y) (((sqrt(1 + 4ε(|y| + 1 + ε)) - 1) / (2ε))² - 1)

    Args:
        y: float tensor of rescaled values (any shape).
        eps: the ε that ``value_rescale`` used (> 0).
    Returns:
        ``h⁻¹(y)``, same shape and dtype as ``y``.
    """
    y = tf.convert_to_tensor(y)
    root = tf.sqrt(1.0 + 4.0 * eps * (tf.abs(y) + 1.0 + eps))
    return tf.sign(y) * (tf.square((root - 1.0) / (2.0 * eps)) - 1.0)


def sequence_priority(
    td_error: tf.Tensor, eta: float = 0.9, mask: Optional[tf.Tensor] = None
) -> tf.Tensor:
    """Priority of each replayed sequence from its TD errors.

        p = η max_t |δ_t| + (1 - η) mean_t |δ_t|

    over the steps t that count (``mask`` 1); a sequence with none gets 0.

    Args:
        td_error: [T, B] float32 TD errors δ_t.
        eta: η in [0, 1] (R2D2 uses 0.9).
        mask: optional [T, B] float32 in {0, 1}, the steps that count
            (default all).
    Returns:
        [B] float32 non-negative priorities.
    """
    abs_error = tf.abs(tf.convert_to_tensor(td_error, tf.float32))
    if mask is None:
        mask = tf.ones_like(abs_error)
    mask = tf.cast(mask, tf.float32)
    count = tf.reduce_sum(mask, axis=0)
    mean = tf.reduce_sum(abs_error * mask, axis=0) / tf.maximum(count, 1.0)
    # |δ| >= 0, so masking to 0 leaves the max of the counted steps.
    largest = tf.reduce_max(abs_error * mask, axis=0)
    return eta * largest + (1.0 - eta) * mean
