"""An optuna TPE study over a grid's choices (``alf-grid-search --optuna
N``).

optuna is imported only when a study runs (``pip install
'alf_rl[tune]'``); without it the search stops with one line naming the
extra.
"""

import os
from typing import Any

from alf_rl.runs.quiet import import_tensorflow
from alf_rl.tune.search import (SearchOptions, prepare, run_pool,
                                search_dir, tally)
from alf_rl.tune.spec import (Config, config_name, parse_grid, parse_seeds,
                              plan_runs)
from alf_rl.tune.summary import (format_number, read_finished_runs,
                                 score_config, summarize)


def _import_optuna() -> Any:
    """optuna, or a one-line error naming the extra that installs it."""
    try:
        import optuna
    except ImportError:
        raise ValueError("--optuna needs optuna: pip install "
                         "'alf_rl[tune]'") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def run_optuna(options: SearchOptions) -> int:
    """Runs ``options.optuna`` trials of a TPE study over the ``grid``
    values (categorical choices); a trial runs every seed of its
    configuration (in parallel) and scores the mean final metric over
    them. The study lives in ``PARENT/optuna.db`` (sqlite): a rerun goes
    on with it, first re-running (resuming) trials an interrupted session
    left unfinished. Configurations proposed twice reuse their runs.

    Args:
        options: the search (``optuna``: the number of finished trials to
            reach).
    Returns:
        The exit code (0; 130 when interrupted).
    Raises:
        ValueError: optuna is not installed, ``dry_run``, grid values that
            are not numbers, strings, booleans or None, or what
            ``prepare`` refuses.
    """
    optuna = _import_optuna()
    if options.dry_run:
        raise ValueError('--dry_run does not apply to --optuna')
    prepare(options)
    odd = [n for n, values in parse_grid(options.grid).items()
           if not all(v is None or isinstance(v, (bool, int, float, str))
                      for v in values)]
    if odd:
        raise ValueError('--optuna: the --grid values of %s must be numbers, '
                         'strings, booleans or None' % odd[0])
    import_tensorflow()
    root_dir = search_dir(options)
    grid, seeds = parse_grid(options.grid), parse_seeds(options.seeds)
    study = optuna.create_study(
        study_name='alf-grid-search', load_if_exists=True,
        storage='sqlite:///' + os.path.abspath(
            os.path.join(root_dir, 'optuna.db')),
        direction='maximize' if options.mode == 'max' else 'minimize',
        sampler=optuna.samplers.TPESampler(seed=options.seed))
    stale = [t for t in study.trials
             if t.state == optuna.trial.TrialState.RUNNING]
    pool = run_pool(options)
    while sum(t.state.is_finished() for t in study.trials) < options.optuna:
        trial = stale.pop(0) if stale else study.ask()
        values = {n: (trial.params[n] if n in trial.params else
                      trial.suggest_categorical(n, grid[n])) for n in grid}
        config = Config(config_name(values), values)
        results = pool.run(plan_runs(root_dir, [config], seeds))
        if pool.interrupted:
            return 130
        if any(r.status == 'failed' for r in results):
            tally(results)
            study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
            continue
        row = score_config(config.name, read_finished_runs(
            root_dir, options.metric)[config.name], options.mode)
        if row.get('final_mean') is None:
            study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
            continue
        study.tell(trial.number, row['final_mean'])
        print('trial %d: %s: %s' % (trial.number, config.name,
                                    format_number(row.get('final_mean'))),
              flush=True)
    summarize(root_dir, options.metric, options.mode)
    return 0
