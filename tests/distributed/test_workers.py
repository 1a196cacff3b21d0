"""Workers of a MultiWorkerMirroredStrategy each collect their own
experience and stay identical in their weights; OnPolicyTrainer and
OffPolicyTrainer run under a strategy.

Two worker processes (``TF_CONFIG`` on localhost ports) and a
single-process ``MirroredStrategy`` run of the same settings run
``worker_check.py`` at the same time: each trains A2C with
``OnPolicyTrainer`` and SAC with ``OffPolicyTrainer`` (replay buffer) for
4 iterations of 4 environments on the copy task.
"""

import json
import os
import socket
import subprocess
import sys
import types

import pytest

from alf_rl.distributed.strategy import (
    WORKER_SEED_STRIDE,
    worker_index,
    worker_seed,
)
from alf_rl.trainers import TrainerConfig
from alf_rl.trainers.on_policy_trainer import _check_one_replica

_SCRIPT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), 'worker_check.py'
)


def _env():
    env = dict(os.environ, CUDA_VISIBLE_DEVICES='', TF_CPP_MIN_LOG_LEVEL='2')
    env.pop('TF_CONFIG', None)
    return env


def _free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(('localhost', 0))
    ports = [str(s.getsockname()[1]) for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _result(output):
    lines = [l for l in output.splitlines() if l.startswith('RESULT ')]
    assert lines, output[-3000:]
    return json.loads(lines[-1][len('RESULT ') :])


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    """(worker 0, worker 1, single process) results."""
    root = str(tmp_path_factory.mktemp('workers'))
    ports = _free_ports(2)
    commands = [
        ['worker', str(i), os.path.join(root, str(i))] + ports
        for i in range(2)
    ]
    commands.append(['mirrored', os.path.join(root, 'single')])
    procs = [
        subprocess.Popen(
            [sys.executable, _SCRIPT] + c,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=_env(),
        )
        for c in commands
    ]
    try:
        outputs = [p.communicate(timeout=300)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for i in range(2):  # each worker says who it is and what it counts
        assert (
            "alf_rl: worker %d of 2 collects with seed %d; its metrics and "
            "progress count its own environment steps" % (i, worker_seed(1, i))
        ) in outputs[i], outputs[i][-3000:]
    return [_result(o) for o in outputs]


# Both kinds read one ``runs`` (three processes): in one xdist worker
# (make test's --dist loadgroup) it is made once.
@pytest.mark.xdist_group('test_workers_runs')
@pytest.mark.parametrize('kind', ['on_policy', 'off_policy'])
def test_workers_collect_their_own_data_and_keep_one_model(runs, kind):
    w0, w1, single = (r[kind] for r in runs)
    assert [r['num_replicas'] for r in runs] == [2, 2, 1]
    # Each worker's own environments and action samples.
    assert (w0['env_seeds'], w1['env_seeds']) == (
        [1],
        [1 + WORKER_SEED_STRIDE],
    )
    assert w0['observations'] != w1['observations']
    assert w0['actions'] != w1['actions']
    assert w0['generator'] != w1['generator']
    # Worker 0 collects as a run without workers would (same seed).
    assert (single['env_seeds'], single['observations']) == (
        [1],
        w0['observations'],
    )
    # One model: the same initial weights, weights and optimizer slots
    # after 4 updates of the two workers' data together, which differ
    # from the single process's (trained on one worker's data).
    assert w0['initial'] == w1['initial'] == single['initial']
    assert w0['weights'] == w1['weights'] != single['weights']
    assert w0['slots'] == w1['slots'] and w0['num_slots'] > 2
    # Two workers: twice one worker's environment steps per update.
    assert w0['iterations'] == w1['iterations'] == single['iterations'] == 4
    assert w0['env_steps'] == w1['env_steps'] == single['env_steps'] > 0
    assert w0['num_actions'] == w1['num_actions'] == single['num_actions']


def test_worker_seeds_and_indices():
    assert worker_seed(5, 0) == 5
    assert worker_seed(5, 2) == 5 + 2 * WORKER_SEED_STRIDE
    assert worker_seed(2**31 - 1, 1) == WORKER_SEED_STRIDE - 1
    assert worker_index(None) == 0

    def _strategy(task_type, task_id, jobs):
        spec = types.SimpleNamespace(jobs=jobs)
        resolver = types.SimpleNamespace(
            task_type=task_type, task_id=task_id, cluster_spec=lambda: spec
        )
        return types.SimpleNamespace(cluster_resolver=resolver)

    assert worker_index(_strategy('worker', 1, ['worker'])) == 1
    assert worker_index(_strategy('worker', 1, ['chief', 'worker'])) == 2
    assert worker_index(_strategy('chief', 0, ['chief', 'worker'])) == 0


def test_on_policy_refuses_several_local_replicas_in_one_line():
    strategy = types.SimpleNamespace(
        extended=types.SimpleNamespace(worker_devices=('/cpu:0', '/cpu:1'))
    )
    with pytest.raises(ValueError) as info:
        _check_one_replica(strategy, 'mirrored')
    assert str(info.value) == (
        "OnPolicyTrainer: TrainerConfig.strategy='mirrored' has 2 replicas "
        "in this process (/cpu:0, /cpu:1); an on-policy iteration runs on "
        "one: use 'multi_worker_mirrored' with one device per worker, or "
        "TrainerConfig.trainer=@OffPolicyTrainer with "
        "TrainerConfig.clear_replay_buffer=True"
    )


@pytest.mark.parametrize(
    "setting, value, unset",
    [
        ("num_env_steps", 1000, 0),
        ("stop_at_env_steps", 1000, None),
        ("stop_at_average_return", 100.0, None),
    ],
)
def test_workers_stop_by_iterations_only(setting, value, unset):
    with pytest.raises(ValueError) as info:
        TrainerConfig(
            root_dir="/tmp/unused",
            algorithm_ctor=lambda **k: None,
            strategy="multi_worker_mirrored",
            iterations_per_call=1,
            **{setting: value},
        )
    # (gin adds the configurable's name on a second line)
    assert str(info.value).splitlines()[0] == (
        "TrainerConfig.%s=%r cannot stop strategy='multi_worker_mirrored' "
        "workers together (each counts its own episodes' steps and "
        "returns); set num_iterations and %s=%r"
        % (setting, value, setting, unset)
    )


def test_async_trainer_refuses_workers_in_one_line():
    from alf_rl.trainers import AsyncOffPolicyTrainer

    config = TrainerConfig(
        root_dir="/tmp/unused",
        algorithm_ctor=lambda **k: None,
        strategy="multi_worker_mirrored",
        iterations_per_call=1,
    )
    with pytest.raises(ValueError) as info:
        AsyncOffPolicyTrainer(config)
    assert (
        str(info.value)
        .splitlines()[0]
        .startswith(
            "AsyncOffPolicyTrainer does not run under TrainerConfig.strategy="
            "'multi_worker_mirrored'"
        )
    )
