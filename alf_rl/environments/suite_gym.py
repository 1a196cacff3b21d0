"""Loads gymnasium environments as ``GymWrapper`` ``PyEnvironment``s.

Does not import TensorFlow: ``functools.partial(suite_gym.load, ...)`` is
what ``ParallelPyEnvironment`` workers unpickle.
"""

import dataclasses
from typing import Any, Callable, Optional, Sequence

from alf_rl.environments.gym_wrapper import GymWrapper


def _import_gymnasium(environment_name):
    import gymnasium
    if environment_name.startswith('ALE/'):
        # Atari ids are registered by ale_py (the [atari] extra).
        try:
            import ale_py
            gymnasium.register_envs(ale_py)
        except ImportError:
            pass
    return gymnasium


def check_env_id(environment_name: str) -> None:
    """Returns gymnasium's ``EnvSpec`` of an id, or raises ``ValueError``.

    Args:
        environment_name: a gymnasium id such as ``'CartPole-v1'``.

    Returns:
        ``gymnasium.envs.registration.EnvSpec``.

    Raises:
        ValueError: naming the id and gymnasium's suggestion (e.g. "Did you
            mean: `CartPole`?").
    """
    if not isinstance(environment_name, str):
        raise ValueError("environment id must be a str, got %r" %
                         (environment_name, ))
    gymnasium = _import_gymnasium(environment_name)
    try:
        return gymnasium.spec(environment_name)
    except gymnasium.error.Error as e:
        hint = ''
        if environment_name.startswith('ALE/'):
            hint = ' (Atari ids need the [atari] extra: pip install ale-py)'
        raise ValueError("unknown gymnasium environment id %r: %s%s" %
                         (environment_name, e, hint)) from None


def load(environment_name: str,
         max_episode_steps: Optional[int] = None,
         gym_env_wrappers: Sequence[Callable[..., Any]] = (),
         render_mode: Optional[str] = None,
         seed: Optional[int] = None,
         env_id: int = 0,
         discount: float = 1.0,
         **gym_kwargs: Any) -> GymWrapper:
    """Creates a gymnasium environment and wraps it in a ``GymWrapper``.

    The time limit is gymnasium's ``TimeLimit``, applied *outside*
    ``gym_env_wrappers`` so that it counts agent steps (after frame skipping,
    say), as ALF and TF-Agents did. Hitting it gives a LAST step with the
    discount kept (truncation bootstraps).

    Args:
        environment_name: gymnasium id, e.g. ``'CartPole-v1'``.
        max_episode_steps: episode step limit; ``None`` uses the registry's
            (which may be none); 0 or a negative value disables it.
        gym_env_wrappers: callables ``gym_env -> gym_env`` applied in order.
        render_mode: passed to ``gymnasium.make`` (``'rgb_array'`` for
            ``render()`` to return frames).
        seed: seed of the first reset (and of the action space); ``None``
            for gymnasium's own randomness.
        env_id: ``TimeStep.env_id`` of the environment.
        discount: discount of non-terminating steps.
        **gym_kwargs: more keyword arguments of ``gymnasium.make``.

    Returns:
        An unbatched ``GymWrapper``.

    Raises:
        ValueError: for an id gymnasium does not know (see ``check_env_id``).
    """
    gymnasium = _import_gymnasium(environment_name)
    env_spec = check_env_id(environment_name)
    if max_episode_steps is None:
        max_episode_steps = env_spec.max_episode_steps
    # Make without the registry's limit so that it can wrap gym_env_wrappers.
    env_spec = dataclasses.replace(env_spec, max_episode_steps=None)
    gym_env = gymnasium.make(env_spec, render_mode=render_mode, **gym_kwargs)
    for wrapper in gym_env_wrappers:
        gym_env = wrapper(gym_env)
    if max_episode_steps is not None and max_episode_steps > 0:
        gym_env = gymnasium.wrappers.TimeLimit(gym_env,
                                               int(max_episode_steps))
    env = GymWrapper(gym_env, env_id=env_id, discount=discount)
    if seed is not None:
        env.seed(seed)
    return env
