"""create_optimizer_slots: an optimizer's variables exist before its first
update, for both kinds of tf_keras optimizer."""

import tensorflow as tf
import tf_keras

from alf_rl.algorithms.optimizer_sets import create_optimizer_slots


def test_slots_exist_before_the_first_update_and_it_creates_none():
    for optimizer in (
        tf_keras.optimizers.Adam(1e-3),
        tf_keras.optimizers.legacy.Adam(1e-3),
    ):
        variables = [tf.Variable(tf.ones([3, 2])), tf.Variable(tf.zeros([2]))]
        create_optimizer_slots(optimizer, variables)
        # Adam: two moments per variable, plus its step counter.
        before = len(optimizer.variables())
        assert before >= 1 + 2 * len(variables), optimizer
        optimizer.apply_gradients(
            zip([tf.ones([3, 2]), tf.ones([2])], variables)
        )
        assert len(optimizer.variables()) == before, optimizer
