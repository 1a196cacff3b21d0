"""A run that uses the user's own module plays and exports again: the
run directory records the module (``modules.json``), ``alf-play`` finds it
where it was or through ``--module_path``, and says in one line which
module is missing and how to provide it."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import gin
import pytest

from alf_rl.bin.train import train

EXAMPLES = os.path.join(os.path.dirname(__file__), '..', 'examples')
LOADER = textwrap.dedent('''
    import gin
    from alf_rl.environments import suite_gym


    @gin.configurable
    def short_cart_pole(env_name, **kwargs):
        kwargs['max_episode_steps'] = 7
        return suite_gym.load('CartPole-v1', **kwargs)
''')


def _alf_play(root, cwd, *args):
    return subprocess.run(
        [
            sys.executable,
            '-m',
            'alf_rl.bin.play',
            '--root_dir',
            root,
            '--num_episodes',
            '2',
        ]
        + list(args),
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )


def test_a_run_finds_its_user_module_again(tmp_path):
    code = tmp_path / 'mycode'
    code.mkdir()
    (code / 'api30_loader.py').write_text(LOADER)
    gin_file = tmp_path / 'mine.gin'
    gin_file.write_text(
        "include '%s'\nimport api30_loader\n"
        "create_environment.env_load_fn = @short_cart_pole\n"
        % os.path.abspath(os.path.join(EXAMPLES, 'ac_cart_pole.gin'))
    )
    root = str(tmp_path / 'run')
    train(
        root,
        [str(gin_file)],
        [
            'create_environment.num_parallel_environments=2',
            'TrainerConfig.num_env_steps=0',
            'TrainerConfig.num_iterations=2',
            'TrainerConfig.evaluate=False',
        ],
        module_paths=[str(code)],
    )
    with open(os.path.join(root, 'modules.json')) as f:
        assert json.load(f) == {
            'modules': [{'name': 'api30_loader', 'directory': str(code)}]
        }
    # Moved away: one line naming the module and --module_path.
    moved = tmp_path / 'elsewhere'
    shutil.move(str(code), str(moved))
    sys.modules.pop('api30_loader', None)
    sys.path[:] = [p for p in sys.path if p != str(code)]
    from alf_rl.runs.restore import restore_run

    with pytest.raises(ValueError) as raised:
        restore_run(root)
    assert str(raised.value) == (
        "alf-play: the run in %s imports module 'api30_loader' (found in "
        "%s when it trained), which cannot be imported here (No module "
        "named 'api30_loader'): pass --module_path DIR, DIR the directory "
        "holding it" % (root, code)
    )
    gin.clear_config()
    # alf-play from another directory with --module_path: 7-step episodes.
    done = _alf_play(root, str(tmp_path), '--module_path', str(moved))
    assert done.returncode == 0, done.stderr[-2000:]
    assert 'mean return' in done.stdout
    returns = [
        float(line.split('return')[1].split()[0])
        for line in done.stdout.splitlines()
        if line.startswith('episode')
    ]
    assert len(returns) == 2 and all(r <= 7 for r in returns)
