r"""The README's benchmark table, generated from the runs' own event files.

Two steps, so that no figure in the table is typed by hand:

1. ``collect`` reads the TensorBoard event files of the runs of one
   benchmark (one ``alf-train`` root dir per seed; they stay outside the
   repository) and writes ``docs/benchmarks/records/NAME.json``::

       python benchmarks/benchmark_table.py collect --name ppo_hopper \
           --task Hopper-v5 --algorithm PPO --gin examples/ppo_hopper.gin \
           --metric AverageReturn --source eval \
           --reference '2410 (rl-zoo, PPO, Hopper-v3)' \
           ~/runs/hopper/seed0 ~/runs/hopper/seed1 ~/runs/hopper/seed2

   The metric is ``Metrics_vs_EnvironmentSteps/<metric>`` (step = env
   steps) of ``RUN/eval`` (``--source eval``, the default: greedy
   evaluation episodes) or ``RUN/train`` (``--source train``: the training
   episodes of the stochastic policy), e.g. ``AverageReturn`` or, for
   Atari, ``GameScore``. Per run the record holds its seed (the line
   ``TrainerConfig.random_seed = N`` of ``RUN/config.gin``; null when
   absent), the final value (the last point), the best value, the env
   steps at the last point, the wall seconds and the curve, thinned to at
   most 200 ``[env_steps, value]`` points (for plots without the events).
   The wall seconds are the training loop's: the last
   ``time/elapsed_secs`` of ``RUN/train``, summed over the processes of a
   resumed run (each restarts that clock); without that scalar, the time
   from the first to the last write of the metric (``wall_from`` says
   which). Collecting again under the same name replaces the record.
   A population run (``TrainerConfig.num_seeds = N`` > 1 in its
   ``config.gin``: N seeds trained in one graph, docs/training.md) gives
   one entry per seed, read from its ``RUN/train`` scalars
   ``seed_<k>/Metrics/<metric>`` (step = env steps per seed; it writes
   training episodes only, so ``--source train``); each entry's wall
   seconds are the whole population's (``population_run_secs``) and its
   ``population`` is N.
   With ``--threshold X`` the record also holds, per run, where the metric
   first reached X: ``to_threshold = {env_steps, wall_secs}`` (the env
   steps of that point and the training-loop seconds until it was
   written, from the same event files), or null when it never did; e.g.
   the runs of ``benchmarks/time_to_score.py --root_dir DIR`` (which stop
   there: ``--source train``).
   With ``--add`` the existing record NAME keeps the seeds that the runs
   given do not train, and gets theirs: more seeds of a benchmark whose
   first runs' directories are gone (collected the same way: task,
   algorithm, gin, metric, source and threshold must agree; every run
   needs its ``random_seed``).

2. ``table`` renders every record as one markdown table, sorted by task,
   then algorithm, then name::

       python benchmarks/benchmark_table.py table            # prints it
       python benchmarks/benchmark_table.py table --write README.md
       python benchmarks/benchmark_table.py table --check README.md

   Columns: task, algorithm, config (a link to the gin file, relative to
   the written file), budget (env steps at the last point, 2 significant
   digits; a range when the seeds differ), seeds, metric (and its source),
   score (the mean over seeds of the final value with its 95% percentile-
   bootstrap interval, ``alf_rl.utils.stats.bootstrap_ci``, and the value
   of each seed, when there are >= 2 seeds), wall time (mean per run; for
   a population run the whole run's, ``(N seeds per run)``),
   to threshold (for records collected with ``--threshold``: per seed the
   env steps and wall time to the threshold, ``not reached`` when it was
   not, and their median env steps; else ``-``) and reference (as given to
   ``collect``). A run that stopped short of its planned env steps is
   ``unfinished`` in the budget column, unless it stopped on reaching the
   threshold. ``--write FILE`` replaces the
   text between the lines ``<!-- benchmark-table:start -->`` and
   ``<!-- benchmark-table:end -->`` of FILE (atomically); ``--check FILE``
   exits 1 when FILE's table differs from what the records give.

A third command reads runs directly, for the scores a page quotes at
given points of a long run (e.g. Atari's game score at 1M and 2M steps)::

    python benchmarks/benchmark_table.py points --metric GameScore \
        --source train --at 1M,2M ~/runs/pong_ppo

It prints a markdown table, a row per run (per seed of a population run,
``RUN/seed_<k>``, with the whole run's wall time): its seed, the value at
each ``--at`` step (the last point at or before it, within 1%, with that
point's step; ``not yet`` when the run has not reached the step), the
last point and the wall time so far. A directory holding an ``eval.jsonl``
(``sb3_reference.py --algo td3_mujoco --save_dir DIR`` writes
``DIR/seed<S>/eval.jsonl``) is read as a reference run's greedy
evaluations (``--metric AverageReturn --source eval``; no wall time), so
that a reference implementation's curve and ours share one table. A
record file (``docs/benchmarks/records/NAME.json``, or one ``collect
--records DIR`` wrote elsewhere) gives a row per seed, ``NAME/seed_<S>``,
from the thinned curve it holds: the table can be made again after the
runs' directories are gone with their machine (a value is then the last
kept point at or before the step).

A fourth draws records' curves (the thinned curve each record holds, so
a plot does not need the runs' event files, which may be gone with the
machine that ran them) as one SVG chart, a line per seed::

    python benchmarks/benchmark_table.py plot \
        --out docs/curves/off_policy_mujoco.svg sac_half_cheetah td3_half_cheetah

``--records DIR`` (collect, table, plot) reads and writes records elsewhere than
``docs/benchmarks/records`` of this repository. A mistake (a run dir
without event files, a missing metric, a bad flag, no records, missing
markers) prints one line naming the value and exits 2.
"""

import argparse
import glob
import json
import math
import os
import re
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

from alf_rl.utils.checkpoint import atomic_write_text  # noqa: E402
from alf_rl.utils.curves import (read_curve, read_scalar_events,  # noqa: E402
                                 scalar_tags, svg_line_chart)
from alf_rl.utils.stats import bootstrap_ci  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_RECORDS = os.path.join(REPO_ROOT, 'docs', 'benchmarks', 'records')
START_MARKER = '<!-- benchmark-table:start -->'
END_MARKER = '<!-- benchmark-table:end -->'
MAX_CURVE_POINTS = 200
RECORD_FORMAT = 1
SOURCES = {
    'eval': 'greedy evaluation episodes (RUN/eval)',
    'train': 'training episodes of the stochastic policy (RUN/train)',
}
_TAG_PREFIX = 'Metrics_vs_EnvironmentSteps/'
_ELAPSED_TAG = 'time/elapsed_secs'
_SEED_LINE = re.compile(r'^\s*TrainerConfig\.random_seed\s*=\s*(-?\d+)\s*$',
                        re.MULTILINE)
_NUM_SEEDS_LINE = re.compile(
    r'^\s*TrainerConfig\.num_seeds\s*=\s*(\d+)\s*$', re.MULTILINE)
