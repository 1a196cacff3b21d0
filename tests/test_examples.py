"""Every gin file in examples/ parses, builds and trains two iterations."""

import glob
import os

import gin
import gymnasium
import pytest

from alf_rl.bin.train import train

EXAMPLES = sorted(
    glob.glob(os.path.join(os.path.dirname(__file__), '..', 'examples',
                           '*.gin')))


def test_there_are_examples():
    assert any(p.endswith('ac_cart_pole.gin') for p in EXAMPLES)
    # Every shrunk example exists (a renamed file would train full size).
    assert set(SHRINK) <= {os.path.basename(p) for p in EXAMPLES}


# Examples whose full-size settings would take minutes or gigabytes before
# their first iteration (DQN Atari: 100k random steps into a 2.8 GB
# replay buffer; QR-DQN's and Rainbow's 1M: 7.1 GB).
SHRINK = {
    'dqn_atari_pong.gin': ['TrainerConfig.initial_collect_steps=64',
                           'TrainerConfig.replay_buffer_capacity=256'],
    'qrdqn_atari_pong.gin': ['TrainerConfig.initial_collect_steps=64',
                             'TrainerConfig.replay_buffer_capacity=256'],
    'rainbow_atari_pong.gin': ['TrainerConfig.initial_collect_steps=64',
                               'TrainerConfig.replay_buffer_capacity=256'],
    'qrdqn_atari_pong_dqn_schedule.gin': [
        'TrainerConfig.initial_collect_steps=64',
        'TrainerConfig.replay_buffer_capacity=256'],
}
# The MuJoCo off-policy examples collect the zoo's 10,000 steps before their
# first update (~10 s of each test) into a buffer of 1M: 300 into 1,000
# exercise the same path.
SHRINK.update({
    name: ['TrainerConfig.initial_collect_steps=300',
           'TrainerConfig.replay_buffer_capacity=1000']
    for name in ('sac_ant.gin', 'sac_half_cheetah.gin', 'sac_hopper.gin',
                 'sac_walker2d.gin', 'td3_half_cheetah.gin', 'td3_hopper.gin')
})
# The value family's CartPole examples: 4 of their 128 updates per
# iteration (each update is several times DQN's).
SHRINK.update({
    name: ['TrainerConfig.num_updates_per_train_step=4']
    for name in ('c51_cart_pole.gin', 'qr_dqn_cart_pole.gin',
                 'iqn_cart_pole.gin', 'rainbow_cart_pole.gin')
})


@pytest.mark.parametrize('gin_file', EXAMPLES,
                         ids=[os.path.basename(p) for p in EXAMPLES])
def test_example_trains_briefly(gin_file, tmp_path):
    try:
        result = train(str(tmp_path), [gin_file], [
            'TrainerConfig.num_iterations=2',
            'TrainerConfig.num_env_steps=0', 'TrainerConfig.evaluate=False',
            'TrainerConfig.summary_interval=1'
        ] + SHRINK.get(os.path.basename(gin_file), []))
    except gymnasium.error.DependencyNotInstalled as e:
        # Box2D/MuJoCo examples need their extras ([box2d], [mujoco]).
        pytest.skip('optional dependency missing: %s' % e)
    except ImportError as e:
        # Ray examples need the [dist] extra (make test installs it).
        if 'alf_rl[dist]' not in str(e):
            raise
        pytest.skip('optional dependency missing: %s' % e)
    assert result['iterations'] == 2
    assert result['Metrics/EnvironmentSteps'] > 0
    assert os.path.exists(os.path.join(str(tmp_path), 'config.gin'))
    # The written config is complete: it parses again on its own.
    gin.clear_config()
    import alf_rl.configurables  # noqa: F401
    gin.parse_config_file(os.path.join(str(tmp_path), 'config.gin'))
