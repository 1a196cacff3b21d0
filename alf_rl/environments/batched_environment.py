"""``BatchedPyEnvironment``: B unbatched ``PyEnvironment``s stepped in-process.

For cheap environments (CartPole, Pendulum) a subprocess per environment
costs more in inter-process communication than the physics; stepping them in
a Python loop is faster. ``ParallelPyEnvironment`` is the subprocess
counterpart. Both stack their per-environment results with ``_BatchStacker``.

A step (or reset) that does not finish within ``step_timeout`` seconds
raises ``EnvironmentTimeoutError`` naming the environment, instead of hanging
training for ever: with a timeout the environments are stepped on one
watchdog thread (a daemon thread owned by the batch; the caller waits for
its answer at most ``step_timeout`` seconds, which costs some 10-20 us per
batched step). Once training was asked to stop (the first Ctrl-C), the wait
ends ``STOP_GRACE_SECONDS`` later (``alf_rl.utils.stop_request``). A hung
environment's thread is left behind (Python cannot stop a thread) and the
batch refuses every later call.

No TensorFlow at import time (specs are read lazily from the environments).
"""

import queue
import threading
import weakref
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from alf_rl.data_structures import StepType, TimeStep
from alf_rl.environments.py_environment import (PyEnvironment, flatten_nest,
                                                numpy_dtype, pack_nest_as,
                                                spec_shape)
from alf_rl.utils.stop_request import (STOPPED, STOPPED_PHRASE, AwakeClock,
                                      wait_outcome)

_FIRST = int(StepType.FIRST)

# Seconds an environment may take for one step or reset (in this process or
# in a worker process) before training stops with an error naming it.
DEFAULT_STEP_TIMEOUT = 60.0
# Seconds between checks for a stop request while waiting for a step.
_POLL_SECONDS = 0.2


class EnvironmentTimeoutError(RuntimeError):
    """An in-process environment did not finish a step within the timeout."""


def describe_environment(env: PyEnvironment) -> str:
    """A short name of ``env``: its gymnasium id when it wraps one, else its
    class name (e.g. ``'CartPole-v1'``, ``'PolicyUnittestEnv'``)."""
    gym_env = getattr(env, 'gym_env', None)
    env_id = getattr(getattr(gym_env, 'spec', None), 'id', None)
    if env_id:
        return str(env_id)
    if gym_env is not None:
        return type(getattr(gym_env, 'unwrapped', gym_env)).__name__
    return type(env).__name__


class _StepWatchdog(object):
    """Runs calls on one daemon thread and waits ``timeout`` s for each.

    Args:
        timeout: seconds > 0 one call may take.
        describe: ``describe(i)``, the name of environment i.
    """

    def __init__(self, timeout: float,
                 describe: Callable[[int], str]) -> None:
        self.timeout = float(timeout)
        self.current = 0  # index of the environment being called
        self._describe = describe
        self._calls: 'queue.SimpleQueue[Any]' = queue.SimpleQueue()
        self._results: 'queue.SimpleQueue[Any]' = queue.SimpleQueue()
        self._hung: Optional[str] = None
        self._thread: Optional[threading.Thread] = None

    def call(self, fn: Callable[[], Any], what: str) -> Any:
        """``fn()`` run on the watchdog thread.

        Args:
            fn: the call; it sets ``self.current`` to the index of the
                environment it is calling.
            what: 'step' or 'reset', for the message.
        Returns:
            What ``fn`` returned (its exception is raised here).
        Raises:
            EnvironmentTimeoutError: ``fn`` took longer than ``timeout``, or
                an earlier call did.
        """
        if self._hung is not None:
            raise EnvironmentTimeoutError(self._hung)
        if self._thread is None:
            # The thread holds the queues only: once this watchdog is
            # collected (or closed) a None ends it.
            self._thread = threading.Thread(
                target=_serve, args=(self._calls, self._results),
                name='alf_rl-env-watchdog', daemon=True)
            self._thread.start()
            weakref.finalize(self, self._calls.put, None)
        self._calls.put(fn)
        ok, value = self._wait(what)
        if not ok:
            raise value
        return value

    def _wait(self, what):
        """The call's ``(ok, value)``, waited for in slices so that a stop
        request (``alf_rl.utils.stop_request``) cuts the wait short."""
        # The time this process was suspended does not count (AwakeClock).
        clock = AwakeClock()
        deadline = clock.started + self.timeout
        while True:
            try:
                return self._results.get(
                    timeout=max(0.0, min(_POLL_SECONDS,
                                         deadline - clock.now())))
            except queue.Empty:
                pass
            outcome = wait_outcome(clock.started, self.timeout, clock=clock)
            if outcome is None:
                continue
            why = STOPPED_PHRASE if outcome == STOPPED else (
                "within %g s (create_environment.step_timeout; None waits "
                "for ever)" % self.timeout)
            self._hung = (
                "environment %d (%s) did not finish its %s %s; it is not "
                "stepped again" %
                (self.current, self._describe(self.current), what, why))
            raise EnvironmentTimeoutError(self._hung) from None

    @property
    def hung(self) -> Optional[int]:
        """Index of the environment that timed out, or None."""
        return None if self._hung is None else self.current

    def close(self) -> None:
        """Ends the thread (after the call it is in, if any)."""
        self._calls.put(None)
        self._thread = None


