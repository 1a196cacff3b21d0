"""The "Your own intrinsic reward" example of docs/composition.md, run as
it is written: its Python block (a count-based exploration module) and its
gin block (plugging it into an Agent for PPO on MountainCar)."""

import importlib
import os
import re
import sys

import pytest

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
PAGE = os.path.join('docs', 'composition.md')
HEADING = '\n## Your own intrinsic reward\n'


def _docs_blocks():
    """{language: code} of the first fenced block of each language in the
    section of ``PAGE`` under ``HEADING``."""
    with open(os.path.join(REPO, PAGE)) as f:
        text = f.read()
    assert HEADING in text, "%s lost its section %r" % (PAGE, HEADING.strip())
    section = text.split(HEADING, 1)[1].split('\n## ', 1)[0]
    blocks = {}
    for language, code in re.findall(r'```(\w+)\n(.*?)```', section,
                                     re.DOTALL):
        blocks.setdefault(language, code)
    return blocks


@pytest.fixture(scope='module')
def docs_files(tmp_path_factory):
    """The page's module written as ``DIR/my_bonus.py`` (imported once:
    gin registers its class) and its gin as ``DIR/my_agent.gin``;
    ``(module, DIR)``."""
    directory = tmp_path_factory.mktemp('docs_module')
    blocks = _docs_blocks()
    (directory / 'my_bonus.py').write_text(blocks['python'])
    (directory / 'my_agent.gin').write_text(blocks['gin'])
    sys.path.insert(0, str(directory))
    try:
        yield importlib.import_module('my_bonus'), directory
    finally:
        sys.path.remove(str(directory))


@pytest.fixture
def docs_module(docs_files, monkeypatch):
    """``(module, gin path)``, run from the repository root (as the page
    says)."""
    module, directory = docs_files
    monkeypatch.chdir(REPO)
    return module, str(directory / 'my_agent.gin')


def test_docs_module_is_short(docs_module):
    code = _docs_blocks()['python']
    lines = [l for l in code.splitlines() if l.strip()]
    assert len(lines) <= 40, len(lines)


def test_docs_gin_trains_the_agent_with_the_module(docs_module, tmp_path):
    from alf_rl.bin.train import train
    _, gin_file = docs_module
    result = train(str(tmp_path / 'run'), [gin_file], [
        'TrainerConfig.num_iterations=2', 'TrainerConfig.num_env_steps=0',
        'TrainerConfig.summary_interval=1'
    ], module_paths=[os.path.dirname(gin_file)])
    assert result['iterations'] == 2
    with open(str(tmp_path / 'run' / 'config.gin')) as f:
        assert '@SimHashCountBonus' in f.read()


def test_docs_module_finds_the_chain_reward(docs_module, chain_exploration,
                                            tmp_path):
    module, _ = docs_module
    found = [chain_exploration(module.SimHashCountBonus, seed,
                               tmp_path / str(seed)) > 0
             for seed in range(3)]
    assert all(found), found


def test_docs_module_counts_only_at_rollout(docs_module):
    import numpy as np
    import tensorflow as tf
    from alf_rl.data_structures import StepType, TimeStep
    module, _ = docs_module
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
