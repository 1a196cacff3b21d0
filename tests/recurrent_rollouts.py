"""Rollouts that keep the rollout state in the experience, shared by the
recurrent replay tests (importable from any test: pytest puts ``tests/``
on ``sys.path`` for its conftest)."""

import numpy as np
import tensorflow as tf

from alf_rl.data_structures import make_experience
from alf_rl.ops import distributions as dist_ops


def collect_with_states(alg, env, num_steps, rollout=None):
    """Rolls ``alg`` out from a reset of ``env``; returns ``Experience``
    [T, B] whose ``state`` is the rollout state each step started from.
    ``rollout``: ``alg.rollout`` or a compiled copy of it (the default is
    ``alg.rollout``, eager)."""
    rollout = rollout or alg.rollout
    time_step = env.reset()
    state = alg.get_initial_rollout_state(env.batch_size)
    exps = []
    for _ in range(num_steps):
        step = rollout(time_step, state)
        info = dist_ops.distributions_to_params(step.info)
        exps.append(
            make_experience(time_step, step._replace(info=info), state)
        )
        state = step.state
        time_step = env.step(step.action)
    return tf.nest.map_structure(lambda *x: tf.stack(x), *exps)


def memory_task_reward(alg, env, recurrent, iterations):
    """Trains ``alg`` (specs prepared) on ``iterations`` replayed 10-step
    unrolls of the memory task ``env`` (``RNNPolicyUnittestEnv``,
    ``episode_length=5, gap=3``; recurrent: from the stored states, else
    without them) and returns the mean reward of its greedy policy on the
    rewarded steps (1: remembers the FIRST observation)."""
    train = tf.function(
        lambda exp: alg.train(exp, num_updates=2, mini_batch_size=16),
        autograph=False,
    )
    # Compiled: 400 eager recurrent rollout steps were most of the time.
    rollout = tf.function(alg.rollout, autograph=False)
    for _ in range(iterations):
        exp = collect_with_states(alg, env, 10, rollout)
        train(exp if recurrent else exp._replace(state=()))
    time_step = env.reset()
    state = alg.get_initial_predict_state(env.batch_size)
    rewards = []
    for t in range(6):
        step = alg.predict(time_step, state)
        state = step.state
        time_step = env.step(step.action)
        if t in (2, 3):  # rewarded with episode steps 3 and 4
            rewards.append(time_step.reward.numpy())
    return float(np.mean(rewards))