def _serve(calls: 'queue.SimpleQueue[Any]',
           results: 'queue.SimpleQueue[Any]') -> None:
    """The watchdog thread: runs the calls until it gets None."""
    while True:
        fn = calls.get()
        if fn is None:
            return
        try:
            results.put((True, fn()))
        except BaseException as e:  # re-raised in the caller
            results.put((False, e))


def _structure_of(nest):
    """``None`` if ``nest`` is a single leaf, else the nest itself."""
    return nest if isinstance(nest, (dict, list, tuple)) else None


class _BatchStacker(object):
    """Stacks per-environment ``_flat_step`` results into a batched TimeStep.

    Args:
        observation_spec: nest of specs of one observation.
        action_spec: nest of specs of one action.
        batch_size: B.
    """

    def __init__(self, observation_spec, action_spec, batch_size):
        self.batch_size = batch_size
        self.obs_structure = _structure_of(observation_spec)
        flat_obs_specs = flatten_nest(observation_spec)
        self.num_obs = len(flat_obs_specs)
        self.action_structure = _structure_of(action_spec)
        flat_action_specs = flatten_nest(action_spec)
        self.action_dtypes = [numpy_dtype(s) for s in flat_action_specs]
        self.zero_actions = [
            np.zeros((batch_size, ) + spec_shape(s), numpy_dtype(s))
            for s in flat_action_specs
        ]
        self.env_id = np.arange(batch_size, dtype=np.int32)

    def split_action(self, action):
        """[B, ...] action nest -> list of B per-environment actions."""
        if self.action_structure is None:
            # Rows as numpy scalars/views: ``list(a)`` is the cheapest split.
            return list(action)
        flat = flatten_nest(action)
        return [
            pack_nest_as(self.action_structure, [a[i] for a in flat])
            for i in range(self.batch_size)
        ]

    def stack(self, results, action=None):
        """Builds the batched ``TimeStep``.

        Args:
            results: B tuples ``(step_type, reward, discount, flat_obs)``.
            action: the [B, ...] action nest that was applied, or ``None``
                after a reset (``prev_action`` is then zeros).

        Returns:
            ``TimeStep`` of [B, ...] numpy arrays.
        """
        step_types, rewards, discounts, observations = zip(*results)
        step_type = np.array(step_types, np.int32)
        # np.array(list of equal-shape arrays) stacks them, ~3x faster than
        # np.stack for small arrays.
        if self.num_obs == 1:
            observation = np.array([o[0] for o in observations])
        else:
            flat = [np.array(leaves) for leaves in zip(*observations)]
            observation = pack_nest_as(self.obs_structure, flat)
        if action is None:
            flat_prev = [z.copy() for z in self.zero_actions]
        else:
            flat_prev = [
                np.array(a, d) for a, d in zip(
                    [action] if self.action_structure is None else
                    flatten_nest(action), self.action_dtypes)
            ]
            if _FIRST in step_types:
                first = step_type == _FIRST
                for a in flat_prev:
                    a[first] = 0
        prev_action = (flat_prev[0] if self.action_structure is None else
                       pack_nest_as(self.action_structure, flat_prev))
        return TimeStep(step_type=step_type,
                        reward=np.array(rewards, np.float32),
                        discount=np.array(discounts, np.float32),
                        observation=observation,
                        prev_action=prev_action,
                        env_id=self.env_id.copy())


def _watched(watchdog: _StepWatchdog, calls: List[Callable[..., Any]],
             args: Optional[List[Any]] = None) -> List[Any]:
    """``[calls[i](args[i])]`` (``calls[i]()`` without ``args``), noting in
    ``watchdog.current`` which environment runs."""
    results = []
    for i, call in enumerate(calls):
        watchdog.current = i
        results.append(call() if args is None else call(args[i]))
    return results


def _check_same_specs(specs, what, describe):
    """Raises ValueError if environments disagree on a spec nest."""
    flat0 = flatten_nest(specs[0])
    for i, s in enumerate(specs[1:], 1):
        flat = flatten_nest(s)
        if len(flat) != len(flat0) or any(a != b
                                          for a, b in zip(flat0, flat)):
            raise ValueError(
                "%s of environment %d (%s) differs from environment 0's: %s "
                "vs %s; all environments of a batch must have equal specs" %
                (what, i, describe(i), s, specs[0]))


