"""A deliberately slow gymnasium environment, for scale-out benchmarks.

``SlowStep`` sleeps ``delay_s`` in every ``step`` (``time.sleep`` releases
the CPU and the GIL), standing in for a simulator that takes milliseconds
per step, so that stepping N such environments at once shows its gain on
a machine with few cores. ``make_env`` is a trainer ``env`` factory
``(seed) -> TFEnvironment``; bind its other arguments with
``functools.partial`` (module-level functions and partials pickle, so it
works for environments in subprocesses and for Ray actors too)::

    env = functools.partial(make_env, env_name='Pendulum-v1', num_envs=4,
                            use_subprocess=True, delay_ms=5.0)
    trainer = OffPolicyTrainer(config, env=env)
"""

import functools
import time
from typing import Any

import gymnasium as gym


class SlowStep(gym.Wrapper):
    """Sleeps ``delay_s`` seconds in every ``step``, then steps ``env``.

    Args:
        env: the gymnasium environment to slow down.
        delay_s: seconds per step (>= 0).
    Raises:
        ValueError: ``delay_s`` < 0.
    """

    def __init__(self, env: gym.Env, delay_s: float):
        super().__init__(env)
        if delay_s < 0:
            raise ValueError("SlowStep: delay_s must be >= 0, got %r" %
                             (delay_s, ))
        self._delay_s = float(delay_s)

    def step(self, action: Any):
        """Sleeps, then returns ``env.step(action)``."""
        if self._delay_s:
            time.sleep(self._delay_s)
        return self.env.step(action)


def slow_load_fn(delay_ms: float):
    """An ``env_load_fn`` for ``create_environment``: ``suite_gym.load``
    with ``SlowStep(delay_ms / 1000)`` around the gymnasium environment.

    Args:
        delay_ms: milliseconds of sleep per step.
    """
    from alf_rl.environments import suite_gym
    wrapper = functools.partial(SlowStep, delay_s=float(delay_ms) / 1000.0)
    return functools.partial(suite_gym.load, gym_env_wrappers=(wrapper, ))


def make_env(seed: int, env_name: str = 'Pendulum-v1', num_envs: int = 1,
             use_subprocess: bool = False, delay_ms: float = 5.0):
    """B = ``num_envs`` slow environments as one ``TFEnvironment``.

    Args:
        seed: the base seed (environment i gets ``seed + i``).
        env_name: gymnasium id.
        num_envs: B.
        use_subprocess: one worker process per environment
            (``ParallelPyEnvironment``), else stepped in this process one
            after the other (``BatchedPyEnvironment``).
        delay_ms: milliseconds of sleep per step of each environment.
    """
    from alf_rl.environments.utils import create_environment
    return create_environment(env_name, num_envs, seed=seed,
                              use_subprocess=use_subprocess,
                              env_load_fn=slow_load_fn(delay_ms))
