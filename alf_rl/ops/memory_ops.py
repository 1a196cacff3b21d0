"""Content-addressed memory with usage (Wayne et al. 2018, "Unsupervised
Predictive Memory in a Goal-Directed Agent", Methods 2.3; as ALF's
``MemoryWithUsage``).

A memory is N slots of D-vectors ``M`` [B, N, D] with a usage ``u``
[B, N]. Reading with K keys ``q`` [B, K, D] and strengths ``beta`` [B, K]
attends over slots by ``a_{k,i} = softmax_i(beta_k cos(q_k, M_i))`` and
returns ``r_k = sum_i a_{k,i} M_i``; the attention is added to the usage
(``u <- gamma u + sum_k a_k``, gamma the usage decay). Writing a vector
``v`` [B, D] replaces the least-used slot ``i* = argmin_i u_i`` and sets
its usage to 1.
"""

from typing import Tuple

import tensorflow as tf

#: Added to the norms of cosine similarity, so empty (zero) slots have
#: similarity 0 rather than NaN.
COSINE_EPSILON = 1e-6


def cosine_similarity(keys: tf.Tensor, memory: tf.Tensor) -> tf.Tensor:
    """``cos(q_k, M_i) = q_k . M_i / ((|q_k| + eps) (|M_i| + eps))``.

    Args:
        keys: [B, K, D] float32 read keys.
        memory: [B, N, D] float32 slots.
    Returns:
        [B, K, N] float32 similarities in [-1, 1] (0 for a zero slot).
    """
    dots = tf.matmul(keys, memory, transpose_b=True)
    key_norm = tf.norm(keys, axis=-1)[:, :, None] + COSINE_EPSILON
    slot_norm = tf.norm(memory, axis=-1)[:, None, :] + COSINE_EPSILON
    return dots / (key_norm * slot_norm)


def read_attention(
    keys: tf.Tensor, strengths: tf.Tensor, memory: tf.Tensor
) -> tf.Tensor:
    """``a_{k,i} = softmax_i(beta_k cos(q_k, M_i))``.

    Args:
        keys: [B, K, D] float32 read keys q.
        strengths: [B, K] float32 strengths beta (>= 0 for a sharpening
            softmax).
        memory: [B, N, D] float32 slots M.
    Returns:
        [B, K, N] float32 attention weights, summing to 1 over N.
    """
    return tf.nn.softmax(
        strengths[:, :, None] * cosine_similarity(keys, memory), axis=-1
    )


def read_memory(
    keys: tf.Tensor,
    strengths: tf.Tensor,
    memory: tf.Tensor,
    usage: tf.Tensor,
    usage_decay: float = 1.0,
) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Content-based read: ``r_k = sum_i a_{k,i} M_i`` and the usage
    update ``u' = gamma u + sum_k a_k``.

    Args:
        keys: [B, K, D] float32 read keys.
        strengths: [B, K] float32 strengths.
        memory: [B, N, D] float32 slots.
        usage: [B, N] float32 usage u.
        usage_decay: gamma in (0, 1]: past usage fades by this per read.
    Returns:
        ``(read [B, K, D], attention [B, K, N], usage [B, N])``.
    """
    attention = read_attention(keys, strengths, memory)
    read = tf.matmul(attention, memory)
    usage = usage_decay * usage + tf.reduce_sum(attention, axis=1)
    return read, attention, usage


def write_least_used(
    content: tf.Tensor, memory: tf.Tensor, usage: tf.Tensor
) -> Tuple[tf.Tensor, tf.Tensor]:
    """Writes ``v`` into slot ``i* = argmin_i u_i`` and sets ``u_{i*} = 1``
    (the first of equal usages: an empty memory fills slot 0, 1, ...).

    Args:
        content: [B, D] float32 vector v.
        memory: [B, N, D] float32 slots.
        usage: [B, N] float32 usage.
    Returns:
        ``(memory [B, N, D], usage [B, N])`` after the write; gradients
        reach ``content`` and the kept slots.
    """
    slot = tf.one_hot(
        tf.argmin(usage, axis=-1, output_type=tf.int32),
        tf.shape(usage)[-1],
        dtype=memory.dtype,
    )
    memory = (
        memory * (1.0 - slot[:, :, None])
        + slot[:, :, None] * content[:, None, :]
    )
    return memory, usage * (1.0 - slot) + slot
