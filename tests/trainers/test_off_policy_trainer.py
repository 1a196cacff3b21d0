"""OffPolicyTrainer: one-time and uniform replay, resume keeps the buffer."""

import os

import gin
import numpy as np
import pytest

from alf_rl.bin.train import train
from alf_rl.trainers import OffPolicyTrainer, TrainerConfig

EXAMPLE = os.path.join(os.path.dirname(__file__), '..', '..', 'examples',
                       'off_policy_ac_cart_pole.gin')
SMALL = [
    'create_environment.num_parallel_environments=2',
    'TrainerConfig.num_env_steps=0',
    'TrainerConfig.num_iterations=4',
    'TrainerConfig.unroll_length=4',
    'TrainerConfig.mini_batch_length=4',
    'TrainerConfig.evaluate=False',
    'TrainerConfig.summary_interval=1',
    'ActorDistributionNetwork.fc_layer_params=(8,)',
    'ValueNetwork.fc_layer_params=(8,)',
]
UNIFORM = SMALL + [
    'TrainerConfig.clear_replay_buffer=False',
    'TrainerConfig.replay_buffer_capacity=64',
    'TrainerConfig.initial_collect_steps=16',
    'TrainerConfig.mini_batch_size=3',
    'TrainerConfig.mini_batch_length=2',
    'TrainerConfig.num_updates_per_train_step=2',
]


def test_one_time_replay_trains_on_each_iteration(tmp_path):
    result = train(str(tmp_path), [EXAMPLE], SMALL)
    assert result['iterations'] == 4
    # 4 iterations x 4 steps x 2 envs, minus the reset steps.
    assert result['Metrics/EnvironmentSteps'] == 32 - result[
        'Metrics/NumberOfEpisodes']


def test_uniform_replay_and_resume_keeps_buffer(tmp_path):
    root = str(tmp_path / 'run')
    result = train(root, [EXAMPLE], UNIFORM)
    # initial 16 env steps (8 per env) + 4 iterations x 4 steps x 2 envs
    assert result['Metrics/EnvironmentSteps'] + result[
        'Metrics/NumberOfEpisodes'] == 16 + 32
    gin.clear_config()
    from alf_rl.bin.train import parse_gin
    parse_gin([EXAMPLE], UNIFORM + ['TrainerConfig.num_iterations=5'], root)
    trainer = OffPolicyTrainer(TrainerConfig())
    trainer._checkpointer.restore()
    # The restored buffer holds the 48 collected steps (capacity 64).
    assert int(trainer._replayer.buffer.total_size) == 48
    result = trainer.train()
    trainer.close()
    assert result['iterations'] == 5
    # No second initial collection after resuming: 8 more env steps.
    assert result['Metrics/EnvironmentSteps'] + result[
        'Metrics/NumberOfEpisodes'] == 56


def test_mini_batch_larger_than_an_iteration_is_rejected(tmp_path):
    with pytest.raises(ValueError, match='larger than what one iteration'):
        train(str(tmp_path), [EXAMPLE],
              SMALL + ['TrainerConfig.mini_batch_size=100'])


def test_batch_length_longer_than_buffer_is_rejected(tmp_path):
    with pytest.raises(ValueError, match='exceeds the replay buffer'):
        train(str(tmp_path), [EXAMPLE],
              UNIFORM + ['TrainerConfig.mini_batch_length=40'])


def test_jit_compiled_updates_train_and_stop_on_nan(tmp_path):
    result = train(str(tmp_path / 'a'), [EXAMPLE],
                   UNIFORM + ['TrainerConfig.jit_compile=True'])
    assert result['iterations'] == 4
    gin.clear_config()
    from alf_rl.trainers.errors import TrainingError
    with pytest.raises(TrainingError, match='non-finite loss'):
        train(str(tmp_path / 'b'), [EXAMPLE], UNIFORM + [
            'TrainerConfig.jit_compile=True',
            'ActorCriticLoss.td_loss_weight=1e400'
        ])


def test_several_iterations_per_call_match_one_per_call(tmp_path):
    """Replay sampling and the initial collection inside chunked calls give
    the same seeded run as one iteration per call."""
    results = []
    for n in (1, 3):
        gin.clear_config()
        results.append(train(str(tmp_path / str(n)), [EXAMPLE], UNIFORM + [
            'TrainerConfig.num_iterations=7', 'TrainerConfig.random_seed=5',
            'TrainerConfig.summary_interval=4',
            'TrainerConfig.iterations_per_call=%d' % n
        ]))
    assert results[0]['iterations'] == results[1]['iterations'] == 7
    for key in ('Metrics/EnvironmentSteps', 'Metrics/NumberOfEpisodes'):
        assert results[0][key] == results[1][key], key
    assert results[0]['Metrics/AverageReturn'] == pytest.approx(
        results[1]['Metrics/AverageReturn'], rel=1e-5)


ATARI_DQN = os.path.join(os.path.dirname(__file__), '..', '..', 'examples',
                         'dqn_atari_pong.gin')


