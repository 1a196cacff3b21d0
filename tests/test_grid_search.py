"""``alf-grid-search`` end to end: dry run, runs, resume, failures, Ctrl-C,
summary, optuna (the units of ``alf_rl.tune``: tests/tune/)."""

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from alf_rl.bin import grid_search as gs
from alf_rl.tune.files import ATTEMPTS_FILE, DONE_FILE
from alf_rl.tune.spec import check_search_record

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIN = os.path.join(ROOT, 'examples', 'ac_cart_pole.gin')

# A stand-in for alf-train (no TensorFlow: starts in ~50 ms). It logs each
# start to $CALLS, fails when a binding holds 'fail', waits for a signal
# when one holds 'wait' (then "checkpoints" and exits 130, as alf-train),
# and otherwise prints a done line whose return is the seed.
FAKE_TRAIN = r'''
import os, signal, sys, time
args = sys.argv[1:]
root = args[args.index('--root_dir') + 1]
params = [args[i + 1] for i, a in enumerate(args) if a == '--gin_param']
with open(os.environ['CALLS'], 'a') as f:
    f.write('%s %s\n' % (root, os.path.isdir(os.path.join(root, 'ckpt'))))
seed = int([p for p in params if 'random_seed' in p][-1].split('=')[1])
if any('fail' in p for p in params):
    print('loading', file=sys.stderr)
    print('alf-train: error: bad value in %s' % root, file=sys.stderr)
    sys.exit(1)
if any('wait' in p for p in params):
    got = []
    signal.signal(signal.SIGINT, lambda s, f: got.append(s))
    open(os.path.join(root, 'started'), 'w').close()
    while not got:
        time.sleep(0.02)
    time.sleep(0.2)  # a second signal would arrive here
    os.makedirs(os.path.join(root, 'ckpt'), exist_ok=True)
    with open(os.path.join(root, 'signals'), 'w') as f:
        f.write(str(len(got)))
    sys.exit(130)
os.makedirs(os.path.join(root, 'ckpt'), exist_ok=True)
print('iter 1')
print('alf-train: done: Metrics/AverageReturn=%d, iterations=2' % seed)
'''


@pytest.fixture
def fake(tmp_path, monkeypatch):
    script = tmp_path / 'fake_train.py'
    script.write_text(FAKE_TRAIN)
    calls = tmp_path / 'calls.txt'
    monkeypatch.setenv('CALLS', str(calls))

    def _calls():
        return calls.read_text().split('\n')[:-1] if calls.exists() else []

    return '%s %s' % (sys.executable, script), _calls


def _main(argv):
    with pytest.raises(SystemExit) as e:
        gs.main(argv)
    return e.value.code


def test_dry_run_prints_the_runs_and_starts_none(tmp_path, capsys):
    parent = str(tmp_path / 'P')
    code = _main(['--gin_file', GIN, '--root_dir', parent, '--grid',
                  'ActorCriticLoss.gamma=[0.98, 0.99]', '--seeds', '0,1',
                  '--dry_run'])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[0].startswith('gamma=0.98/seed0 (new): ')
    assert ('--gin_param ActorCriticLoss.gamma=0.98 --gin_param '
            'TrainerConfig.random_seed=0') in out[0]
    assert [line.split(' ')[0] for line in out[:4]] == [
        'gamma=0.98/seed0', 'gamma=0.99/seed0', 'gamma=0.98/seed1',
        'gamma=0.99/seed1']
    assert out[4] == 'alf-grid-search: dry run: 4 run(s), none started'
    assert not os.path.exists(parent)


def test_a_different_search_is_refused_in_one_line(tmp_path, capsys):
    parent = str(tmp_path / 'P')
    check_search_record(parent, {'gin_files': ['a.gin'],
                                 'grid': {'A.x': [1, 3]}, 'gin_params': [],
                                 'seeds': [0]}, force=False)
    code = _main(['--gin_file', GIN, '--root_dir', parent, '--grid',
                  'A.x=[1, 2]', '--dry_run', '--skip_binding_check'])
    err = capsys.readouterr().err
    assert code == 1 and len(err.splitlines()) == 1
    assert err.startswith('alf-grid-search: error: %s holds a different '
                          'search (differs in gin_files, grid, ' % parent)


