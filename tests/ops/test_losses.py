"""ops.losses: element-wise losses and the actor losses of Q-based
methods, against hand-computed values and gradients."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.ops.losses import (discrete_soft_actor_loss, dqda_loss,
                               element_wise_huber_loss,
                               element_wise_squared_loss, soft_actor_loss,
                               temperature_loss)
from alf_rl.ops.td_targets import expected_soft_state_value


def test_element_wise_losses_by_hand():
    target = tf.constant([0.0, 0.0, 0.0])
    prediction = tf.constant([0.5, -2.0, 3.0])
    np.testing.assert_allclose(element_wise_squared_loss(target, prediction),
                               [0.125, 2.0, 4.5])
    # Huber: quadratic inside delta, linear beyond; equal for |x| <= delta.
    np.testing.assert_allclose(element_wise_huber_loss(target, prediction),
                               [0.125, 1.5, 2.5])
    np.testing.assert_allclose(
        element_wise_huber_loss(target, prediction, delta=10.0),
        element_wise_squared_loss(target, prediction))


def test_dqda_loss_gradient_is_minus_dqda():
    a_t = tf.constant([[0.5, -1.], [2., 0.]])
    dqda_t = tf.constant([[1., 2.], [-3., 4.]])
    with tf.GradientTape() as tape:
        tape.watch(a_t)
        loss = dqda_loss(a_t, dqda_t)
    np.testing.assert_allclose(loss, [2.5, 12.5])  # 0.5 * |dqda|^2
    np.testing.assert_allclose(tape.gradient(loss, a_t), -dqda_t)
    with tf.GradientTape() as tape:
        tape.watch(a_t)
        loss = dqda_loss(a_t, dqda_t, dqda_clipping=1.5)
    np.testing.assert_allclose(tape.gradient(loss, a_t),
                               [[-1., -1.5], [1.5, -1.5]])


def test_dqda_loss_sums_over_a_nest():
    a = {'x': tf.zeros([2, 1]), 'y': tf.zeros([2, 2, 1])}
    g = {'x': tf.constant([[1.0], [2.0]]), 'y': tf.ones([2, 2, 1])}
    np.testing.assert_allclose(dqda_loss(a, g), [0.5 + 1.0, 2.0 + 1.0])


def test_soft_actor_loss_value_and_gradient():
    a_t = [tf.constant([[0.3], [-0.2]])]
    dqda_t = [tf.constant([[2.0], [-1.0]])]
    log_pi_t = tf.constant([-1.0, 0.5])
    q_t = tf.constant([4.0, 1.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(a_t + [log_pi_t, q_t] + dqda_t)
        loss = soft_actor_loss(log_pi_t, q_t, a_t, dqda_t, 0.2)
    # Value alpha log pi - Q (the surrogate is 0 in value).
    np.testing.assert_allclose(loss, [-0.2 - 4.0, 0.1 - 1.0], rtol=1e-6)
    np.testing.assert_allclose(tape.gradient(loss, a_t[0]), -dqda_t[0])
    np.testing.assert_allclose(tape.gradient(loss, log_pi_t), [0.2, 0.2])
    assert tape.gradient(loss, q_t) is None
    assert tape.gradient(loss, dqda_t[0]) is None


def test_discrete_soft_actor_loss_is_minus_the_soft_value():
    pi_t = tf.constant([[0.25, 0.75]])
    log_pi_t = tf.math.log(pi_t)
    q_t = tf.constant([[1.0, 3.0]])
    np.testing.assert_allclose(
        discrete_soft_actor_loss(pi_t, log_pi_t, q_t, 0.5),
        -expected_soft_state_value(pi_t, log_pi_t, q_t, 0.5), rtol=1e-6)
    with tf.GradientTape() as tape:
        tape.watch(q_t)
        loss = discrete_soft_actor_loss(pi_t, log_pi_t, q_t, 0.5)
    assert tape.gradient(loss, q_t) is None


def test_temperature_loss_lowers_alpha_when_entropy_is_high():
    log_alpha = tf.Variable(0.0)
    with tf.GradientTape() as tape:
        loss = temperature_loss(log_alpha, tf.constant([2.0]), -1.0)
    # d loss / d log_alpha = H - target = 3 > 0: descent lowers alpha.
    assert float(tape.gradient(loss, log_alpha)) == pytest.approx(3.0)
    # At the target the loss is 0 whatever alpha is.
    assert float(temperature_loss(tf.constant(2.0), tf.constant([-1.0]),
                                  -1.0)[0]) == 0.0
