"""``ParallelPyEnvironment``: N environments in N worker processes.

Each worker is a *fresh* Python interpreter (``subprocess`` running
``_worker_main``), never a fork: forking a process that has TensorFlow
loaded is unsafe, and multiprocessing's 'spawn'/'forkserver' re-import the
parent's ``__main__`` in every child (for ``alf-train`` that would import
TensorFlow into every worker). A worker imports only what unpickling its
constructor needs (``functools.partial(suite_gym.load, ...)`` pulls in
gymnasium and numpy, no TensorFlow). Constructors are pickled with
cloudpickle when available, so lambdas and functions of ``__main__`` work.

Every wait on a worker polls its pipe with a timeout and checks that the
process is alive, so a crashed or killed worker raises ``RuntimeError``
naming the environment index, its constructor and exit code instead of
hanging. A worker that is alive but does not answer within ``step_timeout``
(60 s by default; stopped with SIGSTOP, deadlocked, stuck in a simulator)
raises ``RuntimeError`` naming the environment, the worker's pid and how
long the parent waited; the hung worker is killed and the others are shut
down politely, so no process is left behind. Exceptions raised by a
worker's environment come back as ``RuntimeError`` carrying the worker's
traceback text.

Specs are read in the parent by building one environment with the first
constructor and closing it, so workers never need TensorFlow.
"""

import numbers
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import weakref
from typing import Any, Callable, List, Optional, Sequence

# DEFAULT_STEP_TIMEOUT: seconds a worker may take to answer a step (or
# reset, render, seed, call) before the parent gives up on it; the same
# default limits an in-process environment's step.
from alf_rl.environments.batched_environment import (DEFAULT_STEP_TIMEOUT,
                                                     _BatchStacker)
from alf_rl.environments.py_environment import PyEnvironment
from alf_rl.utils.stop_request import (STOPPED, STOPPED_PHRASE, AwakeClock,
                                      wait_outcome)
from alf_rl.utils.worker_config import WorkerConfig

# Commands sent to workers.
_STEP = 0
_RESET = 1
_RENDER = 2
_SEED = 3
_CALL = 4
_CLOSE = 5
# Replies.
_OK = 0
_ERROR = 1

_COMMAND_NAMES = {
    _STEP: 'step', _RESET: 'reset', _RENDER: 'render', _SEED: 'seed',
    _CALL: 'call', _CLOSE: 'close', None: 'start'
}

# How often a waiting parent checks that the worker is still alive.
_POLL_SECONDS = 0.2


def _dumps(obj):
    try:
        import cloudpickle
        return cloudpickle.dumps(obj)
    except ImportError:
        return pickle.dumps(obj)


def _exit_with_parent(poll_seconds=1.0):
    """Starts a daemon thread that ends this worker (``os._exit``) once its
    parent is gone: a worker stuck in its environment would otherwise
    outlive a parent that was killed or aborted (a second Ctrl-C)."""
    parent = os.getppid()

    def _watch():
        while os.getppid() == parent:
            time.sleep(poll_seconds)
        os._exit(1)

    threading.Thread(target=_watch, name='alf_rl-parent-watch',
                     daemon=True).start()


def _start_env(conn):
    """Builds the worker's environment from the parent's two messages: its
    ``WorkerConfig`` (applied first: the parent's module paths and gin
    bindings, e.g. of a user's ``@gin.configurable`` ``env_load_fn``) and
    its constructor. Replies ``_OK`` or ``_ERROR``; returns the environment
    or None."""
    import gin
    try:
        config = pickle.loads(conn.recv_bytes())
        config.add_paths()  # before unpickling code of the user's modules
        constructor = pickle.loads(conn.recv_bytes())
        config.apply(skip_unknown=True)
        with gin.config_scope(config.scope or None):
            env = constructor()
        if not isinstance(env, PyEnvironment) or env.batched:
            raise ValueError(
                "constructor returned %r; expected an unbatched "
                "PyEnvironment (e.g. suite_gym.load(...))" % (env, ))
    except Exception as e:
        conn.send((_ERROR, _describe_exception(e)))
        return None
    conn.send((_OK, None))
    return env


