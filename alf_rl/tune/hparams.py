"""TensorBoard hparams summaries of a search (``tensorboard --logdir
PARENT``, HParams tab): the grid values and the seed as hparams, the final
and best metric of each run as metrics.
"""

import os
from typing import Any, Dict, List, Optional

from alf_rl.tune.files import listdir
from alf_rl.tune.summary import RunScores

_HPARAMS_SUFFIX = '.grid_search_hparams'


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
    names: Dict[str, List[Any]] = {k: [] for rs in found.values() for r in rs
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
    for name in listdir(directory):
        if name.endswith(_HPARAMS_SUFFIX):
            os.remove(os.path.join(directory, name))
    return tf.summary.create_file_writer(directory,
                                         filename_suffix=_HPARAMS_SUFFIX)