_POPULATION_TAG = re.compile(r'^seed_(-?\d+)/Metrics/(.+)$')
_BUDGET_LINE = re.compile(
    r'^\s*TrainerConfig\.num_env_steps\s*=\s*([0-9.eE+_]+)\s*$', re.MULTILINE)
_STOP_LINE = re.compile(
    r'^\s*TrainerConfig\.stop_at_env_steps\s*=\s*([0-9.eE+_]+)\s*$',
    re.MULTILINE)
# A run whose last point is this close to its planned env steps finished.
_FINISHED_FRACTION = 0.99
_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*$')
# A new process of a resumed run: its clock's start (wall time minus
# elapsed seconds) moved by more than this.
_RESTART_SHIFT_SECS = 5.0
_PROG = 'benchmark_table'


class UsageError(ValueError):
    """A mistake of the user: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are ``UsageError`` (one line)."""

    def error(self, message: str) -> None:
        """Raises ``UsageError(message)`` instead of printing the usage."""
        raise UsageError(message)


# ---------------------------------------------------------------------------
# collect: event files -> record
# ---------------------------------------------------------------------------


def read_seed(run_dir: str) -> Optional[int]:
    """The seed of a run: ``TrainerConfig.random_seed = N`` in
    ``run_dir/config.gin`` (the operative config ``alf-train`` writes).

    Args:
        run_dir: an ``alf-train`` root dir.
    Returns:
        N (int), or None when there is no such file or line (e.g. the
        seed was None: random).
    """
    try:
        with open(os.path.join(run_dir, 'config.gin')) as f:
            match = _SEED_LINE.search(f.read())
    except OSError:
        return None
    return int(match.group(1)) if match else None


def read_planned_steps(run_dir: str) -> Optional[int]:
    """The env steps a run was configured to train for:
    ``TrainerConfig.num_env_steps = N`` in ``run_dir/config.gin``, or
    ``TrainerConfig.stop_at_env_steps = S`` when that is set and smaller
    (a stop before the budget, its schedules unchanged).

    Args:
        run_dir: an ``alf-train`` root dir.
    Returns:
        N or S (int), or None when there is no such file or line, or N is
        0 and no stop is set (the run is bounded by iterations instead).
    """
    try:
        with open(os.path.join(run_dir, 'config.gin')) as f:
            text = f.read()
    except OSError:
        return None
    found = [int(float(m.group(1).replace('_', '')))
             for m in (_BUDGET_LINE.search(text), _STOP_LINE.search(text))
             if m]
    found = [steps for steps in found if steps > 0]
    return min(found) if found else None


def read_num_seeds(run_dir: str) -> int:
    """The seeds a run trained together: ``TrainerConfig.num_seeds = N``
    in ``run_dir/config.gin`` (N > 1: a population run, whose train/
    events hold ``seed_<k>/Metrics/...`` per seed).

    Args:
        run_dir: an ``alf-train`` root dir.
    Returns:
        N, or 1 when there is no such file or line.
    """
    try:
        with open(os.path.join(run_dir, 'config.gin')) as f:
            match = _NUM_SEEDS_LINE.search(f.read())
    except OSError:
        return 1
    return int(match.group(1)) if match else 1


def _event_dir(run_dir: str, source: str) -> str:
    """``run_dir/source``; ``UsageError`` when ``run_dir`` is not a
    directory or that one has no event files."""
    if not os.path.isdir(run_dir):
        raise UsageError('run dir %s: not a directory' % run_dir)
    event_dir = os.path.join(run_dir, source)
    if not glob.glob(os.path.join(event_dir, 'events.*')):
        raise UsageError(
            '%s: no TensorBoard event files (--source %s; is %s a root dir '
            'written by alf-train?)' % (event_dir, source, run_dir))
    return event_dir


def _check_finite(curve: Sequence[Tuple[int, float]], event_dir: str,
                  tag: str) -> None:
    """``UsageError`` naming the first value of ``curve`` that is not a
    finite number."""
    bad = [(s, v) for s, v in curve if not math.isfinite(v)]
    if bad:
        raise UsageError('%s: %s is %r at env step %d (not a finite number)'
                         % (event_dir, tag, bad[0][1], bad[0][0]))


def read_metric_curve(run_dir: str, metric: str,
                      source: str) -> List[Tuple[int, float]]:
    """The curve of ``Metrics_vs_EnvironmentSteps/<metric>`` of a run.

    Args:
        run_dir: an ``alf-train`` root dir.
        metric: e.g. ``'AverageReturn'`` or ``'GameScore'``.
        source: ``'eval'`` or ``'train'``: the sub-directory read.
    Returns:
        ``[(env_steps, value)]`` sorted by env steps (``read_curve``: the
        last write of a repeated step wins), non-empty, finite values.
    Raises:
        UsageError: no such directory, no event files there, no such
            scalar, or a value that is not finite.
    """
    event_dir = _event_dir(run_dir, source)
    tag = _TAG_PREFIX + metric
    curve = read_curve(event_dir, tag)
    if not curve:
        found = [t[len(_TAG_PREFIX):]
                 for t in scalar_tags(event_dir, _TAG_PREFIX)]
        raise UsageError('%s: no scalar %s (--metric %s; metrics there: %s)'
                         % (event_dir, tag, metric,
                            ', '.join(found) or 'none'))
    _check_finite(curve, event_dir, tag)
    return curve


def training_wall_secs(run_dir: str, metric: str, source: str,
                       until: Optional[float] = None) -> Tuple[float, str]:
    """The wall seconds of a run's training loop.

    The last ``time/elapsed_secs`` of ``run_dir/train`` per process (a
    resumed run's new process restarts that clock: a new process is where
    the value drops or its start, wall time minus value, moves by more
    than 5 s), summed. Without that scalar: the wall time from the first
    to the last write of the metric in ``run_dir/<source>`` (which also
    counts the pauses of a resumed run).

    Args:
        run_dir: an ``alf-train`` root dir.
        metric: the metric name (for the fallback).
        source: ``'eval'`` or ``'train'`` (for the fallback).
        until: the seconds up to this wall time: the events written up to
            it, and from the last ``time/elapsed_secs`` of them to it
            (alf-train writes that scalar just before the metrics of the
            same summary); None: all.
    Returns:
        ``(seconds, wall_from)``; ``wall_from`` is ``'time/elapsed_secs'``
        or ``'event wall-time span'``.
    """
    limit = math.inf if until is None else until
    rows = [r for r in read_scalar_events(os.path.join(run_dir, 'train'),
                                          _ELAPSED_TAG) if r[0] <= limit]
    if not rows:
        walls = [w for w, _, _ in read_scalar_events(
            os.path.join(run_dir, source), _TAG_PREFIX + metric)
                 if w <= limit]
        return (max(walls) - min(walls) if walls else 0.0,
                'event wall-time span')
    total, last_value, last_start = 0.0, None, None
    for wall, _, value in rows:
        start = wall - value
        if last_value is not None and (
                value < last_value
                or abs(start - last_start) > _RESTART_SHIFT_SECS):
            total += last_value  # the previous process's last value
        last_value, last_start = value, start
    gap = 0.0 if until is None else until - rows[-1][0]
    return total + last_value + gap, _ELAPSED_TAG