def test_failed_run_is_reported_others_finish_rerun_skips(tmp_path, fake,
                                                          capsys):
    command, calls = fake
    parent = str(tmp_path / 'P')
    argv = ['--gin_file', GIN, '--root_dir', parent, '--grid',
            "E.mode=['ok', 'fail']", '--skip_binding_check', '--seeds', '0,1',
            '--num_parallel', '2',
            '--train_command', command]
    assert _main(argv) == 1
    out, err = capsys.readouterr()
    assert len(calls()) == 4
    assert 'alf-grid-search: 4 run(s): 2 done, 2 failed' in out
    bad = os.path.join(parent, 'mode=fail', 'seed0')
    assert ('failed: mode=fail/seed0 (exit 1): alf-train: error: bad value '
            'in %s [%s]' % (bad, bad)) in err
    done = json.load(open(os.path.join(parent, 'mode=ok', 'seed1',
                                       DONE_FILE)))
    assert done['exit_code'] == 0 and done['seed'] == 1
    assert done['metrics'] == {'Metrics/AverageReturn': 1.0,
                               'iterations': 2.0}
    assert done['grid'] == {'E.mode': 'ok'} and done['wall_secs'] > 0
    assert not os.path.exists(os.path.join(bad, DONE_FILE))
    # Rerun: the finished runs start no process; the failed ones retry.
    assert _main(argv) == 1
    assert sorted(calls()[4:]) == sorted(
        '%s False' % os.path.join(parent, 'mode=fail', 'seed%d' % s)
        for s in (0, 1))
    assert '2 done' not in capsys.readouterr().out
    with open(os.path.join(parent, 'mode=fail', 'seed0',
                           ATTEMPTS_FILE)) as f:
        assert [json.loads(line)['exit_code'] for line in f] == [1, 1]


def test_an_unfinished_run_resumes_in_its_directory(tmp_path, fake, capsys):
    command, calls = fake
    parent = str(tmp_path / 'P')
    run_dir = os.path.join(parent, 'mode=ok', 'seed0')
    os.makedirs(os.path.join(run_dir, 'ckpt'))  # as a stopped alf-train
    argv = ['--gin_file', GIN, '--root_dir', parent, '--grid',
            "E.mode=['ok']", '--skip_binding_check', '--train_command',
            command]
    assert _main(argv) == 0
    assert calls() == ['%s True' % run_dir]
    assert '[1/1] start mode=ok/seed0 (resuming)' in capsys.readouterr().out


def test_ctrl_c_stops_children_once_and_leaves_them_resumable(tmp_path,
                                                              fake):
    command, calls = fake
    parent = str(tmp_path / 'P')
    argv = [sys.executable, '-m', 'alf_rl.bin.grid_search', '--gin_file',
            GIN, '--root_dir', parent, '--grid', "E.mode=['wait']",
            '--skip_binding_check',
            '--seeds', '0,1,2', '--num_parallel', '2', '--train_command',
            command]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    started = [os.path.join(parent, 'mode=wait', 'seed%d' % s, 'started')
               for s in (0, 1)]
    deadline = time.time() + 60
    while not all(map(os.path.exists, started)) and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    for seed in (0, 1):
        with open(os.path.join(parent, 'mode=wait', 'seed%d' % seed,
                               'signals')) as f:
            assert f.read() == '1'  # one SIGINT each: they checkpoint
    assert len(calls()) == 2  # seed 2 never started
    assert '3 run(s): 2 interrupted, 1 not started' in out
    assert 'rerun the same command to resume' in err


def _hparams_of(run_dir):
    """The hparams and metric scalars of the run's hparams event file."""
    import tensorflow as tf
    from tensorboard.plugins.hparams import plugin_data_pb2
    found, scalars = {}, {}
    for name in os.listdir(run_dir):
        if not name.endswith('.grid_search_hparams'):
            continue
        for event in tf.compat.v1.train.summary_iterator(
                os.path.join(run_dir, name)):
            for v in event.summary.value:
                if v.tag == '_hparams_/session_start_info':
                    data = plugin_data_pb2.HParamsPluginData.FromString(
                        v.metadata.plugin_data.content)
                    for key, value in data.session_start_info.hparams.items():
                        found[key] = (value.number_value if value.HasField(
                            'number_value') else value.string_value)
                elif v.tag.startswith('grid_search/'):
                    scalars[v.tag] = float(tf.make_ndarray(v.tensor))
    return found, scalars


