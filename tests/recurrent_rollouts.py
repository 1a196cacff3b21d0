"""Rollouts that keep the rollout state in the experience, shared by the
recurrent replay tests (importable from any test: pytest puts ``tests/``
on ``sys.path`` for its conftest)."""

import tensorflow as tf

from alf_rl.data_structures import make_experience
from alf_rl.ops import distributions as dist_ops


def collect_with_states(alg, env, num_steps):
    """Rolls ``alg`` out from a reset of ``env``; returns ``Experience``
    [T, B] whose ``state`` is the rollout state each step started from."""
    time_step = env.reset()
    state = alg.get_initial_rollout_state(env.batch_size)
    exps = []
    for _ in range(num_steps):
        step = alg.rollout(time_step, state)
        info = dist_ops.distributions_to_params(step.info)
        exps.append(
            make_experience(time_step, step._replace(info=info), state)
        )
        state = step.state
        time_step = env.step(step.action)
    return tf.nest.map_structure(lambda *x: tf.stack(x), *exps)
