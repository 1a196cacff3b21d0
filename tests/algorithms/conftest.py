"""Fixtures shared by the algorithm tests: a tiny seeded environment, a
fixed batch of rolled-out experience, and a spy on optimizer updates."""

from typing import Any, Callable, List, Sequence, Tuple

import pytest
import tensorflow as tf

from alf_rl.data_structures import Experience, make_experience
from alf_rl.environments.suite_unittest import PolicyUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.ops import distributions as dist_ops
from alf_rl.utils.common import reset_state_if_necessary


@pytest.fixture
def policy_unittest_env() -> Callable[..., TFPyEnvironment]:
    """``make(action_type='discrete', batch_size=4, episode_length=5,
    seed=0) -> TFPyEnvironment``: the copy-the-bit ``PolicyUnittestEnv``
    (observation ``(1,)`` float32 in {0, 1}; action int64 in {0, 1} or
    float32 ``(1,)`` in [0, 1]). The same seed gives the same observations."""

    def make(action_type: str = 'discrete', batch_size: int = 4,
             episode_length: int = 5, seed: int = 0) -> TFPyEnvironment:
        return TFPyEnvironment(
            PolicyUnittestEnv(batch_size, episode_length,
                              action_type=action_type, seed=seed))

    return make


@pytest.fixture
def collect_experience() -> Callable[[Any, Any, int], Experience]:
    """``collect(algorithm, env, num_steps) -> Experience [num_steps, B]``
    (time-major, as the replay buffer reads it).

    Rolls ``algorithm.rollout`` out eagerly from ``env.reset()``, resetting
    the rollout state at FIRST steps, as a replay buffer stores it:
    distributions in ``rollout_info`` as their parameters, the rollout
    state only when ``algorithm.use_rollout_state`` (else ``()``).
    """

    def collect(algorithm, env, num_steps: int) -> Experience:
        if num_steps < 1:
            raise ValueError("collect_experience: num_steps must be >= 1, "
                             "got %r" % (num_steps, ))
        keep_state = bool(getattr(algorithm, 'use_rollout_state', False))
        initial = algorithm.get_initial_rollout_state(env.batch_size)
        time_step, state = env.reset(), initial
        rows = []
        for _ in range(num_steps):
            state = reset_state_if_necessary(state, initial,
                                             time_step.is_first())
            policy_step = algorithm.rollout(
                algorithm.transform_timestep(time_step), state)
            policy_step = policy_step._replace(
                info=dist_ops.distributions_to_params(policy_step.info))
            rows.append(make_experience(time_step, policy_step,
                                        state if keep_state else ()))
            state = policy_step.state
            time_step = env.step(algorithm.env_action(policy_step.action))
        return tf.nest.map_structure(lambda *x: tf.stack(x), *rows)

    return collect


@pytest.fixture
def spy_apply_gradients(
        monkeypatch) -> Callable[[Sequence[Any]], List[Tuple[Any, list]]]:
    """``spy(optimizers) -> calls``: records every gradient update.

    Wraps ``apply_gradients`` of each optimizer (on the instance; undone
    after the test) so that each call appends ``(optimizer,
    [(gradient, variable), ...])`` to ``calls`` and then applies the update
    as before. Whatever path a training step takes (driver,
    ``train_complete``, replay training, a gated update), what reaches the
    optimizers is what was trained. Use eagerly, to read the gradients as
    numbers.
    """

    def spy(optimizers: Sequence[Any]) -> List[Tuple[Any, list]]:
        calls = []
        for optimizer in optimizers:
            original = optimizer.apply_gradients

            def apply_gradients(grads_and_vars, *args, optimizer=optimizer,
                                original=original, **kwargs):
                grads_and_vars = list(grads_and_vars)
                calls.append((optimizer, grads_and_vars))
                return original(grads_and_vars, *args, **kwargs)

            monkeypatch.setattr(optimizer, 'apply_gradients',
                                apply_gradients)
        return calls

    return spy
