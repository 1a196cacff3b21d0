"""The MinAtar examples on shrunk settings: each builds, trains two
iterations and checkpoints; PPO Breakout and DQN Breakout also resume.

``tests/test_examples.py`` trains every example at full size for two
iterations; this adds the checkpoint and resume, with exact step counts.
"""

import math
import os

import pytest

from alf_rl.bin.train import train

EXAMPLES_DIR = os.path.join(os.path.dirname(__file__), '..', 'examples')

# 8 games x 16 steps per iteration, 2 epochs of mini-batches of 64.
_PPO_SMALL = [
    'create_environment.num_parallel_environments=8',
    'TrainerConfig.unroll_length=16',
    'TrainerConfig.mini_batch_size=64',
    'TrainerConfig.num_updates_per_train_step=2',
]
# One game: 64 steps collected before the first update, then 8 steps and
# 2 updates of 32 per iteration.
_DQN_SMALL = [
    'TrainerConfig.initial_collect_steps=64',
    'TrainerConfig.replay_buffer_capacity=256',
    'TrainerConfig.unroll_length=8',
    'TrainerConfig.num_updates_per_train_step=2',
]
# name: (shrinking bindings, games, steps stepped after n iterations,
# resumed too)
CASES = {
    'ppo_minatar_breakout.gin': (_PPO_SMALL, 8, lambda n: 128 * n, True),
    'ppo_minatar_space_invaders.gin': (
        _PPO_SMALL,
        8,
        lambda n: 128 * n,
        False,
    ),
    'dqn_minatar_breakout.gin': (_DQN_SMALL, 1, lambda n: 64 + 8 * n, True),
}


def _train(root, name, iterations):
    bindings = CASES[name][0]
    return train(
        str(root),
        [os.path.join(EXAMPLES_DIR, name)],
        [
            'TrainerConfig.num_iterations=%d' % iterations,
            'TrainerConfig.num_env_steps=0',
            'TrainerConfig.summary_interval=1',
            'TrainerConfig.checkpoint_interval=1',
        ]
        + bindings,
    )


def _check_env_steps(result, games, stepped):
    """EnvironmentSteps counts the non-FIRST steps of the ``stepped``:
    every game's first step and the step after each finished episode
    (but for the episodes that ended on a game's last step) are FIRST."""
    episodes = result['Metrics/NumberOfEpisodes']
    steps = result['Metrics/EnvironmentSteps']
    assert stepped - games - episodes <= steps <= stepped - episodes


@pytest.mark.parametrize('name', sorted(CASES))
def test_minatar_example_trains_checkpoints_and_resumes(
    name, tmp_path, capsys
):
    _, games, stepped, resume = CASES[name]
    result = _train(tmp_path, name, 2)
    assert result['iterations'] == 2
    _check_env_steps(result, games, stepped(2))
    assert result['Metrics/NumberOfEpisodes'] >= 1
    # Rewards are 0 or 1 per step in these games: a finite, non-negative
    # average return.
    assert math.isfinite(result['Metrics/AverageReturn'])
    assert result['Metrics/AverageReturn'] >= 0.0
    assert os.path.exists(
        os.path.join(str(tmp_path), 'ckpt', 'ckpt-2', 'ckpt.index')
    )
    if not resume:
        return
    capsys.readouterr()
    again = _train(tmp_path, name, 3)
    assert 'resumed from' in capsys.readouterr().out
    assert again['iterations'] == 3
    _check_env_steps(again, games, stepped(3))
