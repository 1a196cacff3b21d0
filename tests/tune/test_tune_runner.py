"""``alf_rl.tune.runner``: the done line, and ``RunPool`` running processes
(a stand-in for ``alf-train`` that starts in milliseconds)."""

import json
import os
import sys

import pytest

from alf_rl.tune.files import ATTEMPTS_FILE, DONE_FILE, STDERR_LOG, STDOUT_LOG
from alf_rl.tune.runner import (THREAD_VARIABLES, RunPool, parse_done_line,
                                run_environment, usable_cores)
from alf_rl.tune.spec import Config, plan_runs

# Fails (exit 3, two stderr lines) when its root_dir names 'bad'; else
# prints alf-train's done line with the seed as the return.
_FAKE = r'''
import sys
root = sys.argv[sys.argv.index('--root_dir') + 1]
if 'bad' in root:
    print('loading', file=sys.stderr)
    print('error: bad config', file=sys.stderr)
    sys.exit(3)
print('iter 1')
print('alf-train: done: Metrics/AverageReturn=%s, iterations=2'
      % root[-1])
'''


def _command(run):
    return [sys.executable, '-c', _FAKE, '--root_dir', run.root_dir]


def test_done_line_gives_the_last_lines_metrics():
    assert parse_done_line(
        'iter 2\nalf-train: done: Metrics/AverageReturn=19, '
        'Metrics/EnvironmentSteps=62, iterations=2\n') == {
            'Metrics/AverageReturn': 19.0,
            'Metrics/EnvironmentSteps': 62.0, 'iterations': 2.0}
    assert parse_done_line(
        'alf-train: done: a=1\nalf-train: done: a=2, b=x\n') == {'a': 2.0}
    assert parse_done_line('iter 1\n') == {}


def test_pool_runs_records_and_skips_finished_runs(tmp_path):
    parent = str(tmp_path)
    configs = [Config('ok', {'E.mode': 'ok'}), Config('bad', {'E.mode': 'x'})]
    runs = plan_runs(parent, configs, [1, 2])
    lines = []
    pool = RunPool(_command, 2, report=lines.append)
    results = pool.run(runs)
    assert not pool.interrupted
    by_label = {r.run.label(): r for r in results}
    assert sorted(by_label) == ['bad/seed1', 'bad/seed2', 'ok/seed1',
                                'ok/seed2']
    assert [by_label['ok/seed%d' % s].status for s in (1, 2)] == ['done'] * 2
    bad = by_label['bad/seed1']
    assert (bad.status, bad.exit_code, bad.message) == (
        'failed', 3, 'error: bad config')
    assert sum(line.startswith('[') and ' start ' in line
               for line in lines) == 4
    done_dir = os.path.join(parent, 'ok', 'seed2')
    with open(os.path.join(done_dir, DONE_FILE)) as f:
        done = json.load(f)
    assert done['metrics'] == {'Metrics/AverageReturn': 2.0,
                               'iterations': 2.0}
    assert (done['seed'], done['config'], done['grid']) == (
        2, 'ok', {'E.mode': 'ok'})
    assert done['total_wall_secs'] == pytest.approx(done['wall_secs'])
    with open(os.path.join(done_dir, STDOUT_LOG)) as f:
        assert f.readline().startswith('# alf-grid-search ')
    bad_dir = os.path.join(parent, 'bad', 'seed1')
    assert not os.path.exists(os.path.join(bad_dir, DONE_FILE))
    with open(os.path.join(bad_dir, STDERR_LOG)) as f:
        assert f.read() == 'loading\nerror: bad config\n'
    # Again: finished runs are skipped, failed ones retried (their
    # attempts file gets a second line).
    again = RunPool(_command, 1, report=lines.append).run(runs)
    assert sorted((r.run.label(), r.status) for r in again) == [
        ('bad/seed1', 'failed'), ('bad/seed2', 'failed'),
        ('ok/seed1', 'skipped'), ('ok/seed2', 'skipped')]
    with open(os.path.join(bad_dir, ATTEMPTS_FILE)) as f:
        assert [json.loads(line)['exit_code'] for line in f] == [3, 3]


def test_pool_refuses_no_parallel_runs():
    with pytest.raises(ValueError, match='--num_parallel must be >= 1, '
                       'got 0'):
        RunPool(_command, 0)


def test_runs_get_their_share_of_the_cores_as_threads(tmp_path, monkeypatch):
    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr('alf_rl.tune.runner.usable_cores', lambda: 8)
    env = run_environment(2, {'PATH': '/bin'})
    assert env == {'PATH': '/bin', 'TF_NUM_INTRAOP_THREADS': '4',
                   'TF_NUM_INTEROP_THREADS': '4'}
    assert run_environment(16, {})['TF_NUM_INTRAOP_THREADS'] == '1'
    # The user's setting (either variable) stands, untouched.
    assert run_environment(2, {'TF_NUM_INTEROP_THREADS': '3'}) == {
        'TF_NUM_INTEROP_THREADS': '3'}
    # What a started run sees.
    show = ('import os, sys; print(os.environ.get("TF_NUM_INTRAOP_THREADS"),'
            ' os.environ.get("TF_NUM_INTEROP_THREADS"))')
    runs = plan_runs(str(tmp_path), [Config('c', {})], [0])
    RunPool(lambda run: [sys.executable, '-c', show], 4,
            report=lambda line: None).run(runs)
    with open(os.path.join(runs[0].root_dir, STDOUT_LOG)) as f:
        assert f.read().splitlines()[-1] == '2 2'


def test_usable_cores_is_at_least_one():
    assert usable_cores() >= 1