def test_replay_frame_stack_trains_and_resumes_on_atari(tmp_path):
    pytest.importorskip('ale_py')
    pytest.importorskip('cv2')
    # Breakout on 16x16 frames, 30-step episodes and life-loss episodes:
    # the buffer meets many episode starts, each added stack is checked
    # against the one it rebuilds.
    bindings = [
        "create_environment.env_name='BreakoutNoFrameskip-v4'",
        'atari_load_fn.screen_size=16',
        'atari_load_fn.max_episode_steps=30',
        'QNetwork.conv_layer_params=((8, 4, 2),)',
        'QNetwork.fc_layer_params=(16,)',
        'TrainerConfig.replay_frame_stack=True',
        'TrainerConfig.initial_collect_steps=70',
        'TrainerConfig.replay_buffer_capacity=100',
        'TrainerConfig.num_env_steps=0',
        'TrainerConfig.num_iterations=10',
        'TrainerConfig.evaluate=False',
        'TrainerConfig.summary_interval=5',
    ]
    root = str(tmp_path / 'run')
    result = train(root, [ATARI_DQN], bindings)
    assert result['iterations'] == 10
    assert result['Metrics/NumberOfEpisodes'] >= 2
    gin.clear_config()
    from alf_rl.bin.train import parse_gin
    parse_gin([ATARI_DQN], bindings + ['TrainerConfig.num_iterations=12'],
              root)
    trainer = OffPolicyTrainer(TrainerConfig())
    trainer._checkpointer.restore()
    buffer = trainer._replayer.buffer
    assert buffer.num_frames == 4
    # One 16x16 frame (+ a flag) per step instead of a 16x16x4 stack.
    assert buffer.bytes_per_item < 16 * 16 * 4
    assert int(buffer.total_size) == 100
    stacks = buffer.gather_all().observation.numpy()
    # Consecutive stacks within an episode share their frames.
    steps = buffer.gather_all().step_type.numpy()[:, 0]
    for t in range(1, 100):
        if steps[t] != 0:  # not a FIRST step
            np.testing.assert_array_equal(stacks[t, 0, ..., :3],
                                          stacks[t - 1, 0, ..., 1:])
    result = trainer.train()
    trainer.close()
    assert result['iterations'] == 12


@pytest.mark.parametrize('bindings,match', [
    (['TrainerConfig.replay_frame_stack=True'],
     'clear_replay_buffer=True keeps only one iteration'),
    (UNIFORM[len(SMALL):] + ['TrainerConfig.replay_frame_stack=True'],
     r'one tensor stacking N >= 2 frames.*shape=\(4,\)'),
])
def test_replay_frame_stack_is_refused_where_it_cannot_apply(
        tmp_path, bindings, match):
    with pytest.raises(ValueError, match=match):
        train(str(tmp_path), [EXAMPLE], SMALL + bindings)


TD3_PENDULUM = os.path.join(os.path.dirname(__file__), '..', '..',
                            'examples', 'td3_pendulum.gin')
TD3_SMALL = [
    'TrainerConfig.num_env_steps=0',
    'TrainerConfig.num_iterations=1',
    'TrainerConfig.initial_collect_steps=256',
    'TrainerConfig.evaluate=False',
    'TrainerConfig.jit_compile=False',
    'ActorNetwork.fc_layer_params=(8,)',
    'critic/CriticNetwork.joint_fc_layer_params=(8,)',
]


def _initial_actions(root, policy):
    """The actions of the first 256 collected steps, [256]."""
    from alf_rl.bin.train import parse_gin
    gin.clear_config()
    parse_gin([TD3_PENDULUM],
              TD3_SMALL + ["TrainerConfig.initial_collect_policy=%r" % policy],
              root)
    trainer = OffPolicyTrainer(TrainerConfig())
    try:
        trainer.train()
        action = trainer._replayer.buffer.gather_all().action
    finally:
        trainer.close()
        gin.clear_config()
    return np.asarray(action).reshape(-1)[:256]


def test_uniform_initial_collection_spreads_over_the_action_range(tmp_path):
    # Pendulum's torque is in [-2, 2]; TD3's untrained actor (last layer
    # initialised within +-0.003) plus Gaussian noise of 0.1 half-ranges
    # stays near 0, a uniform draw covers the range (std 4 / sqrt(12)).
    uniform = _initial_actions(str(tmp_path / 'uniform'), 'uniform')
    rollout = _initial_actions(str(tmp_path / 'rollout'), 'rollout')
    assert uniform.min() >= -2 and uniform.max() <= 2
    assert 1.0 < uniform.std() < 1.3
    assert (np.abs(uniform) > 1.5).mean() > 0.15
    assert rollout.std() < 0.4


def test_initial_collect_policy_is_checked(tmp_path):
    with pytest.raises(ValueError, match="initial_collect_policy must be "
                       "'rollout' or 'uniform', got 'random'"):
        TrainerConfig(root_dir=str(tmp_path), algorithm_ctor=object,
                      initial_collect_policy='random')


def test_uniform_initial_collection_is_refused_with_rollout_info(tmp_path):
    # Off-policy actor-critic stores its action distribution as rollout
    # info: a uniform action would not match it.
    with pytest.raises(ValueError, match="initial_collect_policy='uniform'"
                       ": .*rollout returns info .* use 'rollout'"):
        train(str(tmp_path), [EXAMPLE], UNIFORM + [
            "TrainerConfig.initial_collect_policy='uniform'"])


def test_uniform_initial_collection_of_discrete_actions(tmp_path):
    from alf_rl.bin.train import parse_gin
    parse_gin([os.path.join(os.path.dirname(EXAMPLE), 'dqn_cart_pole.gin')], [
        'TrainerConfig.num_env_steps=0', 'TrainerConfig.num_iterations=1',
        'TrainerConfig.initial_collect_steps=400',
        "TrainerConfig.initial_collect_policy='uniform'",
        'TrainerConfig.evaluate=False'], str(tmp_path))
    trainer = OffPolicyTrainer(TrainerConfig())
    try:
        trainer.train()
        action = np.asarray(
            trainer._replayer.buffer.gather_all().action).reshape(-1)
    finally:
        trainer.close()
        gin.clear_config()
    assert set(action.tolist()) == {0, 1}
    assert 0.4 < action.mean() < 0.6