def time_to_threshold(run_dir: str, metric: str, source: str,
                      threshold: float) -> Optional[Dict[str, float]]:
    """Where a run's metric first reached ``threshold``.

    Args:
        run_dir: an ``alf-train`` root dir.
        metric: e.g. ``'AverageReturn'``.
        source: ``'eval'`` or ``'train'``.
        threshold: the value to reach (``>=``).
    Returns:
        ``{'env_steps': N, 'wall_secs': S}``: the env steps of the first
        write (in wall-time order) of a value >= ``threshold`` and the
        training-loop seconds until then (``training_wall_secs`` up to
        that write); None when no value reached it.
    """
    rows = sorted(read_scalar_events(os.path.join(run_dir, source),
                                     _TAG_PREFIX + metric))
    hits = [(wall, step) for wall, step, value in rows if value >= threshold]
    if not hits:
        return None
    wall, step = hits[0]
    secs, _ = training_wall_secs(run_dir, metric, source, until=wall)
    return {'env_steps': int(step), 'wall_secs': secs}


def thin_curve(points: Sequence[Tuple[int, float]],
               max_points: int = MAX_CURVE_POINTS) -> List[List[Any]]:
    """At most ``max_points`` of a curve, evenly spaced by index, the first
    and the last included.

    Args:
        points: [N] ``(env_steps, value)`` sorted by env steps.
        max_points: the most points kept (>= 2).
    Returns:
        ``[[env_steps, value]]`` (int, float), all N when N <= max_points.
    """
    n = len(points)
    if n <= max_points:
        keep = range(n)
    else:
        keep = sorted({round(i * (n - 1) / (max_points - 1))
                       for i in range(max_points)})
    return [[int(points[i][0]), float(points[i][1])] for i in keep]


def read_run(run_dir: str, metric: str, source: str,
             threshold: Optional[float] = None) -> Dict[str, Any]:
    """One seed's entry of a record.

    Args:
        run_dir: an ``alf-train`` root dir.
        metric: e.g. ``'AverageReturn'``.
        source: ``'eval'`` or ``'train'``.
        threshold: when given, the entry's ``to_threshold`` is
            ``time_to_threshold`` of it.
    Returns:
        Dict with seed, run_dir (``~`` for the home directory), final,
        best, env_steps (at the last point; 0 for an offline run, whose
        curve is read over iterations from ``Metrics/<metric>`` and whose
        entry has ``iterations``: those at its last point), planned_env_steps
        (``read_planned_steps``; None when unknown), wall_secs, wall_from,
        num_points (of the full curve), curve (``thin_curve``) and, with a
        threshold, to_threshold.
    Raises:
        UsageError: see ``read_metric_curve``.
    """
    curve = read_metric_curve(run_dir, metric, source)
    iterations = None
    if all(step == 0 for step, _ in curve):
        # An offline run (no env steps): its curve is over iterations.
        by_iteration = read_curve(os.path.join(run_dir, source),
                                  'Metrics/' + metric)
        if by_iteration:
            curve, iterations = by_iteration, by_iteration[-1][0]
    entry = _entry(run_dir, read_seed(run_dir), curve,
                   *training_wall_secs(run_dir, metric, source))
    if iterations:
        entry['env_steps'] = 0
        entry['iterations'] = iterations
    if threshold is not None:
        entry['to_threshold'] = time_to_threshold(run_dir, metric, source,
                                                  threshold)
    return entry


def _entry(run_dir: str, seed: Optional[int],
           curve: Sequence[Tuple[int, float]], wall_secs: float,
           wall_from: str) -> Dict[str, Any]:
    """A seed's entry (see ``read_run``) from its curve and wall time."""
    path = os.path.abspath(run_dir)
    home = os.path.expanduser('~')
    if path.startswith(home + os.sep):
        path = '~' + path[len(home):]
    return {'seed': seed, 'run_dir': path,
            'final': curve[-1][1], 'best': max(v for _, v in curve),
            'env_steps': curve[-1][0],
            'planned_env_steps': read_planned_steps(run_dir),
            'wall_secs': wall_secs,
            'wall_from': wall_from, 'num_points': len(curve),
            'curve': thin_curve(curve)}


def _population_metric(tag: str) -> Optional[str]:
    """``<metric>`` of a tag ``seed_<k>/Metrics/<metric>``; else None."""
    match = _POPULATION_TAG.match(tag)
    return match.group(2) if match else None


def population_seeds(run_dir: str, metric: str) -> List[int]:
    """The seeds of a population run that have ``seed_<k>/Metrics/<metric>``
    in ``run_dir/train``, ascending.

    Raises:
        UsageError: no event files, or no seed has the metric.
    """
    event_dir = _event_dir(run_dir, 'train')
    seeds, found = set(), set()
    for tag in scalar_tags(event_dir, 'seed_'):
        match = _POPULATION_TAG.match(tag)
        if match:
            found.add(match.group(2))
            if match.group(2) == metric:
                seeds.add(int(match.group(1)))
    if not seeds:
        raise UsageError(
            '%s: no scalar seed_<k>/Metrics/%s (--metric %s; a population '
            'run, TrainerConfig.num_seeds = %d; metrics there: %s)' % (
                event_dir, metric, metric, read_num_seeds(run_dir),
                ', '.join(sorted(found)) or 'none'))
    return sorted(seeds)


def population_run_secs(run_dir: str, metric: str,
                        until: Optional[float] = None) -> float:
    """The wall seconds of a population run's training loop.

    Per process (one event file of ``run_dir/train`` each: its writer is
    made when training starts, after the checkpoint is restored) the time
    from the file's first event to its last write of a seed's
    ``seed_<k>/Metrics/<metric>``, summed. The population writes no
    ``time/elapsed_secs``; the first event's wall time is whole seconds.

    Args:
        run_dir: a population run's root dir.
        metric: e.g. ``'AverageReturn'``.
        until: the seconds up to this wall time (the files begun by then,
            each up to its last write at or before it); None: all.
    Returns:
        The seconds (float).
    """
    import tensorflow as tf
    limit = math.inf if until is None else until
    total = 0.0
    for path in glob.glob(os.path.join(run_dir, 'train', 'events.*')):
        first = last = None
        for event in tf.compat.v1.train.summary_iterator(path):
            if first is None:
                first = event.wall_time
            if event.wall_time <= limit and any(
                    _population_metric(v.tag) == metric
                    for v in event.summary.value):
                last = event.wall_time  # a file's events are in time order
        if first is not None and last is not None:
            total += last - first
    return total


