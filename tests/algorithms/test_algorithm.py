"""Algorithm base: variable/optimizer gathering and train_complete."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms.algorithm import Algorithm, masked_mean
from alf_rl.data_structures import AlgStep, LossInfo, TrainingInfo


class _Leaf(Algorithm):
    """An algorithm with one variable and a quadratic loss."""

    def __init__(self, init, optimizer=None, name='Leaf'):
        super().__init__(optimizer=optimizer, name=name)
        self.w = tf.Variable(init, dtype=tf.float32, name=name + '_w')

    def train_step(self, inputs, state):
        return AlgStep(output=inputs * self.w, state=state,
                       info=LossInfo(loss=tf.square(inputs * self.w - 1.0)))


class _Parent(Algorithm):

    def __init__(self, children, optimizer=None):
        super().__init__(optimizer=optimizer, name='Parent')
        self.children = children
        self.dense = tf_keras.layers.Dense(2)
        self.dense.build([None, 3])
        self.target = tf.Variable(0.0)

    def _trainable_attributes_to_ignore(self):
        return ['target']


def test_variables_gathered_once_and_by_owner():
    own_opt, child_opt = tf_keras.optimizers.SGD(0.1), tf_keras.optimizers.SGD(0.1)
    shared = _Leaf(1.0)  # no optimizer: trained by the parent
    owner = _Leaf(2.0, optimizer=child_opt, name='Owner')
    parent = _Parent([shared, owner, shared], optimizer=own_opt)
    sets = parent.get_optimizer_and_variable_sets()
    assert len(sets) == 2
    assert sets[0][0] is own_opt and sets[1][0] is child_opt
    names0 = sorted(v.name for v in sets[0][1])
    assert names0 == sorted(['Leaf_w:0'] + [v.name for v in parent.dense.trainable_variables])
    assert [v.name for v in sets[1][1]] == ['Owner_w:0']
    # target variable ignored, no duplicates
    all_vars = parent.trainable_variables
    assert len(all_vars) == len({v.ref() for v in all_vars}) == 4


def test_missing_optimizer_is_a_clear_error():
    parent = _Parent([_Leaf(1.0)])
    with pytest.raises(ValueError, match='have no optimizer'):
        parent.get_optimizer_and_variable_sets()


def test_variable_with_two_optimizers_is_rejected():
    leaf = _Leaf(1.0, optimizer=tf_keras.optimizers.SGD(0.1))
    parent = _Parent([leaf], optimizer=tf_keras.optimizers.SGD(0.1))
    parent.extra = leaf.w  # the same variable also owned by the parent
    with pytest.raises(ValueError, match='two optimizers'):
        parent.get_optimizer_and_variable_sets()


def test_masked_mean_divides_by_valid_count():
    x = tf.constant([[1.0, 2.0], [3.0, 100.0]])
    mask = tf.constant([[1.0, 1.0], [1.0, 0.0]])
    assert float(masked_mean(x, mask)) == pytest.approx(2.0)
    assert float(masked_mean(x, tf.zeros_like(mask))) == 0.0


def test_train_complete_applies_gradient_and_clips():
    leaf = _Leaf(3.0, optimizer=tf_keras.optimizers.SGD(1.0))
    leaf._gradient_clipping = 0.5
    x = tf.constant([[1.0]])
    with tf.GradientTape() as tape:
        step = leaf.train_step(x, ())
    info = TrainingInfo(info=step.info)
    loss_info, grads_and_vars = leaf.train_complete(tape, info)
    # d/dw (w - 1)^2 = 2 (w - 1) = 4, clipped to norm 0.5
    assert float(loss_info.loss) == pytest.approx(4.0)
    assert float(grads_and_vars[0][0]) == pytest.approx(0.5)
    assert float(leaf.w) == pytest.approx(2.5)


def test_nan_loss_stops_before_the_update():
    leaf = _Leaf(1.0, optimizer=tf_keras.optimizers.SGD(1.0))
    x = tf.constant([[np.nan]])
    with tf.GradientTape() as tape:
        step = leaf.train_step(x, ())
    with pytest.raises(tf.errors.InvalidArgumentError, match='loss of Leaf'):
        leaf.train_complete(tape, TrainingInfo(info=step.info))
    assert float(leaf.w) == 1.0