def test_real_search_summary_hparams_and_curves(tmp_path, capsys):
    from alf_rl.utils.curves import read_curve
    from alf_rl.utils.stats import bootstrap_ci
    parent = str(tmp_path / 'P')
    argv = ['--gin_file', GIN, '--root_dir', parent, '--grid',
            'ActorCriticLoss.gamma=[0.98, 0.99]', '--seeds', '0,1',
            '--num_parallel', '2']
    for binding in ('TrainerConfig.num_iterations=2',
                    'create_environment.num_parallel_environments=2',
                    'TrainerConfig.summary_interval=1',
                    'TrainerConfig.eval_interval=2',
                    'TrainerConfig.num_eval_episodes=1'):
        argv += ['--gin_param', binding]
    assert _main(argv) == 0
    out = capsys.readouterr().out
    assert '4 run(s): 4 done' in out
    tag = 'Metrics_vs_EnvironmentSteps/AverageReturn'
    rows = {}
    for name in ('gamma=0.98', 'gamma=0.99'):
        finals = [read_curve(os.path.join(parent, name, 'seed%d' % s,
                                          'eval'), tag)[-1][1]
                  for s in (0, 1)]
        rows[name] = (sum(finals) / 2, bootstrap_ci(finals))
        run_dir = os.path.join(parent, name, 'seed1')
        hparams, scalars = _hparams_of(run_dir)
        assert hparams == {'ActorCriticLoss.gamma': float(name[-4:]),
                           'seed': 1.0}
        assert scalars['grid_search/final_AverageReturn'] == finals[1]
        svg = ET.parse(os.path.join(parent, name, 'curve.svg')).getroot()
        assert svg.findall('{http://www.w3.org/2000/svg}polygon')
    best, worst = sorted(rows, key=lambda n: -rows[n][0])
    with open(os.path.join(parent, 'summary.csv')) as f:
        lines = [line.split(',') for line in f.read().splitlines()]
    assert lines[0][:5] == ['rank', 'config', 'ActorCriticLoss.gamma',
                            'seeds_finished', 'seeds_total']
    assert [line[1] for line in lines[1:]] == [best, worst]
    for line in lines[1:]:
        assert line[5] == 'eval'
        assert float(line[6]) == pytest.approx(rows[line[1]][0])
        assert (float(line[7]), float(line[8])) == pytest.approx(
            rows[line[1]][1])
    summary = open(os.path.join(parent, 'summary.md')).read()
    assert '| 1 | %s | 2/2 | eval | %.4g [' % (best, rows[best][0]) in summary
    # Rerun: everything finished, nothing starts.
    assert _main(argv) == 0
    assert '4 run(s): 4 skipped' in capsys.readouterr().out


def test_optuna_missing_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, 'optuna', None)  # import fails
    code = _main(['--gin_file', GIN, '--root_dir', str(tmp_path / 'P'),
                  '--grid', 'A.x=[1, 2]', '--optuna', '2',
                  '--skip_binding_check'])
    assert code == 1
    assert capsys.readouterr().err == (
        "alf-grid-search: error: --optuna needs optuna: pip install "
        "'alf_rl[tune]'\n")


def test_optuna_study_runs_trials_and_continues(tmp_path, fake, capsys):
    optuna = pytest.importorskip('optuna')
    command, calls = fake
    parent = str(tmp_path / 'P')
    argv = ['--gin_file', GIN, '--root_dir', parent, '--grid',
            "E.mode=['a', 'b']", '--skip_binding_check', '--seeds', '1,2',
            '--train_command',
            command, '--num_parallel', '2']
    assert _main(argv + ['--optuna', '3']) == 0
    study = optuna.load_study(study_name='alf-grid-search',
                              storage='sqlite:///%s/optuna.db' % parent)
    assert len(study.trials) == 3
    # The objective is the mean over seeds of the final return (= seed).
    assert [t.value for t in study.trials] == [1.5, 1.5, 1.5]
    assert len(calls()) == 2 * len({t.params['E.mode']
                                     for t in study.trials})
    assert _main(argv + ['--optuna', '4']) == 0
    assert len(optuna.load_study(
        study_name='alf-grid-search',
        storage='sqlite:///%s/optuna.db' % parent).trials) == 4
    assert 'trial 3: mode=' in capsys.readouterr().out


def test_population_search_trains_each_configs_seeds_in_one_run(
        tmp_path, capsys):
    from alf_rl.utils.curves import read_curve
    parent = str(tmp_path / 'P')
    argv = ['--gin_file', os.path.join(ROOT, 'examples',
                                       'ppo_tf_cart_pole.gin'),
            '--root_dir', parent, '--grid', 'PPOLoss.gamma=[0.98, 0.99]',
            '--seeds', '0-2', '--population', '--num_parallel', '1']
    for binding in ('TrainerConfig.num_iterations=2',
                    'TrainerConfig.num_env_steps=0',
                    'TrainerConfig.jit_compile=False',
                    'create_environment.num_parallel_environments=4',
                    'TrainerConfig.unroll_length=16',
                    'TrainerConfig.mini_batch_size=32',
                    'TrainerConfig.num_updates_per_train_step=1',
                    'TrainerConfig.summary_interval=1'):
        argv += ['--gin_param', binding]
    assert _main(argv) == 0
    assert '2 run(s): 2 done' in capsys.readouterr().out
    for name in ('gamma=0.98', 'gamma=0.99'):
        run_dir = os.path.join(parent, name, 'seeds0-2')
        finals = [read_curve(os.path.join(run_dir, 'train'),
                             'seed_%d/Metrics/AverageReturn' % s)[-1]
                  for s in (0, 1, 2)]
        assert [step for step, _ in finals] == [128, 128, 128]
    with open(os.path.join(parent, 'summary.csv')) as f:
        lines = [line.split(',') for line in f.read().splitlines()]
    assert sorted(line[1] for line in lines[1:]) == ['gamma=0.98',
                                                     'gamma=0.99']
    assert all(line[3:5] == ['3', '3'] for line in lines[1:])