def population_curves(run_dir: str, metric: str, source: str
                      ) -> List[Tuple[int, List[Tuple[int, float]]]]:
    """Each seed's whole curve of a population run, ascending by seed.

    Args:
        run_dir: the root dir of an ``alf-train`` run with
            ``TrainerConfig.num_seeds`` > 1.
        metric: e.g. ``'AverageReturn'``.
        source: must be ``'train'`` (the population has no evaluation).
    Returns:
        ``[(seed, [(env steps, value), ...]), ...]``.
    Raises:
        UsageError: ``--source eval``, no event files, no such metric, or
            a value that is not finite.
    """
    if source != 'train':
        raise UsageError(
            'run dir %s: a population run (TrainerConfig.num_seeds = %d) '
            'writes training episodes only: use --source train' %
            (run_dir, read_num_seeds(run_dir)))
    event_dir = os.path.join(run_dir, 'train')
    curves = []
    for seed in population_seeds(run_dir, metric):
        tag = 'seed_%d/Metrics/%s' % (seed, metric)
        curve = read_curve(event_dir, tag)
        _check_finite(curve, event_dir, tag)
        curves.append((seed, curve))
    return curves


def read_population_run(run_dir: str, metric: str, source: str,
                        threshold: Optional[float] = None
                        ) -> List[Dict[str, Any]]:
    """A population run's entries, one per seed (ascending).

    Args:
        run_dir: the root dir of an ``alf-train`` run with
            ``TrainerConfig.num_seeds`` > 1.
        metric: e.g. ``'AverageReturn'``.
        source: must be ``'train'`` (the population has no evaluation).
        threshold: when given, each entry's ``to_threshold``: the env
            steps of the seed's first value >= it and the population's
            training-loop seconds until that write.
    Returns:
        ``read_run``'s entries, each with ``population`` (the number of
        seeds in the run) and the whole run's ``wall_secs``
        (``population_run_secs``; ``wall_from`` says so).
    Raises:
        UsageError: as ``population_curves``.
    """
    curves = population_curves(run_dir, metric, source)
    event_dir = os.path.join(run_dir, 'train')
    wall_secs = population_run_secs(run_dir, metric)
    entries = []
    for seed, curve in curves:
        entry = _entry(run_dir, seed, curve, wall_secs,
                       'population event-file spans')
        entry['population'] = len(curves)
        if threshold is not None:
            tag = 'seed_%d/Metrics/%s' % (seed, metric)
            hits = [(wall, step) for wall, step, value in
                    read_scalar_events(event_dir, tag) if value >= threshold]
            entry['to_threshold'] = None
            if hits:
                wall, step = hits[0]
                entry['to_threshold'] = {
                    'env_steps': int(step),
                    'wall_secs': population_run_secs(run_dir, metric,
                                                     until=wall)}
        entries.append(entry)
    return entries


def _repo_relative(gin: str) -> str:
    """``gin`` as a path relative to the repository (``/`` separated)."""
    if not os.path.isfile(gin):
        raise UsageError('--gin %s: no such file' % gin)
    relative = os.path.relpath(os.path.realpath(gin),
                               os.path.realpath(REPO_ROOT))
    if relative.split(os.sep)[0] == os.pardir:
        raise UsageError('--gin %s: not a file inside the repository (%s), '
                         'so the table cannot link it' % (gin, REPO_ROOT))
    return relative.replace(os.sep, '/')


def _check_collect_args(args: argparse.Namespace) -> None:
    """Raises ``UsageError`` for a bad name, an empty task or algorithm,
    or a run dir given twice."""
    if not _NAME.match(args.name):
        raise UsageError('--name %r: expected a file name of letters, '
                         'digits, ".", "_" and "-"' % args.name)
    for flag in ('task', 'algorithm', 'metric'):
        if not getattr(args, flag).strip():
            raise UsageError('--%s: expected a non-empty text' % flag)
    seen = {}
    for run_dir in args.run_dirs:
        key = os.path.realpath(run_dir)
        if key in seen:
            raise UsageError('run dir %s: given twice (also as %s)' %
                             (run_dir, seen[key]))
        seen[key] = run_dir


def _check_seeds(run_dirs: Sequence[str]) -> None:
    """Raises ``UsageError`` when two runs have the same (known) seed:
    they are not independent samples. A population run (``num_seeds`` N)
    has seeds ``random_seed`` .. ``random_seed + N - 1``."""
    by_seed = {}
    for run_dir in run_dirs:
        first = read_seed(run_dir)
        if first is None:
            continue
        count = read_num_seeds(run_dir)
        for seed in range(first, first + count):
            if seed in by_seed:
                raise UsageError(
                    'run dirs %s and %s: both train seed %d (the latter has '
                    'TrainerConfig.random_seed = %d, num_seeds = %d; one '
                    'run dir per seed)' % (by_seed[seed], run_dir, seed,
                                           first, count))
            by_seed[seed] = run_dir


