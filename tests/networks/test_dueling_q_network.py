"""QNetwork(dueling=True): value + advantage - mean(advantage)."""

import numpy as np
import tensorflow as tf

from alf_rl.networks import QNetwork
from alf_rl.specs import BoundedTensorSpec

OBS_SPEC = tf.TensorSpec([3], tf.float32)
ACTION_SPEC = BoundedTensorSpec((), tf.int64, 0, 3)


def test_dueling_q_is_value_plus_centered_advantage():
    tf.random.set_seed(0)
    net = QNetwork(OBS_SPEC, ACTION_SPEC, fc_layer_params=(8, ),
                   dueling=True)
    obs = tf.random.normal([5, 3])
    q, state = net(obs)
    assert q.shape == (5, 4) and state == ()
    h, _ = net._encoder(obs)
    value, _ = net._value_head(h)
    advantage, _ = net._advantage_head(h)
    assert value.shape == (5, 1) and advantage.shape == (5, 4)
    expected = value + advantage - tf.reduce_mean(advantage, -1,
                                                  keepdims=True)
    np.testing.assert_allclose(q.numpy(), expected.numpy(), rtol=1e-6)
    # The mean over actions of Q is the state value V(s).
    np.testing.assert_allclose(tf.reduce_mean(q, -1).numpy(),
                               value[:, 0].numpy(), rtol=1e-5, atol=1e-6)
    # [T, B] outer dims work too.
    q_tb, _ = net(tf.reshape(tf.concat([obs, obs], 0), [2, 5, 3]))
    np.testing.assert_allclose(q_tb[1].numpy(), q.numpy(), rtol=1e-6)


def test_dueling_variables_and_copy():
    plain = QNetwork(OBS_SPEC, ACTION_SPEC, fc_layer_params=(8, ))
    dueling = QNetwork(OBS_SPEC, ACTION_SPEC, fc_layer_params=(8, ),
                       dueling=True)
    # plain: fc0 + last (kernel, bias each); dueling: fc0 + two heads.
    assert len(plain.trainable_variables) == 4
    assert len(dueling.trainable_variables) == 6
    shapes = sorted(tuple(v.shape) for v in dueling.trainable_variables)
    assert shapes == sorted([(3, 8), (8, ), (8, 1), (1, ), (8, 4), (4, )])
    target = dueling.copy(name='target')
    assert len(target.trainable_variables) == 6
    q, _ = target(tf.zeros([2, 3]))
    assert q.shape == (2, 4)
    # Gradients reach every variable.
    with tf.GradientTape() as tape:
        q, _ = dueling(tf.random.normal([4, 3]))
        loss = tf.reduce_sum(tf.square(q - tf.constant([1., 2., 3., 4.])))
    grads = tape.gradient(loss, dueling.trainable_variables)
    assert all(g is not None and np.any(g.numpy() != 0) for g in grads)
