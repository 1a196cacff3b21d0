"""Learning test: C51 (examples/c51_cart_pole.gin) reaches 195 on
CartPole-v1."""

import os

from alf_rl.bin.train import train

EXAMPLE = os.path.join(
    os.path.dirname(__file__), '..', '..', 'examples', 'c51_cart_pole.gin'
)


def test_c51_reaches_195_on_cart_pole(tmp_path):
    # Seed 0 reached 195 after ~8,000 env steps (475 after 19,523).
    result = train(
        str(tmp_path),
        [EXAMPLE],
        [
            'TrainerConfig.random_seed=0',
            'TrainerConfig.num_env_steps=20000',
            'TrainerConfig.stop_at_average_return=195',
            'TrainerConfig.evaluate=False',
        ],
    )
    # AverageReturn is the mean of the last 10 finished training episodes.
    assert result['Metrics/AverageReturn'] >= 195, result
    assert result['Metrics/EnvironmentSteps'] <= 20000