def kept_seeds(args: argparse.Namespace, gin: str,
               new: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """``collect --add``: the entries of the existing record ``args.name``
    whose seeds none of the new runs trains (their run dirs may be gone
    with the machine that ran them).

    Args:
        args: the ``collect`` flags.
        gin: ``args.gin`` relative to the repository.
        new: the entries read from ``args.run_dirs``.
    Returns:
        The existing entries to keep (a new run of the same seed replaces
        its entry).
    Raises:
        UsageError: no record to add to, one collected otherwise (another
            task, algorithm, gin file, metric, source or threshold), an
            entry without a seed in it or among the new runs (which runs
            it holds cannot be told).
    """
    path = os.path.join(args.records, args.name + '.json')
    if not os.path.isfile(path):
        raise UsageError('--add: no record %s to add to (collect it first '
                         'without --add)' % path)
    old = read_record(path)
    given = dict(task=args.task, algorithm=args.algorithm, gin=gin,
                 metric=args.metric, source=args.source,
                 threshold=args.threshold)
    for key, value in given.items():
        if old.get(key) != value:
            raise UsageError('--add: %s has %s %r, these runs %r (collect '
                             'them under another --name)' % (
                                 path, key, old.get(key), value))
    unknown = [s.get('run_dir') for s in list(old['seeds']) + list(new)
               if s.get('seed') is None]
    if unknown:
        raise UsageError('--add: %s has no TrainerConfig.random_seed, so '
                         'which seeds the record holds cannot be told' %
                         unknown[0])
    taken = {s['seed'] for s in new}
    return [s for s in old['seeds'] if s['seed'] not in taken]


def collect(args: argparse.Namespace) -> Dict[str, Any]:
    """Reads the runs of ``args`` (the ``collect`` flags) into a record.

    Args:
        args: name, task, algorithm, gin, metric, source, reference,
            threshold (None: none), add, records, run_dirs.
    Returns:
        The record (JSON-able dict); its ``seeds`` sorted by seed (runs
        without a known seed last, in the order given).
    Raises:
        UsageError: a bad flag or run dir.
    """
    _check_collect_args(args)
    gin = _repo_relative(args.gin)
    _check_seeds(args.run_dirs)
    from alf_rl.bin.quiet import import_tensorflow
    import_tensorflow(start_runtime=False)
    seeds = []
    for d in args.run_dirs:
        if read_num_seeds(d) > 1:
            seeds += read_population_run(d, args.metric, args.source,
                                         args.threshold)
        else:
            seeds.append(read_run(d, args.metric, args.source,
                                  args.threshold))
    if args.add:
        seeds += kept_seeds(args, gin, seeds)
    seeds.sort(key=lambda e: (e['seed'] is None, e['seed'] or 0))
    tag = _TAG_PREFIX + args.metric
    if all(s.get('population') for s in seeds):
        tag = 'seed_<k>/Metrics/' + args.metric
    record = {'format': RECORD_FORMAT, 'name': args.name, 'task': args.task,
              'algorithm': args.algorithm, 'gin': gin,
              'metric': args.metric, 'tag': tag,
              'source': args.source,
              'source_description': SOURCES[args.source],
              'reference': args.reference, 'seeds': seeds}
    if args.threshold is not None:
        record['threshold'] = args.threshold
    return record


def record_json(record: Dict[str, Any]) -> str:
    """A record as JSON text: indented, keys sorted, one curve point a
    line."""
    text = json.dumps(record, indent=1, sort_keys=True)
    # json puts each number of a [env_steps, value] pair on its own line.
    return re.sub(r'\[\s+(-?\d+),\s+([-+.\deE]+)\s+\]', r'[\1, \2]',
                  text) + '\n'


def write_record(records_dir: str, record: Dict[str, Any]) -> str:
    """Writes ``records_dir/<name>.json`` atomically; returns its path."""
    os.makedirs(records_dir, exist_ok=True)
    path = os.path.join(records_dir, record['name'] + '.json')
    atomic_write_text(path, record_json(record))
    return path


# ---------------------------------------------------------------------------
# table: records -> markdown
# ---------------------------------------------------------------------------

_RECORD_KEYS = ('name', 'task', 'algorithm', 'gin', 'metric', 'source',
                'reference', 'seeds')
_SEED_KEYS = ('final', 'env_steps', 'wall_secs')


def _check_record(path: str, record: Any) -> None:
    """Raises ``UsageError`` when ``record`` lacks what the table needs."""
    if not isinstance(record, dict):
        raise UsageError('%s: not a benchmark record (expected a JSON '
                         'object)' % path)
    missing = [k for k in _RECORD_KEYS if k not in record]
    if not missing and (not isinstance(record['seeds'], list)
                        or not record['seeds']):
        missing = ['seeds (a non-empty list)']
    if not missing:
        missing = sorted({k for s in record['seeds'] for k in _SEED_KEYS
                          if not isinstance(s, dict) or k not in s})
    if missing:
        raise UsageError('%s: not a benchmark record (missing %s)' %
                         (path, ', '.join(missing)))


def read_record(path: str) -> Dict[str, Any]:
    """The record at ``path``.

    Args:
        path: a ``NAME.json`` file that ``collect`` wrote.
    Returns:
        The record (dict).
    Raises:
        UsageError: not readable as JSON, or not a record.
    """
    try:
        with open(path) as f:
            record = json.load(f)
    except (OSError, ValueError) as e:
        raise UsageError('%s: not readable as JSON (%s)' % (path, e)) from None
    _check_record(path, record)
    return record


def load_records(records_dir: str) -> List[Dict[str, Any]]:
    """Every ``*.json`` record of a directory, sorted by task, algorithm
    and name (case-insensitively, then exactly).

    Args:
        records_dir: the directory ``collect`` wrote to.
    Returns:
        The records (non-empty list).
    Raises:
        UsageError: no directory, no records, or a file that is not one.
    """
    paths = sorted(glob.glob(os.path.join(records_dir, '*.json')))
    if not paths:
        raise UsageError('--records %s: no *.json benchmark records (write '
                         'them with: benchmark_table.py collect ...)' %
                         records_dir)
    records = []
    for path in paths:
        records.append(read_record(path))
    return sorted(records, key=lambda r: (
        r['task'].lower(), r['algorithm'].lower(), r['name'].lower(),
        r['task'], r['algorithm'], r['name']))


def format_steps(steps: float) -> str:
    """Env steps to 2 significant digits: ``1M``, ``1.5M``, ``250k``,
    ``999``."""
    if steps <= 0:
        return '0'
    rounded = float('%.2g' % steps)
    if rounded >= 1e6:
        return '%gM' % (rounded / 1e6)
    if rounded >= 1e3:
        return '%gk' % (rounded / 1e3)
    return '%g' % rounded


def format_duration(secs: float) -> str:
    """Seconds as ``45 s``, ``28 min`` or ``2.5 h``."""
    if secs < 90:
        return '%.0f s' % secs
    if secs < 90 * 60:
        return '%.0f min' % (secs / 60)
    return '%.1f h' % (secs / 3600)


def format_value(value: float) -> str:
    """A score: no decimals from 100 on, one from 10, else 3 significant
    digits (``2410``, ``-150.3``, ``0.79``)."""
    if abs(value) >= 100:
        return '%.0f' % value
    if abs(value) >= 10:
        return '%.1f' % value
    return '%.3g' % value


def score_cell(finals: Sequence[float]) -> str:
    """The score column: the mean of the seeds' final values, and with >= 2
    seeds its 95% bootstrap interval (``bootstrap_ci``: 10,000 resamples,
    seed 0) and every seed's value.

    Args:
        finals: [N] final values, ordered by seed.
    Returns:
        E.g. ``'1012 [981, 1043]; seeds: 981, 1043'``, or ``'981'``.
    """
    mean = sum(finals) / len(finals)
    if len(finals) < 2:
        return format_value(mean)
    low, high = bootstrap_ci(finals)
    return '%s [%s, %s]; seeds: %s' % (
        format_value(mean), format_value(low), format_value(high),
        ', '.join(format_value(v) for v in finals))


def _cell(text: str) -> str:
    """Text safe inside a markdown table cell (one line, ``|`` escaped)."""
    return ' '.join(str(text).split()).replace('|', '\\|')


def budget_cell(seeds: Sequence[Dict[str, Any]],
                threshold: Optional[float] = None) -> str:
    """The budget column: the env steps at the seeds' last points (a range
    when they differ), and for a run that stopped short of its planned
    env steps (``planned_env_steps``; more than 1% short) how far it got:
    ``'120k of 1M (unfinished)'``; a run that stopped at the point where
    it reached ``threshold`` (``to_threshold``) is not unfinished:
    ``'44k-68k of 100k (stopped at 475)'``; offline runs (no env steps,
    their curves over ``iterations``): ``'offline: 20k iterations'``.

    Args:
        seeds: the record's seed entries.
        threshold: the record's threshold (None: none).
    Returns:
        The cell's text.
    """
    if seeds and all(s.get('iterations') for s in seeds):
        fewest, most = (format_steps(f(s['iterations'] for s in seeds))
                        for f in (min, max))
        return 'offline: %s iterations' % (
            fewest if fewest == most else fewest + '-' + most)
    fewest, most = (format_steps(f(s['env_steps'] for s in seeds))
                    for f in (min, max))
    cell = fewest if fewest == most else fewest + '-' + most
    planned = [s.get('planned_env_steps') for s in seeds]
    short = [(p, _stopped_at_threshold(s)) for s, p in zip(seeds, planned)
             if p and s['env_steps'] < _FINISHED_FRACTION * p]
    if any(not stopped for _, stopped in short):
        cell += ' of %s (unfinished)' % format_steps(max(p for p, _ in short))
    elif short:
        cell += ' of %s (stopped at %s)' % (format_steps(max(
            p for p, _ in short)), format_value(threshold or 0.0))
    return cell


def _stopped_at_threshold(seed: Dict[str, Any]) -> bool:
    """Whether a seed's run ended at the point where it reached the
    threshold (``to_threshold``): it stopped there on purpose."""
    reached = seed.get('to_threshold')
    return bool(reached) and reached['env_steps'] == seed['env_steps']


def threshold_cell(record: Dict[str, Any]) -> str:
    """The to-threshold column: per seed the env steps and wall time (in
    seconds below 10 min) to the record's threshold (``not reached`` when
    it was not), and the median env steps over the seeds (a seed that did
    not reach it counts as more than any that did); ``-`` for a record
    without a threshold.

    Args:
        record: a record (``load_records``).
    Returns:
        E.g. ``'>= 475: 50k (82 s), 68k (119 s), not reached; median 68k'``.
    """
    if record.get('threshold') is None:
        return '-'
    cells, steps = [], []
    for s in record['seeds']:
        reached = s.get('to_threshold')
        if reached:
            secs = reached['wall_secs']
            cells.append('%s (%s)' % (format_steps(reached['env_steps']),
                                      '%.0f s' % secs if secs < 600 else
                                      format_duration(secs)))
            steps.append(float(reached['env_steps']))
        else:
            cells.append('not reached')
            steps.append(math.inf)
    steps.sort()
    n = len(steps)
    median = (steps[n // 2] if n % 2 else
              (steps[n // 2 - 1] + steps[n // 2]) / 2)
    return '>= %s: %s; median %s' % (
        format_value(record['threshold']), ', '.join(cells),
        format_steps(median) if math.isfinite(median) else 'not reached')


def wall_cell(seeds: Sequence[Dict[str, Any]]) -> str:
    """The wall-time column: the mean of the seeds' ``wall_secs``; when
    seeds were trained together (population runs, ``population`` N), the
    whole run's time, followed by ``(N seeds per run)``.

    Args:
        seeds: the record's seed entries.
    Returns:
        E.g. ``'28 min'`` or ``'59 min (3 seeds per run)'``.
    """
    cell = format_duration(sum(s['wall_secs'] for s in seeds) / len(seeds))
    sizes = sorted({s.get('population') or 1 for s in seeds})
    if sizes != [1]:
        cell += ' (%s seeds per run)' % '/'.join(str(n) for n in sizes)
    return cell


def table_row(record: Dict[str, Any], link_dir: str) -> str:
    """One record as a markdown table row.

    Args:
        record: a record (``load_records``).
        link_dir: the directory the table's file is in (the config link is
            relative to it).
    Returns:
        The row, ``| ... |``.
    """
    seeds = record['seeds']
    link = os.path.relpath(os.path.join(REPO_ROOT, record['gin']),
                           link_dir).replace(os.sep, '/')
    cells = [record['task'], record['algorithm'], '[%s](%s)' % (
        os.path.basename(record['gin']), link),
             budget_cell(seeds, record.get('threshold')), str(len(seeds)),
             '%s (%s)' % (record['metric'], record['source']),
             score_cell([s['final'] for s in seeds]), wall_cell(seeds),
             threshold_cell(record), record['reference']]
    return '| ' + ' | '.join(_cell(c) for c in cells) + ' |'


def render_table(records: Sequence[Dict[str, Any]], link_dir: str) -> str:
    """The benchmark table of the records (in the order given) as markdown.

    Args:
        records: records (``load_records``).
        link_dir: the directory the table will be in (for the links).
    Returns:
        The text: a comment saying how it was made, the header and a row
        per record, ending in a newline.
    """
    lines = [
        '<!-- generated from the benchmark records by: python '
        'benchmarks/benchmark_table.py table --write FILE; do not edit -->',
        '| task | algorithm | config | budget (env steps) | seeds | metric '
        '(source) | score: mean [95% CI]; per seed | wall time per run | '
        'env steps (wall time) to threshold | reference |',
        '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |']
    lines += [table_row(r, link_dir) for r in records]
    return '\n'.join(lines) + '\n'


def _block_span(text: str, path: str) -> Tuple[int, int]:
    """Where the table goes in ``text``: the span between the end of the
    start marker's line and the start of the end marker's line."""
    starts = [m.start() for m in re.finditer(re.escape(START_MARKER), text)]
    ends = [m.start() for m in re.finditer(re.escape(END_MARKER), text)]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise UsageError(
            '%s: expected one line %s followed by one line %s (found %d '
            'and %d)' % (path, START_MARKER, END_MARKER, len(starts),
                         len(ends)))
    begin = text.find('\n', starts[0])
    if begin < 0 or begin > ends[0]:
        raise UsageError('%s: %s and %s must be on lines of their own' %
                         (path, START_MARKER, END_MARKER))
    return begin + 1, text.rfind('\n', 0, ends[0]) + 1


def replace_table(text: str, table: str, path: str) -> str:
    """``text`` with the lines between the markers replaced by ``table``.

    Args:
        text: the file's text.
        table: the new table (``render_table``).
        path: the file's name, for the error message.
    Raises:
        UsageError: the markers are missing, repeated or out of order.
    """
    begin, end = _block_span(text, path)
    return text[:begin] + table + text[end:]


def current_table(text: str, path: str) -> str:
    """The text between the markers of a file (``replace_table``'s
    counterpart)."""
    begin, end = _block_span(text, path)
    return text[begin:end]


def _read_text(path: str) -> str:
    """A file's text; ``UsageError`` when it cannot be read."""
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        raise UsageError('%s: cannot be read (%s)' % (path, e.strerror)) from None


def parse_steps(text: str) -> List[int]:
    """``'250k,1M,2.5e6'`` -> ``[250000, 1000000, 2500000]``.

    Raises:
        UsageError: for an empty list or an item that is not a positive
            number (with an optional ``k``/``M`` suffix).
    """
    steps = []
    for item in text.split(','):
        item = item.strip()
        scale = {'k': 1e3, 'M': 1e6}.get(item[-1:], 1)
        try:
            value = float(item[:-1] if scale != 1 else item) * scale
        except ValueError:
            value = -1
        if not value > 0:
            raise UsageError("--at: %r is not a positive env step count "
                             "(e.g. 250k, 1M, 2000000)" % item)
        steps.append(int(round(value)))
    return steps


def point_cell(curve: Sequence[Tuple[int, float]], step: int) -> str:
    """The ``points`` cell of ``curve`` ([(env steps, value)], ascending)
    at ``step``: the last point at or before it as ``value (at steps)``
    (a point up to 1% past ``step`` counts as at it: a 1M-step run's last
    evaluation may come at 997k or 1,000,472), or ``not yet`` when the
    curve ends more than 1% before ``step``."""
    if curve[-1][0] < 0.99 * step:
        return 'not yet'
    at = [(s, v) for s, v in curve if s <= 1.01 * step]
    if not at:
        return 'none yet'
    return '%s (at %s)' % (format_value(at[-1][1]), format_steps(at[-1][0]))


#: The evaluations file of a reference run (``sb3_reference.py``'s
#: ``--save_dir DIR/seed<S>``): a JSON object per line, ``env_steps`` and
#: ``return`` (10 deterministic episodes) among its keys.
REFERENCE_EVALS = 'eval.jsonl'


def reference_row(run_dir: str, metric: str,
                  source: str) -> Tuple[str, Optional[int], list, None]:
    """A ``points`` row of a reference run (a directory with
    ``REFERENCE_EVALS``): ``(label, seed, curve, None)``, the label
    ``PARENT/DIR``, the seed from a ``seed<S>`` directory name, the curve
    ``[(env steps, return)]`` with the last line kept for a step logged
    twice (a run resumed from an earlier save logs it again), and no wall
    time (each resumed process restarts its clock).

    Raises:
        UsageError: ``metric``/``source`` other than the greedy evaluation's
            ``AverageReturn`` (all such a file holds), or a bad file.
    """
    path = os.path.join(run_dir, REFERENCE_EVALS)
    if (metric, source) != ('AverageReturn', 'eval'):
        raise UsageError("%s holds greedy evaluation returns only: use "
                         "--metric AverageReturn --source eval, not %s %s" %
                         (path, metric, source))
    values = {}
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise UsageError('%s: %s' % (path, e)) from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            values[int(entry['env_steps'])] = float(entry['return'])
        except (ValueError, KeyError, TypeError) as e:
            raise UsageError('%s: line %d: expected {"env_steps": N, '
                             '"return": X, ...}: %s' % (path, number, e)
                             ) from None
    if not values:
        raise UsageError('%s: no evaluations yet' % path)
    norm = os.path.normpath(run_dir)
    match = re.fullmatch(r'seed(\d+)', os.path.basename(norm))
    label = '%s/%s' % (os.path.basename(os.path.dirname(norm)),
                       os.path.basename(norm))
    return (label, int(match.group(1)) if match else None,
            sorted(values.items()), None)


def record_rows(path: str, metric: str,
                source: str) -> List[Tuple[str, Optional[int], list,
                                           Optional[float]]]:
    """``points`` rows of a record file (``collect``'s ``NAME.json``), one
    per seed, so that a table can be generated again after the runs'
    directories are gone.

    Args:
        path: the record file.
        metric: the ``--metric`` asked for (must be the record's).
        source: the ``--source`` asked for (must be the record's).
    Returns:
        ``[(NAME/seed_S, seed, curve, wall seconds)]``, the curve
        ``[(env steps, value)]`` being the thinned one the record holds.
    Raises:
        UsageError: not a record, one of another metric or source, or a
            seed without a curve.
    """
    record = read_record(path)
    if (record['metric'], record['source']) != (metric, source):
        raise UsageError('%s holds %s (%s): use --metric %s --source %s, '
                         'not %s %s' % (path, record['metric'],
                                        record['source'], record['metric'],
                                        record['source'], metric, source))
    rows = []
    for entry in record['seeds']:
        seed = entry.get('seed')
        curve = [(int(s), float(v)) for s, v in entry.get('curve') or ()]
        if not curve:
            raise UsageError('%s: seed %s has no curve' % (path, seed))
        rows.append(('%s/seed_%s' % (record['name'], seed), seed, curve,
                     entry.get('wall_secs')))
    return rows


def _points_rows(run_dir: str, metric: str, source: str) -> list:
    """The ``points`` rows ``(label, seed, curve, wall)`` of one argument:
    a record file, a reference run, a population run or an alf-train
    run."""
    if run_dir.endswith('.json') and os.path.isfile(run_dir):
        return record_rows(run_dir, metric, source)
    if os.path.exists(os.path.join(run_dir, REFERENCE_EVALS)):
        return [reference_row(run_dir, metric, source)]
    name = os.path.basename(os.path.normpath(run_dir))
    if read_num_seeds(run_dir) > 1:
        wall = population_run_secs(run_dir, metric)
        return [('%s/seed_%d' % (name, seed), seed, curve, wall)
                for seed, curve in population_curves(run_dir, metric,
                                                     source)]
    return [(name, read_seed(run_dir),
             read_metric_curve(run_dir, metric, source),
             training_wall_secs(run_dir, metric, source)[0])]


def points_table(run_dirs: Sequence[str], metric: str, source: str,
                 steps: Sequence[int]) -> str:
    """The ``points`` command's markdown table (see the module docstring).

    Args:
        run_dirs: alf-train root dirs, reference runs' directories
            (``reference_row``) or record files (``record_rows``).
        metric: e.g. ``'GameScore'``.
        source: ``'eval'`` or ``'train'``.
        steps: env step counts, one column each.
    Returns:
        The table, ending with a newline.
    """
    lines = ['| run | seed | %s | last | wall time |' % ' | '.join(
        format_steps(s) for s in steps),
             '| --- | --- | %s | --- | --- |' % ' | '.join('---'
                                                         for _ in steps)]
    for run_dir in run_dirs:
        for label, seed, curve, wall in _points_rows(run_dir, metric,
                                                     source):
            lines.append('| %s | %s | %s | %s (at %s) | %s |' % (
                _cell(label), '-' if seed is None else seed,
                ' | '.join(point_cell(curve, s) for s in steps),
                format_value(curve[-1][1]), format_steps(curve[-1][0]),
                '-' if wall is None else format_duration(wall)))
    return '\n'.join(lines) + '\n'


def run_table(args: argparse.Namespace) -> int:
    """The ``table`` command: prints, writes (``--write``) or checks
    (``--check``) the table; returns the exit code (1: check failed)."""
    records = load_records(args.records)
    target = args.write or args.check
    link_dir = (os.path.dirname(os.path.abspath(target)) if target else
                REPO_ROOT)
    table = render_table(records, link_dir)
    if not target:
        sys.stdout.write(table)
        return 0
    text = _read_text(target)
    if args.check:
        if current_table(text, target) == table:
            print('%s: %s: the benchmark table is up to date (%d records)'
                  % (_PROG, target, len(records)))
            return 0
        print('%s: %s: the benchmark table differs from %s (regenerate: '
              'python benchmarks/benchmark_table.py table --write %s)' %
              (_PROG, target, args.records, target))
        return 1
    new_text = replace_table(text, table, target)
    if new_text != text:
        atomic_write_text(target, new_text)
    print('%s: %s: %s (%d records)' % (
        _PROG, target, 'wrote the benchmark table' if new_text != text else
        'the benchmark table is already up to date', len(records)))
    return 0


def load_named_records(records_dir: str,
                       names: Sequence[str]) -> List[Dict[str, Any]]:
    """The records ``names`` (file names without ``.json``), in that order.

    Args:
        records_dir: the directory ``collect`` wrote to.
        names: record names.
    Returns:
        One record per name.
    Raises:
        UsageError: a name given twice, or one without a record (the line
            names the records there).
    """
    records, seen = [], set()
    for name in names:
        if name in seen:
            raise UsageError('record %s given twice' % name)
        seen.add(name)
        path = os.path.join(records_dir, name + '.json')
        if not os.path.isfile(path):
            there = sorted(os.path.basename(p)[:-len('.json')] for p in
                           glob.glob(os.path.join(records_dir, '*.json')))
            raise UsageError('no record %s in %s (records there: %s)' % (
                name, records_dir, ', '.join(there) or 'none'))
        records.append(read_record(path))
    return records


def records_chart(records: Sequence[Dict[str, Any]],
                  title: str = '') -> str:
    """An SVG chart of the records' curves, a line per seed.

    Args:
        records: records as ``collect`` writes them.
        title: the chart's title (default: the records' metrics).
    Returns:
        The SVG document: each seed's ``curve`` ([env steps, value] points)
        labelled ``'<algorithm> <task> seed <k> (<source>)'``, with
        ``<name>: `` in front where two records share algorithm and task
        (e.g. one method under two schedules).
    Raises:
        UsageError: no record has a curve point.
    """
    kinds = [(r['algorithm'], r['task']) for r in records]
    series = []
    for r in records:
        named = kinds.count((r['algorithm'], r['task'])) > 1
        for s in r['seeds']:
            label = '%s%s %s seed %s (%s)' % (
                r['name'] + ': ' if named else '', r['algorithm'], r['task'],
                s['seed'], r['source'])
            series.append((label, [(x, y) for x, y in s['curve']]))
    if not any(points for _, points in series):
        raise UsageError('records %s have no curve points' % ', '.join(
            r['name'] for r in records))
    metrics = sorted({r['metric'] for r in records})
    return svg_line_chart(series, title=title or ' / '.join(metrics),
                          x_label='env steps', y_label=' / '.join(metrics))


def run_plot(args: argparse.Namespace) -> int:
    """The ``plot`` command: writes ``--out`` (atomically); returns 0."""
    if not args.out.endswith('.svg'):
        raise UsageError('--out %s: expected a file name ending in .svg' %
                         args.out)
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        raise UsageError('--out %s: %s is not a directory' % (args.out,
                                                              out_dir))
    records = load_named_records(args.records, args.names)
    atomic_write_text(args.out, records_chart(records, args.title))
    print('%s: wrote %s (%d records, %d seeds)' % (
        _PROG, args.out, len(records),
        sum(len(r['seeds']) for r in records)))
    return 0


# ---------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    """The command-line flags of the commands."""
    p = _Parser(prog='benchmark_table.py',
                description=__doc__.split('\n')[0])
    sub = p.add_subparsers(dest='command', required=True,
                           metavar='{collect,table,points,plot}',
                           parser_class=_Parser)
    c = sub.add_parser('collect', help='Event files of runs -> a record.')
    c.add_argument('--name', required=True, help='Record name (file name).')
    c.add_argument('--task', required=True, help="E.g. 'Hopper-v5'.")
    c.add_argument('--algorithm', required=True, help="E.g. 'PPO'.")
    c.add_argument('--gin', required=True, help='The gin file of the runs.')
    c.add_argument('--metric', default='AverageReturn',
                   help='Metrics_vs_EnvironmentSteps/<metric> is read.')
    c.add_argument('--source', default='eval', choices=sorted(SOURCES),
                   help='eval: greedy evaluation; train: training episodes.')
    c.add_argument('--reference', default='',
                   help="Reference score with its source, as shown.")
    c.add_argument('--threshold', type=float, default=None,
                   help='Also record the env steps and wall time to this '
                   'value of the metric.')
    c.add_argument('--add', action='store_true',
                   help='Keep the seeds of the existing record NAME that '
                   'these runs do not train (e.g. seed 0, whose run dir '
                   'is gone) and add these.')
    c.add_argument('--records', default=DEFAULT_RECORDS)
    c.add_argument('run_dirs', nargs='+', metavar='RUN_DIR',
                   help='alf-train root dirs, one per seed.')
    t = sub.add_parser('table', help='Records -> the markdown table.')
    t.add_argument('--records', default=DEFAULT_RECORDS)
    out = t.add_mutually_exclusive_group()
    out.add_argument('--write', metavar='FILE',
                     help='Replace the table between the markers of FILE.')
    out.add_argument('--check', metavar='FILE',
                     help="Exit 1 when FILE's table differs.")
    q = sub.add_parser('points', help='Runs -> values at given env steps.')
    q.add_argument('--metric', default='AverageReturn',
                   help='Metrics_vs_EnvironmentSteps/<metric> is read.')
    q.add_argument('--source', default='eval', choices=sorted(SOURCES),
                   help='eval: greedy evaluation; train: training episodes.')
    q.add_argument('--at', required=True, help="Env steps, e.g. '1M,2M'.")
    q.add_argument('run_dirs', nargs='+', metavar='RUN_DIR',
                   help='alf-train root dirs, directories with an '
                   'eval.jsonl of sb3_reference.py, or record files '
                   '(NAME.json).')
    g = sub.add_parser('plot', help="Records' curves -> an SVG chart.")
    g.add_argument('--out', required=True, help='The .svg file to write.')
    g.add_argument('--title', default='', help='Chart title.')
    g.add_argument('--records', default=DEFAULT_RECORDS)
    g.add_argument('names', nargs='+', metavar='NAME',
                   help='Record names (docs/benchmarks/records/NAME.json).')
    return p


def _report_record(record: Dict[str, Any], path: str) -> None:
    """Prints what ``collect`` wrote: a line per seed and the path."""
    for s in record['seeds']:
        print('%s: seed %s: final %s, best %s, %d env steps, %s (%s), %d '
              'points' % (_PROG, s['seed'], format_value(s['final']),
                          format_value(s['best']), s['env_steps'],
                          format_duration(s['wall_secs']), s['wall_from'],
                          s['num_points']))
    print('%s: wrote %s (%s %s, %d seed%s)' % (
        _PROG, path, record['metric'], record['source'],
        len(record['seeds']), '' if len(record['seeds']) == 1 else 's'))


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs ``collect``, ``table``, ``points`` or ``plot``; returns the exit code
    (0; 1: a ``--check`` found a difference; 2: a mistake, printed as one
    line)."""
    try:
        args = _parser().parse_args(argv)
        if args.command == 'collect':
            record = collect(args)
            _report_record(record, write_record(args.records, record))
            return 0
        if args.command == 'points':
            print(points_table(args.run_dirs, args.metric, args.source,
                               parse_steps(args.at)), end='')
            return 0
        if args.command == 'plot':
            return run_plot(args)
        return run_table(args)
    except UsageError as e:
        print('%s: error: %s' % (_PROG, e), file=sys.stderr)
        return 2


if __name__ == '__main__':
    from alf_rl.bin.quiet import import_tensorflow
    import_tensorflow(start_runtime=False)
    sys.exit(main())
