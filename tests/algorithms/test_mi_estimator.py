"""MIEstimator: shapes and samplers, each loss against the ops on the
step's scores, DV's moving-average denominator (value and gradient against
numpy), argument errors, and training to the analytic MI of correlated
Gaussians."""

import functools

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms import MIEstimator
from alf_rl.algorithms.mi_estimator import MIEstimatorInfo
from alf_rl.data_structures import TrainingInfo
from alf_rl.networks import EncodingNetwork
from alf_rl.ops import mutual_information as mi_ops
from alf_rl.utils.common import set_random_seed

X_SPEC = tf.TensorSpec([2], tf.float32)
Y_SPEC = tf.TensorSpec([1], tf.float32)


def _network(hidden=(8, )):
    return functools.partial(EncodingNetwork, fc_layer_params=hidden,
                             last_layer_size=1)


def _estimator(**kwargs):
    set_random_seed(0)
    kwargs.setdefault('network_ctor', _network())
    return MIEstimator(X_SPEC, Y_SPEC, **kwargs)


def _batch(b=6):
    x = tf.reshape(tf.range(2 * b, dtype=tf.float32), [b, 2]) / 10.
    y = tf.reshape(tf.range(b, dtype=tf.float32), [b, 1]) / 5. - 0.5
    return x, y


def _scores(alg, x, y):
    return tf.reshape(alg._network((x, y))[0], [-1])


def test_shift_sampler_scores_and_dv_output():
    alg = _estimator(sampler='shift')
    x, y = _batch()
    step = alg.train_step((x, y))
    assert step.output.shape == [6] and step.state == ()
    np.testing.assert_allclose(step.info.t_joint, _scores(alg, x, y),
                               rtol=1e-6)
    # 'shift': x_i with y_{i-1}.
    np.testing.assert_allclose(step.info.t_marginal,
                               _scores(alg, x, tf.roll(y, 1, axis=0)),
                               rtol=1e-6)
    np.testing.assert_allclose(
        step.output, step.info.t_joint - mi_ops.log_mean_exp(
            step.info.t_marginal), rtol=1e-6)


def test_shuffle_sampler_pairs_x_with_a_permutation_of_y():
    alg = _estimator()
    x, y = _batch(8)
    step = alg.train_step((x, y))
    # Each marginal score is T(x_i, y_j) for a distinct j.
    all_pairs = np.array([[_scores(alg, x[i:i + 1], y[j:j + 1])[0]
                           for j in range(8)] for i in range(8)])
    matches = [int(np.argmin(np.abs(all_pairs[i] - step.info.t_marginal[i])))
               for i in range(8)]
    assert sorted(matches) == list(range(8))


def test_callable_sampler_is_used_and_checked():
    prior = lambda y: tf.zeros_like(y) + 0.25  # noqa: E731
    alg = _estimator(sampler=prior)
    x, y = _batch()
    np.testing.assert_allclose(alg.train_step((x, y)).info.t_marginal,
                               _scores(alg, x, prior(y)), rtol=1e-6)
    bad = _estimator(sampler=lambda y: tf.concat([y, y], -1))
    with pytest.raises(ValueError, match=r'y_marginal: expected \[B, 1\]'):
        bad.train_step((x, y))


@pytest.mark.parametrize('estimator_type, loss_fn, pointwise', [
    ('DV', mi_ops.dv_loss, mi_ops.dv_pointwise_mi),
    ('KL', mi_ops.nwj_loss, mi_ops.nwj_pointwise_mi),
    ('JSD', mi_ops.jsd_loss, lambda j, m: j),
])
def test_calc_loss_is_the_bound_on_the_step_scores(estimator_type, loss_fn,
                                                   pointwise):
    alg = _estimator(estimator_type=estimator_type)
    step = alg.train_step(_batch())
    # [T=2, B=3] rows: the bounds average over all of them.
    info = tf.nest.map_structure(lambda t: tf.reshape(t, [2, 3]), step.info)
    loss_info = alg.calc_loss(TrainingInfo(info=info))
    assert loss_info.loss.shape == [2, 3]
    np.testing.assert_allclose(loss_info.loss,
                               loss_fn(info.t_joint, info.t_marginal),
                               rtol=1e-6)
    np.testing.assert_allclose(loss_info.extra.mi,
                               pointwise(info.t_joint, info.t_marginal),
                               rtol=1e-6)
    np.testing.assert_allclose(step.output, tf.reshape(loss_info.extra.mi,
                                                       [6]), rtol=1e-6)
    alg.after_train(TrainingInfo(info=info))
    # Only DV keeps a moving average.
    assert int(alg._num_averaged.numpy()) == (estimator_type == 'DV')


def _np_softmax_grad(t_marginal, log_denominator):
    return np.exp(t_marginal.astype(np.float64)) / (
        t_marginal.size * np.exp(log_denominator))


