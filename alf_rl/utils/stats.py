"""Statistics over a few training runs (seeds): bootstrap intervals, IQM.

Pure numpy (no TensorFlow): ``alf-grid-search`` reports, per configuration,
the mean over seeds with a percentile-bootstrap confidence interval, and the
interquartile mean (IQM) that Agarwal et al. 2021 ("Deep Reinforcement
Learning at the Edge of the Statistical Precipice", the rliable library)
recommend as a robust aggregate over runs.
"""

from typing import Callable, Optional, Sequence, Tuple

import numpy as np


def _as_scores(values: Sequence[float], what: str) -> np.ndarray:
    """``values`` as a non-empty, finite 1-D float64 array."""
    scores = np.asarray(values, dtype=np.float64)
    if scores.ndim != 1 or scores.size == 0:
        raise ValueError('%s: expected a non-empty 1-D sequence of numbers, '
                         'got shape %s' % (what, scores.shape))
    if not np.all(np.isfinite(scores)):
        raise ValueError('%s: expected finite numbers, got %s' %
                         (what, scores.tolist()))
    return scores


def interquartile_mean(values: Sequence[float]) -> float:
    """The interquartile mean: the mean of the middle half of the values.

    With the values sorted, ``x_(1) <= ... <= x_(n)`` and
    ``k = floor(n / 4)``::

        IQM = mean(x_(k+1), ..., x_(n-k))

    which is ``scipy.stats.trim_mean(x, 0.25)`` as rliable computes it
    (e.g. n = 5 drops the lowest and the highest value; n = 8 drops two at
    each end). With n < 4 nothing is dropped (IQM = mean).

    Args:
        values: [N] finite numbers (e.g. one final return per seed).
    Returns:
        The IQM (float).
    Raises:
        ValueError: empty, not 1-D or not finite.
    """
    scores = np.sort(_as_scores(values, 'interquartile_mean'))
    cut = int(np.floor(scores.size * 0.25))
    return float(np.mean(scores[cut:scores.size - cut]))


def bootstrap_ci(values: Sequence[float], confidence: float = 0.95,
                 num_resamples: int = 10000, seed: int = 0,
                 statistic: Optional[Callable[[np.ndarray],
                                              np.ndarray]] = None
                 ) -> Tuple[float, float]:
    """Percentile-bootstrap confidence interval of a statistic over runs.

    Draws ``num_resamples`` samples of size N with replacement from the N
    values (``numpy.random.default_rng(seed)``: the same input gives the
    same interval), computes the statistic of each, and returns its
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` percentiles
    (``numpy.percentile``, linear interpolation). E.g. for ``[0, 3]`` the
    resampled means are 0, 1.5 and 3 with probabilities 1/4, 1/2, 1/4, so
    the 95% interval is (0, 3) and the 40% one (1.5, 1.5).

    With a single value the interval is that value: a bootstrap over one
    seed says nothing about the spread, which the caller should show by
    the number of seeds.

    Args:
        values: [N] finite numbers, one per run.
        confidence: the interval's coverage, in (0, 1).
        num_resamples: number of bootstrap samples (>= 1).
        seed: seed of the resampling generator.
        statistic: maps [R, N] resamples to [R] statistics (default: the
            mean over axis 1).
    Returns:
        ``(low, high)`` floats, ``low <= high``.
    Raises:
        ValueError: bad ``values``, ``confidence`` or ``num_resamples``.
    """
    scores = _as_scores(values, 'bootstrap_ci')
    if not 0.0 < confidence < 1.0:
        raise ValueError('bootstrap_ci: confidence must be in (0, 1), got %r'
                         % (confidence, ))
    if int(num_resamples) < 1:
        raise ValueError('bootstrap_ci: num_resamples must be >= 1, got %r'
                         % (num_resamples, ))
    rng = np.random.default_rng(seed)
    index = rng.integers(0, scores.size, size=(int(num_resamples),
                                               scores.size))
    resamples = scores[index]
    if statistic is None:
        stats = resamples.mean(axis=1)
    else:
        stats = np.asarray(statistic(resamples), dtype=np.float64)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(stats, [tail, 100.0 - tail])
    return float(low), float(high)
