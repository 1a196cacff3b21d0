"""The example gin files ship with the package: a built wheel holds them
as alf_rl/examples, ``alf-train --example NAME`` trains one from any
directory, an unknown name gets one line with the close names, and gin
``include``/``import`` lines resolve next to the gin file, then among the
shipped examples."""

import glob
import os
import shutil
import subprocess
import sys
import zipfile

import gin
import pytest

from alf_rl.runs import examples
from alf_rl.runs.gin_files import check_gin_syntax, parse_gin
from alf_rl.trainers.gin_scope import own_gin_config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = [
    'TrainerConfig.num_iterations=2',
    'TrainerConfig.num_env_steps=0',
    'TrainerConfig.evaluate=False',
    'create_environment.num_parallel_environments=2',
]


def _source_examples():
    """The gin files under the source tree's examples/, relative."""
    root = os.path.join(REPO, 'examples')
    return sorted(
        os.path.relpath(p, root).replace(os.sep, '/')
        for p in glob.glob(os.path.join(root, '**', '*.gin'), recursive=True)
    )


def test_names_and_paths_of_the_examples():
    names = examples.example_names()
    assert 'ppo_cart_pole' in names and 'offline/bc_cart_pole' in names
    assert sorted(n + '.gin' for n in names) == _source_examples()
    path = examples.find_example('ppo_cart_pole')
    assert path == os.path.join(examples.examples_dir(), 'ppo_cart_pole.gin')
    assert examples.find_example('examples/ppo_cart_pole.gin') == path
    with pytest.raises(ValueError) as raised:
        examples.find_example('ppo_cartpole')
    message = str(raised.value)
    assert message.startswith(
        "--example 'ppo_cartpole': no such example; close names: ppo_cart_pole"
    )
    assert '\n' not in message
    with pytest.raises(ValueError, match='none is close; the [0-9]+ exam'):
        examples.find_example('zzzzzzzz')


def test_a_missing_examples_path_is_the_shipped_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert examples.resolve_gin_file('examples/sac_pendulum.gin') == (
        examples.find_example('sac_pendulum')
    )
    assert examples.resolve_gin_file('examples/nope.gin') == (
        'examples/nope.gin'
    )
    (tmp_path / 'examples').mkdir()
    (tmp_path / 'examples' / 'sac_pendulum.gin').write_text('# mine\n')
    # A file of the current directory comes first.
    assert examples.resolve_gin_file('examples/sac_pendulum.gin') == (
        'examples/sac_pendulum.gin'
    )


MY_MODULE = '''
import gin


@gin.configurable
def my_episode_steps(steps=17):
    return steps
'''


def test_include_and_import_resolve_next_to_the_file_then_shipped(
    tmp_path, monkeypatch
):
    mine = tmp_path / 'mine'
    mine.mkdir()
    (mine / 'my_steps_module.py').write_text(MY_MODULE)
    (mine / 'run.gin').write_text(
        "include 'ac_cart_pole.gin'\n"
        'import my_steps_module\n'
        'create_environment.max_episode_steps = @my_episode_steps()\n'
    )
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setattr(sys, 'path', list(sys.path))
    check_gin_syntax([str(mine / 'run.gin')], [])
    with own_gin_config():
        parse_gin([str(mine / 'run.gin')], [])
        # From the shipped ac_cart_pole.gin; the module next to run.gin.
        assert gin.query_parameter('create_environment.env_name') == (
            'CartPole-v1'
        )
        assert 'my_steps_module' in sys.modules
    del sys.modules['my_steps_module']


def test_every_cli_example_flag_resolves():
    from alf_rl.bin.grid_search import _options, _parser

    args = _parser().parse_args(
        [
            '--example',
            'ppo_cart_pole',
            '--gin_file',
            'x.gin',
            '--root_dir',
            'p',
        ]
    )
    assert _options(args).gin_files == [
        examples.find_example('ppo_cart_pole'),
        'x.gin',
    ]


def _alf_train(cwd, *flags):
    return subprocess.run(
        [sys.executable, '-m', 'alf_rl.bin.train', *flags],
        cwd=str(cwd),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_example_flag_trains_from_any_directory(tmp_path):
    params = [f for p in TINY for f in ('--gin_param', p)]
    done = _alf_train(
        tmp_path, '--example', 'ac_cart_pole', '--root_dir', 'run', *params
    )
    assert done.returncode == 0, done.stderr
    assert 'alf-train: done: ' in done.stdout
    config = (tmp_path / 'run' / 'config.gin').read_text()
    assert "create_environment.env_name = 'CartPole-v1'" in config
    assert os.path.exists(tmp_path / 'run' / 'ckpt' / 'ckpt-2' / 'ckpt.index')


def test_unknown_example_is_one_line(tmp_path):
    done = _alf_train(
        tmp_path, '--example', 'ac_cartpole', '--root_dir', str(tmp_path)
    )
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        "alf-train: error: --example 'ac_cartpole': no such example; "
        'close names: ac_cart_pole, '
    ), line


def test_a_model_starts_from_a_shipped_example():
    import alf_rl

    model = alf_rl.PPO(example='ppo_cart_pole_async')
    assert model._gin_files == [examples.find_example('ppo_cart_pole_async')]
    with pytest.raises(ValueError, match="PPO 'ppo_cartpole': no such ex"):
        alf_rl.PPO(example='ppo_cartpole')


def _wheel_build(tmp_path):
    """Builds the wheel from a copy of the source tree (so no build/
    directory is left in it); skips when pip cannot fetch the build
    backend (no network)."""
    source = tmp_path / 'src'
    for name in ('alf_rl', 'examples'):
        shutil.copytree(
            os.path.join(REPO, name),
            source / name,
            ignore=shutil.ignore_patterns('__pycache__'),
        )
    for name in ('setup.py', 'pyproject.toml', 'README.md', 'LICENSE'):
        shutil.copy(os.path.join(REPO, name), source / name)
    built = subprocess.run(
        [sys.executable, '-m', 'pip', 'wheel', '--no-deps', '-q', '-w',
         str(tmp_path / 'wheel'), str(source)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if built.returncode != 0 and (
        'No matching distribution found for setuptools' in built.stderr
    ):
        pytest.skip('pip cannot fetch setuptools to build the wheel')
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = glob.glob(str(tmp_path / 'wheel' / '*.whl'))
    return wheel


def test_the_wheel_ships_the_examples(tmp_path):
    wheel = _wheel_build(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(
        n[len('alf_rl/examples/') :]
        for n in names
        if n.startswith('alf_rl/examples/') and n.endswith('.gin')
    )
    assert shipped == _source_examples()
    assert 'alf_rl/runs/examples.py' in names
    # Installed (no source tree around), the examples are found by name.
    target = tmp_path / 'site'
    subprocess.run(
        [sys.executable, '-m', 'pip', 'install', '--no-deps', '--no-index',
         '-q', '--target', str(target), wheel],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    found = subprocess.run(
        [sys.executable, '-c',
         'from alf_rl.runs.examples import find_example; '
         "print(find_example('offline/bc_cart_pole'))"],
        cwd=str(tmp_path), env=dict(os.environ, PYTHONPATH=str(target)),
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    assert found.stdout.strip() == str(
        target / 'alf_rl' / 'examples' / 'offline' / 'bc_cart_pole.gin'
    )
