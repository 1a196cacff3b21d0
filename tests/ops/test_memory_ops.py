"""Tests for alf_rl.ops.memory_ops against numpy references."""

import numpy as np
import tensorflow as tf

from alf_rl.ops import memory_ops


def _numpy_attention(keys, strengths, memory):
    """softmax_i(beta_k cos(q_k, M_i)) with the ops' epsilon."""
    eps = memory_ops.COSINE_EPSILON
    dots = np.einsum('bkd,bnd->bkn', keys, memory)
    norms = (np.linalg.norm(keys, axis=-1)[:, :, None] + eps) * (
        np.linalg.norm(memory, axis=-1)[:, None, :] + eps
    )
    logits = strengths[:, :, None] * dots / norms
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_read_matches_numpy_and_updates_usage():
    rng = np.random.RandomState(0)
    keys = rng.randn(2, 3, 4).astype(np.float32)
    strengths = rng.uniform(0, 5, (2, 3)).astype(np.float32)
    memory = rng.randn(2, 5, 4).astype(np.float32)
    usage = rng.uniform(0, 1, (2, 5)).astype(np.float32)
    read, attention, new_usage = memory_ops.read_memory(
        *map(tf.constant, (keys, strengths, memory, usage)), usage_decay=0.9
    )
    want_attention = _numpy_attention(keys, strengths, memory)
    np.testing.assert_allclose(
        attention.numpy(), want_attention, rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        read.numpy(),
        np.einsum('bkn,bnd->bkd', want_attention, memory),
        rtol=1e-5,
        atol=1e-6,
    )
    np.testing.assert_allclose(
        new_usage.numpy(), 0.9 * usage + want_attention.sum(1), rtol=1e-5
    )


def test_zero_slots_have_zero_similarity():
    sim = memory_ops.cosine_similarity(tf.ones([1, 1, 3]), tf.zeros([1, 2, 3]))
    np.testing.assert_array_equal(sim.numpy(), np.zeros([1, 1, 2]))


def test_write_replaces_the_least_used_slot():
    memory = tf.constant([[[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]])
    usage = tf.constant([[0.5, 0.1, 0.7]])
    memory, usage = memory_ops.write_least_used(
        tf.constant([[9.0, 8.0]]), memory, usage
    )
    np.testing.assert_array_equal(
        memory.numpy(), [[[1.0, 1.0], [9.0, 8.0], [3.0, 3.0]]]
    )
    np.testing.assert_allclose(usage.numpy(), [[0.5, 1.0, 0.7]])
