"""alf-collect: records a run's policy episodes as they were played."""

import os

import gin
import numpy as np
import pytest

from alf_rl.bin.collect import collect
from alf_rl.bin.play import play
from alf_rl.bin.train import train
from alf_rl.data_structures import StepType
from alf_rl.offline import Dataset

EXAMPLE = os.path.join(
    os.path.dirname(__file__), '..', '..', 'examples', 'ac_cart_pole.gin'
)


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    root = str(tmp_path_factory.mktemp('collect') / 'run')
    train(
        root,
        [EXAMPLE],
        [
            'create_environment.num_parallel_environments=2',
            'TrainerConfig.num_env_steps=0',
            'TrainerConfig.num_iterations=2',
            'TrainerConfig.evaluate=False',
        ],
    )
    gin.clear_config()
    return root


def test_collect_records_the_played_episodes(run, tmp_path):
    played = play(run, num_episodes=3, seed=4, max_episode_steps=20)
    gin.clear_config()
    out = str(tmp_path / 'data')
    returns = collect(
        run,
        out,
        episodes=3,
        seed=4,
        max_episode_steps=20,
        reference_episodes=2,
    )
    gin.clear_config()
    assert returns == played
    ds = Dataset(out)
    assert ds.num_episodes == 3
    assert ds.observation_spec.shape == [4]
    np.testing.assert_allclose(ds.episode_returns(), played)
    for episode, ret in zip(ds.episodes(), played):
        # CartPole: reward 1 per step after the first; T = return + 1.
        assert len(episode.step_type) == ret + 1
        assert episode.step_type[0] == StepType.FIRST
        assert episode.step_type[-1] == StepType.LAST
        assert set(episode.step_type[1:-1]) <= {StepType.MID}
        # Each step's prev_action is the action taken at the step before.
        np.testing.assert_array_equal(
            episode.prev_action[1:], episode.action[:-1]
        )
    m = ds.metadata
    assert m['env_name'] == 'CartPole-v1' and m['policy'] == 'greedy'
    assert m['behaviour_return'] == pytest.approx(np.mean(played))
    assert 1 <= m['expert_return'] <= 20
    assert 1 <= m['random_return'] <= 20


def test_collect_random_appends_and_refuses_two_modes(run, tmp_path):
    out = str(tmp_path / 'data')
    collect(run, out, episodes=2, random=True, max_episode_steps=10)
    gin.clear_config()
    collect(run, out, episodes=1, epsilon=0.5, max_episode_steps=10)
    gin.clear_config()
    ds = Dataset(out)
    assert ds.num_episodes == 3 and len(ds.shards) == 2
    assert ds.metadata['policy'] == 'epsilon 0.5'
    with pytest.raises(
        ValueError, match='--epsilon and --random: give at most one'
    ):
        collect(run, out, episodes=1, epsilon=0.1, random=True)
    with pytest.raises(ValueError, match='--noise needs continuous actions'):
        collect(run, out, episodes=1, noise=0.1, max_episode_steps=10)
    gin.clear_config()


def test_from_replay_writes_the_runs_replay_stream(tmp_path):
    from alf_rl.runs.replay_dataset import collect_replay

    root = str(tmp_path / 'dqn')
    result = train(
        root,
        [os.path.join(os.path.dirname(EXAMPLE), 'dqn_cart_pole.gin')],
        [
            'TrainerConfig.num_env_steps=0',
            'TrainerConfig.num_iterations=2',
            'TrainerConfig.initial_collect_steps=40',
            'TrainerConfig.unroll_length=30',
            'TrainerConfig.num_updates_per_train_step=1',
            'TrainerConfig.replay_buffer_capacity=1000',
            'TrainerConfig.evaluate=False',
            'TrainerConfig.jit_compile=False',
        ],
    )
    gin.clear_config()
    references = {'random_return': 22.0, 'expert_return': 500.0}
    steps = collect_replay(root, str(tmp_path / 'replay'), (), references)
    gin.clear_config()
    ds = Dataset(str(tmp_path / 'replay'))
    # Every step the run took, from its first reset on.
    assert steps == ds.num_steps == 40 + 2 * 30
    assert ds.metadata['policy'] == 'replay'
    assert ds.metadata['random_return'] == 22.0
    assert ds.metadata['expert_return'] == 500.0
    episodes = list(ds.episodes())
    ended = [e for e in episodes if e.step_type[-1] == StepType.LAST]
    assert len(ended) == result['Metrics/NumberOfEpisodes']
    # The mean return of the finished episodes (CartPole: 1 a step).
    assert ds.metadata['behaviour_return'] == pytest.approx(
        np.mean([len(e.step_type) - 1 for e in ended])
    )
    for e in episodes:
        assert e.step_type[0] == StepType.FIRST
        assert set(e.step_type[1:-1]) <= {StepType.MID}
        np.testing.assert_array_equal(e.prev_action[1:], e.action[:-1])
    # CartPole: reward 1 per step after FIRST.
    np.testing.assert_allclose(
        ds.episode_returns(), [len(e.step_type) - 1 for e in episodes]
    )
