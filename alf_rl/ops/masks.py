"""Masked reductions over time and batch (pure TF, no state).

Notation: ``x_t`` a per-step quantity, ``m_t`` in {0, 1} (or a weight >= 0)
whether step t counts.

Every reduction takes the ``tf.distribute`` replica context it runs in as
an argument, ``replica_context`` (None, the default, for one device; the
caller passes ``alf_rl.utils.gradient_application.replica_context()``).
With N > 1 replicas (the distributed learner,
``alf_rl.distributed.strategy``) each replica holds 1/N of the global batch
and the reductions are global: a masked mean is the cross-replica sum of
``m_t x_t`` over the cross-replica sum of ``m_t``, its value the same on
every replica. Its gradient is the replica's own share (``sum_local m_t x_t
/ sum_global m_t``), so the cross-replica sum of gradients is the gradient
of the global mean: N replicas on a global batch compute the update one
replica computes on it. With one replica nothing changes.
"""

from typing import Any, Optional

import tensorflow as tf

from alf_rl.data_structures import LossInfo, StepType


def is_unset(x: Any) -> bool:
    """Whether ``x`` is ``()``, the value of an unset ``LossInfo`` field."""
    return isinstance(x, tuple) and x == ()


ReplicaContext = Optional[tf.distribute.ReplicaContext]


def num_replicas(replica_context: ReplicaContext = None) -> int:
    """Replicas computing an update together in ``replica_context``.

    Args:
        replica_context: a ``tf.distribute.ReplicaContext``, or None.
    Returns:
        its ``num_replicas_in_sync``, 1 for None.
    """
    return (1 if replica_context is None else
            replica_context.num_replicas_in_sync)


def replica_sum(x: Any, replica_context: ReplicaContext = None) -> Any:
    """Cross-replica sum of a nest of tensors, without gradient.

    Args:
        x: nest of tensors (the same shapes on every replica).
        replica_context: the replica context of the update, or None.
    Returns:
        ``x`` summed over the replicas of ``replica_context`` (``x`` itself
        with one replica); gradients stopped.
    """
    if replica_context is None or num_replicas(replica_context) == 1:
        return x
    total = replica_context.all_reduce(
        tf.distribute.ReduceOp.SUM, tf.nest.map_structure(
            tf.stop_gradient, x))
    return tf.nest.map_structure(tf.stop_gradient, total)


def with_local_gradient(value: tf.Tensor, local: tf.Tensor) -> tf.Tensor:
    """``value`` (exactly) with the gradient of ``local``.

    ``local - stop_gradient(local)`` is exactly 0 for finite ``local``, so
    the result equals ``value`` bit for bit on every replica while its
    gradient is this replica's share.

    Args:
        value: tensor, the global quantity (no gradient needed).
        local: tensor of ``value``'s shape whose gradient is kept.
    Returns:
        Tensor of ``value``'s shape.
    """
    return tf.stop_gradient(value) + (local - tf.stop_gradient(local))


def masked_mean(x: tf.Tensor, mask: Optional[tf.Tensor],
                replica_context: ReplicaContext = None) -> tf.Tensor:
    """``sum_t m_t x_t / max(sum_t m_t, 1)`` over every entry.

    With a ``replica_context`` of N > 1 replicas the sums run over every
    replica's entries (see the module docstring); a plain mean (no mask)
    assumes equal per-replica batches.

    Args:
        x: [T, B] or [B] float32 per-step values; a scalar is returned
            unchanged (it is already reduced).
        mask: float mask (or weights) of exactly ``x``'s shape, or None for
            a plain mean.
        replica_context: the replica context of the update, or None.
    Returns:
        [] float32; 0 when the mask is all zero.
    Raises:
        ValueError: when ``mask``'s rank differs from ``x``'s (a [B] loss
            with a [T, B] mask is ambiguous: reduce or mask it yourself).
    """
    x = tf.convert_to_tensor(x)
    if x.shape.rank == 0:
        return x
    replicas = num_replicas(replica_context)
    if mask is None:
        if replicas == 1:
            return tf.reduce_mean(x)
        local = tf.reduce_mean(x) / replicas
        return with_local_gradient(replica_sum(local, replica_context), local)
    mask = tf.cast(mask, x.dtype)
    if mask.shape.rank != x.shape.rank:
        raise ValueError(
            "masked_mean: mask of shape %s does not match values of shape %s"
            " (ranks %d vs %d); give a mask of the values' shape" %
            (mask.shape, x.shape, mask.shape.rank, x.shape.rank))
    if replicas == 1:
        return tf.reduce_sum(x * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)
    count = replica_sum(tf.reduce_sum(mask), replica_context)
    local = tf.reduce_sum(x * mask) / tf.maximum(count, 1.0)
    return with_local_gradient(replica_sum(local, replica_context), local)