def _worker_main(fd, index):
    """Entry point of a worker process: serves one environment over ``fd``.

    Args:
        fd: file descriptor of the worker's end of a socket pair.
        index: the environment's index in the batch (for messages).
    """
    from multiprocessing.connection import Connection
    # Ctrl-C goes to the whole process group; the parent shuts workers down.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent()
    conn = Connection(fd)
    env = None
    try:
        env = _start_env(conn)
        if env is None:
            return
        flat_step, flat_reset = env._flat_step, env._flat_reset
        while True:
            try:
                command, arg = conn.recv()
            except (EOFError, OSError):
                break  # the parent went away
            try:
                if command == _STEP:
                    result = flat_step(arg)
                elif command == _RESET:
                    result = flat_reset()
                elif command == _RENDER:
                    result = env.render()
                elif command == _SEED:
                    result = env.seed(arg)
                elif command == _CALL:
                    fn, args = pickle.loads(arg)
                    result = fn(env, *args)
                elif command == _CLOSE:
                    env.close()
                    env = None
                    conn.send((_OK, None))
                    break
                else:
                    raise ValueError("unknown command %r" % (command, ))
                conn.send((_OK, result))
            except Exception as e:
                conn.send((_ERROR, _describe_exception(e)))
    finally:
        if env is not None:
            try:
                env.close()
            except Exception:
                pass
        conn.close()


def _reports_game_scores(env):
    return env.reports_game_scores


def _pop_game_scores(env):
    return env.pop_game_scores()


def _describe_exception(e):
    return "%s: %s\n\nworker traceback:\n%s" % (type(e).__name__, e,
                                                traceback.format_exc())


def _describe_exit(code):
    if code is None:
        return "is unresponsive"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = 'signal %d' % -code
        return "died with exit code %d (killed by %s)" % (code, name)
    return "exited with exit code %d" % code