def test_dv_moving_average_denominator_value_and_gradient():
    rate = 0.25
    alg = _estimator(averager_rate=rate)
    m1 = np.array([0.5, -1.0, 0.75, 2.0], np.float32)
    m2 = np.array([1.5, 0.0, -0.5, 1.0], np.float32)
    joint = tf.constant([1.0, 0.5, 2.0, -1.0])

    def update(m):
        t_marginal = tf.constant(m)
        info = MIEstimatorInfo(t_joint=joint, t_marginal=t_marginal)
        with tf.GradientTape() as tape:
            tape.watch(t_marginal)
            loss_info = alg.calc_loss(info)
            total = tf.reduce_mean(loss_info.loss)
        grad = tape.gradient(total, t_marginal)
        alg.after_train(TrainingInfo(info=info))
        return loss_info, grad

    # First update: the average starts at the batch's log mean exp.
    loss_info, grad = update(m1)
    log_d1 = np.log(np.mean(np.exp(m1.astype(np.float64))))
    np.testing.assert_allclose(loss_info.extra.log_denominator, log_d1,
                               rtol=1e-6)
    np.testing.assert_allclose(alg.log_denominator.numpy(), log_d1,
                               rtol=1e-6)
    np.testing.assert_allclose(grad, _np_softmax_grad(m1, log_d1), rtol=1e-5)
    # Second: D = (1 - rate) D_1 + rate mean(e^m2); the loss's value is
    # still -DV, its gradient divides by D instead of mean(e^m2).
    loss_info, grad = update(m2)
    d2 = ((1 - rate) * np.exp(log_d1) +
          rate * np.mean(np.exp(m2.astype(np.float64))))
    np.testing.assert_allclose(loss_info.extra.log_denominator, np.log(d2),
                               rtol=1e-6)
    np.testing.assert_allclose(alg.log_denominator.numpy(), np.log(d2),
                               rtol=1e-6)
    np.testing.assert_allclose(grad, _np_softmax_grad(m2, np.log(d2)),
                               rtol=1e-5)
    np.testing.assert_allclose(
        np.mean(loss_info.loss), -mi_ops.dv_bound(joint, m2), rtol=1e-6)
    assert not alg.log_denominator.trainable
    assert alg.log_denominator.ref() not in {
        v.ref() for v in alg.trainable_variables}


def test_argument_errors():
    with pytest.raises(ValueError, match="estimator_type must be one of"):
        _estimator(estimator_type='MINE')
    with pytest.raises(ValueError, match="sampler must be one of .*'buffer'"):
        _estimator(sampler='buffer')
    with pytest.raises(TypeError, match="sampler must be .* got int"):
        _estimator(sampler=3)
    with pytest.raises(ValueError, match=r"averager_rate must be in \(0, 1\]"):
        _estimator(averager_rate=0.0)
    with pytest.raises(ValueError, match=r"one score per sample.*\[2, 8\]"):
        _estimator(network_ctor=functools.partial(EncodingNetwork,
                                                  fc_layer_params=(8, )))
    alg = _estimator()
    x, y = _batch()
    with pytest.raises(ValueError, match=r"inputs must be a pair \(x, y\)"):
        alg.train_step(x)
    with pytest.raises(ValueError, match=r"^x: expected \[B, 2\] float32"):
        alg.train_step((y, y))
    with pytest.raises(TypeError, match="whose info is an MIEstimatorInfo"):
        alg.calc_loss(TrainingInfo(info=()))


def _correlated_gaussians(generator, batch_size, rho, dim):
    x = generator.normal([batch_size, dim])
    noise = generator.normal([batch_size, dim])
    return x, rho * x + np.sqrt(1 - rho**2) * noise


def test_dv_estimate_of_correlated_gaussians_within_10_percent():
    """rho = 0.9, d = 1: I = 0.830 nats. 300 Adam steps on batches of 256
    (~2 s); the estimate is the DV bound on 8192 fresh samples."""
    rho, analytic = 0.9, mi_ops.gaussian_mutual_information(0.9, 1)
    spec = tf.TensorSpec([1], tf.float32)
    set_random_seed(0)
    alg = MIEstimator(spec, spec, network_ctor=_network((32, )),
                      optimizer=tf_keras.optimizers.Adam(0.01))
    generator = tf.random.Generator.from_seed(1)

    @tf.function(autograph=False)
    def update():
        with tf.GradientTape() as tape:
            step = alg.train_step(
                _correlated_gaussians(generator, 256, rho, 1))
        return alg.train_complete(tape, TrainingInfo(info=step.info))[0]

    for _ in range(300):
        update()
    estimate = float(tf.reduce_mean(
        alg.train_step(_correlated_gaussians(generator, 8192, rho,
                                             1)).output))
    assert abs(estimate - analytic) < 0.1 * analytic, estimate
    assert int(alg._num_averaged.numpy()) == 300
