r"""Runs a grid (or random samples) of gin settings x seeds as ``alf-train``
runs, resumably, in parallel processes, and summarizes them.

Usage::

    alf-grid-search --gin_file examples/ppo_cart_pole.gin --root_dir PARENT \
        --grid 'PPOLoss.gamma=[0.98, 0.99]' \
        --grid 'Adam.learning_rate=[1e-3, 3e-4]' \
        [--gin_param 'TrainerConfig.num_env_steps=100000' ...] \
        [--seeds 0,1,2] [--num_parallel N] [--random_samples K --seed S] \
        [--module_path DIR] [--metric AverageReturn] [--dry_run] [--force]
    alf-grid-search --summarize PARENT [--metric AverageReturn]
    alf-grid-search ... --optuna N     # TPE over the --grid choices

A configuration is one combination of the ``--grid`` values (the cartesian
product, or ``--random_samples K`` of it drawn with ``--seed S``); each is
run once per seed (``TrainerConfig.random_seed``) as an ``alf-train``
subprocess in its own root_dir ``PARENT/<config>/seed<k>``, where
``<config>`` names the values (``gamma=0.98,learning_rate=0.001``; a hash
is appended when it would be long or not a safe file name). Runs go seed
by seed (every configuration's seed 0 first), ``--num_parallel`` at a time
(default: the number of cores; each ``alf-train`` uses about one core).

Rerunning the same command skips finished runs (``grid_search_done.json``
in the run's directory: exit code, wall seconds, the final metrics of
``alf-train``'s ``done:`` line) and resumes unfinished ones from their
checkpoints. A failed run is reported with the last line of its stderr and
does not stop the others; the command then exits 1. Ctrl-C (or SIGTERM)
asks every running ``alf-train`` to checkpoint and stop (exit 130; a
second Ctrl-C aborts them at once); rerun the same command to go on.
Each run's output is appended to ``grid_search.stdout.log`` and
``grid_search.stderr.log`` in its directory. ``PARENT/grid_search.json``
records the search; a different search (gin files, grid, fixed bindings,
sampling) into the same PARENT is refused unless ``--force``. Other
``--seeds`` are allowed: they add runs to the same search.

At the end (and with ``--summarize PARENT``): ``PARENT/summary.md`` and
``PARENT/summary.csv`` (per configuration: final and best ``--metric``
over seeds, mean with a 95% bootstrap interval, IQM with >= 5 seeds, env
steps, wall time; best first), ``PARENT/<config>/curve.svg`` (the seeds'
mean and range) and TensorBoard hparams summaries
(``tensorboard --logdir PARENT``, HParams tab).
"""

import argparse
import ast
import collections
import contextlib
import hashlib
import io
import itertools
import json
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from typing import (Any, Callable, Dict, Iterator, List, NamedTuple,
                    Optional, Sequence, Tuple)

from alf_rl.utils.checkpoint import atomic_write_text

SEARCH_FILE = 'grid_search.json'
DONE_FILE = 'grid_search_done.json'
ATTEMPTS_FILE = 'grid_search_attempts.jsonl'
STDOUT_LOG = 'grid_search.stdout.log'
STDERR_LOG = 'grid_search.stderr.log'
_HPARAMS_SUFFIX = '.grid_search_hparams'
_MAX_NAME = 80
_SEED_BINDING = 'TrainerConfig.random_seed'
_DONE_PREFIX = 'alf-train: done: '


class Config(NamedTuple):
    """One combination of grid values.

    Attributes:
        name: its directory name under the parent (``config_name``).
        values: ``{gin name: value}`` in ``--grid`` order.
    """
    name: str
    values: Dict[str, Any]

    def bindings(self) -> List[str]:
        """The gin bindings (``'PPOLoss.gamma=0.98'``) of the values."""
        return ['%s=%s' % (name, gin_value_text(value))
                for name, value in self.values.items()]


_GIN_REFERENCE = re.compile(r'[@%][A-Za-z_][\w./]*(\(\))?')


def gin_value_text(value: Any) -> str:
    """A grid value as gin text: a string that is a gin reference or
    macro (``'@ReturnScaleNormalizer'``, ``'@VarianceScaling()'``,
    ``'%GAMMA'``) is written as is; anything else as its Python ``repr``
    (which gin parses back: numbers, quoted strings, booleans, None,
    tuples, lists)."""
    if isinstance(value, str) and _GIN_REFERENCE.fullmatch(value):
        return value
    return repr(value)


