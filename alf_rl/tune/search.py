"""A grid (or random-sample) search from its options to its summary.

``run_search`` checks the options, the gin syntax, the gin names and
values (against the configurables, in a process of its own: this one
imports no TensorFlow) and the search record before any run starts, runs
every configuration x seed as
an ``alf-train`` process (``RunPool``: seed by seed, every
configuration's seed 0 first), prints the tally and summarizes the
finished runs. Rerunning the same search skips finished runs and resumes
unfinished ones from their checkpoints.
"""

import collections
import os
import shlex
import subprocess
import sys
from typing import (Any, Callable, Dict, List, NamedTuple, Optional,
                    Sequence, Tuple)

from alf_rl.runs.gin_files import check_gin_syntax
from alf_rl.tune.files import DONE_FILE
from alf_rl.tune.runner import RunPool, RunResult, usable_cores
from alf_rl.tune.spec import (Config, Run, binding_check_command,
                              check_search_record, expand_grid, parse_grid,
                              parse_seeds, plan_runs, train_command)
from alf_rl.tune.summary import summarize


def default_parallel() -> int:
    """The number of cores this process may use (at least 1): runs at a
    time by default, each ``alf-train`` using about one core."""
    return usable_cores()


class SearchOptions(NamedTuple):
    """What a search runs: ``alf-grid-search``'s flags (errors name them).

    Attributes:
        gin_files: gin files of every run (``--gin_file``).
        root_dir: the search's directory, ``PARENT`` (``--root_dir``).
        grid: ``'Configurable.param=[v1, v2]'`` specs (``--grid``,
            ``parse_grid``).
        gin_params: fixed gin bindings of every run (``--gin_param``).
        seeds: ``'0,1,2'`` or ``'0-4'`` (``--seeds``, ``parse_seeds``).
        num_parallel: runs at a time; None: ``default_parallel()``.
        random_samples: run this many configurations drawn from the grid
            (None: all of them).
        seed: seed of the ``random_samples`` draw and of optuna's sampler.
        module_paths: ``alf-train``'s ``--module_path`` directories.
        metric: the metric to summarize, e.g. ``'AverageReturn'``.
        mode: ``'max'`` or ``'min'``: which way the metric is better.
        optuna: trials of an optuna study (``run_optuna``); None for a
            grid or random search.
        dry_run: print the runs and start none.
        force: reuse a ``root_dir`` that holds a different search.
        check_bindings: check the gin names and values against the
            configurables first (``check_search_bindings``); False for a
            ``train_command`` that takes other gin names.
        train_command: the program that trains one run, given
            ``alf-train``'s flags (None: this Python's ``-m
            alf_rl.bin.train``).
        population: train each configuration's consecutive seeds as one
            ``alf-train`` run with ``TrainerConfig.num_seeds`` (PPO on a
            ``suite_tf`` environment: N seeds in one compiled graph).
    """
    gin_files: Sequence[str]
    root_dir: Optional[str]
    grid: Sequence[str]
    gin_params: Sequence[str] = ()
    seeds: str = '0'
    num_parallel: Optional[int] = None
    random_samples: Optional[int] = None
    seed: int = 0
    module_paths: Sequence[str] = ()
    metric: str = 'AverageReturn'
    mode: str = 'max'
    optuna: Optional[int] = None
    dry_run: bool = False
    force: bool = False
    train_command: Optional[str] = None
    check_bindings: bool = True
    population: bool = False


def _search_record(options: SearchOptions, grid: Dict[str, List[Any]],
                   seeds: List[int]) -> Dict[str, Any]:
    """What identifies a search in ``grid_search.json``."""
    return {'gin_files': [os.path.normpath(p) for p in options.gin_files],
            'gin_params': list(options.gin_params), 'grid': grid,
            'random_samples': options.random_samples,
            'sample_seed': (options.seed if options.random_samples or
                            options.optuna else None),
            'optuna': options.optuna is not None, 'seeds': seeds,
            **({'population': True} if options.population else {})}


def prepare(options: SearchOptions) -> Tuple[List[Config], List[int]]:
    """Checks the options, the gin syntax, the gin names and values
    (``check_search_bindings``) and the search record, and records the
    search (not for a dry run).

    Args:
        options: the search.
    Returns:
        ``(configurations, seeds)``.
    Raises:
        ValueError: one line naming the flag, gin file or binding that is
            wrong, or what differs from the recorded search.
    """
    if not options.gin_files:
        raise ValueError('--gin_file is required')
    root_dir = search_dir(options)
    grid = parse_grid(options.grid)
    seeds = parse_seeds(options.seeds)
    configs = expand_grid(grid, options.random_samples, options.seed)
    for path in options.module_paths:
        if not os.path.isdir(path):
            raise ValueError('--module_path %s: not a directory' % path)
    bindings = [b for c in configs for b in c.bindings()]
    check_gin_syntax(options.gin_files, list(options.gin_params) + bindings)
    if options.check_bindings:
        check_search_bindings(options, grid)
    check_search_record(root_dir,
                        _search_record(options, grid, seeds), options.force,
                        write=not options.dry_run)
    return configs, seeds


