"""RNNPolicyUnittestEnv as a long-delay memory task: a cue at FIRST, a
delay of ``gap`` steps of distractor observations, then rewards only for
the answer matching the cue."""

import numpy as np
import pytest

from alf_rl.environments import suite_unittest
from alf_rl.environments.suite_unittest import RNNPolicyUnittestEnv

F, M, L = 0, 1, 2
B, EPISODE_LENGTH, GAP, OBS_DIM, SCALE = 6, 60, 50, 3, 0.5


def _episode(policy, seed=0, distractor_scale=SCALE):
    """Runs one episode; ``policy(cue [B], time_step) -> [B] int64``.

    Returns:
        The cue [B] (+/-1) and the list of ``EPISODE_LENGTH`` time steps.
    """
    env = RNNPolicyUnittestEnv(
        B,
        EPISODE_LENGTH,
        obs_dim=OBS_DIM,
        gap=GAP,
        seed=seed,
        distractor_scale=distractor_scale,
    )
    time_step = env.reset()
    cue = time_step.observation[:, 0].copy()
    rows = [time_step]
    for _ in range(EPISODE_LENGTH - 1):
        time_step = env.step(policy(cue, time_step))
        rows.append(time_step)
    return cue, rows


def _right(cue, time_step):
    return (cue > 0).astype(np.int64)


def test_cue_at_first_then_distractors_that_never_look_like_it():
    cue, rows = _episode(_right)
    assert [r.step_type[0] for r in rows] == [F] + [M] * 58 + [L]
    first = rows[0].observation
    assert set(np.unique(first)) == {-1.0, 1.0}
    # All entries of the cue share its sign; both cues occur in the batch.
    np.testing.assert_array_equal(first, np.repeat(cue[:, None], 3, axis=1))
    assert set(cue.tolist()) == {-1.0, 1.0}
    distractors = np.stack([r.observation for r in rows[1:]])
    assert distractors.shape == (59, B, OBS_DIM)
    assert distractors.dtype == np.float32
    assert np.abs(distractors).max() <= SCALE
    # Random per step, env and entry: uniform on [-0.5, 0.5] (mean 0,
    # variance 1/12) with both signs, so the last one says nothing.
    assert abs(distractors.mean()) < 0.03
    assert abs(distractors.var() - SCALE**2 / 3) < 0.01
    assert len(np.unique(distractors)) == distractors.size
    assert set(np.sign(distractors[-1, :, 0]).tolist()) == {-1.0, 1.0}


def test_reward_only_for_the_right_answer_after_the_delay():
    _, rows = _episode(_right)
    rewards = np.stack([r.reward for r in rows])  # [T, B]
    np.testing.assert_array_equal(rewards[:GAP], 0.0)
    np.testing.assert_array_equal(rewards[GAP:], 1.0)
    env = RNNPolicyUnittestEnv(B, EPISODE_LENGTH, gap=GAP)
    assert env.optimal_return == 10.0
    np.testing.assert_array_equal(rewards.sum(0), env.optimal_return)
    # The wrong answer earns nothing, before or after the delay.
    _, rows = _episode(lambda cue, ts: 1 - _right(cue, ts))
    np.testing.assert_array_equal(np.stack([r.reward for r in rows]), 0.0)
    # A memoryless policy (answering from the latest observation) is at
    # chance on average: half of the optimum over many episodes.
    returns = [
        np.stack([r.reward for r in rows]).sum(0)
        for seed in range(20)
        for rows in [
            _episode(
                lambda cue, ts: (ts.observation[:, 0] > 0).astype(np.int64),
                seed=seed,
            )[1]
        ]
    ]
    assert 4.0 < np.mean(returns) < 6.0


def test_second_episode_draws_a_new_cue_and_zero_scale_keeps_zeros():
    env = RNNPolicyUnittestEnv(
        64, 3, obs_dim=2, gap=1, seed=1, distractor_scale=1.0
    )
    cues = []
    for _ in range(2):
        time_step = env.reset() if not cues else env.step(np.zeros(64))
        cues.append(time_step.observation[:, 0])
        env.step(np.zeros(64))
        env.step(np.zeros(64))
    assert not np.array_equal(cues[0], cues[1])
    # Without distractors the delay shows zeros and the random numbers
    # are those of the zero-observation task (the same cues).
    plain = RNNPolicyUnittestEnv(4, 5, gap=2, seed=0)
    zero = RNNPolicyUnittestEnv(4, 5, gap=2, seed=0, distractor_scale=0.0)
    for _ in range(10):
        a, b = plain.step(np.ones(4)), zero.step(np.ones(4))
        np.testing.assert_array_equal(a.observation, b.observation)


def test_load_passes_the_settings_and_rejects_a_bad_scale():
    env = suite_unittest.load(
        'RNNPolicyUnittest',
        seed=3,
        episode_length=EPISODE_LENGTH,
        obs_dim=OBS_DIM,
        gap=GAP,
        distractor_scale=SCALE,
    )
    env.reset()
    observation = env.step(np.int64(0)).observation
    assert observation.shape == (OBS_DIM,)
    assert 0 < np.abs(observation).max() <= SCALE
    with pytest.raises(ValueError, match='distractor_scale must be in'):
        RNNPolicyUnittestEnv(2, 5, gap=2, distractor_scale=1.5)