class Run(NamedTuple):
    """One ``alf-train`` run: a configuration and a seed."""
    config: Config
    seed: int
    root_dir: str


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


def parse_grid(specs: Sequence[str]) -> Dict[str, List[Any]]:
    """Parses ``--grid`` arguments.

    Args:
        specs: strings ``'Configurable.param=[v1, v2, ...]'``; the values a
            Python list (or tuple) of literals (numbers, strings, booleans,
            None, tuples); a string like ``'@Name'``, ``'@Name()'`` or
            ``'%MACRO'`` stands for that gin reference (``gin_value_text``).
    Returns:
        ``{gin name: [values]}`` in the order given.
    Raises:
        ValueError: one line naming the ``--grid`` and what is wrong.
    """
    grid = {}
    for spec in specs or ():
        name, sep, text = spec.partition('=')
        name = name.strip()
        if not sep or not re.fullmatch(r'[\w./]+\.\w+', name):
            raise ValueError("--grid %r: expected 'Configurable.param=[v1, "
                             "v2]'" % spec)
        try:
            values = ast.literal_eval(text.strip())
        except (SyntaxError, ValueError):
            raise ValueError("--grid %r: the values must be a Python list "
                             "of literals, e.g. [0.98, 0.99] or ['a', 'b']"
                             % spec) from None
        if not isinstance(values, (list, tuple)) or not values:
            raise ValueError('--grid %r: expected a non-empty list of '
                             'values, got %r' % (spec, values))
        if name in grid:
            raise ValueError('--grid %r: %s is given twice' % (spec, name))
        if name == _SEED_BINDING:
            raise ValueError('--grid %r: give seeds with --seeds' % spec)
        grid[name] = list(values)
    return grid


def parse_seeds(text: str) -> List[int]:
    """``'0,1,2'`` or ``'0-4'`` (inclusive) -> list of distinct ints.

    Raises:
        ValueError: not integers, or a seed given twice.
    """
    seeds = []
    for part in str(text).split(','):
        part = part.strip()
        match = re.fullmatch(r'(\d+)-(\d+)', part)
        try:
            seeds += (list(range(int(match.group(1)), int(match.group(2)) +
                                 1)) if match else [int(part)])
        except ValueError:
            raise ValueError("--seeds %r: expected integers like '0,1,2' "
                             "or '0-4'" % text) from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError('--seeds %r: expected distinct seeds' % text)
    return seeds


def _value_text(value: Any) -> str:
    """A short text of a grid value for a directory name."""
    if isinstance(value, (list, tuple)):
        return '-'.join(_value_text(v) for v in value)
    return value if isinstance(value, str) else repr(value)


def config_name(values: Dict[str, Any]) -> str:
    """A short, readable, file-name-safe name of a configuration.

    Parameters are named by their last part (``PPOLoss.gamma`` ->
    ``gamma``) unless two share it. When the text has characters outside
    ``[A-Za-z0-9._=,+-]`` (replaced by ``_``) or is longer than 80
    characters (cut), an 8-hex-digit hash of the values keeps it unique.

    Args:
        values: ``{gin name: value}``.
    Returns:
        e.g. ``'gamma=0.98,learning_rate=0.001'``; ``'default'`` for none.
    """
    if not values:
        return 'default'
    short = [name.split('.')[-1] for name in values]
    parts = ['%s=%s' % (s if short.count(s) == 1 else name, _value_text(v))
             for s, (name, v) in zip(short, values.items())]
    text = ','.join(parts)
    safe = re.sub(r'[^A-Za-z0-9._=,+-]', '_', text)
    if safe == text and len(safe) <= _MAX_NAME:
        return safe
    digest = hashlib.sha1(json.dumps(
        [[k, repr(v)] for k, v in values.items()]).encode()).hexdigest()[:8]
    return '%s-%s' % (safe[:_MAX_NAME - 9], digest)