# The line ``python -m alf_rl.runs.binding_checks`` prints on an error.
_CHECK_ERROR = 'binding check: error: '


def check_search_bindings(options: SearchOptions,
                          grid: Dict[str, List[Any]]) -> None:
    """Checks every gin name and value of the search (gin files, fixed
    bindings, each ``--grid`` value) against the configurables, before any
    run starts, in a process of its own (registering the configurables
    imports TensorFlow; seconds).

    Args:
        options: the search.
        grid: ``{gin name: [values]}`` (``parse_grid``).
    Raises:
        ValueError: one line naming the binding, e.g. ``--grid
            PPOLoss.gama=0.98: Configurable 'PPOLoss' doesn't have a
            parameter named 'gama'; did you mean gamma?``.
    """
    done = subprocess.run(
        binding_check_command(options.gin_files, options.gin_params, grid,
                              options.module_paths),
        capture_output=True, text=True, check=False)
    if done.returncode == 0:
        return
    errors = [line[len(_CHECK_ERROR):] for line in done.stderr.splitlines()
              if line.startswith(_CHECK_ERROR)]
    last = (done.stderr.strip().splitlines() or ['no output'])[-1]
    raise ValueError(errors[-1] if errors else
                     'checking the gin bindings failed (exit %d): %s' %
                     (done.returncode, last))


def command_for(options: SearchOptions) -> Callable[[Run], List[str]]:
    """The function giving a run's command line (``train_command``)."""
    base = (shlex.split(options.train_command) if options.train_command
            else None)
    return lambda run: train_command(run, options.gin_files,
                                     options.gin_params,
                                     options.module_paths, base)


def run_pool(options: SearchOptions) -> RunPool:
    """A ``RunPool`` of the options' runs, printing its progress lines."""
    return RunPool(command_for(options),
                   (default_parallel() if options.num_parallel is None else
                    options.num_parallel),
                   report=lambda line: print(line, flush=True))


def _dry_run(runs: Sequence[Run], command_of: Callable[[Run], List[str]]
             ) -> None:
    """Prints what a real run would do for each run."""
    for run in runs:
        if os.path.exists(os.path.join(run.root_dir, DONE_FILE)):
            state = 'finished: skip'
        elif os.path.isdir(os.path.join(run.root_dir, 'ckpt')):
            state = 'resume'
        else:
            state = 'new'
        print('%s (%s): %s' % (run.label(), state,
                               shlex.join(command_of(run))))
    print('alf-grid-search: dry run: %d run(s), none started' % len(runs))


def tally(results: Sequence[RunResult]) -> int:
    """Prints how the runs ended (one line; a line per failed run on
    stderr).

    Args:
        results: ``RunPool.run``'s results.
    Returns:
        The exit code: 1 when a run failed, else 0.
    """
    counts = collections.Counter(r.status for r in results)
    print('alf-grid-search: %d run(s): %s' % (len(results), ', '.join(
        '%d %s' % (counts[s], s) for s in ('done', 'skipped', 'failed',
                                           'interrupted', 'not started')
        if counts[s])), flush=True)
    failed = [r for r in results if r.status == 'failed']
    for r in failed:
        print('alf-grid-search: failed: %s (exit %s): %s [%s]' % (
            r.run.label(), r.exit_code, r.message, r.run.root_dir),
            file=sys.stderr)
    return 1 if failed else 0


def search_dir(options: SearchOptions) -> str:
    """``options.root_dir``, the search's directory; ValueError naming
    ``--root_dir`` when it is not given."""
    if not options.root_dir:
        raise ValueError('--root_dir is required')
    return options.root_dir


def run_search(options: SearchOptions) -> int:
    """Runs (or dry-runs) a grid or random search, then summarizes it;
    with ``options.optuna``, runs the optuna study instead
    (``alf_rl.tune.optuna_study.run_optuna``).

    Args:
        options: the search.
    Returns:
        The exit code: 0, 1 when a run failed, 130 when interrupted.
    Raises:
        ValueError: bad options or gin syntax, or a different recorded
            search.
    """
    if options.optuna is not None:
        # Imported here: optuna_study builds on this module.
        from alf_rl.tune.optuna_study import run_optuna
        return run_optuna(options)
    configs, seeds = prepare(options)
    root_dir = search_dir(options)
    runs = plan_runs(root_dir, configs, seeds, options.population)
    if options.dry_run:
        _dry_run(runs, command_for(options))
        return 0
    pool = run_pool(options)
    results = pool.run(runs)
    code = tally(results)
    if pool.interrupted:
        print('alf-grid-search: interrupted; rerun the same command to '
              'resume', file=sys.stderr)
        return 130
    if any(r.status in ('done', 'skipped') for r in results):
        summarize(root_dir, options.metric, options.mode)
    return code