class _Worker(object):
    """Parent-side handle of one worker process: starts it and sends it
    ``config_payload`` (its pickled ``WorkerConfig``) and ``payload`` (its
    pickled constructor)."""

    def __init__(self, index, constructor, config_payload, payload):
        self.index = index
        self.description = repr(constructor)
        self.dead = False
        # Alive but did not answer in time: killed (not asked) at shutdown.
        self.hung = False
        parent_sock, child_sock = socket.socketpair()
        from multiprocessing.connection import Connection
        self.conn = Connection(parent_sock.detach())
        child_fd = child_sock.fileno()
        env = dict(os.environ)
        # The worker sees the parent's import path (to unpickle constructors
        # that live in the parent's modules) but nothing else of the parent.
        paths = [p for p in sys.path if p]
        if env.get('PYTHONPATH'):
            paths.append(env['PYTHONPATH'])
        env['PYTHONPATH'] = os.pathsep.join(paths)
        self.process = subprocess.Popen(
            [sys.executable, '-c',
             'import sys; from alf_rl.environments.parallel_environment '
             'import _worker_main; _worker_main(int(sys.argv[1]), '
             'int(sys.argv[2]))',
             str(child_fd), str(index)],
            pass_fds=(child_fd, ), env=env, close_fds=True)
        child_sock.close()
        self.send_bytes(config_payload, None)
        self.send_bytes(payload, None)

    def _dead_error(self, command):
        self.dead = True
        try:
            code = self.process.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            code = None
        return RuntimeError(
            "ParallelPyEnvironment: the worker of environment %d (pid %d, "
            "constructor %s) %s during %s" %
            (self.index, self.process.pid, self.description,
             _describe_exit(code), _COMMAND_NAMES.get(command, command)))

    def send_bytes(self, payload, command):
        try:
            self.conn.send_bytes(payload)
        except OSError:
            raise self._dead_error(command) from None

    def send(self, command, arg=None):
        try:
            self.conn.send((command, arg))
        except OSError:
            raise self._dead_error(command) from None

    def receive(self, command, timeout=None, clock=None):
        """Waits for the reply to ``command``; raises if the worker died.

        Args:
            command: the command being answered (for messages).
            timeout: seconds to wait at most (``None``: as long as the
                worker lives).
            clock: the ``AwakeClock`` started when the command was sent (a
                broadcast's deadline is shared by all its workers; the time
                this process was suspended does not count); ``None``: one
                started now.

        Raises:
            RuntimeError: the worker died, did not answer within
                ``timeout`` (it is then marked ``hung``), or its
                environment raised.
        """
        conn, process = self.conn, self.process
        clock = AwakeClock() if clock is None else clock
        while not conn.poll(_POLL_SECONDS):
            if process.poll() is not None:
                raise self._dead_error(command)
            outcome = wait_outcome(clock.started, timeout, clock=clock)
            if outcome is None:
                continue
            waited = clock.now() - clock.started
            if outcome == STOPPED:
                why = ("%s (waited %.1f s); every worker was shut down" %
                       (STOPPED_PHRASE, waited))
            else:
                setting = ('start_timeout' if command is None else
                           'create_environment.step_timeout')
                why = ("within %g s (waited %.1f s): it is alive but stopped "
                       "(SIGSTOP?) or stuck in the environment; every worker "
                       "was shut down. Raise %s for environments that are "
                       "this slow" % (timeout, waited, setting))
            self.hung = True
            raise RuntimeError(
                "ParallelPyEnvironment: the worker of environment %d (pid %d, "
                "constructor %s) did not answer %s %s" %
                (self.index, process.pid, self.description,
                 _COMMAND_NAMES.get(command, command), why))
        try:
            status, result = conn.recv()
        except (EOFError, OSError):
            raise self._dead_error(command) from None
        if status != _OK:
            raise RuntimeError(
                "ParallelPyEnvironment: environment %d (constructor %s) "
                "raised during %s: %s" %
                (self.index, self.description,
                 _COMMAND_NAMES.get(command, command), result))
        return result


def _check_timeouts(start_timeout, step_timeout):
    """``step_timeout`` as float seconds (or None); ValueError unless both
    timeouts are numbers > 0 (``step_timeout`` may be None)."""
    for name, value in (('start_timeout', start_timeout),
                        ('step_timeout', step_timeout)):
        allow_none = name == 'step_timeout'
        if value is None and allow_none:
            continue
        if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                or not value > 0):
            raise ValueError("ParallelPyEnvironment: %s must be a number of "
                             "seconds > 0%s, got %r" %
                             (name, ' or None' if allow_none else '', value))
    return None if step_timeout is None else float(step_timeout)


def _pickled_constructors(constructors):
    """Each constructor pickled (cloudpickle when available); ValueError
    naming the first that does not pickle."""
    payloads = []
    for i, c in enumerate(constructors):
        try:
            payloads.append(_dumps(c))
        except Exception as e:
            raise ValueError("ParallelPyEnvironment: cannot pickle "
                             "constructor %d (%r): %s" % (i, c, e)) from e
    return payloads


def _shutdown(workers, timeout=5.0):
    """Closes workers: hung ones are killed at once; the others get a
    polite 'close', then are killed if they do not exit within
    ``timeout``."""
    for w in workers:
        if w.hung and w.process.poll() is None:
            w.process.kill()  # SIGKILL also ends a SIGSTOPped process
    for w in workers:
        if w.process.poll() is None:
            try:
                w.conn.send((_CLOSE, None))
            except OSError:
                pass
    for w in workers:
        try:
            w.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            w.process.kill()
            w.process.wait()
        try:
            w.conn.close()
        except OSError:
            pass


