"""Per-call latency of a policy: in-library ``predict``, the exported
SavedModel signature, the TFLite model and the ONNX model, at batch 1 and
64.

The policy is PPO's CartPole network of ``examples/ppo_cart_pole.gin``
(64-64 tanh actor; the weights do not matter for latency), or the newest
checkpoint of ``--root_dir`` when given. Rows:

* ``predict (tf.function)``: ``algorithm.predict(transform_timestep(ts))``
  compiled, called with a ``TimeStep`` of tensors (what ``alf-play`` did
  per step before its loop was compiled);
* ``SavedModel signature``: ``tf.saved_model.load(dir).signatures
  ['action'](observation=tensor)``;
* ``TFLite signature runner``: ``get_signature_runner('action')
  (observation=array)`` (resizes and allocates when the batch changes);
* ``TFLite invoke``: ``set_tensor`` + ``invoke`` + ``get_tensor`` on an
  interpreter already sized for the batch (the loop a device runs);
* ``ONNX Runtime session.run`` (with the ``[onnx]`` extra):
  ``InferenceSession(path).run(['action'], {'observation': array})`` on
  the ``alf-export --format onnx`` model.

Each cell is the median over ``--repeats`` timings of ``--calls`` calls,
in microseconds per call. Prints a markdown table.

Usage: python benchmarks/policy_latency.py [--calls 2000] [--repeats 5]
    [--root_dir RUN]
"""

import argparse
import functools
import os
import sys
import tempfile
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

BATCH_SIZES = (1, 64)


def _median_us(fn, calls, repeats):
    """Median over ``repeats`` of the mean time of one of ``calls`` calls."""
    for _ in range(min(calls, 50)):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return sorted(times)[len(times) // 2]


def _algorithm(root_dir):
    """A PPO CartPole algorithm: restored from ``root_dir`` or fresh."""
    if root_dir:
        from alf_rl.bin.play import restore_run
        env, algorithm = restore_run(root_dir)
        env.close()
        return algorithm, env.observation_spec()
    import tensorflow as tf
    from alf_rl import specs
    from alf_rl.algorithms import PPOAlgorithm, PPOLoss
    from alf_rl.networks import ActorDistributionNetwork, ValueNetwork
    obs = specs.TensorSpec([4], tf.float32)
    act = specs.BoundedTensorSpec([], tf.int64, 0, 1)
    mlp = dict(fc_layer_params=(64, 64), activation='tanh')
    algorithm = PPOAlgorithm(
        obs, act,
        actor_network_ctor=functools.partial(ActorDistributionNetwork, **mlp),
        value_network_ctor=functools.partial(ValueNetwork, **mlp),
        loss=PPOLoss())
    return algorithm, obs


def _predict_fn(tf, algorithm, observation):
    from alf_rl.data_structures import StepType, TimeStep
    from alf_rl import specs
    batch = observation.shape[0]
    time_step = TimeStep(
        step_type=tf.fill([batch], StepType.MID), reward=tf.zeros([batch]),
        discount=tf.ones([batch]), observation=observation,
        prev_action=specs.zeros_from_spec(algorithm.action_spec, [batch]),
        env_id=tf.zeros([batch], tf.int32))
    state = algorithm.get_initial_predict_state(batch)
    predict = tf.function(lambda ts, s: algorithm.predict(
        algorithm.transform_timestep(ts), s).action)
    return lambda: predict(time_step, state)


def _invoke_fn(path, array):
    """set_tensor + invoke + get_tensor on an interpreter sized for
    ``array``'s batch."""
    from alf_rl.export import tflite_interpreter
    interpreter = tflite_interpreter(path)
    runner = interpreter.get_signature_runner('action')
    runner(observation=array)  # resizes and allocates for this batch
    index = runner.get_input_details()['observation']['index']
    out_index = runner.get_output_details()['action']['index']

    def call():
        interpreter.set_tensor(index, array)
        interpreter.invoke()
        return interpreter.get_tensor(out_index)

    return call


def _onnx_fn(algorithm, out, array):
    """``session.run`` of the ONNX export, or None without the extra."""
    import importlib.util
    if not all(importlib.util.find_spec(m)
               for m in ('tf2onnx', 'onnxruntime')):
        return None
    import onnxruntime
    from alf_rl.export import export_policy
    path = export_policy(algorithm, out, 'onnx')[0]
    session = onnxruntime.InferenceSession(
        path, providers=['CPUExecutionProvider'])
    return lambda: session.run(['action'], {'observation': array})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--calls', type=int, default=2000)
    parser.add_argument('--repeats', type=int, default=5)
    parser.add_argument('--root_dir', default=None)
    args = parser.parse_args()
    import numpy as np
    import tensorflow as tf
    from alf_rl.export import LoadedPolicy, export_policy
    algorithm, obs_spec = _algorithm(args.root_dir)
    out = os.path.join(tempfile.mkdtemp(prefix='policy_latency_'), 'policy')
    export_policy(algorithm, out, 'both')
    saved = LoadedPolicy(out)
    lite = LoadedPolicy(out + '.tflite')
    rows = {}
    for batch in BATCH_SIZES:
        array = np.random.RandomState(0).randn(
            batch, *obs_spec.shape.as_list()).astype(np.float32)
        tensor = tf.constant(array)
        # Same answers from all three (greedy, no noise).
        assert np.array_equal(saved(observation=tensor)['action'].numpy(),
                              lite(observation=array)['action'])
        fns = {
            'predict (tf.function)': _predict_fn(tf, algorithm, tensor),
            'SavedModel signature': lambda t=tensor: saved(observation=t),
            'TFLite signature runner': lambda a=array: lite(observation=a),
            'TFLite invoke': _invoke_fn(out + '.tflite', array),
        }
        onnx = _onnx_fn(algorithm, out, array)
        if onnx is not None:
            assert np.array_equal(onnx()[0], lite(observation=array)['action'])
            fns['ONNX Runtime session.run'] = onnx
        for name, fn in fns.items():
            rows.setdefault(name, {})[batch] = _median_us(
                fn, args.calls, args.repeats)
    print('| policy call (us per call, median of %d x %d) | %s |' %
          (args.repeats, args.calls,
           ' | '.join('batch %d' % b for b in BATCH_SIZES)))
    print('| --- |%s' % (' ---: |' * len(BATCH_SIZES)))
    for name, cells in rows.items():
        print('| %s | %s |' % (name, ' | '.join(
            '%.1f' % cells[b] for b in BATCH_SIZES)))


if __name__ == '__main__':
    main()