class BatchedPyEnvironment(PyEnvironment):
    """Batches unbatched ``PyEnvironment``s, stepping them in this process.

    ``env_id`` of row i is i. Each environment resets itself after its own
    LAST step (the row's action is then ignored and its ``prev_action`` is
    zero).

    Args:
        envs: non-empty sequence of unbatched ``PyEnvironment``s with equal
            specs.
        step_timeout: seconds one step (or reset) of the batch may take
            before ``EnvironmentTimeoutError`` names the environment that
            hangs (module docstring); ``None``: step in the calling thread
            and wait for ever.

    Raises:
        ValueError: for an empty list, a batched environment, unequal
            specs or a timeout that is not a number > 0.
    """

    def __init__(self, envs: Sequence[PyEnvironment],
                 step_timeout: Optional[float] = DEFAULT_STEP_TIMEOUT):
        if step_timeout is not None and (
                isinstance(step_timeout, bool) or
                not isinstance(step_timeout, (int, float)) or
                not step_timeout > 0):
            raise ValueError("BatchedPyEnvironment: step_timeout must be a "
                             "number of seconds > 0 or None, got %r" %
                             (step_timeout, ))
        envs = list(envs)
        if not envs:
            raise ValueError("BatchedPyEnvironment needs at least one "
                             "environment")
        for i, env in enumerate(envs):
            if not isinstance(env, PyEnvironment):
                raise ValueError(
                    "BatchedPyEnvironment: environment %d is a %s, expected "
                    "an unbatched PyEnvironment (e.g. suite_gym.load(...))" %
                    (i, type(env).__name__))
            if env.batched:
                raise ValueError(
                    "BatchedPyEnvironment: environment %d is already batched "
                    "(batch_size %s); pass unbatched environments" %
                    (i, env.batch_size))
        self._envs = envs
        self._observation_spec = envs[0].observation_spec()
        self._action_spec = envs[0].action_spec()
        describe = lambda i: type(envs[i]).__name__
        _check_same_specs([e.observation_spec() for e in envs],
                          'observation_spec', describe)
        _check_same_specs([e.action_spec() for e in envs], 'action_spec',
                          describe)
        self._stacker = _BatchStacker(self._observation_spec,
                                      self._action_spec, len(envs))
        self._flat_steps = [e._flat_step for e in envs]
        self._closed = False
        self._watchdog = (None if step_timeout is None else _StepWatchdog(
            step_timeout, lambda i: describe_environment(envs[i])))

    @property
    def step_timeout(self) -> Optional[float]:
        """Seconds one step may take (None: no limit)."""
        return None if self._watchdog is None else self._watchdog.timeout

    @property
    def envs(self) -> List[PyEnvironment]:
        """The list of wrapped unbatched environments."""
        return list(self._envs)

    @property
    def batched(self) -> bool:
        """Always True."""
        return True

    @property
    def batch_size(self) -> int:
        """int B, the number of environments."""
        return len(self._envs)

    def observation_spec(self) -> Any:
        """Spec nest of one observation (no batch dimension)."""
        return self._observation_spec

    def action_spec(self) -> Any:
        """Spec nest of one action (no batch dimension)."""
        return self._action_spec

    def _reset(self):
        resets = [e._flat_reset for e in self._envs]
        if self._watchdog is None:
            results = [f() for f in resets]
        else:
            watchdog = self._watchdog
            results = watchdog.call(lambda: _watched(watchdog, resets),
                                    'reset')
        return self._stacker.stack(results)

    def _step(self, action):
        # Hot path: one Python call per environment, then one stack.
        actions = self._stacker.split_action(action)
        if self._watchdog is None:
            results = [f(a) for f, a in zip(self._flat_steps, actions)]
        else:
            watchdog, steps = self._watchdog, self._flat_steps
            results = watchdog.call(
                lambda: _watched(watchdog, steps, actions), 'step')
        return self._stacker.stack(results, action)

    @property
    def reports_game_scores(self) -> bool:
        """Whether any of the environments reports game scores."""
        return any(e.reports_game_scores for e in self._envs)

    def pop_game_scores(self) -> List[float]:
        """The finished games' scores of all environments, environment 0's
        first."""
        return [s for e in self._envs for s in e.pop_game_scores()]

    def render(self) -> Optional[np.ndarray]:
        """Environment 0's frame ([H, W, 3] uint8) or ``None``."""
        return self._envs[0].render()

    def seed(self, seed: Optional[int]) -> None:
        """Seeds environment i with ``seed + i`` (``None``: unseeded)."""
        for i, env in enumerate(self._envs):
            env.seed(None if seed is None else seed + i)

    def close(self) -> None:
        """Closes every environment."""
        if not self._closed:
            self._closed = True
            hung = None if self._watchdog is None else self._watchdog.hung
            if self._watchdog is not None:
                self._watchdog.close()
            for i, env in enumerate(self._envs):
                if i != hung:  # its thread may hold the environment's locks
                    env.close()