class ParallelPyEnvironment(PyEnvironment):
    """Batches N unbatched environments, each in its own worker process.

    Steps are sent to every worker before any reply is read, so the
    environments step in parallel; the replies are stacked into [B, ...]
    arrays (``env_id`` of row i is i).

    Args:
        env_constructors: sequence of picklable callables, each returning an
            unbatched ``PyEnvironment`` (e.g.
            ``functools.partial(suite_gym.load, 'CartPole-v1', seed=i)``).
        start_serially: start the workers one after another (for
            environments that race on shared resources while starting).
        start_timeout: seconds a worker may take to build its environment.
        step_timeout: seconds a worker may take to answer a ``step``
            (also ``reset``, ``render``, ``seed``, ``call``); default 60.
            Past it the call raises ``RuntimeError`` naming the
            environment, the worker's pid and the time waited, the hung
            worker is killed and the others are shut down.  ``None``
            waits as long as the worker process lives. From gin:
            ``create_environment.step_timeout``.
        worker_config: what each worker applies before it calls its
            constructor (module paths, gin bindings and scope: a user's
            ``@gin.configurable`` loader is bound as in this process); the
            caller passes ``WorkerConfig.capture(...)``. None: this
            process's configuration now (``WorkerConfig.capture()``).

    Raises:
        ValueError: for an empty list, a timeout that is not a positive
            number, or if the first constructor does not build an
            unbatched ``PyEnvironment``.
        RuntimeError: if a worker fails to start.
    """

    def __init__(self,
                 env_constructors: Sequence[Callable[[], PyEnvironment]],
                 start_serially: bool = False,
                 start_timeout: float = 300.0,
                 step_timeout: Optional[float] = DEFAULT_STEP_TIMEOUT,
                 worker_config: Optional[WorkerConfig] = None):
        constructors = list(env_constructors)
        if not constructors:
            raise ValueError("ParallelPyEnvironment needs at least one "
                             "environment constructor")
        self._step_timeout = _check_timeouts(start_timeout, step_timeout)
        self._closed = True
        self._broken = None
        self._reports_game_scores = None
        self._workers = []
        # Read the specs in the parent: workers never build specs (that
        # would import TensorFlow there).
        env = constructors[0]()
        try:
            if not isinstance(env, PyEnvironment) or env.batched:
                raise ValueError(
                    "ParallelPyEnvironment: constructor 0 (%r) returned %r; "
                    "expected an unbatched PyEnvironment" %
                    (constructors[0], env))
            self._observation_spec = env.observation_spec()
            self._action_spec = env.action_spec()
        finally:
            env.close()
        self._constructors = constructors
        self._stacker = _BatchStacker(self._observation_spec,
                                      self._action_spec, len(constructors))
        config_payload = pickle.dumps(worker_config or
                                      WorkerConfig.capture())
        payloads = _pickled_constructors(constructors)
        workers = self._workers
        # Registered before starting, so that even a failed start cleans up.
        self._finalizer = weakref.finalize(self, _shutdown, workers)
        self._closed = False
        try:
            for i, c in enumerate(constructors):
                workers.append(_Worker(i, c, config_payload, payloads[i]))
                if start_serially:
                    workers[-1].receive(None, start_timeout)
            if not start_serially:
                for w in workers:
                    w.receive(None, start_timeout)
        except BaseException:
            self.close()
            raise

    @property
    def batched(self) -> bool:
        """Always True."""
        return True

    @property
    def batch_size(self) -> int:
        """int B, the number of environments."""
        return len(self._constructors)

    @property
    def pids(self) -> List[int]:
        """Process ids of the workers (for tests/monitoring)."""
        return [w.process.pid for w in self._workers]

    @property
    def step_timeout(self) -> Optional[float]:
        """Seconds a worker may take to answer (``None``: no limit)."""
        return self._step_timeout

    def observation_spec(self) -> Any:
        """Spec nest of one observation (no batch dimension)."""
        return self._observation_spec

    def action_spec(self) -> Any:
        """Spec nest of one action (no batch dimension)."""
        return self._action_spec

    def _check_open(self):
        if self._closed:
            raise RuntimeError("ParallelPyEnvironment is closed")
        if self._broken is not None:
            what = ('did not answer' if any(w.hung for w in self._workers)
                    else 'died')
            raise RuntimeError(
                "ParallelPyEnvironment cannot be used after a worker %s: "
                "%s" % (what, self._broken)) from self._broken

    def _broadcast(self, command, args):
        """Sends ``command`` to every worker, then collects every reply.

        All replies are read even when one worker fails, so that the pipes
        stay in step; the first error is raised afterwards. A dead worker
        makes the environment unusable (later calls raise at once). Every
        worker must answer within ``step_timeout`` of the broadcast; at
        the first that does not, the others are not waited for: all are
        shut down (see ``_raise``).
        """
        self._check_open()
        clock = AwakeClock()
        sent, error = [], None
        for w, a in zip(self._workers, args):
            try:
                w.send(command, a)
            except RuntimeError as e:
                error = e
                break
            sent.append(w)
        results = []
        for w in sent:
            try:
                results.append(w.receive(command, self._step_timeout, clock))
            except RuntimeError as e:
                error = error or e
                if w.hung:
                    break
        if error is not None:
            self._raise(error)
        return results

    def _raise(self, error):
        """Raises ``error``; after a death or a hang the environment is
        unusable, and after a hang every worker is shut down now."""
        if any(w.dead or w.hung for w in self._workers):
            self._broken = error
        if any(w.hung for w in self._workers):
            self._finalizer()  # kills the hung worker, closes the others
        raise error

    def _call_one(self, index, command, arg=None):
        self._check_open()
        w = self._workers[index]
        try:
            w.send(command, arg)
            return w.receive(command, self._step_timeout)
        except RuntimeError as e:
            self._raise(e)

    def _reset(self):
        results = self._broadcast(_RESET, [None] * self.batch_size)
        return self._stacker.stack(results)

    def _step(self, action):
        results = self._broadcast(_STEP, self._stacker.split_action(action))
        return self._stacker.stack(results, action)

    def render(self) -> Any:
        """Environment 0's frame ([H, W, 3] uint8) or ``None``."""
        return self._call_one(0, _RENDER)

    def seed(self, seed: Optional[int]) -> None:
        """Seeds environment i with ``seed + i`` (``None``: unseeded)."""
        self._broadcast(_SEED, [None if seed is None else seed + i
                                for i in range(self.batch_size)])

    def call(self, index: int, fn: Callable[..., Any], *args: Any) -> Any:
        """Runs ``fn(env, *args)`` in worker ``index`` and returns its result.

        Args:
            index: environment index.
            fn: picklable callable taking the worker's ``PyEnvironment``.
            *args: more picklable arguments.

        Returns:
            ``fn``'s (picklable) result.
        """
        return self._call_one(index, _CALL, _dumps((fn, args)))

    @property
    def reports_game_scores(self) -> bool:
        """Whether the workers' environments report game scores (asked of
        worker 0 once)."""
        if self._reports_game_scores is None:
            self._reports_game_scores = bool(
                self.call(0, _reports_game_scores))
        return self._reports_game_scores

    def pop_game_scores(self) -> List[float]:
        """The finished games' scores of every worker's environment
        (environment 0's first): one broadcast to the workers, none when
        they do not report games."""
        if not self.reports_game_scores:
            return []
        request = _dumps((_pop_game_scores, ()))
        return [s for scores in self._broadcast(
            _CALL, [request] * self.batch_size) for s in scores]

    def close(self) -> None:
        """Stops every worker (joins them; kills those that do not stop)."""
        if not self._closed:
            self._closed = True
            self._finalizer()
