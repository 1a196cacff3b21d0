"""The Python API (no gin): ``examples/python/*.py`` train for two
iterations and give exactly the numbers of their gin counterparts under the
same seed."""

import importlib.util
import os

import pytest

from alf_rl.bin.train import train

EXAMPLES = os.path.join(os.path.dirname(__file__), '..', '..', 'examples')


def _load_example(name):
    path = os.path.join(EXAMPLES, 'python', name + '.py')
    spec = importlib.util.spec_from_file_location('example_' + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _same_numbers(python_result, gin_result):
    """Every value but the wall-clock times is identical."""
    keys = sorted(k for k in gin_result if not k.endswith('_secs'))
    assert sorted(k for k in python_result if not k.endswith('_secs')) == keys
    for key in keys:
        assert python_result[key] == gin_result[key], key


def _run_both(tmp_path, name):
    example = _load_example(name)
    python_result = example.main([
        '--root_dir', str(tmp_path / 'python'), '--num_iterations', '2',
        '--eval_interval', '2'
    ])
    gin_result = train(str(tmp_path / 'gin'),
                       [os.path.join(EXAMPLES, name + '.gin')], [
                           'TrainerConfig.num_iterations=2',
                           'TrainerConfig.num_env_steps=0',
                           'TrainerConfig.eval_interval=2'
                       ])
    return python_result, gin_result


def test_ppo_cart_pole_example(tmp_path):
    result, gin_result = _run_both(tmp_path, 'ppo_cart_pole')
    assert result['iterations'] == 2
    assert not result['stopped_early']
    # 2 iterations x 32 steps x 8 envs; a LAST -> FIRST step is no env step.
    assert (result['Metrics/EnvironmentSteps'] +
            result['Metrics/NumberOfEpisodes'] == 2 * 32 * 8)
    # Evaluated at iteration 2: 10 greedy episodes, reward 1 per step.
    assert 8 <= result['eval/Metrics/AverageEpisodeLength'] <= 500
    assert result['eval/Metrics/AverageReturn'] == pytest.approx(
        result['eval/Metrics/AverageEpisodeLength'], rel=1e-6)  # float32
    assert os.path.exists(str(tmp_path / 'python' / 'ckpt' / 'ckpt-2'))
    _same_numbers(result, gin_result)


def test_sac_pendulum_example(tmp_path):
    result, gin_result = _run_both(tmp_path, 'sac_pendulum')
    assert result['iterations'] == 2
    # 1,000 initial steps, then one step per iteration.
    assert (result['Metrics/EnvironmentSteps'] +
            result['Metrics/NumberOfEpisodes'] == 1000 + 2)
    # Evaluated at iteration 2: 5 greedy episodes of Pendulum's 200 steps,
    # rewards in [-16.3, 0].
    assert result['eval/Metrics/AverageEpisodeLength'] == 200
    assert -16.3 * 200 < result['eval/Metrics/AverageReturn'] < 0
    _same_numbers(result, gin_result)


def test_environment_arguments_are_checked(tmp_path):
    example = _load_example('ppo_cart_pole')
    from alf_rl.trainers import OffPolicyTrainer, TrainerConfig
    config = TrainerConfig(root_dir=str(tmp_path),
                           algorithm_ctor=example.make_algorithm,
                           evaluate=True, num_eval_episodes=3)
    with pytest.raises(ValueError, match='also pass eval_env'):
        OffPolicyTrainer(config, env=example.make_env)
    with pytest.raises(TypeError, match='env: expected a TFEnvironment or a '
                       'factory'):
        OffPolicyTrainer(config, env='CartPole-v1', eval_env=example.make_env)
    with pytest.raises(TypeError, match='eval_env: the factory returned '
                       'NoneType'):
        OffPolicyTrainer(config, env=example.make_env,
                         eval_env=lambda seed: None)
    with pytest.raises(ValueError, match='eval_env: batch size 8, expected '
                       'TrainerConfig.num_eval_episodes=3'):
        OffPolicyTrainer(config, env=example.make_env,
                         eval_env=example.make_env)
