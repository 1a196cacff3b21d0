"""Masked reductions over time and batch (pure TF, no state).

Notation: ``x_t`` a per-step quantity, ``m_t`` in {0, 1} (or a weight >= 0)
whether step t counts.
"""

from typing import Any, Optional

import tensorflow as tf

from alf_rl.data_structures import LossInfo


def is_unset(x: Any) -> bool:
    """Whether ``x`` is ``()``, the value of an unset ``LossInfo`` field."""
    return isinstance(x, tuple) and x == ()


def masked_mean(x: tf.Tensor, mask: Optional[tf.Tensor]) -> tf.Tensor:
    """``sum_t m_t x_t / max(sum_t m_t, 1)`` over every entry.

    Args:
        x: [T, B] or [B] float32 per-step values; a scalar is returned
            unchanged (it is already reduced).
        mask: float mask (or weights) of exactly ``x``'s shape, or None for
            a plain mean.
    Returns:
        [] float32; 0 when the mask is all zero.
    Raises:
        ValueError: when ``mask``'s rank differs from ``x``'s (a [B] loss
            with a [T, B] mask is ambiguous: reduce or mask it yourself).
    """
    x = tf.convert_to_tensor(x)
    if x.shape.rank == 0:
        return x
    if mask is None:
        return tf.reduce_mean(x)
    mask = tf.cast(mask, x.dtype)
    if mask.shape.rank != x.shape.rank:
        raise ValueError(
            "masked_mean: mask of shape %s does not match values of shape %s"
            " (ranks %d vs %d); give a mask of the values' shape" %
            (mask.shape, x.shape, mask.shape.rank, x.shape.rank))
    return tf.reduce_sum(x * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)


def reduce_loss_info(loss_info: LossInfo,
                     valid_masks: Optional[tf.Tensor]) -> LossInfo:
    """Averages every per-step leaf of a ``LossInfo`` over valid steps.

    ``loss`` and every leaf of ``extra`` go through ``masked_mean``;
    ``scalar_loss`` must already be a scalar.

    Args:
        loss_info: ``LossInfo`` with [T, B] leaves (or [B] with a [B]
            mask; scalars pass through).
        valid_masks: [T, B] (or [B]) float mask, or None.
    Returns:
        ``LossInfo`` with [] leaves.
    Raises:
        ValueError: ``scalar_loss`` is not a scalar; a mask rank mismatch.
    """
    loss = (loss_info.loss if is_unset(loss_info.loss) else masked_mean(
        loss_info.loss, valid_masks))
    scalar = loss_info.scalar_loss
    if not is_unset(scalar):
        scalar = tf.convert_to_tensor(scalar)
        if scalar.shape.rank != 0:
            raise ValueError("LossInfo.scalar_loss must be a scalar, got "
                             "shape %s" % scalar.shape)
    extra = tf.nest.map_structure(lambda e: masked_mean(e, valid_masks),
                                  loss_info.extra)
    return LossInfo(loss=loss, scalar_loss=scalar, extra=extra)


def pad_last_row(x_t: tf.Tensor) -> tf.Tensor:
    """Appends a row of zeros along time: [T-1, B, ...] -> [T, B, ...].

    Per-step results of rows 0..T-2 (a TD loss, a TD error) padded back to
    the window's T rows; the last row only bootstraps, and its zero is
    masked by the caller (``mask_last_row``).

    Args:
        x_t: [T-1, B, ...] tensor.
    Returns:
        [T, B, ...] tensor, ``x_t`` then zeros.
    """
    return tf.concat([x_t, tf.zeros_like(x_t[:1])], axis=0)


def mask_last_row(m_t: tf.Tensor) -> tf.Tensor:
    """``m_t`` with its last row (time index T-1) set to 0.

    Args:
        m_t: [T, B, ...] mask or weights.
    Returns:
        [T, B, ...], equal to ``m_t`` on rows 0..T-2.
    """
    return tf.concat([m_t[:-1], tf.zeros_like(m_t[-1:])], axis=0)
