"""RNDAlgorithm: shapes, the reward formula on hand-set weights, FIRST
steps, a fixed target and a trained predictor, normalizer updates."""

import functools

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms import RNDAlgorithm
from alf_rl.algorithms.rnd_algorithm import RNDInfo
from alf_rl.data_structures import StepType, TimeStep, TrainingInfo
from alf_rl.networks import EncodingNetwork

OBS = tf.TensorSpec([2], tf.float32)
F, M, L = StepType.FIRST, StepType.MID, StepType.LAST


def _time_step(step_type, observation):
    return TimeStep(step_type=tf.constant(step_type, tf.int32),
                    observation=tf.constant(observation, tf.float32))


def _linear(input_tensor_spec):
    return EncodingNetwork(input_tensor_spec, last_layer_size=2)


def _set(net, kernel, bias):
    k, b = net.variables
    k.assign(kernel)
    b.assign(bias)


def test_reward_equals_the_formula_without_normalizers():
    alg = RNDAlgorithm(OBS, predictor_network_ctor=_linear,
                       observation_normalizer_ctor=None,
                       reward_normalizer_ctor=None)
    assert alg.train_state_spec == () and alg.rollout_state_spec == ()
    _set(alg.target_network, np.eye(2), [0., 0.])  # f(s) = s
    _set(alg.predictor_network, np.zeros([2, 2]), [1., 1.])  # f^(s) = 1
    ts = _time_step([M, L, F], [[1., 3.], [-1., 1.], [5., 5.]])
    step = alg.rollout(ts, ())
    np.testing.assert_allclose(step.output.numpy(),
                               [0.5 * 4, 0.5 * 4, 0.], rtol=1e-6)
    # The predictor learns FIRST observations too.
    np.testing.assert_allclose(step.info.prediction_loss.numpy(),
                               [2., 2., 16.], rtol=1e-6)
    loss = alg.calc_loss(TrainingInfo(info=tf.nest.map_structure(
        lambda x: x[None], step.info)))
    assert loss.loss.shape == [1, 3]
    assert loss.extra._fields == ('prediction_loss', )


def test_normalizers_clip_and_update_at_rollout_only():
    alg = RNDAlgorithm(OBS, predictor_network_ctor=_linear)
    _set(alg.target_network, np.eye(2), [0., 0.])
    _set(alg.predictor_network, np.zeros([2, 2]), [0., 0.])
    obs_norm, reward_norm = (alg._observation_normalizer,
                             alg._reward_normalizer)
    ts = _time_step([M, M, M, M],
                    [[0., 0.], [0., 0.], [0., 0.], [1000., 0.]])
    alg.train_step(ts, ())
    alg.predict(ts, ())
    assert float(obs_norm.count) == 0 and reward_norm.returns.shape == [0]
    step = alg.rollout(ts, ())
    assert float(obs_norm.count) == 4
    np.testing.assert_allclose(obs_norm.mean.numpy(), [250., 0.])
    # Normalized x: [-1/sqrt(3)] x 3 and sqrt(3); y: 0 (zero variance).
    x = np.array([-1., -1., -1., 3.]) / np.sqrt(3.)
    raw = 0.5 * x * x
    np.testing.assert_allclose(step.info.prediction_loss.numpy(), raw,
                               rtol=1e-4)
    # The reward is divided by the std of the [B] returns (one step: raw).
    np.testing.assert_allclose(reward_norm.returns.numpy(), raw, rtol=1e-4)
    np.testing.assert_allclose(step.output.numpy(),
                               raw / np.sqrt(np.var(raw) + 1e-8), rtol=1e-4)
    # Clipped to [-5, 5] as the paper: 6 standard deviations become 5.
    far = _time_step([M], [[250. + 6 * 250. * np.sqrt(3.), 0.]])
    np.testing.assert_allclose(alg.predict(far, ()).info.prediction_loss,
                               [12.5], rtol=1e-4)


def test_target_is_fixed_and_predictor_trained():
    tf.random.set_seed(0)
    alg = RNDAlgorithm(OBS, optimizer=tf_keras.optimizers.Adam(1e-2))
    target = [v.numpy() for v in alg.target_network.variables]
    predictor = [v.numpy() for v in alg.predictor_network.variables]
    trained = {v.ref() for _, vs in alg.get_optimizer_and_variable_sets()
               for v in vs}
    assert trained == {v.ref() for v in alg.predictor_network.variables}
    assert not trained & {v.ref() for v in alg.target_network.variables}
    ts = _time_step([F, M, M, M], [[0., 1.], [1., 0.], [1., 1.], [2., 0.]])
    for _ in range(2):
        alg.rollout(ts, ())
    losses = []
    for _ in range(30):
        with tf.GradientTape() as tape:
            info = tf.nest.map_structure(lambda x: x[None],
                                         alg.train_step(ts, ()).info)
        losses.append(float(alg.train_complete(
            tape, TrainingInfo(info=info))[0].loss))
    for v, before in zip(alg.target_network.variables, target):
        np.testing.assert_array_equal(v.numpy(), before)
    assert any(not np.array_equal(v.numpy(), before) for v, before in zip(
        alg.predictor_network.variables, predictor))
    assert losses[-1] < 0.5 * losses[0], losses
    step = alg.train_step(ts, ())
    assert step.output.shape == [4] and step.output.numpy()[0] == 0.


def test_rejects_mismatched_networks():
    with pytest.raises(ValueError, match='same D'):
        RNDAlgorithm(OBS, predictor_network_ctor=_linear,
                     target_network_ctor=functools.partial(
                         EncodingNetwork, last_layer_size=3))
    with pytest.raises(TypeError, match='RNDInfo'):
        RNDAlgorithm(OBS).calc_loss(TrainingInfo(info=()))
    assert RNDInfo._fields == ('prediction_loss', )