def reduce_loss_info(loss_info: LossInfo,
                     valid_masks: Optional[tf.Tensor],
                     replica_context: ReplicaContext = None) -> LossInfo:
    """Averages every per-step leaf of a ``LossInfo`` over valid steps.

    ``loss`` and every leaf of ``extra`` go through ``masked_mean``;
    ``scalar_loss`` must already be a scalar. With N > 1 replicas in
    ``replica_context``
    ``scalar_loss`` becomes its cross-replica mean, with 1/N of the
    replica's gradient (the optimizer sums the N replicas' gradients).

    Args:
        loss_info: ``LossInfo`` with [T, B] leaves (or [B] with a [B]
            mask; scalars pass through).
        valid_masks: [T, B] (or [B]) float mask, or None.
        replica_context: the replica context of the update, or None.
    Returns:
        ``LossInfo`` with [] leaves.
    Raises:
        ValueError: ``scalar_loss`` is not a scalar; a mask rank mismatch.
    """
    loss = (loss_info.loss if is_unset(loss_info.loss) else masked_mean(
        loss_info.loss, valid_masks, replica_context))
    scalar = loss_info.scalar_loss
    if not is_unset(scalar):
        scalar = tf.convert_to_tensor(scalar)
        if scalar.shape.rank != 0:
            raise ValueError("LossInfo.scalar_loss must be a scalar, got "
                             "shape %s" % scalar.shape)
        replicas = num_replicas(replica_context)
        if replicas > 1:
            scalar = with_local_gradient(
                replica_sum(scalar, replica_context) / replicas,
                scalar / replicas)
    extra = tf.nest.map_structure(
        lambda e: masked_mean(e, valid_masks, replica_context),
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


def cut_seams(step_type: tf.Tensor) -> tf.Tensor:
    """Step types with every step followed by a FIRST step made LAST.

    ``s'_t = LAST`` if ``s_{t+1} = FIRST`` (t < T-1), else ``s'_t = s_t``.

    In an environment's own stream a FIRST step only follows a LAST one, so
    on such data this is the identity. A collector that starts over without
    ending its episode (a resumed run with Python environments, a restarted
    subprocess worker or Ray actor) leaves a seam: a MID step followed by
    the new episode's FIRST step. There is no transition across a seam, so
    the step before it is cut like a time limit ends an episode: its loss
    is masked (``valid_step_mask``), returns stop there and the step before
    it bootstraps from its value (its discount is kept).

    Args:
        step_type: [T, B] (or [T]) integer ``StepType`` values, time-major.
    Returns:
        Tensor of ``step_type``'s shape and dtype.
    """
    step_type = tf.convert_to_tensor(step_type)
    first = tf.equal(step_type[1:], tf.cast(StepType.FIRST, step_type.dtype))
    ends = tf.concat([first, tf.zeros_like(step_type[-1:], tf.bool)], axis=0)
    return tf.where(ends, tf.cast(StepType.LAST, step_type.dtype), step_type)
