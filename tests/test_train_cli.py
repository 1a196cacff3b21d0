"""alf-train as a process: Ctrl-C stops cleanly (after the current call,
with a checkpoint) and the run resumes."""

import os
import re
import signal
import subprocess
import sys
import time

import gin
import pytest

EXAMPLE = os.path.join(os.path.dirname(__file__), '..', 'examples',
                       'ac_cart_pole.gin')


def test_interrupt_exits_cleanly_and_resumes(tmp_path):
    root = str(tmp_path / 'run')
    cmd = [
        sys.executable, '-m', 'alf_rl.bin.train', '--gin_file', EXAMPLE,
        '--root_dir', root,
        '--gin_param', 'TrainerConfig.num_env_steps=100000000',
        '--gin_param', 'TrainerConfig.checkpoint_interval=5',
        '--gin_param', 'TrainerConfig.progress_interval_secs=0.2',
        '--gin_param', 'TrainerConfig.evaluate=False'
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    ckpt = os.path.join(root, 'ckpt', 'latest')
    deadline = time.time() + 120
    while not os.path.exists(ckpt) and time.time() < deadline:
        time.sleep(0.2)
    assert os.path.exists(ckpt), proc.communicate(timeout=5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    # The first Ctrl-C stops after the current call and checkpoints there.
    assert 'rerun the same command to resume' in err
    assert 'Traceback' not in err
    stopped_at = re.search(r'checkpoint was written at iteration (\d+)',
                           err).group(1)
    with open(ckpt) as f:
        assert f.read() == 'ckpt-%s' % stopped_at
    # Resuming from the kept checkpoint works.
    done = subprocess.run(
        cmd[:5] + ['--root_dir', root,
                   '--gin_param', 'TrainerConfig.num_iterations=0',
                   '--gin_param', 'TrainerConfig.num_env_steps=1',
                   '--gin_param', 'TrainerConfig.evaluate=False'],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert 'resumed from' in done.stdout


MY_MODULE = '''
"""A user's module: a gin-configurable environment loader."""
import gin

from alf_rl.environments import suite_gym


@gin.configurable
def three_step_cart_pole(env_name, seed=None, env_id=0, **kwargs):
    """CartPole cut to 3 steps: every episode returns exactly 3."""
    return suite_gym.load('CartPole-v1', seed=seed, env_id=env_id,
                          max_episode_steps=3)
'''
MY_GIN = '''
import my_envs
create_environment.env_load_fn = @three_step_cart_pole
'''
SMALL_RUN = [
    '--gin_param', 'create_environment.num_parallel_environments=2',
    '--gin_param', 'TrainerConfig.unroll_length=4',
    '--gin_param', 'TrainerConfig.num_iterations=2',
    '--gin_param', 'TrainerConfig.num_env_steps=0',
    '--gin_param', 'TrainerConfig.evaluate=False',
]


def _alf_train():
    """The installed ``alf-train`` console script (its ``sys.path`` does
    not hold the current directory), else train.py run by path, which
    does not either."""
    script = os.path.join(os.path.dirname(sys.executable), 'alf-train')
    if os.path.exists(script):
        return [script]
    return [sys.executable, os.path.join(
        os.path.dirname(__file__), '..', 'alf_rl', 'bin', 'train.py')]


def _write_user_files(directory):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, 'my_envs.py'), 'w') as f:
        f.write(MY_MODULE)
    with open(os.path.join(directory, 'my_run.gin'), 'w') as f:
        f.write(MY_GIN)


def _run_cli(args, cwd):
    env = dict(os.environ)
    env.pop('PYTHONPATH', None)
    return subprocess.run(_alf_train() + args, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_user_module_in_current_directory_is_importable(tmp_path):
    _write_user_files(str(tmp_path))
    done = _run_cli(['--gin_file', os.path.abspath(EXAMPLE),
                     '--gin_file', 'my_run.gin',
                     '--root_dir', str(tmp_path / 'run')] + SMALL_RUN,
                    cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    # The module's loader ran: every CartPole episode was cut at 3 steps.
    assert 'Metrics/AverageEpisodeLength=3,' in done.stdout
    assert 'Metrics/AverageReturn=3,' in done.stdout
    with open(str(tmp_path / 'run' / 'config.gin')) as f:
        assert ('create_environment.env_load_fn = @three_step_cart_pole'
                in f.read())


def test_module_path_flag_and_its_errors(tmp_path):
    _write_user_files(str(tmp_path / 'mine'))
    # The gin file lives apart from the module (next to it, it would be
    # found without --module_path).
    os.makedirs(str(tmp_path / 'configs'))
    gin_file = str(tmp_path / 'configs' / 'my_run.gin')
    os.replace(str(tmp_path / 'mine' / 'my_run.gin'), gin_file)
    root = str(tmp_path / 'run')
    # From another directory, the module is found through --module_path.
    done = _run_cli(['--gin_file', os.path.abspath(EXAMPLE), '--gin_file',
                     gin_file, '--root_dir', root, '--module_path',
                     str(tmp_path / 'mine')] + SMALL_RUN, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert 'Metrics/AverageReturn=3,' in done.stdout
    # Without it: gin's import fails, named in one line.
    failed = _run_cli(['--gin_file', os.path.abspath(EXAMPLE), '--gin_file',
                       gin_file, '--root_dir', root + '2'] + SMALL_RUN,
                      cwd=str(tmp_path))
    assert failed.returncode == 1
    assert "No module named 'my_envs'" in failed.stderr
    missing = _run_cli(['--gin_file', os.path.abspath(EXAMPLE), '--root_dir',
                        root + '3', '--module_path', 'no_such_dir'],
                       cwd=str(tmp_path))
    assert missing.returncode == 1
    assert ('alf-train: error: --module_path no_such_dir: not a directory'
            in missing.stderr)


def test_includes_resolve_quietly_and_a_missing_one_is_one_line(
        tmp_path, monkeypatch, caplog):
    from alf_rl.runs.gin_files import parse_gin
    (tmp_path / 'mine.gin').write_text(
        "include 'examples/ppo_cart_pole.gin'\n")
    monkeypatch.chdir(os.path.join(os.path.dirname(__file__), '..'))
    with caplog.at_level('INFO'):
        parse_gin([str(tmp_path / 'mine.gin')], [], None)
    # Found in the working directory after a miss next to mine.gin: gin's
    # 'Path not found' error for that miss is not shown.
    assert 'Path not found' not in caplog.text
    assert gin.query_parameter('PPOLoss.gamma') == 0.98
    (tmp_path / 'bad.gin').write_text("include 'nowhere.gin'\n")
    with pytest.raises(ValueError, match=r"bad gin configuration .*Unable "
                       r"to open file: nowhere.gin"):
        parse_gin([str(tmp_path / 'bad.gin')], [], None)


def test_stop_at_env_steps_flag_stops_before_the_budget(tmp_path):
    # 2 envs x 4 steps per iteration, a budget of 2 iterations: the flag
    # stops after the first (8 steps), exit 0, with a checkpoint.
    root = str(tmp_path / 'run')
    done = _run_cli(['--gin_file', os.path.abspath(EXAMPLE), '--root_dir',
                     root, '--stop_at_env_steps', '8'] + SMALL_RUN,
                    cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert 'Metrics/EnvironmentSteps=8,' in done.stdout
    assert 'iterations=1' in done.stdout
    assert os.path.isdir(os.path.join(root, 'ckpt', 'ckpt-1'))
    # Rerun with the same stop: nothing trains, and a line says why.
    again = _run_cli(['--gin_file', os.path.abspath(EXAMPLE), '--root_dir',
                      root, '--stop_at_env_steps', '8'] + SMALL_RUN,
                     cwd=str(tmp_path))
    assert again.returncode == 0, again.stderr
    assert ('alf_rl: nothing to train: the run is already at its '
            'stop_at_env_steps 8 (at 8 env steps)') in again.stdout
    assert 'iterations=1' in again.stdout
    bad = _run_cli(['--gin_file', os.path.abspath(EXAMPLE), '--root_dir',
                    root + '2', '--stop_at_env_steps', '0'] + SMALL_RUN,
                   cwd=str(tmp_path))
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines()[-1].startswith(
        'alf-train: error: TrainerConfig.stop_at_env_steps must be > 0')
