"""The README's "Your own intrinsic reward" example, run as it is written:
its Python block (a count-based exploration module) and its gin block
(plugging it into an Agent for PPO on MountainCar)."""

import importlib
import os
import re
import sys

import pytest

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
HEADING = '### Your own intrinsic reward'


def _readme_blocks():
    """{language: code} of the first fenced block of each language in the
    README section under ``HEADING``."""
    with open(os.path.join(REPO, 'README.md')) as f:
        text = f.read()
    assert HEADING in text, "the README lost its section %r" % HEADING
    section = text.split(HEADING, 1)[1].split('\n## ', 1)[0]
    blocks = {}
    for language, code in re.findall(r'```(\w+)\n(.*?)```', section,
                                     re.DOTALL):
        blocks.setdefault(language, code)
    return blocks


@pytest.fixture(scope='module')
def readme_files(tmp_path_factory):
    """The README's module written as ``DIR/my_bonus.py`` (imported once:
    gin registers its class) and its gin as ``DIR/my_agent.gin``;
    ``(module, DIR)``."""
    directory = tmp_path_factory.mktemp('readme')
    blocks = _readme_blocks()
    (directory / 'my_bonus.py').write_text(blocks['python'])
    (directory / 'my_agent.gin').write_text(blocks['gin'])
    sys.path.insert(0, str(directory))
    try:
        yield importlib.import_module('my_bonus'), directory
    finally:
        sys.path.remove(str(directory))


@pytest.fixture
def readme_module(readme_files, monkeypatch):
    """``(module, gin path)``, run from the repository root (as the README
    says)."""
    module, directory = readme_files
    monkeypatch.chdir(REPO)
    return module, str(directory / 'my_agent.gin')


def test_readme_module_is_short(readme_module):
    code = _readme_blocks()['python']
    lines = [l for l in code.splitlines() if l.strip()]
    assert len(lines) <= 40, len(lines)


def test_readme_gin_trains_the_agent_with_the_module(readme_module,
                                                     tmp_path):
    from alf_rl.bin.train import train
    _, gin_file = readme_module
    result = train(str(tmp_path / 'run'), [gin_file], [
        'TrainerConfig.num_iterations=2', 'TrainerConfig.num_env_steps=0',
        'TrainerConfig.summary_interval=1'
    ], module_paths=[os.path.dirname(gin_file)])
    assert result['iterations'] == 2
    with open(str(tmp_path / 'run' / 'config.gin')) as f:
        assert '@SimHashCountBonus' in f.read()


def test_readme_module_finds_the_chain_reward(readme_module,
                                              chain_exploration, tmp_path):
    module, _ = readme_module
    found = [chain_exploration(module.SimHashCountBonus, seed,
                               tmp_path / str(seed)) > 0
             for seed in range(3)]
    assert all(found), found


def test_readme_module_counts_only_at_rollout(readme_module):
    import numpy as np
    import tensorflow as tf
    from alf_rl.data_structures import StepType, TimeStep
    module, _ = readme_module
    bonus = module.SimHashCountBonus(tf.TensorSpec([3], tf.float32))
    obs = tf.constant([[1., 0., 0.], [1., 0., 0.], [0., 0., 1.]])
    ts = TimeStep(step_type=tf.constant([StepType.MID, StepType.MID,
                                         StepType.FIRST]),
                  observation=obs)
    # Two visits to the first cell: 1/sqrt(2); the FIRST row gets 0.
    np.testing.assert_allclose(bonus.rollout(ts).output,
                               [2**-0.5, 2**-0.5, 0.], rtol=1e-6)
    np.testing.assert_allclose(bonus.train_step(ts).output,
                               [2**-0.5, 2**-0.5, 0.], rtol=1e-6)
    np.testing.assert_allclose(bonus.rollout(ts).output,
                               [0.5, 0.5, 0.], rtol=1e-6)
    assert bonus.rollout_owned_variables() == [bonus._counts]
