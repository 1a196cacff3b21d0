"""suite_atari: the standard Atari preprocessing, game scores, evaluation
games, and their way through batched/subprocess/TF environments."""

import pickle

import gin
import numpy as np
import pytest

pytest.importorskip('ale_py')
pytest.importorskip('cv2')

from alf_rl.environments import suite_atari  # noqa: E402
from alf_rl.environments.gym_wrappers import atari_load_fn  # noqa: E402
from alf_rl.environments.utils import create_environment  # noqa: E402

BREAKOUT = 'BreakoutNoFrameskip-v4'
PONG = 'PongNoFrameskip-v4'


def _play(env, steps, seed=0):
    """Random actions: [(step_type, reward, observation)] of ``steps``."""
    rng = np.random.default_rng(seed)
    n = int(env.action_spec().maximum) + 1
    out = [env.reset()]
    for _ in range(steps):
        out.append(env.step(np.int64(rng.integers(n))))
    return out


def test_observation_is_a_channels_last_uint8_stack_of_84x84_frames():
    env = suite_atari.load(PONG, seed=0)
    spec = env.observation_spec()
    assert spec.shape == (84, 84, 4) and spec.dtype.name == 'uint8'
    steps = _play(env, 12)
    first = steps[0].observation
    assert first.shape == (84, 84, 4) and first.dtype == np.uint8
    # the reset fills the stack with its frame
    for k in range(1, 4):
        np.testing.assert_array_equal(first[..., k], first[..., 0])
    # each step shifts the stack by one frame (oldest first)
    for prev, cur in zip(steps[1:], steps[2:]):
        np.testing.assert_array_equal(cur.observation[..., :3],
                                      prev.observation[..., 1:])
    env.close()


def test_training_episodes_are_lives_with_clipped_rewards_and_games_are_scored(
):
    env = suite_atari.load(BREAKOUT, seed=1)
    assert env.reports_game_scores
    steps = _play(env, 2500, seed=1)
    rewards = np.array([float(t.reward) for t in steps])
    assert set(np.unique(rewards)) <= {-1.0, 0.0, 1.0}
    lasts = [i for i, t in enumerate(steps) if int(t.step_type) == 2]
    # Breakout has 5 lives: training episodes end at every lost life.
    scores = env.pop_game_scores()
    assert len(scores) >= 2 and len(lasts) >= 5 * len(scores)
    assert all(float(steps[i].discount) == 0.0 for i in lasts)
    # a game's score is at least its clipped rewards (bricks score 1-7)
    game_end = lasts[5 * len(scores) - 1]
    assert sum(scores) >= rewards[:game_end + 1].sum() > 0
    assert env.pop_game_scores() == []
    env.close()


def test_a_reset_after_a_lost_life_continues_the_game():
    env = suite_atari.load(BREAKOUT, seed=2)
    rng = np.random.default_rng(2)
    env.reset()
    for t in range(2000):  # noqa: B007 (t is read after the loop)
        if int(env.step(np.int64(rng.integers(4))).step_type) == 2:
            break
    assert t < 1999
    # the next step is the next episode's FIRST: the game goes on
    first = env.step(np.int64(0))
    assert int(first.step_type) == 0
    assert env.gym_env.unwrapped.ale.lives() == 4
    assert env.pop_game_scores() == []
    env.close()


def test_evaluation_plays_whole_games_whose_return_is_the_game_score():
    env = suite_atari.load(BREAKOUT, seed=3, evaluation=True)
    steps = _play(env, 3000, seed=3)
    ends = [i for i, t in enumerate(steps) if int(t.step_type) == 2]
    scores = env.pop_game_scores()
    assert len(ends) == len(scores) >= 1
    start = 1
    for end, score in zip(ends, scores):
        episode = sum(float(t.reward) for t in steps[start:end + 1])
        assert episode == score
        start = end + 2  # the step after LAST is the FIRST of the next game
    env.close()


def test_fire_is_pressed_where_the_game_needs_it():
    breakout = suite_atari.load(BREAKOUT, seed=0)
    pacman = suite_atari.load('MsPacmanNoFrameskip-v4', seed=0)
    for game in (breakout, suite_atari.load(PONG, seed=0)):
        fire = _find(game.gym_env, suite_atari.FireOnReset)
        assert isinstance(fire, suite_atari.FireOnReset)
        game.close()
    assert _find(pacman.gym_env, suite_atari.FireOnReset) is None
    with pytest.raises(ValueError, match='no FIRE action'):
        suite_atari.FireOnReset(pacman.gym_env.unwrapped)
    pacman.close()


def _find(env, cls):
    while True:
        if isinstance(env, cls):
            return env
        if not hasattr(env, 'env'):
            return None
        env = env.env


def test_bad_ids_are_one_line_errors():
    for bad in ['CartPole-v1', 'Pong-v4', 'ALE/NoSuchGame-v5', 3]:
        with pytest.raises(ValueError) as e:
            suite_atari.load(bad)
        assert '\n' not in str(e.value) and repr(bad) in str(e.value)


def test_create_environment_passes_evaluation_and_reports_games_in_subprocesses(
):
    gin.clear_config()
    load_fn = atari_load_fn(noop_max=5)
    pickle.loads(pickle.dumps(load_fn))
    env = create_environment(PONG, 2, seed=0, env_load_fn=load_fn,
                             use_subprocess=True)
    eval_env = create_environment(PONG, 1, seed=0, env_load_fn=load_fn,
                                  evaluation=True)
    try:
        assert env.reports_game_scores and eval_env.reports_game_scores
        evaluating = eval_env.pyenv.envs[0].gym_env
        assert _find(evaluating, suite_atari.EpisodicLife) is None
        assert env.pop_game_scores() == []
        # a whole game of Pong by random play takes ~800 steps
        import tensorflow as tf
        action = tf.zeros([2], tf.int64)
        env.reset()
        for _ in range(1000):
            env.step(action)
        scores = env.pop_game_scores()
        assert len(scores) == 2 and all(-21 <= s <= -15 for s in scores)
    finally:
        env.close()
        eval_env.close()
    # with another loader, evaluation is not passed on
    plain = create_environment('CartPole-v1', 1, seed=0, evaluation=True)
    assert not plain.reports_game_scores and plain.pop_game_scores() == []
    plain.close()
