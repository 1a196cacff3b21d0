"""Element-wise losses and advantage helpers (pure TF, no state)."""

import tensorflow as tf


def element_wise_squared_loss(target, prediction):
    """0.5 * (target - prediction)^2, element-wise.

    Args:
        target: [T, B] (any shape) float32.
        prediction: same shape.
    Returns:
        Same shape as the inputs.
    """
    return 0.5 * tf.square(target - prediction)


def element_wise_huber_loss(target, prediction, delta=1.0):
    """Huber loss with threshold ``delta``, element-wise.

    ``0.5 x^2`` for ``|x| <= delta``, ``delta (|x| - 0.5 delta)`` beyond,
    with ``x = target - prediction``.
    """
    x = tf.abs(target - prediction)
    quadratic = tf.minimum(x, delta)
    return 0.5 * tf.square(quadratic) + delta * (x - quadratic)


def normalize_masked(x_t, mask_t, epsilon=1e-8):
    """(x - mean) / (std + epsilon) with moments over entries where mask=1.

    Args:
        x_t: [T, B] float32.
        mask_t: [T, B] float32 in {0, 1}.
        epsilon: added to the std.
    Returns:
        [T, B] float32; masked-out entries are normalized too (and usually
        ignored by the caller).
    """
    n = tf.maximum(tf.reduce_sum(mask_t), 1.0)
    mean = tf.reduce_sum(x_t * mask_t) / n
    var = tf.reduce_sum(tf.square(x_t - mean) * mask_t) / n
    return (x_t - mean) / (tf.sqrt(var) + epsilon)


def explained_variance(returns_t, values_t, mask_t):
    """1 - Var[returns - values] / Var[returns] over masked entries.

    Args:
        returns_t: [T, B] float32 targets.
        values_t: [T, B] float32 predictions.
        mask_t: [T, B] float32 in {0, 1}.
    Returns:
        [] float32 (1 is perfect, 0 is no better than a constant).
    """
    n = tf.maximum(tf.reduce_sum(mask_t), 1.0)

    def _var(x):
        mean = tf.reduce_sum(x * mask_t) / n
        return tf.reduce_sum(tf.square(x - mean) * mask_t) / n

    return 1.0 - _var(returns_t - values_t) / tf.maximum(_var(returns_t), 1e-8)
