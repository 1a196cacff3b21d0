"""``create_environment``: the gin entry point that builds training envs."""

import functools
from typing import Any, Callable, Optional

import gin
import numpy as np

from alf_rl.environments import suite_gym
from alf_rl.environments.batched_environment import BatchedPyEnvironment
from alf_rl.environments.parallel_environment import ParallelPyEnvironment
from alf_rl.environments.tf_environment import TFEnvironment, TFPyEnvironment


@gin.configurable
def create_environment(env_name: str = 'CartPole-v1',
                       num_parallel_environments: int = 1,
                       seed: Optional[int] = None,
                       use_subprocess: bool = False,
                       env_load_fn: Callable[..., Any] = suite_gym.load,
                       max_episode_steps: Optional[int] = None,
                       render_mode: Optional[str] = None,
                       backend: str = 'gym') -> TFEnvironment:
    """Builds a batched environment of ``num_parallel_environments``.

    ``backend='gym'`` (default) steps gymnasium environments in Python and
    reaches the graph through ``TFPyEnvironment``; ``backend='tf'`` builds
    the environment from TensorFlow ops (``suite_tf``: CartPole-v1,
    Pendulum-v1, MountainCar-v0, MountainCarContinuous-v0, Acrobot-v1), so
    the whole rollout runs in the graph with no Python call per step.
    Switch an example with one gin line: ``create_environment.backend='tf'``.

    Environment i is loaded with ``env_id=i`` and seeded with ``seed + i``.
    With ``use_subprocess`` each environment runs in its own worker process
    (``ParallelPyEnvironment``: for expensive environments); otherwise all
    are stepped in this process (``BatchedPyEnvironment``: for cheap ones
    like CartPole, where IPC would cost more than the physics).

    Args:
        env_name: gymnasium id (or whatever ``env_load_fn`` understands).
        num_parallel_environments: B, the batch size.
        seed: base seed; ``None`` draws one from numpy's global generator
            (so seeding numpy makes it reproducible).
        use_subprocess: one worker process per environment.
        env_load_fn: ``env_load_fn(env_name, seed=..., env_id=...,
            [max_episode_steps=..., render_mode=...])`` returning an
            unbatched ``PyEnvironment``; must be picklable with
            ``use_subprocess``.
        max_episode_steps: episode limit passed to ``env_load_fn`` when not
            ``None``.
        render_mode: passed to ``env_load_fn`` when not ``None`` (the 'tf'
            backend renders env 0 with gymnasium's renderer on demand).
        backend: 'gym' or 'tf'.

    Returns:
        A ``TFEnvironment`` with batch size ``num_parallel_environments``:
        ``TFPyEnvironment`` ('gym') or a ``suite_tf`` environment ('tf').

    Raises:
        ValueError: for an unknown gymnasium id (before any worker starts),
            an id ``suite_tf`` does not implement, a batch size < 1, an
            unknown backend, or options the 'tf' backend cannot honour.
    """
    if int(num_parallel_environments) < 1:
        raise ValueError("num_parallel_environments must be >= 1, got %r" %
                         (num_parallel_environments, ))
    if backend not in ('gym', 'tf'):
        raise ValueError("create_environment: backend must be 'gym' or 'tf', "
                         "got %r" % (backend, ))
    if backend == 'tf':
        if use_subprocess:
            raise ValueError("create_environment: use_subprocess=True has no "
                             "meaning with backend='tf' (the environment is "
                             "TensorFlow ops in this process)")
        if env_load_fn is not suite_gym.load:
            raise ValueError("create_environment: env_load_fn=%s cannot be "
                             "used with backend='tf'" %
                             getattr(env_load_fn, '__name__', env_load_fn))
        from alf_rl.environments import suite_tf
        return suite_tf.load(env_name,
                             batch_size=int(num_parallel_environments),
                             seed=seed,
                             max_episode_steps=max_episode_steps)
    # Also for functools.partial(suite_gym.load, ...) (e.g. gym_load_fn's
    # wrapped loader): fail on an unknown id before any worker starts.
    if (env_load_fn is suite_gym.load
            or getattr(env_load_fn, 'func', None) is suite_gym.load):
        suite_gym.check_env_id(env_name)
    if seed is None:
        seed = int(np.random.randint(0, 2**31 - 1 - num_parallel_environments))
    kwargs = {}
    if max_episode_steps is not None:
        kwargs['max_episode_steps'] = max_episode_steps
    if render_mode is not None:
        kwargs['render_mode'] = render_mode
    constructors = [
        functools.partial(env_load_fn, env_name, seed=seed + i, env_id=i,
                          **kwargs)
        for i in range(int(num_parallel_environments))
    ]
    if use_subprocess:
        py_env = ParallelPyEnvironment(constructors)
    else:
        py_env = BatchedPyEnvironment([c() for c in constructors])
    return TFPyEnvironment(py_env)
