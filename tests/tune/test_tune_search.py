"""``alf_rl.tune.search``: ``SearchOptions`` checked before any run, a
search through the library API (no command line), the record it writes."""

import json
import os
import sys

import pytest

from alf_rl.tune.files import DONE_FILE, SEARCH_FILE
from alf_rl.tune.search import (SearchOptions, default_parallel, prepare,
                                run_search, tally)
from alf_rl.tune.runner import RunResult
from alf_rl.tune.spec import Config, Run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
GIN = os.path.join(ROOT, 'examples', 'ac_cart_pole.gin')

# Prints alf-train's done line with the seed as the return.
_FAKE = ("import sys; a = sys.argv; print('alf-train: done: "
         "Metrics/AverageReturn=%s' % a[a.index('--root_dir') + 1][-1])")


@pytest.mark.parametrize('changes, message', [
    ({'gin_files': []}, '--gin_file is required'),
    ({'root_dir': None}, '--root_dir is required'),
    ({'grid': ['A.x=1']}, 'non-empty list'),
    ({'seeds': '0,0'}, 'distinct seeds'),
    ({'module_paths': ['/no/such/dir']},
     '--module_path /no/such/dir: not a directory'),
    ({'gin_params': ['A.x = = 1']}, "--gin_param 'A.x = = 1': gin syntax"),
])
def test_bad_options_are_refused_before_anything_is_written(
        tmp_path, changes, message):
    options = SearchOptions(gin_files=[GIN], root_dir=str(tmp_path / 'P'),
                            grid=['A.x=[1, 2]'])._replace(**changes)
    with pytest.raises(ValueError, match=message):
        prepare(options)
    assert not os.path.exists(str(tmp_path / 'P'))


def test_search_through_the_library_runs_records_and_summarizes(
        tmp_path, capsys):
    parent = str(tmp_path / 'P')
    options = SearchOptions(
        gin_files=[GIN], root_dir=parent, grid=['A.x=[1, 2]'], seeds='0-1',
        check_bindings=False,
        num_parallel=2, random_samples=1, seed=5,
        train_command='%s -c "%s"' % (sys.executable, _FAKE))
    configs, seeds = prepare(options._replace(dry_run=True))
    assert len(configs) == 1 and seeds == [0, 1]
    assert not os.path.exists(parent)  # a dry run writes nothing
    assert run_search(options) == 0
    out = capsys.readouterr().out
    assert 'alf-grid-search: 2 run(s): 2 done' in out
    with open(os.path.join(parent, SEARCH_FILE)) as f:
        record = json.load(f)
    assert record == {'gin_files': [os.path.normpath(GIN)],
                      'gin_params': [], 'grid': {'A.x': [1, 2]},
                      'optuna': False, 'random_samples': 1,
                      'sample_seed': 5, 'seeds': [0, 1]}
    name = configs[0].name
    with open(os.path.join(parent, name, 'seed1', DONE_FILE)) as f:
        assert json.load(f)['metrics'] == {'Metrics/AverageReturn': 1.0}
    with open(os.path.join(parent, 'summary.csv')) as f:
        assert f.read().splitlines()[1].startswith('1,%s,' % name)


def test_tally_counts_and_exit_code(capsys):
    run = Run(Config('c', {}), 0, 'P/c/seed0')
    assert tally([RunResult(run, 'done'), RunResult(run, 'skipped')]) == 0
    assert tally([RunResult(run, 'failed', 2, 1.0, 'boom')]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        'alf-grid-search: 2 run(s): 1 done, 1 skipped',
        'alf-grid-search: 1 run(s): 1 failed']
    assert err == ('alf-grid-search: failed: c/seed0 (exit 2): boom '
                   '[P/c/seed0]\n')
    assert default_parallel() >= 1


def test_a_failed_binding_check_is_one_line(tmp_path, monkeypatch):
    import subprocess

    def fake_run(command, **kwargs):
        assert command[1:3] == ['-m', 'alf_rl.runs.binding_checks']
        return subprocess.CompletedProcess(
            command, 1, '', 'noise\nbinding check: error: --grid A.x=1: '
            "No configurable matching 'A'\n")

    monkeypatch.setattr(subprocess, 'run', fake_run)
    options = SearchOptions(gin_files=[GIN], root_dir=str(tmp_path / 'P'),
                            grid=['A.x=[1, 2]'], dry_run=True)
    with pytest.raises(ValueError) as raised:
        prepare(options)
    assert str(raised.value) == "--grid A.x=1: No configurable matching 'A'"
    # A checker that dies without its line: the last line of its stderr.
    monkeypatch.setattr(subprocess, 'run', lambda command, **kwargs: (
        subprocess.CompletedProcess(command, 2, '', 'Traceback\nBoom\n')))
    with pytest.raises(ValueError, match=r'^checking the gin bindings '
                       r'failed \(exit 2\): Boom$'):
        prepare(options)
    assert not os.path.exists(str(tmp_path / 'P'))
