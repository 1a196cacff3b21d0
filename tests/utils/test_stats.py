"""``alf_rl.utils.stats``: bootstrap intervals and IQM against hand values."""

import sys

import numpy as np
import pytest

from alf_rl.utils.stats import bootstrap_ci, interquartile_mean


@pytest.mark.parametrize('values, expected', [
    ([4.0], 4.0),
    ([1.0, 2.0, 9.0], 4.0),  # n < 4: nothing dropped
    ([1.0, 2.0, 3.0, 100.0], 2.5),  # n = 4: drop 1 at each end
    ([100.0, 1.0, 3.0, 2.0, -50.0], 2.0),  # n = 5: mean of 1, 2, 3
    ([0, 1, 2, 3, 4, 5, 6, 70], 3.5),  # n = 8: mean of 2, 3, 4, 5
    ([0, 1, 2, 3, 4, 5, 6, 7, 8, 90], 4.5),  # n = 10: k = 2, mean of 2..7
])
def test_interquartile_mean_drops_a_quarter_at_each_end(values, expected):
    assert interquartile_mean(values) == pytest.approx(expected)


def test_interquartile_mean_equals_scipy_trim_mean_when_available():
    scipy_stats = pytest.importorskip('scipy.stats')
    rng = np.random.default_rng(3)
    for n in range(1, 13):
        x = rng.normal(size=n)
        assert interquartile_mean(x) == pytest.approx(
            scipy_stats.trim_mean(x, 0.25))


def test_bootstrap_ci_of_two_values_by_hand():
    # Resampled means of [0, 3]: 0 (p=1/4), 1.5 (p=1/2), 3 (p=1/4).
    assert bootstrap_ci([0.0, 3.0]) == (0.0, 3.0)
    assert bootstrap_ci([0.0, 3.0], confidence=0.4) == (1.5, 1.5)
    # Resampled means of [0, 1, 2]: P(mean = 0) = 1/27 > 2.5%, so the
    # 95% interval's ends are the smallest and largest possible means.
    assert bootstrap_ci([0.0, 1.0, 2.0]) == (0.0, 2.0)
    # 50%: P(mean <= 2/3) = 7/27 > 25% and P(mean >= 4/3) = 7/27 > 25%.
    assert bootstrap_ci([0.0, 1.0, 2.0], confidence=0.5) == pytest.approx(
        (2.0 / 3.0, 4.0 / 3.0))


def test_bootstrap_ci_degenerate_and_reproducible():
    assert bootstrap_ci([7.5]) == (7.5, 7.5)
    assert bootstrap_ci([2.0, 2.0, 2.0]) == (2.0, 2.0)
    values = [1.0, 5.0, 2.0, 8.0, 3.0]
    assert bootstrap_ci(values, seed=1) == bootstrap_ci(values, seed=1)
    low, high = bootstrap_ci(values)
    assert 1.0 <= low < np.mean(values) < high <= 8.0


def test_bootstrap_ci_matches_the_normal_interval_for_many_values():
    x = np.random.default_rng(0).normal(10.0, 2.0, size=400)
    low, high = bootstrap_ci(x, num_resamples=4000)
    half = 1.96 * x.std() / np.sqrt(x.size)  # 0.196 for sd 2
    assert low == pytest.approx(x.mean() - half, abs=0.03)
    assert high == pytest.approx(x.mean() + half, abs=0.03)


def test_bootstrap_ci_of_another_statistic():
    # The max of a resample of [0, 10] is 0 only when both draws are 0
    # (p = 1/4): the 10% percentile is 0, the 30% one is 10.
    stat = lambda r: r.max(axis=1)  # noqa: E731
    assert bootstrap_ci([0.0, 10.0], confidence=0.8, statistic=stat) == (
        0.0, 10.0)
    assert bootstrap_ci([0.0, 10.0], confidence=0.4,
                        statistic=stat) == (10.0, 10.0)


@pytest.mark.parametrize('kwargs, match', [
    (dict(values=[]), 'non-empty 1-D'),
    (dict(values=[[1.0, 2.0]]), 'non-empty 1-D'),
    (dict(values=[1.0, float('nan')]), 'finite'),
    (dict(values=[1.0], confidence=1.0), r'confidence must be in \(0, 1\)'),
    (dict(values=[1.0], num_resamples=0), 'num_resamples must be >= 1'),
])
def test_bad_input_is_one_clear_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bootstrap_ci(**kwargs)
    if 'confidence' not in kwargs and 'num_resamples' not in kwargs:
        with pytest.raises(ValueError, match=match):
            interquartile_mean(kwargs['values'])


def test_stats_module_does_not_import_tensorflow():
    import subprocess
    code = ('import sys, alf_rl.utils.stats; '
            'print("tensorflow" in sys.modules)')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True,
                         text=True, timeout=60)
    assert out.stdout.strip() == 'False', out.stderr
