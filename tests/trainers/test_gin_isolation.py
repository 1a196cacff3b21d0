"""Runs in one process do not share gin bindings: ``train`` and a
``Trainer`` each run with their own configuration, the caller's comes back
afterwards, and PPO then A2C in one process train as in two processes."""

import json
import os
import subprocess
import sys

import gin
import pytest

from alf_rl.bin.train import train
from alf_rl.trainers.gin_scope import GinState, own_gin_config

EXAMPLES = os.path.join(os.path.dirname(__file__), '..', '..', 'examples')
AC = os.path.join(EXAMPLES, 'ac_cart_pole.gin')
PPO = os.path.join(EXAMPLES, 'ppo_cart_pole.gin')
SHORT = [
    'create_environment.num_parallel_environments=2',
    'TrainerConfig.num_env_steps=0',
    'TrainerConfig.num_iterations=3',
    'TrainerConfig.evaluate=False',
]
PPO_SHORT = SHORT + [
    'TrainerConfig.unroll_length=8',
    'TrainerConfig.mini_batch_size=8',
    'TrainerConfig.num_updates_per_train_step=2',
]


def _numbers(result):
    return {k: v for k, v in result.items() if not k.endswith('_secs')}


def test_own_gin_config_starts_empty_and_restores_the_callers():
    import alf_rl.configurables  # noqa: F401 (registers gin names)

    gin.clear_config()
    gin.parse_config('PPOLoss.gamma = 0.5')
    kept = []
    with own_gin_config(keep=kept):
        with pytest.raises(ValueError):
            gin.query_parameter('PPOLoss.gamma')  # not bound in here
        gin.parse_config('PPOLoss.gamma = 0.9')
    assert gin.query_parameter('PPOLoss.gamma') == 0.5
    # The block's configuration was kept and can be entered again.
    with own_gin_config(kept[0]):
        assert gin.query_parameter('PPOLoss.gamma') == 0.9
    with pytest.raises(RuntimeError), own_gin_config(GinState.empty()):
        raise RuntimeError('the caller gets its configuration back')
    assert gin.query_parameter('PPOLoss.gamma') == 0.5
    gin.clear_config()


def test_ppo_then_a2c_in_one_process_trains_as_in_two(tmp_path):
    gin.clear_config()
    gin.parse_config('TrainerConfig.mini_batch_length = 1')  # the caller's
    ppo = train(str(tmp_path / 'ppo'), [PPO], PPO_SHORT)
    assert ppo['iterations'] == 3
    # PPO's TrainerConfig.mini_batch_length = 1 (and the caller's) would
    # stop A2C with 'mini_batch_length must be >= 2' if it leaked.
    a2c = train(str(tmp_path / 'a2c'), [AC], SHORT)
    assert gin.query_parameter('TrainerConfig.mini_batch_length') == 1
    gin.clear_config()
    # A2C alone in a fresh process: the same numbers.
    script = (
        'import json, sys\n'
        'from alf_rl.bin.train import train\n'
        'r = train(sys.argv[1], [sys.argv[2]], sys.argv[3:])\n'
        'print("RESULT" + json.dumps(r))\n'
    )
    done = subprocess.run(
        [sys.executable, '-c', script, str(tmp_path / 'alone'), AC] + SHORT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    line = [x for x in done.stdout.splitlines() if x.startswith('RESULT')]
    alone = json.loads(line[-1][len('RESULT') :])
    assert _numbers(alone) == _numbers(a2c)
    assert a2c['iterations'] == 3 and a2c['Metrics/EnvironmentSteps'] > 0
    # Each run's config.gin holds its own algorithm only.
    a2c_config = (tmp_path / 'a2c' / 'config.gin').read_text()
    assert 'ActorCriticAlgorithm' in a2c_config
    assert 'PPOAlgorithm' not in a2c_config