def expand_grid(grid: Dict[str, List[Any]],
                random_samples: Optional[int] = None,
                sample_seed: int = 0) -> List[Config]:
    """The configurations of a grid.

    Args:
        grid: ``{gin name: [values]}`` (``parse_grid``).
        random_samples: when given, this many distinct configurations drawn
            uniformly from the cartesian product (``random.Random(
            sample_seed)``), kept in product order.
        sample_seed: seed of that draw.
    Returns:
        List of ``Config``, the first grid name varying slowest.
    Raises:
        ValueError: ``random_samples`` < 1 or more than the product has.
    """
    names = list(grid)
    product = [dict(zip(names, combo))
               for combo in itertools.product(*(grid[n] for n in names))]
    if random_samples is not None:
        if not 1 <= random_samples <= len(product):
            raise ValueError('--random_samples %d: expected 1 to %d (the '
                             'grid has %d configurations)' %
                             (random_samples, len(product), len(product)))
        picked = random.Random(sample_seed).sample(range(len(product)),
                                                   random_samples)
        product = [product[i] for i in sorted(picked)]
    configs = [Config(config_name(values), values) for values in product]
    names_seen = collections.Counter(c.name for c in configs)
    clash = [n for n, count in names_seen.items() if count > 1]
    if clash:
        raise ValueError('--grid: values %s give the same directory name; '
                         'make them differ in text' % clash[0])
    return configs


def plan_runs(parent: str, configs: Sequence[Config],
              seeds: Sequence[int]) -> List[Run]:
    """The runs, seed by seed: every configuration's first seed first.

    Args:
        parent: the search's directory (``--root_dir``).
        configs: the configurations.
        seeds: the seeds.
    Returns:
        List of ``Run`` with root_dir ``parent/<config>/seed<k>``.
    """
    return [Run(config, seed, os.path.join(parent, config.name,
                                           'seed%d' % seed))
            for seed in seeds for config in configs]


def train_command(run: Run, gin_files: Sequence[str],
                  gin_params: Sequence[str], module_paths: Sequence[str] = (),
                  base: Optional[Sequence[str]] = None) -> List[str]:
    """The command line of one run.

    Args:
        run: the run.
        gin_files: ``--gin_file`` paths.
        gin_params: fixed ``--gin_param`` bindings (before the grid's; the
            seed binding comes last).
        module_paths: ``--module_path`` directories.
        base: the program (default: this Python's ``-m alf_rl.bin.train``).
    Returns:
        The argument list.
    """
    command = list(base or [sys.executable, '-m', 'alf_rl.bin.train'])
    command += ['--root_dir', run.root_dir]
    for path in gin_files:
        command += ['--gin_file', path]
    bindings = list(gin_params) + run.config.bindings() + [
        '%s=%d' % (_SEED_BINDING, run.seed)]
    for binding in bindings:
        command += ['--gin_param', binding]
    for path in module_paths:
        command += ['--module_path', os.path.abspath(path)]
    return command


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


def check_search_record(parent: str, record: Dict[str, Any], force: bool,
                        write: bool = True) -> None:
    """Checks ``record`` against ``parent/grid_search.json`` and writes it.

    Everything but ``seeds`` must equal the recorded search; the recorded
    seeds are the union over reruns.

    Args:
        parent: the search's directory.
        record: JSON-able description of the search (``seeds`` a list).
        force: replace a different recorded search instead of refusing.
        write: write the (merged) record (False for ``--dry_run``).
    Raises:
        ValueError: one line naming what differs, when not ``force``.
    """
    record = json.loads(json.dumps(record))
    path = os.path.join(parent, SEARCH_FILE)
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        differ = sorted(key for key in set(old) | set(record)
                        if key != 'seeds' and old.get(key) != record.get(key))
        if differ and not force:
            key = differ[0]
            raise ValueError(
                '%s holds a different search (differs in %s; %s: recorded '
                '%s, now %s); use another --root_dir, or --force to reuse it'
                % (parent, ', '.join(differ), key, json.dumps(old.get(key)),
                   json.dumps(record.get(key))))
        if not differ:
            record['seeds'] = sorted(set(old.get('seeds', [])) |
                                     set(record.get('seeds', [])))
    if write:
        os.makedirs(parent, exist_ok=True)
        _write_json(path, record)


def _write_json(path: str, data: Any) -> None:
    """Writes JSON atomically (``atomic_write_text``)."""
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True) +
                      '\n')


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


