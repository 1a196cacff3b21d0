"""Algorithm base: variable/optimizer gathering and train_complete."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms.algorithm import Algorithm, info_of
from alf_rl.data_structures import (AlgStep, LossInfo, TrainingInfo,
                                    namedtuple)
from alf_rl.networks.target_network import PeriodicSoftUpdate, TargetNetwork


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
        # Skipped by type, whatever the attribute's name.
        self.any_name = TargetNetwork(_Net(), name='target_net')
        self.updater = PeriodicSoftUpdate(self.any_name.variables,
                                          _Net().variables)


class _Net(tf.Module):

    def __init__(self, name='net'):
        super().__init__(name=name)
        self.v = tf.Variable(1.0, name=name + '_v')

    def copy(self, name=None):
        return _Net(name or self.name)


def test_variables_gathered_once_and_by_owner():
    own_opt, child_opt = tf_keras.optimizers.SGD(0.1), tf_keras.optimizers.SGD(0.1)
    shared = _Leaf(1.0)  # no optimizer: trained by the parent
    owner = _Leaf(2.0, optimizer=child_opt, name='Owner')
    parent = _Parent([shared, owner, shared], optimizer=own_opt)
    sets = parent.get_optimizer_and_variable_sets()
    assert len(sets) == 2
    assert sets[0][0] is own_opt and sets[1][0] is child_opt
    names0 = sorted(v.name for v in sets[0][1])
    assert names0 == sorted(
        ['Leaf_w:0'] + [v.name for v in parent.dense.trainable_variables])
    assert [v.name for v in sets[1][1]] == ['Owner_w:0']
    # target network and updater ignored, no duplicates
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


class _Gated(Algorithm):
    """Two leaves with their own optimizers; the second is gated."""

    def __init__(self):
        super().__init__(name='Gated')
        self.a = _Leaf(3.0, optimizer=tf_keras.optimizers.SGD(1.0), name='A')
        self.b = _Leaf(3.0, optimizer=tf_keras.optimizers.SGD(1.0), name='B')
        self.open = tf.Variable(False, trainable=False)
        self.after = tf.Variable(0, trainable=False)

    def train_step(self, inputs, state):
        la = self.a.train_step(inputs, state).info.loss
        lb = self.b.train_step(inputs, state).info.loss
        return AlgStep(output=(), state=state, info=LossInfo(loss=la + lb))

    def should_apply(self, optimizer):
        return True if optimizer is self.a.optimizer else self.open

    def after_train(self, training_info):
        self.after.assign_add(1)


@pytest.mark.parametrize('compiled', [False, True])
def test_should_apply_gates_one_optimizer(compiled):
    alg = _Gated()
    x = tf.constant([[1.0]])

    def _update():
        with tf.GradientTape(persistent=True) as tape:
            step = alg.train_step(x, ())
        return alg.train_complete(tape, TrainingInfo(info=step.info))

    update = tf.function(_update, autograph=False) if compiled else _update
    _, grads_and_vars = update()
    # d/dw (w - 1)^2 = 4 for both; only A moves, B's step is skipped and
    # reported as a zero gradient; B's optimizer did not count a step.
    # (A's set comes first: sub-algorithms are gathered by attribute name.)
    assert [float(g) for g, _ in grads_and_vars] == [pytest.approx(4.0), 0.0]
    assert float(alg.a.w) == pytest.approx(-1.0)
    assert float(alg.b.w) == 3.0
    assert int(alg.b.optimizer.iterations) == 0
    alg.open.assign(True)
    update()
    assert float(alg.b.w) == pytest.approx(-1.0)
    assert int(alg.b.optimizer.iterations) == 1
    assert int(alg.after) == 2  # after_train runs after every update


def test_info_of_takes_a_training_info_or_the_info():
    Info = namedtuple('Info', ['loss'], default_value=())
    info = Info(loss=tf.zeros([2, 3]))
    assert info_of(TrainingInfo(info=info), Info, 'Mine') is info
    assert info_of(info, Info, 'Mine') is info
    with pytest.raises(TypeError, match=r"Mine.calc_loss: expected a "
                       r"TrainingInfo whose info is an Info, got LossInfo"):
        info_of(TrainingInfo(info=LossInfo()), Info, 'Mine')
