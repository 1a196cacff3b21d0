r"""Runs a grid (or random samples) of gin settings x seeds as ``alf-train``
runs, resumably, in parallel processes, and summarizes them.

Usage::

    alf-grid-search --gin_file examples/ppo_cart_pole.gin --root_dir PARENT \
        --grid 'PPOLoss.gamma=[0.98, 0.99]' \
        --grid 'LegacyAdam.learning_rate=[1e-3, 3e-4]' \
        [--gin_param 'TrainerConfig.num_env_steps=100000' ...] \
        [--seeds 0,1,2] [--num_parallel N] [--random_samples K --seed S] \
        [--module_path DIR] [--metric AverageReturn] [--dry_run] [--force] \
        [--skip_binding_check]
    alf-grid-search --example ppo_cart_pole --root_dir PARENT --grid ...
    alf-grid-search --summarize PARENT [--metric AverageReturn]
    alf-grid-search ... --optuna N     # TPE over the --grid choices

Before anything starts (also with ``--dry_run``), every gin name and
value -- of the gin files, the ``--gin_param`` bindings and each ``--grid``
value -- is checked against the configurables, as ``alf-train`` checks
them: a misspelled name or a value of the wrong type is refused with one
line naming it (``--grid PPOLoss.gama=0.98: Configurable 'PPOLoss'
doesn't have a parameter named 'gama'; did you mean gamma?``). This takes
a few seconds (TensorFlow is imported, in a process of its own).

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
import sys
from typing import Optional, Sequence

from alf_rl.runs.examples import gin_files_with_examples
from alf_rl.tune.search import SearchOptions, default_parallel, run_search
from alf_rl.tune.summary import summarize


def _parser() -> argparse.ArgumentParser:
    """The command-line flags."""
    p = argparse.ArgumentParser(
        prog='alf-grid-search',
        description=' '.join(__doc__.split('\n\n')[0].split()))
    add = p.add_argument
    add('--gin_file', action='append', default=[], help='Gin config files.')
    add('--example', action='append', default=[],
        help="A shipped example by name, e.g. 'ppo_cart_pole' (before the "
        '--gin_file files); repeatable.')
    add('--root_dir', help='Parent directory of the search (resumable).')
    add('--grid', action='append', default=[],
        help="Values to search: 'Configurable.param=[v1, v2]' (repeatable).")
    add('--gin_param', action='append', default=[],
        help='Fixed gin bindings of every run (repeatable).')
    add('--seeds', default='0', help="Seeds: '0,1,2' or '0-4'.")
    add('--population', action='store_true',
        help='Train the consecutive seeds of a configuration as one alf-train'
        ' run (TrainerConfig.num_seeds: PPO on a suite_tf environment).')
    add('--num_parallel', type=int, default=default_parallel(),
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
    add('--skip_binding_check', action='store_true',
        help='Do not check the gin names and values against the '
        "configurables before starting (for a --train_command that takes "
        'other gin names).')
    add('--train_command', default=None,
        help='Command that trains one run, given alf-train flags (default: '
        'this Python with -m alf_rl.bin.train).')
    return p


def _options(args: argparse.Namespace) -> SearchOptions:
    """The search of parsed flags."""
    return SearchOptions(
        gin_files=gin_files_with_examples(args.gin_file, args.example),
        root_dir=args.root_dir, grid=args.grid,
        gin_params=args.gin_param, seeds=args.seeds,
        num_parallel=args.num_parallel, random_samples=args.random_samples,
        seed=args.seed, module_paths=args.module_path, metric=args.metric,
        mode=args.mode, optuna=args.optuna, dry_run=args.dry_run,
        force=args.force, train_command=args.train_command,
        check_bindings=not args.skip_binding_check,
        population=args.population)


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
            code = run_search(_options(args))
    except ValueError as e:
        print('alf-grid-search: error: %s' % e, file=sys.stderr)
        code = 1
    sys.stdout.flush()
    sys.exit(code)


if __name__ == '__main__':
    main()
