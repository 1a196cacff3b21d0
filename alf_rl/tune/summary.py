"""The summary of a search: per configuration, the final and best metric
over seeds with 95% bootstrap intervals.

At the end of a search (and with ``alf-grid-search --summarize PARENT``):
``PARENT/summary.md`` and ``PARENT/summary.csv`` (per configuration: final
and best metric over seeds, mean with a 95% bootstrap interval, IQM with
>= 5 seeds, env steps, wall time; best first), ``PARENT/<config>/curve.svg``
(the seeds' mean and range) and TensorBoard hparams summaries
(``alf_rl.tune.hparams``).
"""

import io
import os
import re
from typing import (Any, Callable, Dict, List, NamedTuple, Optional,
                    Sequence, Tuple)

from alf_rl.tune.files import DONE_FILE, listdir, read_json
from alf_rl.tune.spec import Config, Run
from alf_rl.utils.checkpoint import atomic_write_text


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
    found: Dict[str, Any] = {}
    for name in sorted(os.listdir(parent)):
        seeds = sorted(
            (int(m.group(1)), m.group(0)) for m in (
                re.fullmatch(r'seed(\d+)', d) for d in listdir(
                    os.path.join(parent, name))) if m)
        for seed, seed_dir in seeds:
            root = os.path.join(parent, name, seed_dir)
            marker = read_json(os.path.join(root, DONE_FILE))
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
        found.setdefault(name, []).extend(
            population_runs(os.path.join(parent, name), metric))
        if not found[name]:
            del found[name]
    return found


def population_runs(config_dir: str, metric: str) -> List[Any]:
    """The seeds of the population runs (``seeds<a>-<b>``, see
    ``alf-grid-search --population``) of a configuration directory: a
    ``RunScores`` per seed of a finished run, from its
    ``seed_<k>/Metrics/<metric>`` summaries (steps: env steps per seed;
    wall time: the whole run's), a ``Run`` per seed of an unfinished one.

    Args:
        config_dir: ``PARENT/<config>``.
        metric: e.g. ``'AverageReturn'``.
    """
    from alf_rl.utils.curves import read_curve
    found: List[Any] = []
    for d in listdir(config_dir):
        match = re.fullmatch(r'seeds(\d+)-(\d+)', d)
        if not match:
            continue
        root = os.path.join(config_dir, d)
        marker = read_json(os.path.join(root, DONE_FILE))
        config = Config(os.path.basename(config_dir),
                        (marker or {}).get('grid', {}))
        first, last = int(match.group(1)), int(match.group(2))
        for seed in range(first, last + 1):
            run = Run(config, seed, root, last - first + 1)
            if marker is None:
                found.append(run)
                continue
            curve = read_curve(os.path.join(root, 'train'),
                               'seed_%d/Metrics/%s' % (seed, metric))
            metrics = marker.get('metrics', {})
            found.append(RunScores(
                run, {'train': curve, 'eval': []},
                float(metrics.get('Metrics/EnvironmentSteps', 0)),
                float(marker.get('total_wall_secs',
                                 marker.get('wall_secs', 0.0)))))
    return found


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


def format_number(value: Optional[float]) -> str:
    return '' if value is None else '%.4g' % value


def ranked(rows: List[Dict[str, Any]], mode: str) -> List[Dict[str, Any]]:
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
                         '%s [%s, %s]' % tuple(
                             format_number(row.get(key + s))
                             for s in ('_mean', '_ci_low', '_ci_high')))
            if key == 'final':
                cells.append(format_number(row.get('final_iqm')))
        cells += [format_number(row.get('env_steps')),
                  format_number(row.get('wall_secs'))]
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
    from alf_rl.runs.plot import plot_runs
    from alf_rl.runs.quiet import import_tensorflow
    from alf_rl.tune.hparams import write_hparams
    if not os.path.isdir(parent):
        raise ValueError('--summarize %s: not a directory' % parent)
    import_tensorflow()
    found = read_finished_runs(parent, metric)
    if not found:
        raise ValueError('%s holds no run directories (<config>/seed<k>)'
                         % parent)
    rows = ranked([score_config(n, runs, mode)
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
