"""Learning test: A2C (examples/ac_cart_pole.gin) solves CartPole-v1 to 195."""

import os

from alf_rl.bin.train import train

EXAMPLE = os.path.join(os.path.dirname(__file__), '..', '..', 'examples',
                       'ac_cart_pole.gin')


def test_a2c_reaches_195_on_cart_pole(tmp_path):
    result = train(str(tmp_path), [EXAMPLE], [
        'TrainerConfig.random_seed=0',
        'TrainerConfig.num_env_steps=300000',
        'TrainerConfig.stop_at_average_return=195',
        'TrainerConfig.evaluate=False',
    ])
    # AverageReturn is the mean of the last 10 finished training episodes.
    assert result['Metrics/AverageReturn'] >= 195, result
    assert result['Metrics/EnvironmentSteps'] <= 300000
