"""SVG charts of training runs' curves (``alf-plot``, the search summary).

Each run directory written by ``alf-train`` holds TensorBoard event files
in ``train/`` (the stochastic policy's last episodes) and ``eval/``
(greedy evaluations); ``plot_runs`` reads ``Metrics/<metric>`` from them
and draws it with ``alf_rl.utils.curves.svg_line_chart``.
"""

import os
from typing import Dict, List, Optional, Sequence, Tuple

from alf_rl.runs.quiet import import_tensorflow
from alf_rl.utils.checkpoint import atomic_write_text


def plot_runs(root_dirs: List[str], out: str, metric: str = 'AverageReturn',
              x: str = 'env_steps', include_eval: bool = True,
              title: Optional[str] = None,
              band: bool = False) -> Dict[str, int]:
    """Writes an SVG chart of ``Metrics/<metric>`` of training runs.

    Args:
        root_dirs: list of run directories written by ``alf-train``.
        out: path of the ``.svg`` file to write.
        metric: metric name, e.g. ``'AverageReturn'``.
        x: ``'env_steps'`` or ``'iterations'``.
        include_eval: also draw the greedy evaluation curves.
        title: chart title (default: the metric).
        band: the directories are seeds of one configuration: draw one
            series per event directory (train, eval), their mean, with the
            min-max over the seeds as a band (``'train mean of 3'``).
    Returns:
        Dict ``{series label: number of points}``.
    Raises:
        ValueError: a directory that does not exist or has no such metric,
            an output path that is not ``.svg``, or a bad ``x``.
    """
    from alf_rl.utils.curves import svg_line_chart
    if not out.lower().endswith('.svg'):
        raise ValueError("--out must name a .svg file, got %r" % out)
    if x not in ('env_steps', 'iterations'):
        raise ValueError("x must be 'env_steps' or 'iterations', got %r" % x)
    tag = ('Metrics_vs_EnvironmentSteps/' if x == 'env_steps' else
           'Metrics/') + metric
    import_tensorflow()  # before curves reads events: quiet start-up
    subs = ('train', 'eval') if include_eval else ('train', )
    curves = _read_runs(root_dirs, subs, tag)
    series, bands = (_band_series(curves, subs) if band else
                     _run_series(curves, subs))
    svg = svg_line_chart(series, title=title or metric,
                         x_label='env steps' if x == 'env_steps' else
                         'iterations', y_label=metric, bands=bands)
    atomic_write_text(out, svg)
    return {label: len(points) for label, points in series}


def _read_runs(root_dirs: List[str], subs: Sequence[str],
               tag: str) -> Dict[str, Dict[str, List[Tuple[int, float]]]]:
    """``{root: {sub: points}}`` of ``tag``, checking every run has it."""
    from alf_rl.utils.curves import read_curve
    curves = {}
    for root in root_dirs:
        if not os.path.isdir(os.path.join(root, 'train')):
            raise ValueError("%s is not a training run directory (no "
                             "'train' event directory in it)" % root)
        curves[root] = {sub: read_curve(os.path.join(root, sub), tag)
                        for sub in subs}
        if not any(curves[root].values()):
            raise ValueError("%s has no '%s' scalar (metrics written: see "
                             "TensorBoard); is --metric right?" % (root, tag))
    return curves


def _run_series(curves: Dict[str, Dict[str, List[Tuple[int, float]]]],
                subs: Sequence[str]) -> Tuple[List, List]:
    """One series per run and event directory (labelled by the run's
    directory name when there are several runs), and no bands."""
    series = []
    for root, by_sub in curves.items():
        name = (os.path.basename(os.path.normpath(root))
                if len(curves) > 1 else '')
        series += [((name + ' ' + sub).strip(), by_sub[sub]) for sub in subs
                   if by_sub[sub]]
    return series, [None] * len(series)


def _band_series(curves: Dict[str, Dict[str, List[Tuple[int, float]]]],
                 subs: Sequence[str]) -> Tuple[List, List]:
    """Per event directory, the mean over the runs (seeds) as a series and
    their min-max as its band."""
    from alf_rl.utils.curves import mean_and_range
    series, bands = [], []
    for sub in subs:
        found = [by_sub[sub] for by_sub in curves.values() if by_sub[sub]]
        if found:
            rows = mean_and_range(found)
            series.append(('%s mean of %d' % (sub, len(found)),
                           [(x, mean) for x, mean, _, _ in rows]))
            bands.append([(x, low, high) for x, _, low, high in rows])
    return series, bands
