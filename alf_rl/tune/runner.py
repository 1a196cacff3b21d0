"""Runs ``alf-train`` processes, a few at a time, and records each end.

Each run's output is appended to ``grid_search.stdout.log`` and
``grid_search.stderr.log`` in its directory, each attempt to
``grid_search_attempts.jsonl``; a run that exits 0 gets
``grid_search_done.json`` (exit code, wall seconds, the final metrics of
``alf-train``'s ``done:`` line), so that a rerun skips it. A failed run is
reported with the last line of its stderr and does not stop the others.
Ctrl-C (or SIGTERM) asks every running ``alf-train`` to checkpoint and
stop; a second one aborts them at once.
"""

import collections
import contextlib
import json
import os
import shlex
import signal
import subprocess
import threading
import time
from typing import (Callable, Dict, Iterator, List, NamedTuple, Optional,
                    Sequence)

from alf_rl.tune.files import (ATTEMPTS_FILE, DONE_FILE, STDERR_LOG,
                               STDOUT_LOG, write_json)
from alf_rl.tune.spec import Run

_DONE_PREFIX = 'alf-train: done: '
# TensorFlow's thread-pool sizes, read when it starts.
THREAD_VARIABLES = ('TF_NUM_INTRAOP_THREADS', 'TF_NUM_INTEROP_THREADS')


