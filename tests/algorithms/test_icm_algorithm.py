"""IcmAlgorithm: shapes, the reward and loss formulas on hand-set weights,
FIRST steps, training on a fixed transition, normalizer updates."""

import functools

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms import IcmAlgorithm
from alf_rl.algorithms.icm_algorithm import ICMInfo
from alf_rl.data_structures import StepType, TimeStep, TrainingInfo
from alf_rl.networks import EncodingNetwork
from alf_rl.specs import BoundedTensorSpec
from alf_rl.utils.normalizers import AdaptiveScalarNormalizer

OBS = tf.TensorSpec([2], tf.float32)
DISCRETE = BoundedTensorSpec((), tf.int64, 0, 1)
CONTINUOUS = BoundedTensorSpec((1, ), tf.float32, -1, 1)
F, M, L = StepType.FIRST, StepType.MID, StepType.LAST


def _time_step(step_type, observation, prev_action):
    return TimeStep(step_type=tf.constant(step_type, tf.int32),
                    observation=tf.constant(observation, tf.float32),
                    prev_action=tf.constant(prev_action))


def _identity_icm(action_spec, **kwargs):
    """phi = the observation; f and g linear with weights set by hand:
    f predicts the constant c = [1, -2], g outputs zeros."""
    linear = functools.partial(EncodingNetwork)
    alg = IcmAlgorithm(OBS, action_spec, encoding_network_ctor=linear,
                       forward_network_ctor=linear,
                       inverse_network_ctor=linear, **kwargs)
    for net, bias in ((alg.forward_network, [1., -2.]),
                      (alg.inverse_network, None)):
        kernel, b = net.trainable_variables
        kernel.assign(tf.zeros_like(kernel))
        b.assign(tf.zeros_like(b) if bias is None else bias)
    return alg


