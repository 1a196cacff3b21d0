"""Normalizers against numpy on random streams, in graphs, and restored."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.utils.normalizers import (AdaptiveScalarNormalizer,
                                      EMAMeanVarNormalizer,
                                      StreamingMeanVarNormalizer)

SPEC = {'a': tf.TensorSpec([3], tf.float32), 'b': tf.TensorSpec([], tf.float32)}


def _stream(seed, n=6):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 20, size=n)
    return [{
        'a': rng.normal(5.0, 3.0, size=(int(k), 3)),
        'b': rng.normal(-2.0, 0.5, size=(int(k), ))
    } for k in sizes]


def _cast(batch):
    return {k: tf.constant(v, tf.float32) for k, v in batch.items()}


def test_streaming_matches_numpy_exactly():
    norm = StreamingMeanVarNormalizer(SPEC)
    batches = _stream(0)
    for b in batches:
        norm.update(_cast(b))
    for key in ('a', 'b'):
        data = np.concatenate([b[key] for b in batches])
        np.testing.assert_allclose(norm.mean[key], data.mean(0), rtol=1e-5)
        np.testing.assert_allclose(norm.variance[key], data.var(0),
                                   rtol=1e-4)
    assert float(norm.count) == sum(len(b['b']) for b in batches)
    out = norm.normalize(_cast(batches[0]))
    expected = (batches[0]['a'] - np.concatenate(
        [b['a'] for b in batches]).mean(0)) / np.sqrt(
            np.concatenate([b['a'] for b in batches]).var(0) + 1e-8)
    np.testing.assert_allclose(out['a'], expected, rtol=1e-4, atol=1e-5)


def test_streaming_inside_tf_function_with_time_dims():
    norm = StreamingMeanVarNormalizer(tf.TensorSpec([2], tf.float32))
    data = np.random.default_rng(1).normal(size=(4, 5, 2)).astype(np.float32)
    tf.function(lambda x: norm.update(x, outer_rank=2))(tf.constant(data))
    np.testing.assert_allclose(norm.mean, data.reshape(-1, 2).mean(0),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(norm.variance, data.reshape(-1, 2).var(0),
                               rtol=1e-4)


def test_ema_matches_numpy_recursion():
    rate = 0.1
    norm = EMAMeanVarNormalizer(SPEC, update_rate=rate)
    mean = var = None
    for b in _stream(2):
        norm.update(_cast(b))
        bm, bv = b['a'].mean(0), b['a'].var(0)
        if mean is None:
            mean, var = bm, bv
        else:
            delta = bm - mean
            mean = mean + rate * delta
            var = (1 - rate) * (var + rate * delta**2) + rate * bv
    np.testing.assert_allclose(norm.mean['a'], mean, rtol=1e-4)
    np.testing.assert_allclose(norm.variance['a'], var, rtol=1e-4)


def test_adaptive_scalar_keeps_sign_and_clips():
    norm = AdaptiveScalarNormalizer(update_rate=1.0, clip_value=2.0)
    rewards = tf.constant([[1.0, 3.0], [-1.0, 10.0]])
    norm.update(rewards)
    out = norm.normalize(rewards).numpy()
    std = np.sqrt(np.var([1.0, 3.0, -1.0, 10.0]) + 1e-8)
    np.testing.assert_allclose(out[0], [1.0 / std, 3.0 / std], rtol=1e-5)
    assert out[1, 0] < 0 and out[1, 1] == 2.0


def test_checkpoint_round_trip_and_mismatched_spec(tmp_path):
    norm = StreamingMeanVarNormalizer(SPEC)
    for b in _stream(3):
        norm.update(_cast(b))
    path = tf.train.Checkpoint(normalizer=norm).write(str(tmp_path / 'n'))
    restored = StreamingMeanVarNormalizer(SPEC)
    tf.train.Checkpoint(normalizer=restored).read(path).assert_consumed()
    for key in ('a', 'b'):
        np.testing.assert_allclose(restored.mean[key], norm.mean[key])
        np.testing.assert_allclose(restored.variance[key],
                                   norm.variance[key])
    other = StreamingMeanVarNormalizer({
        'a': tf.TensorSpec([4], tf.float32),
        'b': tf.TensorSpec([], tf.float32)
    })
    with pytest.raises(ValueError, match='shape'):
        tf.train.Checkpoint(normalizer=other).read(path)


def test_input_not_matching_spec_names_the_path():
    norm = StreamingMeanVarNormalizer(SPEC)
    with pytest.raises(ValueError, match=r"\['a'\]"):
        norm.update({'a': tf.zeros([2, 4]), 'b': tf.zeros([2])})
