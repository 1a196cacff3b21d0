"""A trained run exported with ``alf-export`` plays CartPole in a process
that cannot import alf_rl (the programs of docs/export.md: plain TensorFlow
or LiteRT, and, with the ``[onnx]`` extra, onnxruntime) with the returns
``alf-play`` reports from the checkpoint; the documented plain-TensorFlow
way to find and read a checkpoint works."""

import importlib.util
import os
import re
import subprocess
import sys
import sysconfig

import gin
import numpy as np
import pytest
import tensorflow as tf

from alf_rl.bin.export import export
from alf_rl.bin.play import play
from alf_rl.bin.train import train
from alf_rl.utils.checkpoint import Checkpointer

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
EXAMPLE = os.path.join(_ROOT, 'examples', 'ppo_cart_pole.gin')
DOC = os.path.join(_ROOT, 'docs', 'export.md')
SEED, EPISODES = 3, 3
HAVE_ONNX = all(importlib.util.find_spec(m) for m in ('tf2onnx',
                                                      'onnxruntime'))

# Runs a script with only the standard library and site-packages on
# sys.path: -I ignores PYTHONPATH, the user site and the current directory,
# -S skips site (and the .pth file of alf_rl's editable install).
_ISOLATED = '''
import runpy, sys
sys.path.append(sys.argv[1])
try:
    import alf_rl
except ImportError:
    pass
else:
    raise SystemExit('alf_rl is importable: ' + alf_rl.__file__)
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name='__main__')
'''


def _doc_program(marker: str = 'plain-tf-player') -> str:
    text = open(DOC).read()
    match = re.search(r'<!-- %s -->\s*```python\n(.*?)```' % marker,
                      text, re.DOTALL)
    assert match, 'docs/export.md lost its %s program' % marker
    return match.group(1)


def _play_isolated(program: str, path: str, tmp) -> str:
    """Runs a docs program on ``path`` where alf_rl cannot be imported;
    returns its last line."""
    script = tmp / 'play_cartpole.py'
    script.write_text(program)
    site = sysconfig.get_paths()['purelib']
    result = subprocess.run(
        [sys.executable, '-I', '-S', '-c', _ISOLATED, site, str(script),
         path, str(SEED), str(EPISODES)],
        cwd=str(tmp), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip().splitlines()[-1]


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('plain_tf')
    root = str(tmp / 'run')
    train(root, [EXAMPLE], [
        'TrainerConfig.num_env_steps=0', 'TrainerConfig.num_iterations=1',
        'TrainerConfig.num_updates_per_train_step=2',
        'TrainerConfig.evaluate=False'
    ])
    gin.clear_config()
    paths = export(root, str(tmp / 'policy'), 'both')
    gin.clear_config()
    return root, paths, tmp


def test_export_writes_both_formats(run, capsys):
    root, paths, tmp = run
    assert paths == [str(tmp / 'policy'), str(tmp / 'policy.tflite')]
    assert os.path.isfile(os.path.join(paths[0], 'saved_model.pb'))
    assert os.path.getsize(paths[1]) > 1000


def test_plain_tensorflow_program_plays_with_alf_play_returns(run, capsys):
    root, paths, tmp = run
    returns = play(root, num_episodes=EPISODES, seed=SEED)
    gin.clear_config()
    for path in paths:
        line = _play_isolated(_doc_program(), path, tmp)
        assert 'mean return %.2f' % np.mean(returns) in line, (path, line,
                                                               returns)
        assert 'returns %s' % [float(r) for r in returns] in line


@pytest.mark.skipif(not HAVE_ONNX, reason='needs the [onnx] extra')
def test_onnx_program_plays_with_alf_play_returns(run):
    root, _, tmp = run
    returns = play(root, num_episodes=EPISODES, seed=SEED)
    gin.clear_config()
    onnx_path = export(root, str(tmp / 'policy'), 'onnx')
    gin.clear_config()
    assert onnx_path == [str(tmp / 'policy.onnx')]
    line = _play_isolated(_doc_program('onnx-player'), onnx_path[0], tmp)
    assert 'returns %s' % [float(r) for r in returns] in line, (line, returns)
    # alf-play --policy plays the .onnx file the same way.
    assert play(root, num_episodes=EPISODES, seed=SEED,
                policy=onnx_path[0]) == returns
    gin.clear_config()


def test_documented_checkpoint_lookup(run):
    root, _, _ = run
    ckpt_dir = os.path.join(root, 'ckpt')
    # What docs/export.md says: tf.train.latest_checkpoint finds nothing in
    # this layout; 'latest' names the newest checkpoint's directory.
    assert tf.train.latest_checkpoint(ckpt_dir) is None
    with open(os.path.join(ckpt_dir, 'latest')) as f:
        prefix = os.path.join(ckpt_dir, f.read().strip(), 'ckpt')
    assert prefix == Checkpointer(ckpt_dir).latest_path()
    names = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    assert any(n.startswith('algorithm/') for n in names)
