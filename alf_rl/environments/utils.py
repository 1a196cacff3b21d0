"""``create_environment``: the gin entry point that builds training envs."""

import functools
import inspect
from typing import Any, Callable, Optional

import gin
import numpy as np

from alf_rl.environments import suite_atari, suite_gym
from alf_rl.environments.batched_environment import BatchedPyEnvironment
from alf_rl.environments.gym_wrapper import GymWrapper
from alf_rl.environments.parallel_environment import (DEFAULT_STEP_TIMEOUT,
                                                      ParallelPyEnvironment)
from alf_rl.environments.py_environment import PyEnvironment
from alf_rl.environments.tf_environment import TFEnvironment, TFPyEnvironment
from alf_rl.utils.config_types import is_int, is_number
from alf_rl.utils.worker_config import WorkerConfig


def _check_argument(name: str, value: Any, expected: str, ok: bool) -> None:
    """TypeError naming the gin binding unless ``ok``.

    Args:
        name: the argument's name (the message says
            ``create_environment.<name>``, the gin binding).
        value: the value that arrived.
        expected: what was expected, e.g. ``'an int >= 1'``.
        ok: whether ``value`` is acceptable.
    """
    if not ok:
        raise TypeError("create_environment.%s: expected %s, got %r (%s)" %
                        (name, expected, value, type(value).__name__))


def _check_arguments(env_name, num_parallel_environments, seed,
                     use_subprocess, env_load_fn, max_episode_steps,
                     render_mode, backend, step_timeout, check_finite,
                     worker_config):
    """Type checks of ``create_environment``'s arguments (one line each)."""
    _check_argument('num_parallel_environments', num_parallel_environments,
                    'an int >= 1', is_int(num_parallel_environments))
    if num_parallel_environments < 1:
        raise ValueError("create_environment.num_parallel_environments must "
                         "be >= 1, got %r" % (num_parallel_environments, ))
    _check_argument('seed', seed, 'an int or None', seed is None
                    or is_int(seed))
    _check_argument('use_subprocess', use_subprocess, 'a bool (True/False)',
                    isinstance(use_subprocess, (bool, np.bool_)))
    _check_argument('check_finite', check_finite, 'a bool (True/False)',
                    isinstance(check_finite, (bool, np.bool_)))
    _check_argument('env_load_fn', env_load_fn, 'a callable',
                    callable(env_load_fn))
    _check_argument('max_episode_steps', max_episode_steps,
                    'an int or None', max_episode_steps is None
                    or is_int(max_episode_steps))
    _check_argument('render_mode', render_mode, 'a str or None',
                    render_mode is None or isinstance(render_mode, str))
    _check_argument('backend', backend, "'gym' or 'tf'",
                    isinstance(backend, str))
    _check_argument('step_timeout', step_timeout,
                    'a number of seconds > 0 or None', step_timeout is None
                    or (is_number(step_timeout) and step_timeout > 0))
    _check_argument('worker_config', worker_config, 'a WorkerConfig or None',
                    worker_config is None
                    or isinstance(worker_config, WorkerConfig))
    if _base_loader(env_load_fn) is suite_gym.load:
        _check_argument('env_name', env_name, 'a gymnasium id (a str), a '
                        'gymnasium.Env class or a factory returning one',
                        isinstance(env_name, str) or callable(env_name))


def _base_loader(env_load_fn: Callable[..., Any]) -> Callable[..., Any]:
    """The function a loader calls: itself, or the function of a
    ``functools.partial`` (``gym_load_fn()``, ``atari_load_fn()``)."""
    return getattr(env_load_fn, 'func', env_load_fn)


def _takes_argument(fn: Callable[..., Any], name: str) -> bool:
    """Whether ``fn`` (a function or ``functools.partial``) has a
    parameter ``name``."""
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _create_tf_environment(env_name, num_parallel_environments, seed,
                           use_subprocess, env_load_fn, max_episode_steps,
                           check_finite):
    """``create_environment``'s 'tf' backend: a ``suite_tf`` environment."""
    if use_subprocess:
        raise ValueError("create_environment: use_subprocess=True has no "
                         "meaning with backend='tf' (the environment is "
                         "TensorFlow ops in this process)")
    if env_load_fn is not suite_gym.load:
        raise ValueError("create_environment: env_load_fn=%s cannot be "
                         "used with backend='tf'" %
                         getattr(env_load_fn, '__name__', env_load_fn))
    from alf_rl.environments import suite_tf
    env = suite_tf.load(env_name,
                        batch_size=int(num_parallel_environments),
                        seed=seed,
                        max_episode_steps=max_episode_steps)
    env.check_finite = check_finite
    env.env_name = env_name
    return env


def _check_env_id(env_name: str, env_load_fn: Callable) -> None:
    """Fails on an id unknown to gymnasium or ALE before any worker starts
    (also for ``functools.partial(suite_gym.load, ...)``, e.g. gym_load_fn's
    wrapped loader)."""
    if _base_loader(env_load_fn) is suite_gym.load:
        suite_gym.check_env_id(env_name)
    if _base_loader(env_load_fn) is suite_atari.load:
        suite_atari.check_env_id(env_name)


