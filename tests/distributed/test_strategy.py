"""The tf.distribute learner: N replicas on a global batch give one
device's update; settings and misuse are refused in one line.

The replica cases run ``replica_check.py`` in subprocesses: logical CPU
devices and collective ops must be configured before TensorFlow
initializes, which this process did long ago.

Tolerance 1e-6 on variables after 3 trainings (SAC: 3 updates; PPO: 12
mini-batch updates, lr 1e-2): the replicas sum the same per-step terms in
a different order (per-replica partial sums, then the all-reduce), a few
float32 ulps per gradient; measured 3e-8 (SAC) and 6e-8 (PPO).
"""

import json
import os
import socket
import subprocess
import sys

import pytest

from alf_rl.distributed.strategy import create_strategy
from alf_rl.trainers import TrainerConfig

_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       'replica_check.py')
_TOLERANCE = 1e-6


def _result(output: str) -> dict:
    lines = [l for l in output.splitlines() if l.startswith('RESULT ')]
    assert lines, output[-3000:]
    return json.loads(lines[-1][len('RESULT '):])


def _env():
    env = dict(os.environ, CUDA_VISIBLE_DEVICES='', TF_CPP_MIN_LOG_LEVEL='2')
    env.pop('TF_CONFIG', None)
    return env


def test_two_mirrored_replicas_equal_one_device():
    proc = subprocess.run([sys.executable, _SCRIPT, 'mirrored'],
                          capture_output=True, text=True, timeout=300,
                          env=_env())
    result = _result(proc.stdout + proc.stderr)
    for name in ('sac', 'ppo'):
        case = result[name]
        assert case['num_replicas'] == 2
        assert case['changed'] > 1e-3, (name, case)  # training moved them
        assert case['max_abs_diff'] < _TOLERANCE, (name, case)
        assert case['loss_diff'] < _TOLERANCE, (name, case)


def _free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(('localhost', 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_two_multi_worker_processes_stay_bit_identical():
    ports = [str(p) for p in _free_ports(2)]
    procs = [subprocess.Popen([sys.executable, _SCRIPT, 'worker', str(i)] +
                              ports, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              env=_env()) for i in range(2)]
    try:
        outputs = [p.communicate(timeout=300)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    results = [_result(o) for o in outputs]
    for name in ('sac', 'ppo'):
        assert results[0][name]['sha256'] == results[1][name]['sha256']
        for r in results:
            assert r[name]['num_replicas'] == 2
            assert r[name]['max_abs_diff'] < _TOLERANCE, (name, r[name])


def test_strategy_settings_are_checked():
    base = dict(root_dir='/tmp/unused', algorithm_ctor=lambda **k: None)
    with pytest.raises(ValueError, match="strategy: expected None or one "
                       "of 'mirrored', 'multi_worker_mirrored', got 'tpu'"):
        TrainerConfig(strategy='tpu', **base)
    with pytest.raises(ValueError, match='num_logical_cpu_devices=2: '
                       "expected 0, or > 0 with strategy='mirrored'"):
        TrainerConfig(num_logical_cpu_devices=2, **base)
    with pytest.raises(ValueError, match='jit_compile=True cannot compile'):
        TrainerConfig(strategy='mirrored', jit_compile=True, **base)
    with pytest.raises(ValueError, match='needs an int iterations_per_call'):
        TrainerConfig(strategy='multi_worker_mirrored', **base)
    config = TrainerConfig(strategy='mirrored', num_logical_cpu_devices=2,
                           **base)
    assert (config.strategy, config.num_logical_cpu_devices) == (
        'mirrored', 2)
    assert create_strategy(None) is None


def test_strategy_after_tensorflow_started_is_one_clear_line():
    import tensorflow as tf
    tf.constant(1.0) + 1.0  # the runtime is initialized now
    with pytest.raises(ValueError) as info:
        create_strategy('mirrored', 3)
    message = str(info.value)
    assert '\n' not in message
    assert message.startswith("TrainerConfig.strategy='mirrored' must be "
                              "created before TensorFlow runs any op")
