"""DIAYNAlgorithm: the reward log q(z | s) + log K on hand-set weights,
FIRST steps, no gradient through the reward, a discriminator trained on
separable data, discriminator_accuracy, bad arguments."""

import functools
import math

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms import DIAYNAlgorithm
from alf_rl.algorithms.diayn_algorithm import (DIAYNInfo,
                                               discriminator_accuracy)
from alf_rl.data_structures import Experience, StepType, TimeStep, TrainingInfo
from alf_rl.networks import EncodingNetwork

OBS = tf.TensorSpec([2], tf.float32)
K = 3
SKILL = tf.TensorSpec([K], tf.float32)
F, M, L = StepType.FIRST, StepType.MID, StepType.LAST
# Hand-set linear discriminator: logits = s W + b.
W = np.array([[1., -1., 0.5], [2., 0., -1.]], np.float32)
BIAS = np.array([0.1, -0.2, 0.3], np.float32)


def _time_step(step_type, observation, skill_index):
    return TimeStep(step_type=tf.constant(step_type, tf.int32),
                    observation=(tf.constant(observation, tf.float32),
                                 tf.one_hot(skill_index, K)))


def _linear_diayn(**kwargs):
    alg = DIAYNAlgorithm((OBS, SKILL), discriminator_network_ctor=(
        EncodingNetwork), **kwargs)
    kernel, bias = alg.discriminator_network.trainable_variables
    kernel.assign(W)
    bias.assign(BIAS)
    return alg


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_reward_loss_and_accuracy_equal_the_formulas():
    alg = _linear_diayn()
    assert alg.train_state_spec == () and alg.rollout_state_spec == ()
    assert alg.num_skills == K
    observation = np.array([[1., 0.], [0., 1.], [-1., 2.], [3., 3.]],
                           np.float32)
    skills = [0, 1, 2, 2]
    ts = _time_step([M, L, M, F], observation, skills)
    step = alg.rollout(ts, ())
    log_q = _log_softmax(observation @ W + BIAS)[np.arange(4), skills]
    valid = np.array([1., 1., 1., 0.])
    np.testing.assert_allclose(step.output.numpy(),
                               valid * (log_q + np.log(K)), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(step.info.discriminator_loss.numpy(),
                               -valid * log_q, rtol=1e-5)
    # argmax of the logits: [1.1, -1.2, 0.8] -> 0 (= z); [2.1, -0.2, -0.7]
    # -> 0 (z = 1); [3.1, 0.8, -2.2] -> 0 (z = 2); FIRST row masked.
    np.testing.assert_array_equal(step.info.accuracy.numpy(),
                                  [1., 0., 0., 0.])
    # The same on every step method and from an Experience.
    experience = Experience(step_type=ts.step_type,
                            observation=ts.observation)
    for other in (alg.predict(ts, ()), alg.train_step(experience, ())):
        np.testing.assert_array_equal(other.output.numpy(),
                                      step.output.numpy())
    loss = alg.calc_loss(TrainingInfo(info=tf.nest.map_structure(
        lambda x: tf.stack([x, 2 * x]), step.info)))
    assert loss.loss.shape == [2, 4]
    np.testing.assert_allclose(loss.loss.numpy()[1], -2 * valid * log_q,
                               rtol=1e-5)
    assert loss.extra._fields == ('discriminator_loss', 'accuracy')
    np.testing.assert_array_equal(alg.calc_loss(step.info).loss,
                                  step.info.discriminator_loss)


def test_first_steps_are_masked_whatever_the_observation():
    alg = _linear_diayn()
    ts = _time_step([F, F], [[100., -100.], [-5., 7.]], [0, 1])
    step = alg.rollout(ts, ())
    np.testing.assert_array_equal(step.output.numpy(), [0., 0.])
    np.testing.assert_array_equal(step.info.discriminator_loss.numpy(),
                                  [0., 0.])
    np.testing.assert_array_equal(step.info.accuracy.numpy(), [0., 0.])


def test_reward_has_no_gradient_and_the_loss_has_one():
    alg = DIAYNAlgorithm((OBS, SKILL))
    assert alg.discriminator_network.output_size == K
    ts = _time_step([M, M, F], np.ones([3, 2]), [0, 1, 2])
    variables = alg.trainable_variables
    assert len(variables) == 6  # two hidden layers of 64 and the logits
    with tf.GradientTape(persistent=True) as tape:
        step = alg.rollout(ts, ())
        loss = tf.reduce_sum(alg.calc_loss(step.info).loss)
    assert step.output.shape == [3] and step.output.dtype == tf.float32
    assert tape.gradient(tf.reduce_sum(step.output),
                         variables) == [None] * len(variables)
    grads = tape.gradient(loss, variables)
    assert all(g is not None and np.any(g.numpy() != 0) for g in grads)


def _separable_batch(seed, size=64, num_skills=4):
    """Observations of skill z around the z-th corner of a square."""
    rng = np.random.RandomState(seed)
    skills = rng.randint(num_skills, size=size)
    corners = np.array([[1., 1.], [1., -1.], [-1., 1.], [-1., -1.]])
    observation = corners[skills] + 0.2 * rng.randn(size, 2)
    return observation.astype(np.float32), skills


def test_discriminator_learns_separable_skills():
    tf.random.set_seed(0)
    num_skills = 4
    alg = DIAYNAlgorithm(
        (OBS, tf.TensorSpec([num_skills], tf.float32)),
        discriminator_network_ctor=functools.partial(
            EncodingNetwork, fc_layer_params=(16, )),
        optimizer=tf_keras.optimizers.Adam(3e-2))

    def train(observation, skills):  # eager: faster than tracing here
        ts = TimeStep(step_type=tf.fill([64], StepType.MID),
                      observation=(tf.constant(observation),
                                   tf.one_hot(skills, num_skills)))
        with tf.GradientTape() as tape:
            step = alg.train_step(ts, ())
            info = tf.nest.map_structure(lambda x: x[None], step.info)
        return alg.train_complete(tape, TrainingInfo(info=info))[0], step

    losses = []
    for i in range(30):
        loss_info, step = train(*_separable_batch(i))
        losses.append(float(loss_info.loss))
    log_k = math.log(num_skills)
    assert losses[0] > 0.7 * log_k, losses[0]  # near chance at first
    assert losses[-1] < 0.1 * log_k, losses
    # The reward approaches its maximum log K; accuracy on fresh data is 1.
    assert float(tf.reduce_mean(step.output)) > 0.9 * log_k
    observation, skills = _separable_batch(1000, size=256)
    accuracy = discriminator_accuracy(alg, observation, skills)
    assert accuracy.shape == [] and float(accuracy) == 1.0
    # Wrong labels (each skill shifted by one) are all misses.
    assert float(discriminator_accuracy(alg, observation,
                                        (skills + 1) % num_skills)) == 0.0


def test_discriminator_accuracy_on_hand_set_weights():
    alg = _linear_diayn()
    observation = np.array([[1., 0.], [0., 1.], [-1., 2.], [0., -1.]],
                           np.float32)
    # argmax: 0, 0, 0, 1 (logits [0.1, -0.2, 1.3] -> 2 for the last).
    predicted = (observation @ W + BIAS).argmax(-1)
    np.testing.assert_array_equal(predicted, [0, 0, 0, 2])
    accuracy = discriminator_accuracy(alg, tf.constant(observation),
                                      tf.constant([0, 1, 0, 2], tf.int64))
    assert float(accuracy) == 0.75
    with pytest.raises(TypeError, match='skills must be .N. integer'):
        discriminator_accuracy(alg, observation, [0., 1., 0., 2.])
    with pytest.raises(ValueError, match=r'got shape \[4, 1\]'):
        discriminator_accuracy(alg, observation, [[0], [1], [0], [2]])


def test_rejects_bad_arguments():
    with pytest.raises(ValueError, match='must be the pair'):
        DIAYNAlgorithm(OBS)
    with pytest.raises(ValueError, match='must be the pair'):
        DIAYNAlgorithm((OBS, SKILL, SKILL))
    with pytest.raises(ValueError, match=r'observation_spec\[1\] must be'):
        DIAYNAlgorithm((OBS, tf.TensorSpec([K], tf.int32)))
    with pytest.raises(ValueError, match=r'observation_spec\[1\] must be'):
        DIAYNAlgorithm((OBS, tf.TensorSpec([2, K], tf.float32)))
    with pytest.raises(ValueError, match='K must be >= 2, got shape'):
        DIAYNAlgorithm((OBS, tf.TensorSpec([1], tf.float32)))
    with pytest.raises(ValueError, match=r'\[B, K=3\] logits, got shape'):
        DIAYNAlgorithm((OBS, SKILL), discriminator_network_ctor=(
            lambda input_tensor_spec, last_layer_size: EncodingNetwork(
                input_tensor_spec, last_layer_size=2)))
    with pytest.raises(TypeError, match='DIAYNInfo'):
        DIAYNAlgorithm((OBS, SKILL)).calc_loss(TrainingInfo(info=()))
    assert DIAYNInfo._fields == ('discriminator_loss', 'accuracy')