def load_env_factory(factory: Callable[..., Any],
                     max_episode_steps: Optional[int] = None,
                     render_mode: Optional[str] = None,
                     seed: Optional[int] = None,
                     env_id: int = 0) -> PyEnvironment:
    """Builds one environment from a gymnasium ``Env`` class or a factory
    (what ``create_environment`` loads an ``env_name`` that is not an id
    with; in worker processes too, the factory pickled by reference or,
    for one defined in a script, by value).

    Args:
        factory: a ``gymnasium.Env`` subclass or a callable returning a
            ``gymnasium.Env`` (or an unbatched ``PyEnvironment``, used as
            it is); called with ``render_mode=`` when one is given.
        max_episode_steps: wraps the environment in gymnasium's
            ``TimeLimit`` when > 0.
        render_mode: passed to ``factory``.
        seed: seed of the first reset.
        env_id: ``TimeStep.env_id`` of the environment.

    Returns:
        An unbatched ``PyEnvironment`` (a ``GymWrapper`` of the env).

    Raises:
        TypeError: the factory returned neither a ``gymnasium.Env`` nor a
            ``PyEnvironment``.
    """
    env = factory(render_mode=render_mode) if render_mode else factory()
    if isinstance(env, PyEnvironment):
        return env
    import gymnasium
    if not isinstance(env, gymnasium.Env):
        raise TypeError("create_environment.env_name: %r returned %r; "
                        "expected a gymnasium.Env" % (factory, env))
    if max_episode_steps is not None and max_episode_steps > 0:
        env = gymnasium.wrappers.TimeLimit(env, int(max_episode_steps))
    wrapped = GymWrapper(env, env_id=env_id)
    if seed is not None:
        wrapped.seed(seed)
    return wrapped


def _loader_for(env_name: Any,
                env_load_fn: Callable[..., Any]) -> Callable[..., Any]:
    """``load_env_factory`` for a class or factory given to the default
    loader, else ``env_load_fn``."""
    if env_load_fn is suite_gym.load and not isinstance(env_name, str):
        return load_env_factory
    return env_load_fn


@gin.configurable
def create_environment(env_name: str = 'CartPole-v1',
                       num_parallel_environments: int = 1,
                       seed: Optional[int] = None,
                       use_subprocess: bool = False,
                       env_load_fn: Callable[..., Any] = suite_gym.load,
                       max_episode_steps: Optional[int] = None,
                       render_mode: Optional[str] = None,
                       backend: str = 'gym',
                       step_timeout: Optional[float] = DEFAULT_STEP_TIMEOUT,
                       check_finite: bool = True,
                       evaluation: bool = False,
                       worker_config: Optional[WorkerConfig] = None
                       ) -> TFEnvironment:
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
        env_name: gymnasium id (or whatever ``env_load_fn`` understands);
            with the default loader also a ``gymnasium.Env`` subclass or a
            factory returning an env (``load_env_factory``), which
            subprocess workers build the same way.
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
        step_timeout: seconds an environment may take for a step (or
            reset) before training stops with an error naming the
            environment and the time waited (default 60; ``None``: wait for
            ever). With ``use_subprocess`` the error also names the
            worker's pid; in-process, the environments are then stepped on
            a watchdog thread (``BatchedPyEnvironment``).
        check_finite: check every reward, discount and float observation
            for NaN/Inf and stop at the first one with an error naming the
            leaf, the environment (index and ``env_name``) and the
            iteration, so that non-finite experience never reaches a loss
            or a replay buffer. On by default (a few microseconds per
            step); ``False`` opts out. XLA compiles the 'tf' backend's
            in-graph check away.
        evaluation: the environment is for greedy evaluation (the trainer
            asks for its evaluation environment so): passed on as
            ``env_load_fn(..., evaluation=True)`` when ``env_load_fn``
            takes an ``evaluation`` argument (``suite_atari.load``: whole
            games with unclipped rewards); other loaders build the same
            environment as for training.
        worker_config: with ``use_subprocess``: what every worker applies
            before it loads its environment (the caller's
            ``WorkerConfig.capture(module_paths)``: its gin bindings, so a
            user's ``@gin.configurable`` ``env_load_fn`` is bound in the
            workers as in this process). None: this process's now.

    Returns:
        A ``TFEnvironment`` with batch size ``num_parallel_environments``:
        ``TFPyEnvironment`` ('gym') or a ``suite_tf`` environment ('tf').

    Raises:
        TypeError: an argument of the wrong type (e.g.
            ``num_parallel_environments=2.5``), naming the binding, the
            value and the expected type.
        ValueError: for an unknown gymnasium id (before any worker starts),
            an id ``suite_tf`` does not implement, a batch size < 1, an
            unknown backend, or options the 'tf' backend cannot honour.
    """
    _check_arguments(env_name, num_parallel_environments, seed,
                     use_subprocess, env_load_fn, max_episode_steps,
                     render_mode, backend, step_timeout, check_finite,
                     worker_config)
    if backend not in ('gym', 'tf'):
        raise ValueError("create_environment: backend must be 'gym' or 'tf', "
                         "got %r" % (backend, ))
    if backend == 'tf':
        return _create_tf_environment(env_name, num_parallel_environments,
                                      seed, use_subprocess, env_load_fn,
                                      max_episode_steps, check_finite)
    env_load_fn = _loader_for(env_name, env_load_fn)
    _check_env_id(env_name, env_load_fn)
    if seed is None:
        seed = int(np.random.randint(0, 2**31 - 1 - num_parallel_environments))
    kwargs = {}
    if max_episode_steps is not None:
        kwargs['max_episode_steps'] = max_episode_steps
    if render_mode is not None:
        kwargs['render_mode'] = render_mode
    if evaluation and _takes_argument(env_load_fn, 'evaluation'):
        kwargs['evaluation'] = True
    constructors = [
        functools.partial(env_load_fn, env_name, seed=seed + i, env_id=i,
                          **kwargs)
        for i in range(int(num_parallel_environments))
    ]
    if use_subprocess:
        py_env = ParallelPyEnvironment(constructors,
                                       step_timeout=step_timeout,
                                       worker_config=worker_config)
    else:
        py_env = BatchedPyEnvironment([c() for c in constructors],
                                      step_timeout=step_timeout)
    return TFPyEnvironment(py_env, check_finite=check_finite,
                           env_name=env_name)