def usable_cores() -> int:
    """The number of cores this process may use (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def run_environment(num_parallel: int,
                    environ: Optional[Dict[str, str]] = None
                    ) -> Dict[str, str]:
    """The environment of a run started beside ``num_parallel - 1`` others.

    TensorFlow sizes each process's thread pools to the whole machine;
    runs side by side then contend for every core (two TD3 runs on two
    cores: 1.2x the total env steps per second with one thread each). So
    each run gets ``TF_NUM_INTRAOP_THREADS`` and ``TF_NUM_INTEROP_THREADS``
    of ``max(1, usable_cores() // num_parallel)``, unless ``environ`` sets
    either (the user's choice stands).

    Args:
        num_parallel: runs at a time (>= 1).
        environ: the environment to start from (None: ``os.environ``).
    Returns:
        A new dict.
    """
    env = dict(os.environ if environ is None else environ)
    if not any(name in env for name in THREAD_VARIABLES):
        threads = str(max(1, usable_cores() // max(1, int(num_parallel))))
        env.update((name, threads) for name in THREAD_VARIABLES)
    return env


class RunResult(NamedTuple):
    """How a run ended.

    Attributes:
        run: the run.
        status: ``'done'``, ``'skipped'`` (finished before), ``'failed'``,
            ``'interrupted'`` (stopped by Ctrl-C, resumable) or
            ``'not started'``.
        exit_code: the process's exit code (None when none ran).
        wall_secs: this attempt's wall time.
        message: the last line of stderr of a failed run, else ''.
    """
    run: Run
    status: str
    exit_code: Optional[int] = None
    wall_secs: float = 0.0
    message: str = ''


def parse_done_line(text: str) -> Dict[str, float]:
    """The metrics of the last ``alf-train: done: k=v, ...`` line in text.

    Returns:
        ``{name: value}`` ({} when there is no such line).
    """
    lines = [line for line in text.splitlines()
             if line.startswith(_DONE_PREFIX)]
    metrics = {}
    for item in lines[-1][len(_DONE_PREFIX):].split(', ') if lines else ():
        key, _, value = item.partition('=')
        try:
            metrics[key.strip()] = float(value)
        except ValueError:
            continue
    return metrics


def _tail(path: str, offset: int) -> str:
    """The text of a file from ``offset`` ('' when missing)."""
    try:
        with open(path, 'rb') as f:
            f.seek(offset)
            return f.read().decode('utf-8', 'replace')
    except OSError:
        return ''


def _size(path: str) -> int:
    return os.path.getsize(path) if os.path.exists(path) else 0


def _total_wall(root_dir: str) -> float:
    """The wall seconds of every attempt of a run (its attempts file)."""
    total = 0.0
    with open(os.path.join(root_dir, ATTEMPTS_FILE)) as f:
        for line in f:
            if line.strip():
                total += float(json.loads(line).get('wall_secs', 0.0))
    return total


class _Started(NamedTuple):
    """A running run: its process and where its output starts."""
    run: Run
    process: subprocess.Popen
    start: float
    stdout_offset: int
    stderr_offset: int


class RunPool:
    """Runs ``alf-train`` processes, ``num_parallel`` at a time.

    Each run's TensorFlow gets ``usable_cores() // num_parallel`` threads
    (``run_environment``) unless the environment sets them.

    Ctrl-C / SIGTERM (in the main thread) stops starting runs and sends the
    signal once to each running child (started in its own session, so a
    terminal's Ctrl-C reaches only this process): they checkpoint and exit
    130/143. A second signal is sent on too (children abort at once).

    Args:
        command_for: the command line of a run.
        num_parallel: the most runs at a time (>= 1).
        report: prints one progress line.
    """

    def __init__(self, command_for: Callable[[Run], List[str]],
                 num_parallel: int,
                 report: Callable[[str], None] = print):
        if int(num_parallel) < 1:
            raise ValueError('--num_parallel must be >= 1, got %r' %
                             (num_parallel, ))
        self._command_for = command_for
        self._num_parallel = int(num_parallel)
        self._report = report
        self._stop_signals: List[int] = []
        self._running: Dict[subprocess.Popen, _Started] = {}

    @property
    def interrupted(self) -> bool:
        """Whether a stop signal arrived."""
        return bool(self._stop_signals)

    def run(self, runs: Sequence[Run]) -> List[RunResult]:
        """Runs every run not finished before; returns one result per run
        (in the order they ended; finished ones first, as 'skipped')."""
        results = [RunResult(r, 'skipped') for r in runs
                   if os.path.exists(os.path.join(r.root_dir, DONE_FILE))]
        pending = collections.deque(
            r for r in runs
            if not os.path.exists(os.path.join(r.root_dir, DONE_FILE)))
        total, count = len(pending), 0
        with self._signals_forwarded():
            while pending or self._running:
                while (pending and not self.interrupted and
                       len(self._running) < self._num_parallel):
                    count += 1
                    self._start(pending.popleft(), '[%d/%d]' % (count, total))
                ended = [p for p in self._running if p.poll() is not None]
                for process in ended:
                    results.append(self._finish(self._running.pop(process)))
                if self.interrupted:
                    results += [RunResult(r, 'not started') for r in pending]
                    pending.clear()
                if not ended:
                    time.sleep(0.05)
        return results

    def _start(self, run: Run, tag: str) -> None:
        """Starts one run's process, its output appended to its logs."""
        resume = os.path.isdir(os.path.join(run.root_dir, 'ckpt'))
        os.makedirs(run.root_dir, exist_ok=True)
        out_path = os.path.join(run.root_dir, STDOUT_LOG)
        err_path = os.path.join(run.root_dir, STDERR_LOG)
        offsets = _size(out_path), _size(err_path)
        command = self._command_for(run)
        with open(out_path, 'a') as out, open(err_path, 'a') as err:
            out.write('# alf-grid-search %s: %s\n' %
                      (time.strftime('%Y-%m-%d %H:%M:%S'),
                       shlex.join(command)))
            out.flush()
            process = subprocess.Popen(command, stdout=out, stderr=err,
                                       env=run_environment(
                                           self._num_parallel),
                                       stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        self._running[process] = _Started(run, process, time.time(),
                                          offsets[0], offsets[1])
        self._report('%s start %s%s' % (tag, run.label(), ' (resuming)'
                                        if resume else ''))

    def _finish(self, started: _Started) -> RunResult:
        """Records how a process ended (the done marker on success)."""
        run, code = started.run, started.process.returncode
        wall = time.time() - started.start
        out = _tail(os.path.join(run.root_dir, STDOUT_LOG),
                    started.stdout_offset)
        err = _tail(os.path.join(run.root_dir, STDERR_LOG),
                    started.stderr_offset)
        lines = [line.strip() for line in err.splitlines() if line.strip()]
        with open(os.path.join(run.root_dir, ATTEMPTS_FILE), 'a') as f:
            f.write(json.dumps({'exit_code': code, 'wall_secs': wall,
                                'ended': time.time()}) + '\n')
        if code == 0:
            write_json(os.path.join(run.root_dir, DONE_FILE), {
                'exit_code': 0, 'wall_secs': wall,
                'total_wall_secs': _total_wall(run.root_dir),
                'metrics': parse_done_line(out), 'grid': run.config.values,
                'seed': run.seed, 'config': run.config.name})
            self._report('done %s in %.1f s' % (run.label(), wall))
            return RunResult(run, 'done', code, wall)
        if self.interrupted and code in (130, 143, -2, -15):
            self._report('stopped %s (resumable)' % run.label())
            return RunResult(run, 'interrupted', code, wall)
        message = lines[-1] if lines else '(no stderr)'
        self._report('FAILED %s (exit %s) in %.1f s: %s [%s]' %
                     (run.label(), code, wall, message, run.root_dir))
        return RunResult(run, 'failed', code, wall, message)

    @contextlib.contextmanager
    def _signals_forwarded(self) -> Iterator[None]:
        """Installs the stop handlers (main thread only) for a block."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def _handler(signum, frame):
            self._stop_signals.append(signum)
            if len(self._stop_signals) == 1:
                self._report('alf-grid-search: %s: asking %d run(s) to '
                             'checkpoint and stop (again to abort them)' %
                             (signal.Signals(signum).name,
                              len(self._running)))
            for process in list(self._running):
                if process.poll() is None:
                    process.send_signal(signum)

        old = {s: signal.signal(s, _handler)
               for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)