def _label(run: Run) -> str:
    return '%s/seed%d' % (run.config.name, run.seed)


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
        self._stop_signals = []
        self._running = {}

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
                                       stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        self._running[process] = _Started(run, process, time.time(),
                                          offsets[0], offsets[1])
        self._report('%s start %s%s' % (tag, _label(run), ' (resuming)'
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
            _write_json(os.path.join(run.root_dir, DONE_FILE), {
                'exit_code': 0, 'wall_secs': wall,
                'total_wall_secs': _total_wall(run.root_dir),
                'metrics': parse_done_line(out), 'grid': run.config.values,
                'seed': run.seed, 'config': run.config.name})
            self._report('done %s in %.1f s' % (_label(run), wall))
            return RunResult(run, 'done', code, wall)
        if self.interrupted and code in (130, 143, -2, -15):
            self._report('stopped %s (resumable)' % _label(run))
            return RunResult(run, 'interrupted', code, wall)
        message = lines[-1] if lines else '(no stderr)'
        self._report('FAILED %s (exit %s) in %.1f s: %s [%s]' %
                     (_label(run), code, wall, message, run.root_dir))
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


class RunScores(NamedTuple):
    """The metric of one finished run, read from its event files.

    Attributes:
        run: the run (its config's values from the done marker).
        curves: ``{'train': points, 'eval': points}``, each a list of
            ``(env step, value)``, possibly empty.
        env_steps: env steps of the run (its ``done:`` line, else the last
            point of the training curve).
        wall_secs: wall time of all its attempts.
    """
    run: Run
    curves: Dict[str, List[Tuple[int, float]]]
    env_steps: float
    wall_secs: float


def read_finished_runs(parent: str, metric: str) -> Dict[str, List[Any]]:
    """The runs under ``parent``, per configuration directory.

    Args:
        parent: the search's directory.
        metric: e.g. ``'AverageReturn'`` (``Metrics_vs_EnvironmentSteps/
            <metric>`` is read from each finished run's train/ and eval/).
    Returns:
        ``{config name: [RunScores of finished runs] + [Run of unfinished
        ones]}``, sorted by name and seed. A finished run without the
        metric in train/ gets its ``done:`` line's value as one point.
    """
    from alf_rl.utils.curves import read_curve
    tag = 'Metrics_vs_EnvironmentSteps/' + metric
    found = {}
    for name in sorted(os.listdir(parent)):
        seeds = sorted(
            (int(m.group(1)), m.group(0)) for m in (
                re.fullmatch(r'seed(\d+)', d) for d in _listdir(
                    os.path.join(parent, name))) if m)
        for seed, seed_dir in seeds:
            root = os.path.join(parent, name, seed_dir)
            marker = _read_json(os.path.join(root, DONE_FILE))
            run = Run(Config(name, (marker or {}).get('grid', {})), seed,
                      root)
            if marker is None:
                found.setdefault(name, []).append(run)
                continue
            curves = {sub: read_curve(os.path.join(root, sub), tag)
                      for sub in ('train', 'eval')}
            steps = marker.get('metrics', {}).get(
                'Metrics/EnvironmentSteps',
                curves['train'][-1][0] if curves['train'] else 0)
            final = marker.get('metrics', {}).get('Metrics/' + metric)
            if not curves['train'] and final is not None:
                # No summary written yet: the done line's final value.
                curves['train'] = [(int(steps), float(final))]
            found.setdefault(name, []).append(RunScores(
                run, curves, float(steps),
                float(marker.get('total_wall_secs',
                                 marker.get('wall_secs', 0.0)))))
    return found


def _listdir(path: str) -> List[str]:
    return os.listdir(path) if os.path.isdir(path) else []


def _read_json(path: str) -> Optional[Any]:
    """The JSON in a file, or None when it is missing or unreadable."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def score_config(name: str, runs: Sequence[Any],
                 mode: str = 'max') -> Dict[str, Any]:
    """The summary row of one configuration.

    The metric is read from eval/ (greedy evaluation) when every finished
    seed has it there, else from train/ (``source``). Per seed, ``final``
    is the last value and ``best`` the highest (``mode='min'``: lowest);
    over seeds, their mean with a 95% percentile-bootstrap interval
    (``bootstrap_ci``: 10,000 resamples, seed 0) and, with >= 5 seeds, the
    interquartile mean.

    Args:
        name: the configuration's directory name.
        runs: its ``RunScores`` (finished) and ``Run`` (unfinished).
        mode: ``'max'`` or ``'min'``: which way is better.
    Returns:
        Dict with config, grid, seeds_finished, seeds_total, source and,
        when some seed has the metric, final_mean, final_ci_low,
        final_ci_high, final_iqm, best_mean, best_ci_low, best_ci_high,
        env_steps, wall_secs (None where not defined).
    """
    from alf_rl.utils.stats import bootstrap_ci, interquartile_mean
    done = [r for r in runs if isinstance(r, RunScores)]
    row = {'config': name, 'grid': done[0].run.config.values if done else {},
           'seeds_finished': len(done), 'seeds_total': len(runs),
           'source': None}
    if not done:
        return row
    source = 'eval' if all(r.curves['eval'] for r in done) else 'train'
    scored = [r for r in done if r.curves[source]]
    row['source'] = source
    best_of = max if mode == 'max' else min
    for key, values in (('final', [r.curves[source][-1][1] for r in scored]),
                        ('best', [best_of(v for _, v in r.curves[source])
                                  for r in scored])):
        if not values:
            continue
        low, high = bootstrap_ci(values)
        row.update({key + '_mean': float(sum(values) / len(values)),
                    key + '_ci_low': low, key + '_ci_high': high})
        if key == 'final':
            row['final_iqm'] = (interquartile_mean(values)
                                if len(values) >= 5 else None)
    row['env_steps'] = sum(r.env_steps for r in done) / len(done)
    row['wall_secs'] = sum(r.wall_secs for r in done) / len(done)
    return row


def _fmt(value: Optional[float]) -> str:
    return '' if value is None else '%.4g' % value


def _ranked(rows: List[Dict[str, Any]], mode: str) -> List[Dict[str, Any]]:
    """Best configuration first (by final mean); unscored ones last."""
    sign = -1.0 if mode == 'max' else 1.0
    return sorted(rows, key=lambda r: (r.get('final_mean') is None,
                                       sign * (r.get('final_mean') or 0.0),
                                       r['config']))


def summary_markdown(rows: List[Dict[str, Any]], metric: str) -> str:
    """The summary table (rows already ranked) as markdown."""
    lines = [
        '# alf-grid-search summary: %s' % metric, '',
        'Per configuration, over its finished seeds: the final and the best '
        'value of Metrics/%s per seed (from eval/ when every seed has '
        'greedy evaluations there, else train/: column "from"); mean over '
        'seeds with a 95%% percentile-bootstrap interval, IQM with >= 5 '
        'seeds; env steps and wall seconds are means over seeds.' % metric,
        '', '| rank | config | seeds | from | final mean [95% CI] | final '
        'IQM | best mean [95% CI] | env steps | wall s |',
        '| --- | --- | --- | --- | --- | --- | --- | --- | --- |']
    for rank, row in enumerate(rows, 1):
        cells = [str(rank), row['config'], '%d/%d' % (
            row['seeds_finished'], row['seeds_total']), row['source'] or '']
        for key in ('final', 'best'):
            cells.append('' if row.get(key + '_mean') is None else
                         '%s [%s, %s]' % tuple(_fmt(row.get(key + s)) for s in
                                               ('_mean', '_ci_low',
                                                '_ci_high')))
            if key == 'final':
                cells.append(_fmt(row.get('final_iqm')))
        cells += [_fmt(row.get('env_steps')), _fmt(row.get('wall_secs'))]
        lines.append('| ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines) + '\n'


_CSV_COLUMNS = ['config', 'seeds_finished', 'seeds_total', 'source',
                'final_mean', 'final_ci_low', 'final_ci_high', 'final_iqm',
                'best_mean', 'best_ci_low', 'best_ci_high', 'env_steps',
                'wall_secs']


def write_summary_csv(path: str, rows: List[Dict[str, Any]]) -> None:
    """Writes the rows as CSV: the grid values, then ``_CSV_COLUMNS``."""
    import csv
    grid_names = list(dict.fromkeys(k for r in rows for k in r['grid']))
    text = io.StringIO(newline='')
    writer = csv.writer(text)
    writer.writerow(['rank'] + _CSV_COLUMNS[:1] + grid_names +
                    _CSV_COLUMNS[1:])
    for rank, row in enumerate(rows, 1):
        writer.writerow([rank, row['config']] + [
            row['grid'].get(n, '') for n in grid_names] + [
                '' if row.get(c) is None else row[c]
                for c in _CSV_COLUMNS[1:]])
    atomic_write_text(path, text.getvalue())


def _hparam_value(value: Any) -> Any:
    """A value TensorBoard's hparams accept (bool, int, float, str)."""
    return value if isinstance(value, (bool, int, float, str)) else repr(
        value)


def write_hparams(parent: str, found: Dict[str, List[Any]], metric: str,
                  mode: str = 'max') -> int:
    """Writes TensorBoard hparams summaries: the experiment (its grid
    values and metrics) in ``parent``, and each finished run's values, seed
    and final/best metric in its directory (replacing earlier ones).

    Args:
        parent: the search's directory.
        found: ``read_finished_runs``'s result.
        metric: the metric name.
        mode: ``'max'`` or ``'min'`` (for the best value).
    Returns:
        The number of runs written.
    """
    import tensorflow as tf
    from tensorboard.plugins.hparams import api as hp
    names = {k: [] for rs in found.values() for r in rs
             if isinstance(r, RunScores) for k in r.run.config.values}
    final_tag, best_tag = ('grid_search/final_' + metric,
                           'grid_search/best_' + metric)
    count = 0
    for runs in found.values():
        for r in runs:
            if not isinstance(r, RunScores):
                continue
            values = {k: _hparam_value(v)
                      for k, v in r.run.config.values.items()}
            for k, v in values.items():
                names[k].append(v)
            source = r.curves['eval'] or r.curves['train']
            with _event_writer(tf, r.run.root_dir).as_default():
                hp.hparams(dict(values, seed=r.run.seed),
                           trial_id='%s/seed%d' % (r.run.config.name,
                                                   r.run.seed))
                if source:
                    best = (max if mode == 'max' else min)(
                        v for _, v in source)
                    tf.summary.scalar(final_tag, source[-1][1], step=0)
                    tf.summary.scalar(best_tag, best, step=0)
            count += 1
    hparams = [hp.HParam(k, _domain(hp, v)) for k, v in names.items()]
    with _event_writer(tf, parent).as_default():
        hp.hparams_config(hparams=hparams + [hp.HParam('seed')], metrics=[
            hp.Metric(final_tag), hp.Metric(best_tag),
            hp.Metric('Metrics/' + metric, group='train'),
            hp.Metric('Metrics/' + metric, group='eval')])
    return count


def _domain(hp: Any, values: List[Any]) -> Optional[Any]:
    """``hp.Discrete`` of the values when they share one type, else None."""
    kinds = {float if type(v) is int else type(v) for v in values}
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    return hp.Discrete(sorted({kind(v) for v in values}))


def _event_writer(tf: Any, directory: str) -> Any:
    """A summary writer of a fresh hparams event file in ``directory``
    (earlier ones this tool wrote there are removed)."""
    for name in _listdir(directory):
        if name.endswith(_HPARAMS_SUFFIX):
            os.remove(os.path.join(directory, name))
    return tf.summary.create_file_writer(directory,
                                         filename_suffix=_HPARAMS_SUFFIX)


def summarize(parent: str, metric: str = 'AverageReturn', mode: str = 'max',
              report: Callable[[str], None] = print) -> List[Dict[str, Any]]:
    """Summarizes a search: writes ``parent/summary.md``,
    ``parent/summary.csv``, ``parent/<config>/curve.svg`` and the hparams
    summaries, and prints the table.

    Args:
        parent: the search's directory.
        metric: the metric name, e.g. ``'AverageReturn'``.
        mode: ``'max'`` or ``'min'``: which way is better.
        report: prints the table and notes.
    Returns:
        The rows (``score_config``), best first.
    Raises:
        ValueError: ``parent`` holds no run directories.
    """
    from alf_rl.bin.plot import plot_runs
    from alf_rl.bin.quiet import import_tensorflow
    if not os.path.isdir(parent):
        raise ValueError('--summarize %s: not a directory' % parent)
    import_tensorflow()
    found = read_finished_runs(parent, metric)
    if not found:
        raise ValueError('%s holds no run directories (<config>/seed<k>)'
                         % parent)
    rows = _ranked([score_config(n, runs, mode)
                    for n, runs in found.items()], mode)
    write_hparams(parent, found, metric, mode)
    for row in rows:
        roots = [r.run.root_dir for r in found[row['config']]
                 if isinstance(r, RunScores)]
        try:
            plot_runs(roots, os.path.join(parent, row['config'], 'curve.svg'),
                      metric, title='%s: %s' % (row['config'], metric),
                      band=True)
        except ValueError as e:  # no curve in the event files (yet)
            report('alf-grid-search: no curve.svg for %s: %s' %
                   (row['config'], e))
    text = summary_markdown(rows, metric)
    atomic_write_text(os.path.join(parent, 'summary.md'), text)
    write_summary_csv(os.path.join(parent, 'summary.csv'), rows)
    report(text.rstrip('\n'))
    report('alf-grid-search: wrote %s, %s' % (
        os.path.join(parent, 'summary.md'),
        os.path.join(parent, 'summary.csv')))
    return rows


def _parser() -> argparse.ArgumentParser:
    """The command-line flags."""
    p = argparse.ArgumentParser(
        prog='alf-grid-search',
        description=' '.join(__doc__.split('\n\n')[0].split()))
    add = p.add_argument
    add('--gin_file', action='append', default=[], help='Gin config files.')
    add('--root_dir', help='Parent directory of the search (resumable).')
    add('--grid', action='append', default=[],
        help="Values to search: 'Configurable.param=[v1, v2]' (repeatable).")
    add('--gin_param', action='append', default=[],
        help='Fixed gin bindings of every run (repeatable).')
    add('--seeds', default='0', help="Seeds: '0,1,2' or '0-4'.")
    add('--num_parallel', type=int, default=_default_parallel(),
        help='Runs at a time (default: the number of cores; each alf-train '
        'uses about one core).')
    add('--random_samples', type=int, default=None,
        help='Run this many configurations drawn from the grid.')
    add('--seed', type=int, default=0, help='Seed of --random_samples and '
        '--optuna sampling.')
    add('--module_path', action='append', default=[],
        help="alf-train's --module_path (repeatable).")
    add('--metric', default='AverageReturn', help='Metric to summarize.')
    add('--mode', choices=['max', 'min'], default='max',
        help='Whether a higher or a lower metric is better.')
    add('--optuna', type=int, default=None, metavar='N',
        help='Run N trials of an optuna TPE study over the --grid choices '
        "(needs pip install 'alf_rl[tune]').")
    add('--dry_run', action='store_true', help='Print the runs; run none.')
    add('--force', action='store_true',
        help='Reuse a --root_dir that holds a different search.')
    add('--summarize', metavar='PARENT', help='Only summarize PARENT.')
    add('--train_command', default=None,
        help='Command that trains one run, given alf-train flags (default: '
        'this Python with -m alf_rl.bin.train).')
    return p


def _default_parallel() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _search_record(args: argparse.Namespace, grid: Dict[str, List[Any]],
                   seeds: List[int]) -> Dict[str, Any]:
    """What identifies a search in ``grid_search.json``."""
    return {'gin_files': [os.path.normpath(p) for p in args.gin_file],
            'gin_params': list(args.gin_param), 'grid': grid,
            'random_samples': args.random_samples,
            'sample_seed': (args.seed if args.random_samples or args.optuna
                            else None),
            'optuna': args.optuna is not None, 'seeds': seeds}


def _prepare(args: argparse.Namespace) -> Tuple[List[Config], List[int]]:
    """Checks the flags, the gin syntax and the search record (no
    TensorFlow); returns the configurations and seeds."""
    from alf_rl.bin.train import check_gin_syntax
    if not args.gin_file:
        raise ValueError('--gin_file is required')
    if not args.root_dir:
        raise ValueError('--root_dir is required')
    grid = parse_grid(args.grid)
    seeds = parse_seeds(args.seeds)
    configs = expand_grid(grid, args.random_samples, args.seed)
    for path in args.module_path:
        if not os.path.isdir(path):
            raise ValueError('--module_path %s: not a directory' % path)
    bindings = [b for c in configs for b in c.bindings()]
    check_gin_syntax(args.gin_file, list(args.gin_param) + bindings)
    check_search_record(args.root_dir, _search_record(args, grid, seeds),
                        args.force, write=not args.dry_run)
    return configs, seeds


def _command_for(args: argparse.Namespace) -> Callable[[Run], List[str]]:
    base = shlex.split(args.train_command) if args.train_command else None
    return lambda run: train_command(run, args.gin_file, args.gin_param,
                                     args.module_path, base)


def _dry_run(runs: Sequence[Run], command_for: Callable[[Run], List[str]]
             ) -> None:
    """Prints what a real run would do for each run."""
    for run in runs:
        if os.path.exists(os.path.join(run.root_dir, DONE_FILE)):
            state = 'finished: skip'
        elif os.path.isdir(os.path.join(run.root_dir, 'ckpt')):
            state = 'resume'
        else:
            state = 'new'
        print('%s (%s): %s' % (_label(run), state,
                               shlex.join(command_for(run))))
    print('alf-grid-search: dry run: %d run(s), none started' % len(runs))


def _tally(results: Sequence[RunResult]) -> int:
    """Prints the outcome; returns the exit code (1 when a run failed)."""
    counts = collections.Counter(r.status for r in results)
    print('alf-grid-search: %d run(s): %s' % (len(results), ', '.join(
        '%d %s' % (counts[s], s) for s in ('done', 'skipped', 'failed',
                                           'interrupted', 'not started')
        if counts[s])), flush=True)
    failed = [r for r in results if r.status == 'failed']
    for r in failed:
        print('alf-grid-search: failed: %s (exit %s): %s [%s]' % (
            _label(r.run), r.exit_code, r.message, r.run.root_dir),
            file=sys.stderr)
    return 1 if failed else 0


def run_search(args: argparse.Namespace) -> int:
    """Runs (or dry-runs) the search of parsed flags, then summarizes it.

    Returns:
        The exit code: 0, 1 when a run failed, 130 when interrupted.
    Raises:
        ValueError: bad flags or gin syntax, or a different recorded search.
    """
    if args.optuna is not None:
        return run_optuna(args)
    configs, seeds = _prepare(args)
    runs = plan_runs(args.root_dir, configs, seeds)
    if args.dry_run:
        _dry_run(runs, _command_for(args))
        return 0
    pool = RunPool(_command_for(args), args.num_parallel,
                   report=lambda line: print(line, flush=True))
    results = pool.run(runs)
    code = _tally(results)
    if pool.interrupted:
        print('alf-grid-search: interrupted; rerun the same command to '
              'resume', file=sys.stderr)
        return 130
    if any(r.status in ('done', 'skipped') for r in results):
        summarize(args.root_dir, args.metric, args.mode)
    return code


def _import_optuna() -> Any:
    """optuna, or a one-line error naming the extra that installs it."""
    try:
        import optuna
    except ImportError:
        raise ValueError("--optuna needs optuna: pip install "
                         "'alf_rl[tune]'") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def run_optuna(args: argparse.Namespace) -> int:
    """Runs ``args.optuna`` trials of a TPE study over the ``--grid``
    values (categorical choices); a trial runs every seed of its
    configuration (in parallel) and scores the mean final metric over
    them. The study lives in ``PARENT/optuna.db`` (sqlite): a rerun goes
    on with it, first re-running (resuming) trials an interrupted session
    left unfinished. Configurations proposed twice reuse their runs.

    Returns:
        The exit code (0; 130 when interrupted).
    """
    optuna = _import_optuna()
    if args.dry_run:
        raise ValueError('--dry_run does not apply to --optuna')
    _prepare(args)
    odd = [n for n, values in parse_grid(args.grid).items()
           if not all(v is None or isinstance(v, (bool, int, float, str))
                      for v in values)]
    if odd:
        raise ValueError('--optuna: the --grid values of %s must be numbers, '
                         'strings, booleans or None' % odd[0])
    from alf_rl.bin.quiet import import_tensorflow
    import_tensorflow()
    grid, seeds = parse_grid(args.grid), parse_seeds(args.seeds)
    study = optuna.create_study(
        study_name='alf-grid-search', load_if_exists=True,
        storage='sqlite:///' + os.path.abspath(
            os.path.join(args.root_dir, 'optuna.db')),
        direction='maximize' if args.mode == 'max' else 'minimize',
        sampler=optuna.samplers.TPESampler(seed=args.seed))
    stale = [t for t in study.trials
             if t.state == optuna.trial.TrialState.RUNNING]
    pool = RunPool(_command_for(args), args.num_parallel,
                   report=lambda line: print(line, flush=True))
    while sum(t.state.is_finished() for t in study.trials) < args.optuna:
        trial = stale.pop(0) if stale else study.ask()
        values = {n: (trial.params[n] if n in trial.params else
                      trial.suggest_categorical(n, grid[n])) for n in grid}
        config = Config(config_name(values), values)
        results = pool.run(plan_runs(args.root_dir, [config], seeds))
        if pool.interrupted:
            return 130
        if any(r.status == 'failed' for r in results):
            _tally(results)
            study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
            continue
        row = score_config(config.name, read_finished_runs(
            args.root_dir, args.metric)[config.name], args.mode)
        if row.get('final_mean') is None:
            study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
            continue
        study.tell(trial.number, row['final_mean'])
        print('trial %d: %s: %s' % (trial.number, config.name,
                                    _fmt(row.get('final_mean'))), flush=True)
    summarize(args.root_dir, args.metric, args.mode)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Console entry point of ``alf-grid-search``.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).
    """
    args = _parser().parse_args(argv)
    try:
        if args.summarize:
            summarize(args.summarize, args.metric, args.mode)
            code = 0
        else:
            code = run_search(args)
    except ValueError as e:
        print('alf-grid-search: error: %s' % e, file=sys.stderr)
        code = 1
    sys.stdout.flush()
    sys.exit(code)


if __name__ == '__main__':
    main()
