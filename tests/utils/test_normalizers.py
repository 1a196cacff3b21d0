"""Normalizers against numpy on random streams, in graphs, and restored."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.data_structures import StepType
from alf_rl.utils.normalizers import (AdaptiveScalarNormalizer,
                                      EMAMeanVarNormalizer,
                                      ReturnScaleNormalizer,
                                      StreamingMeanVarNormalizer,
                                      update_reward_normalizer)

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
    norm = AdaptiveScalarNormalizer(update_rate=1.0, clip_value=1.5)
    rewards = tf.constant([[1.0, 3.0], [-1.0, 10.0]])
    norm.update(rewards)
    out = norm.normalize(rewards).numpy()
    rms = np.sqrt(np.mean(np.square([1.0, 3.0, -1.0, 10.0])) + 1e-8)
    np.testing.assert_allclose(out[0], [1.0 / rms, 3.0 / rms], rtol=1e-5)
    assert out[1, 0] < 0 and out[1, 1] == 1.5  # 10 / 5.22, clipped
    centred = AdaptiveScalarNormalizer(update_rate=1.0, center_mean=True)
    centred.update(rewards)
    std = np.sqrt(np.var([1.0, 3.0, -1.0, 10.0]) + 1e-8)
    np.testing.assert_allclose(centred.normalize(rewards).numpy()[0],
                               [(1.0 - 3.25) / std, (3.0 - 3.25) / std],
                               rtol=1e-5)


def test_adaptive_scalar_does_not_clip_a_reward_with_a_large_mean():
    """r = 1 + N(0, 0.05) (Hopper standing still): divided by its std it
    would be ~20, clipped to 10 for every step; by its RMS it stays ~1 and
    keeps its ordering."""
    norm = AdaptiveScalarNormalizer(update_rate=0.01, clip_value=10.0)
    rng = np.random.default_rng(0)
    for _ in range(500):
        norm.update(tf.constant(1.0 + 0.05 * rng.standard_normal(8),
                                tf.float32))
    rewards = tf.constant([0.9, 1.0, 1.1])
    out = norm.normalize(rewards).numpy()
    np.testing.assert_allclose(out, [0.9, 1.0, 1.1], rtol=0.02)
    assert np.all(np.abs(out) < 10.0)


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


def _return_stream(seed, batch=3, steps=40):
    """Rewards and step types of B envs: episodes of random length, the
    reward of a FIRST step is 0 (it ends no transition)."""
    rng = np.random.default_rng(seed)
    rewards = rng.normal(1.0, 2.0, size=(steps, batch)).astype(np.float32)
    first = rng.random((steps, batch)) < 0.15
    first[0] = True
    rewards[first] = 0.0
    step_type = np.where(first, int(StepType.FIRST), int(StepType.MID))
    return rewards, step_type.astype(np.int32)


def _numpy_return_var(rewards, step_type, gamma):
    returns = np.zeros(rewards.shape[1])
    folded = []
    for r, st in zip(rewards, step_type):
        returns = np.where(st == StepType.FIRST, 0.0, gamma * returns + r)
        folded.extend(returns[st != StepType.FIRST])
    return np.var(folded), len(folded), returns


def test_return_scale_matches_numpy_and_survives_a_checkpoint(tmp_path):
    gamma = 0.9
    rewards, step_type = _return_stream(0)
    norm = ReturnScaleNormalizer(gamma=gamma, clip_value=0.0)
    update = tf.function(norm.update)
    half = len(rewards) // 2
    for r, st in zip(rewards[:half], step_type[:half]):
        update(tf.constant(r), step_type=tf.constant(st))
    ckpt = tf.train.Checkpoint(norm=norm)
    path = ckpt.write(str(tmp_path / 'ckpt'))
    restored = ReturnScaleNormalizer(gamma=gamma, clip_value=0.0)
    tf.train.Checkpoint(norm=restored).read(path).assert_consumed()
    np.testing.assert_allclose(restored.returns, norm.returns)
    for r, st in zip(rewards[half:], step_type[half:]):
        restored.update(tf.constant(r), step_type=tf.constant(st))
    var, count, returns = _numpy_return_var(rewards, step_type, gamma)
    np.testing.assert_allclose(restored.returns, returns, rtol=1e-5)
    np.testing.assert_allclose(restored.variance, var, rtol=1e-4)
    assert float(restored.count) == count
    # Scaled, not centred: the sign of every reward is kept.
    out = restored.normalize(tf.constant(rewards[:5]))
    np.testing.assert_allclose(out, rewards[:5] / np.sqrt(var + 1e-8),
                               rtol=1e-5)
    clipped = ReturnScaleNormalizer(gamma=gamma, clip_value=0.5)
    clipped.update(tf.constant([4.0, -4.0]))
    clipped.update(tf.constant([1.0, 1.0]))
    assert np.all(np.abs(clipped.normalize(tf.constant([100.0, -100.0])))
                  == 0.5)


def test_return_scale_updates_inside_an_xla_compiled_loop():
    # XLA cannot resize a variable in a loop: a static B sizes the returns
    # eagerly while the update is traced; a checkpoint's other B is redone.
    gamma = 0.9
    rewards, step_type = _return_stream(0)
    norm = ReturnScaleNormalizer(gamma=gamma, clip_value=0.0)

    @tf.function(jit_compile=True)
    def run(rewards, step_type):
        def body(t):
            norm.update(rewards[t], step_type=step_type[t])
            return t + 1
        return tf.while_loop(lambda t: t < rewards.shape[0], body, (0, ))

    run(tf.constant(rewards), tf.constant(step_type))
    returns = norm.returns
    var, count, want = _numpy_return_var(rewards, step_type, gamma)
    np.testing.assert_allclose(returns, want, rtol=1e-5)
    np.testing.assert_allclose(norm.variance, var, rtol=1e-4)
    assert float(norm.count) == count
    norm.update(tf.constant([1.0]))  # another B: restarted at zeros
    np.testing.assert_allclose(norm.returns, [1.0])


def test_return_scale_bad_input():
    with pytest.raises(ValueError, match='gamma must be in'):
        ReturnScaleNormalizer(gamma=1.5)
    with pytest.raises(ValueError, match='one step, got shape'):
        ReturnScaleNormalizer().update(tf.zeros([2, 3]))


def test_rl_algorithm_passes_step_types_to_the_return_normalizer():
    from alf_rl.algorithms import PPOAlgorithm
    from alf_rl.data_structures import TimeStep
    from alf_rl.environments.suite_unittest import PolicyUnittestEnv
    from alf_rl.environments.tf_environment import TFPyEnvironment
    env = TFPyEnvironment(PolicyUnittestEnv(2, 5))
    alg = PPOAlgorithm(env.observation_spec(), env.action_spec(),
                       reward_normalizer_ctor=lambda: ReturnScaleNormalizer(
                           gamma=0.5, clip_value=0.0))
    ts = env.reset()
    steps = [(ts.step_type, [0.0, 0.0]),
             (tf.constant([StepType.MID] * 2), [2.0, 4.0]),
             (tf.constant([StepType.FIRST, StepType.MID]), [0.0, 2.0])]
    for st, r in steps:
        alg.transform_timestep(ts._replace(step_type=st,
                                           reward=tf.constant(r)),
                               update_normalizers=True)
    # Env 0 restarted at its FIRST step; env 1: 0.5 * 4 + 2.
    np.testing.assert_allclose(alg._reward_normalizer.returns, [0.0, 4.0])
    np.testing.assert_allclose(alg._reward_normalizer.variance,
                               np.var([2.0, 4.0, 4.0]), rtol=1e-5)
    assert TimeStep is not None


def test_update_reward_normalizer_passes_step_types_to_those_using_them():
    first, mid = StepType.FIRST, StepType.MID
    returns = ReturnScaleNormalizer(gamma=0.5, clip_value=0.0)
    update_reward_normalizer(returns, tf.constant([2.0, 4.0]),
                             tf.constant([mid, first]))
    np.testing.assert_allclose(returns.returns, [2.0, 0.0])  # FIRST: reset
    scalar = AdaptiveScalarNormalizer()
    update_reward_normalizer(scalar, tf.constant([2.0, 4.0]),
                             tf.constant([mid, first]))
    other = AdaptiveScalarNormalizer()
    other.update(tf.constant([2.0, 4.0]))
    np.testing.assert_allclose(scalar.variance, other.variance)