def test_reward_and_losses_equal_the_formulas_discrete():
    alg = _identity_icm(DISCRETE, reward_normalizer_ctor=None)
    assert alg.train_state_spec == OBS and alg.rollout_state_spec == OBS
    previous = tf.constant([[0., 0.], [3., 1.], [5., 5.]])
    ts = _time_step([M, L, F], [[1., 2.], [0., 0.], [7., 7.]],
                    np.array([1, 0, 1], np.int64))
    step = alg.rollout(ts, previous)
    # 0.5 ||c - phi(s')||^2, c = [1, -2]; 0 at the FIRST row.
    want = [0.5 * (0 + 16), 0.5 * (1 + 4), 0.]
    np.testing.assert_allclose(step.output.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(step.info.forward_loss.numpy(), want,
                               rtol=1e-6)
    # Zero logits over two actions: cross-entropy log 2.
    np.testing.assert_allclose(step.info.inverse_loss.numpy(),
                               [np.log(2), np.log(2), 0.], rtol=1e-6)
    np.testing.assert_array_equal(step.state.numpy(), ts.observation.numpy())
    loss = alg.calc_loss(TrainingInfo(info=tf.nest.map_structure(
        lambda x: x[None], step.info)))
    np.testing.assert_allclose(
        loss.loss.numpy()[0],
        0.8 * np.array([np.log(2), np.log(2), 0.]) + 0.2 * np.array(want),
        rtol=1e-6)
    assert loss.loss.shape == [1, 3]
    assert set(loss.extra._fields) == {'forward_loss', 'inverse_loss'}


def test_continuous_inverse_loss_is_mean_squared_error():
    alg = _identity_icm(CONTINUOUS, reward_normalizer_ctor=None, beta=0.5)
    ts = _time_step([M, M], [[1., -2.], [0., 0.]], [[0.5], [-1.]])
    step = alg.train_step(ts, tf.zeros([2, 2]))
    np.testing.assert_allclose(step.info.inverse_loss.numpy(), [0.25, 1.],
                               rtol=1e-6)
    np.testing.assert_allclose(step.output.numpy(), [0., 2.5], rtol=1e-6)
    loss = alg.calc_loss(step.info).loss.numpy()
    np.testing.assert_allclose(loss, [0.125, 1.75], rtol=1e-6)


def test_default_networks_shapes_and_first_steps():
    alg = IcmAlgorithm(OBS, DISCRETE, optimizer=tf_keras.optimizers.Adam())
    state = alg.get_initial_rollout_state(4)
    assert state.shape == [4, 2]
    assert alg.encoding_network.output_size == 64  # phi's features
    ts = _time_step([F, F, M, M], np.ones([4, 2]), np.ones(4, np.int64))
    with tf.GradientTape() as tape:
        step = alg.rollout(ts, state + 3.0)
    assert step.output.shape == [4] and step.output.dtype == tf.float32
    # FIRST rows: whatever the state held, no reward and no loss.
    np.testing.assert_array_equal(step.output.numpy()[:2], [0., 0.])
    np.testing.assert_array_equal(step.info.forward_loss.numpy()[:2], 0.)
    np.testing.assert_array_equal(step.info.inverse_loss.numpy()[:2], 0.)
    assert np.all(step.output.numpy()[2:] > 0)
    assert tape.gradient(tf.reduce_sum(step.output),
                         alg.trainable_variables) == [None] * len(
                             alg.trainable_variables)


def test_loss_decreases_on_a_fixed_transition():
    tf.random.set_seed(0)
    alg = IcmAlgorithm(OBS, DISCRETE, reward_normalizer_ctor=None,
                       optimizer=tf_keras.optimizers.Adam(1e-2))
    previous = tf.constant([[1., 0.], [0., 1.]])
    ts = _time_step([M, M], [[0., 1.], [1., 0.]], np.array([1, 0],
                                                           np.int64))
    losses, rewards = [], []
    for _ in range(40):
        with tf.GradientTape() as tape:
            step = alg.train_step(ts, previous)
            info = tf.nest.map_structure(lambda x: x[None], step.info)
        loss_info, _ = alg.train_complete(tape, TrainingInfo(info=info))
        losses.append(float(loss_info.loss))
        rewards.append(float(tf.reduce_mean(step.output)))
    assert losses[-1] < 0.2 * losses[0], losses
    assert rewards[-1] < rewards[0]  # a familiar transition, less reward


def test_reward_normalizer_is_updated_at_rollout_only():
    alg = IcmAlgorithm(OBS, DISCRETE, reward_normalizer_ctor=functools.
                       partial(AdaptiveScalarNormalizer, update_rate=0.5))
    normalizer = alg._reward_normalizer
    ts = _time_step([M, M, M], [[0., 1.], [1., 0.], [2., 2.]],
                    np.array([1, 0, 1], np.int64))
    previous = tf.constant([[1., 0.], [0., 1.], [0., 0.]])
    before = normalizer.variance.numpy()
    alg.train_step(ts, previous)
    alg.predict(ts, previous)
    assert normalizer.variance.numpy() == before
    step = alg.rollout(ts, previous)
    raw = step.info.forward_loss.numpy()
    np.testing.assert_allclose(normalizer.variance.numpy(), np.var(raw),
                               rtol=1e-5)  # the first batch sets it
    # scaled by the root mean square (the rewards are not centred)
    np.testing.assert_allclose(
        step.output.numpy(),
        raw / np.sqrt(np.var(raw) + np.mean(raw)**2 + 1e-8), rtol=1e-5)


def test_rejects_bad_arguments():
    with pytest.raises(ValueError, match='beta must be in'):
        IcmAlgorithm(OBS, DISCRETE, beta=1.5)
    with pytest.raises(ValueError, match='discrete action_spec must be'):
        IcmAlgorithm(OBS, BoundedTensorSpec((2, ), tf.int64, 0, 1))
    with pytest.raises(ValueError, match='one BoundedTensorSpec'):
        IcmAlgorithm(OBS, (DISCRETE, DISCRETE))
    with pytest.raises(TypeError, match='ICMInfo'):
        IcmAlgorithm(OBS, DISCRETE).calc_loss(TrainingInfo(info=()))
    assert ICMInfo._fields == ('forward_loss', 'inverse_loss')
