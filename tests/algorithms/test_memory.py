"""Tests for MemoryWithUsage: content reads, least-used writes, usage
decay, reset at FIRST by the drivers' state reset, gradients to keys."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.algorithms.memory import MemoryState, MemoryWithUsage
from alf_rl.specs import zeros_from_spec
from alf_rl.utils.common import reset_state_if_necessary


def _empty(memory, batch_size=2):
    return zeros_from_spec(memory.state_spec, [batch_size])


def test_state_spec_and_empty_state():
    memory = MemoryWithUsage(dim=3, size=4)
    state = _empty(memory)
    assert isinstance(state, MemoryState)
    assert state.memory.shape == (2, 4, 3)
    assert state.usage.shape == (2, 4)


def test_writes_fill_least_used_slots_and_a_matching_key_reads_back():
    memory = MemoryWithUsage(dim=3, size=4)
    state = _empty(memory, 1)
    vectors = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    for v in vectors:
        state = memory.write(tf.constant([v]), state)
    # An empty memory fills slots 0, 1, 2 in order; slot 3 stays empty.
    np.testing.assert_array_equal(
        state.memory.numpy()[0], vectors + [[0.0, 0.0, 0.0]]
    )
    np.testing.assert_array_equal(state.usage.numpy(), [[1.0, 1.0, 1.0, 0.0]])
    # A sharp key equal to the second vector reads it back.
    read, attention, _ = memory.read(
        tf.constant([[[0.0, 2.0, 0.0]]]), tf.constant([[50.0]]), state
    )
    np.testing.assert_allclose(read.numpy()[0, 0], [0.0, 1.0, 0.0], atol=1e-6)
    assert np.argmax(attention.numpy()[0, 0]) == 1


def test_write_goes_to_the_least_used_slot_after_reads():
    memory = MemoryWithUsage(dim=2, size=3)
    state = MemoryState(
        memory=tf.constant([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]]),
        usage=tf.constant([[1.0, 1.0, 1.0]]),
    )
    # Reading slot 0 and slot 2 strongly leaves slot 1 least used.
    keys = tf.constant([[[1.0, 0.0], [1.0, 1.0]]])
    _, _, state = memory.read(keys, tf.constant([[100.0, 100.0]]), state)
    state = memory.write(tf.constant([[7.0, 7.0]]), state)
    np.testing.assert_allclose(
        state.memory.numpy()[0], [[1.0, 0.0], [7.0, 7.0], [1.0, 1.0]]
    )


def test_usage_decays_by_each_read():
    memory = MemoryWithUsage(dim=2, size=2, usage_decay=0.5)
    state = MemoryState(
        memory=tf.zeros([1, 2, 2]), usage=tf.constant([[4.0, 2.0]])
    )
    # Zero slots: uniform attention 0.5 each.
    _, _, state = memory.read(tf.ones([1, 1, 2]), tf.ones([1, 1]), state)
    np.testing.assert_allclose(state.usage.numpy(), [[2.5, 1.5]])
    _, _, state = memory.read(tf.ones([1, 1, 2]), tf.ones([1, 1]), state)
    np.testing.assert_allclose(state.usage.numpy(), [[1.75, 1.25]])


def test_reset_at_first_clears_only_those_rows():
    memory = MemoryWithUsage(dim=2, size=2)
    state = memory.write(tf.constant([[1.0, 2.0], [3.0, 4.0]]), _empty(memory))
    state = reset_state_if_necessary(
        state, _empty(memory), tf.constant([True, False])
    )
    np.testing.assert_array_equal(state.memory.numpy()[0], np.zeros([2, 2]))
    np.testing.assert_array_equal(state.usage.numpy()[0], [0.0, 0.0])
    np.testing.assert_array_equal(
        state.memory.numpy()[1], [[3.0, 4.0], [0.0, 0.0]]
    )


def test_gradients_reach_keys_strengths_key_layer_and_written_content():
    memory = MemoryWithUsage(dim=2, size=3, num_read_keys=2, key_input_size=4)
    content = tf.Variable([[1.0, -1.0]])
    features = tf.constant([[0.5, -0.3, 0.2, 1.0]])
    with tf.GradientTape(persistent=True) as tape:
        state = memory.write(content, _empty(memory, 1))
        state = memory.write(tf.constant([[0.3, 0.8]]), state)
        keys, strengths = memory.generate_keys(features)
        read, _, _ = memory.read(keys, strengths, state)
        loss = tf.reduce_sum(read * tf.constant([1.0, 2.0]))
    assert keys.shape == (1, 2, 2) and strengths.shape == (1, 2)
    assert np.all(strengths.numpy() >= 0)
    for g in tape.gradient(loss, [keys, strengths, content]):
        assert g is not None and np.any(g.numpy() != 0)
    grads = tape.gradient(loss, memory.trainable_variables)
    assert len(grads) == 2 and all(np.any(g.numpy() != 0) for g in grads)
    flat, _, _ = memory.generate_keys_and_read(features, state)
    assert flat.shape == (1, memory.read_size) == (1, 4)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match='usage_decay must be in'):
        MemoryWithUsage(dim=2, size=2, usage_decay=0.0)
    with pytest.raises(ValueError, match='size must be >= 1'):
        MemoryWithUsage(dim=2, size=0)
    with pytest.raises(ValueError, match='key_input_size=0'):
        MemoryWithUsage(dim=2, size=2).generate_keys(tf.zeros([1, 3]))
