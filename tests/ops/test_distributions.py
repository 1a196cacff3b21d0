"""Tests for alf_rl.ops.distributions: params round-trips, mode, log_prob."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp

from alf_rl.ops import distributions as dist_ops

tfd = tfp.distributions
tfb = tfp.bijectors


def _squashed(loc, scale, low=-2., high=4.):
    mid, half = np.float32((high + low) / 2), np.float32((high - low) / 2)
    return tfd.TransformedDistribution(
        tfd.Independent(tfd.Normal(loc, scale), 1),
        tfb.Chain([tfb.Shift(mid), tfb.Scale(half), dist_ops.StableTanh()]))


def _nest(B=4):
    loc = tf.constant(np.linspace(-1, 1, B * 2).reshape(B, 2), tf.float32)
    scale = tf.fill([B, 2], 0.5)
    return {
        'cat': tfd.Categorical(logits=tf.math.log([[0.2, 0.3, 0.5]] * B),
                               dtype=tf.int64),
        'normal': tfd.Independent(tfd.Normal(loc, scale), 1),
        'det': tfd.Deterministic(loc=loc[:, 0]),
        'squashed': _squashed(loc, scale),
        'tensor': tf.ones([B, 3]),
    }


def test_extract_spec_and_params_structure():
    nest = _nest()
    spec = dist_ops.extract_spec(nest)
    assert isinstance(spec['cat'], dist_ops.DistributionSpec)
    assert spec['tensor'] == tf.TensorSpec([3], tf.float32)
    assert spec['cat'].input_params_spec == {
        'logits': tf.TensorSpec([3], tf.float32)
    }
    assert spec['normal'].input_params_spec == {
        'distribution': {
            'loc': tf.TensorSpec([2], tf.float32),
            'scale': tf.TensorSpec([2], tf.float32)
        }
    }
    params = dist_ops.distributions_to_params(nest)
    assert set(params['squashed']['distribution']['distribution']) == {
        'loc', 'scale'
    }
    assert params['tensor'] is nest['tensor']
    flat_params_spec = tf.nest.flatten(dist_ops.to_params_spec(spec))
    assert all(isinstance(s, tf.TensorSpec) for s in flat_params_spec)
    assert len(flat_params_spec) == len(tf.nest.flatten(params))


def test_round_trip_same_log_prob_entropy_mode():
    nest = _nest()
    spec = dist_ops.extract_spec(nest)
    rebuilt = dist_ops.params_to_distributions(
        dist_ops.distributions_to_params(nest), spec)
    np.testing.assert_array_equal(rebuilt['tensor'], nest['tensor'])
    del nest['tensor'], rebuilt['tensor']
    actions = dist_ops.sample_action_distribution(nest, seed=3)
    lp = dist_ops.log_prob(nest, actions)
    assert lp.shape == [4]
    np.testing.assert_allclose(dist_ops.log_prob(rebuilt, actions), lp,
                               rtol=1e-6)
    for key in ('cat', 'normal', 'det'):
        np.testing.assert_allclose(rebuilt[key].entropy(),
                                   nest[key].entropy(), rtol=1e-6)
    tf.nest.map_structure(np.testing.assert_array_equal,
                          dist_ops.mode(rebuilt), dist_ops.mode(nest))


def test_mode_values():
    nest = _nest()
    m = dist_ops.mode(nest)
    assert m['cat'].dtype == tf.int64
    np.testing.assert_array_equal(m['cat'], [2, 2, 2, 2])
    loc = nest['normal'].distribution.loc.numpy()
    np.testing.assert_allclose(m['normal'], loc)
    np.testing.assert_allclose(m['det'], loc[:, 0])
    # squashed to [-2, 4]: 1 + 3 * tanh(mean)
    np.testing.assert_allclose(m['squashed'], 1 + 3 * np.tanh(loc),
                               rtol=1e-6)


def test_log_prob_sums_over_nest_and_action_dims():
    loc = tf.zeros([2, 3])
    normal = tfd.Normal(loc, 1.)
    actions = tf.ones([2, 3])
    expected = 3 * (-0.5 - 0.5 * np.log(2 * np.pi))
    np.testing.assert_allclose(
        dist_ops.log_prob(normal, actions, outer_rank=1), [expected] * 2,
        rtol=1e-6)
    cat = tfd.Categorical(logits=tf.math.log([[0.25, 0.75]] * 2))
    np.testing.assert_allclose(
        dist_ops.log_prob((tfd.Independent(normal, 1), cat),
                          (actions, tf.constant([1, 0]))),
        [expected + np.log(0.75), expected + np.log(0.25)], rtol=1e-6)
    np.testing.assert_allclose(
        dist_ops.entropy(normal, outer_rank=1),
        [3 * (0.5 + 0.5 * np.log(2 * np.pi))] * 2, rtol=1e-6)


def test_squashed_entropy_estimate_and_bounds():
    d = _squashed(tf.fill([1000, 2], 5.), tf.fill([1000, 2], 3.))
    a = d.sample(seed=1)
    assert np.all(a.numpy() >= -2) and np.all(a.numpy() <= 4)
    ent = dist_ops.entropy(d, seed=2)
    assert ent.shape == [1000] and np.all(np.isfinite(ent.numpy()))
    # actions exactly at the bounds have a finite log_prob (StableTanh)
    lp = d.log_prob(tf.constant([[4., -2.]] * 1000))
    assert np.all(np.isfinite(lp.numpy()))


def test_spec_from_trace_usable_eagerly():
    captured = []

    @tf.function
    def trace(loc):
        captured.append(
            dist_ops.extract_spec(_squashed(loc, tf.ones_like(loc))))
        return 0

    trace.get_concrete_function(tf.TensorSpec([None, 2]))
    loc = tf.constant([[0.1, -0.2]])
    eager = _squashed(loc, tf.ones_like(loc))
    rebuilt = captured[0].build_distribution(
        dist_ops.distributions_to_params(eager))
    a = tf.constant([[0.5, 3.]])
    np.testing.assert_allclose(rebuilt.log_prob(a), eager.log_prob(a),
                               rtol=1e-6)


def test_round_trip_through_tensor_array_keeps_gradients():
    w = tf.Variable([[0.5, -0.3]])
    actions = tf.constant([[[0.2, 1.0]], [[3.0, -1.0]], [[-1.5, 0.]]])

    def make(x):
        loc = x * w
        return {
            'sq': _squashed(loc, tf.nn.softplus(loc) + 0.1),
            'cat': tfd.Categorical(logits=tf.concat([loc, -loc], -1),
                                   dtype=tf.int64),
        }

    spec = dist_ops.extract_spec(make(tf.ones([1, 1])))
    params_spec = dist_ops.to_params_spec(spec)

    @tf.function
    def loss_fn():
        with tf.GradientTape() as tape:
            arrays = tf.nest.map_structure(
                lambda s: tf.TensorArray(s.dtype, size=3), params_spec)

            def body(t, arrays):
                x = tf.fill([1, 1], tf.cast(t, tf.float32) + 1.)
                params = dist_ops.distributions_to_params(make(x))
                return t + 1, tf.nest.map_structure(
                    lambda ta, p: ta.write(t, p), arrays, params)

            _, arrays = tf.while_loop(lambda t, _: t < 3, body,
                                      (0, arrays))
            stacked = tf.nest.map_structure(lambda ta: ta.stack(), arrays)
            rebuilt = dist_ops.params_to_distributions(stacked, spec)
            lp = dist_ops.log_prob(
                rebuilt, {
                    'sq': actions,
                    'cat': tf.constant([[0], [1], [3]], tf.int64)
                })
            loss = -tf.reduce_sum(lp)
        return lp, tape.gradient(loss, w)

    lp, grad = loss_fn()
    direct = [
        dist_ops.log_prob(
            make(tf.fill([1, 1], t + 1.)), {
                'sq': actions[t],
                'cat': tf.constant([[0, 1, 3][t]], tf.int64)
            }) for t in range(3)
    ]
    assert lp.shape == [3, 1]
    np.testing.assert_allclose(lp[:, 0], np.concatenate(direct), rtol=1e-5)
    assert grad is not None and np.all(np.abs(grad.numpy()) > 0)


def test_sample_seeds_and_cast():
    logits = tf.zeros([1000, 5])
    nest = (tfd.Categorical(logits=logits), tfd.Categorical(logits=logits))
    a1 = dist_ops.sample_action_distribution(nest, seed=7)
    assert not np.array_equal(a1[0], a1[1])  # leaves get different seeds
    stateless = dist_ops.sample_action_distribution(
        nest, seed=tf.constant([1, 2]))
    again = dist_ops.sample_action_distribution(
        nest, seed=tf.constant([1, 2]))
    np.testing.assert_array_equal(stateless[0], again[0])
    cast = dist_ops.cast_to_spec(a1, (tf.TensorSpec([], tf.int64), ) * 2)
    assert cast[0].dtype == tf.int64
    np.testing.assert_array_equal(cast[0], a1[0])


def test_non_constant_bijector_rejected():

    @tf.function
    def trace(shift):
        d = tfd.TransformedDistribution(tfd.Normal(tf.zeros([2]), 1.),
                                        tfb.Shift(shift))
        with pytest.raises(ValueError, match='not a constant'):
            dist_ops.extract_spec(d)
        return 0

    trace(tf.constant(1.))


def test_params_structure_mismatch_message():
    spec = dist_ops.extract_spec({'a': tfd.Normal(tf.zeros([2]), 1.)})
    with pytest.raises(ValueError, match=r"\['a'\]"):
        dist_ops.params_to_distributions({'a': tf.zeros([2])}, spec)


def test_action_distance_kinds_and_identities():
    p = tfd.Categorical(logits=[[0.0, 0.0]])
    q = tfd.Categorical(logits=[[float(np.log(3.0)), 0.0]])
    # KL(p || q) with p = (1/2, 1/2), q = (3/4, 1/4):
    # 1/2 log(2/3) + 1/2 log(2).
    expected = 0.5 * np.log(2.0 / 3.0) + 0.5 * np.log(2.0)
    np.testing.assert_allclose(dist_ops.action_distance(p, q).numpy(),
                               [expected], rtol=1e-6)
    # Identity: a distribution is at distance 0 from itself.
    np.testing.assert_allclose(dist_ops.action_distance(p, p).numpy(), [0.0],
                               atol=1e-7)
    # Squashed normals: the KL of the bases, (1 - 0)^2 / 2 for unit scales.
    base_p = tfd.Independent(tfd.Normal([[0.0]], [[1.0]]), 1)
    base_q = tfd.Independent(tfd.Normal([[1.0]], [[1.0]]), 1)
    squash = tfp.bijectors.Tanh()
    np.testing.assert_allclose(
        dist_ops.action_distance(tfd.TransformedDistribution(base_p, squash),
                                 tfd.TransformedDistribution(base_q,
                                                             squash)).numpy(),
        [0.5], rtol=1e-6)
    # Deterministic actions: squared distance summed over the action dims;
    # leaves of a nest are summed.
    np.testing.assert_allclose(
        dist_ops.action_distance(tf.constant([[1.0, 2.0]]),
                                 tf.constant([[0.0, 0.0]])).numpy(), [5.0])
    np.testing.assert_allclose(
        dist_ops.action_distance((p, tf.constant([[1.0]])),
                                 (q, tf.constant([[3.0]]))).numpy(),
        [expected + 4.0], rtol=1e-6)


def test_merge_outer_dims_of_tensors_and_distributions():
    logits = tf.reshape(tf.range(12, dtype=tf.float32), [2, 3, 2])
    nest = {'obs': tf.reshape(tf.range(6 * 4), [2, 3, 4]),
            'dist': tfd.Categorical(logits=logits)}
    merged = dist_ops.merge_outer_dims(nest)
    assert merged['obs'].shape == (6, 4)
    np.testing.assert_array_equal(merged['obs'].numpy()[4],
                                  nest['obs'].numpy()[1, 1])
    assert merged['dist'].batch_shape == (6, )
    np.testing.assert_allclose(merged['dist'].logits.numpy(),
                               np.reshape(logits.numpy(), [6, 2]))
