"""``alf_rl.tune.summary``: reading finished runs, per-configuration rows
with bootstrap intervals, the markdown and CSV tables."""

import csv
import os

import pytest

from alf_rl.tune.files import DONE_FILE, write_json
from alf_rl.tune.spec import Config, Run
from alf_rl.tune.summary import (RunScores, format_number, ranked,
                                 read_finished_runs, score_config,
                                 summary_markdown, write_summary_csv)
from alf_rl.utils.stats import bootstrap_ci, interquartile_mean


def _scores(name, seed, train, evaluation=()):
    run = Run(Config(name, {'A.x': name}), seed, '%s/seed%d' % (name, seed))
    return RunScores(run, {'train': list(train), 'eval': list(evaluation)},
                     100.0 * (seed + 1), 10.0)


def test_row_scores_final_and_best_over_seeds_from_eval():
    runs = [_scores('a', s, [(1, 0.0)], [(1, 1.0 + s), (2, 3.0 * s)])
            for s in range(5)]
    runs.append(Run(Config('a', {}), 9, 'a/seed9'))  # not finished
    row = score_config('a', runs)
    finals = [3.0 * s for s in range(5)]
    bests = [max(1.0 + s, 3.0 * s) for s in range(5)]
    assert (row['seeds_finished'], row['seeds_total'], row['source']) == (
        5, 6, 'eval')
    assert row['final_mean'] == pytest.approx(6.0)
    assert (row['final_ci_low'], row['final_ci_high']) == pytest.approx(
        bootstrap_ci(finals))
    assert row['final_iqm'] == pytest.approx(interquartile_mean(finals))
    assert row['best_mean'] == pytest.approx(sum(bests) / 5)
    assert row['env_steps'] == 300.0 and row['wall_secs'] == 10.0
    assert row['grid'] == {'A.x': 'a'}
    # 'min': best is the lowest value; no IQM under 5 seeds; train/ when
    # a seed has no evaluation.
    two = [_scores('b', 0, [(1, 4.0), (2, 2.0)]),
           _scores('b', 1, [(1, 1.0), (2, 6.0)], [(2, 5.0)])]
    row = score_config('b', two, mode='min')
    assert row['source'] == 'train'
    assert (row['final_mean'], row['best_mean']) == (4.0, 1.5)
    assert row['final_iqm'] is None
    assert score_config('c', [Run(Config('c', {}), 0, 'c/seed0')]) == {
        'config': 'c', 'grid': {}, 'seeds_finished': 0, 'seeds_total': 1,
        'source': None}


def test_ranking_and_tables(tmp_path):
    rows = [score_config(n, [_scores(n, 0, [(1, v)])])
            for n, v in (('lo', 1.0), ('hi', 7.25), ('mid', 3.0))]
    rows.append(score_config('none', [Run(Config('none', {}), 0, 'x')]))
    assert [r['config'] for r in ranked(rows, 'max')] == [
        'hi', 'mid', 'lo', 'none']
    assert [r['config'] for r in ranked(rows, 'min')] == [
        'lo', 'mid', 'hi', 'none']
    assert (format_number(None), format_number(1234567.0)) == (
        '', '1.235e+06')
    text = summary_markdown(ranked(rows, 'max'), 'AverageReturn')
    lines = text.splitlines()
    assert lines[0] == '# alf-grid-search summary: AverageReturn'
    assert lines[-4] == ('| 1 | hi | 1/1 | train | 7.25 [7.25, 7.25] |  | '
                         '7.25 [7.25, 7.25] | 100 | 10 |')
    assert lines[-1] == '| 4 | none | 0/1 |  |  |  |  |  |  |'
    path = str(tmp_path / 'summary.csv')
    write_summary_csv(path, ranked(rows, 'max'))
    with open(path, newline='') as f:
        table = list(csv.reader(f))
    assert table[0][:5] == ['rank', 'config', 'A.x', 'seeds_finished',
                            'seeds_total']
    assert table[1][:7] == ['1', 'hi', 'hi', '1', '1', 'train', '7.25']
    assert table[4][:6] == ['4', 'none', '', '0', '1', '']


def test_finished_runs_without_events_score_their_done_line(tmp_path):
    parent = str(tmp_path)
    for seed, value in ((0, 2.0), (1, 4.0)):
        root = os.path.join(parent, 'x=1', 'seed%d' % seed)
        os.makedirs(root)
        write_json(os.path.join(root, DONE_FILE), {
            'grid': {'A.x': 1}, 'wall_secs': 3.0, 'total_wall_secs': 5.0,
            'metrics': {'Metrics/AverageReturn': value,
                        'Metrics/EnvironmentSteps': 64.0}})
    os.makedirs(os.path.join(parent, 'x=1', 'seed2'))  # unfinished
    os.makedirs(os.path.join(parent, 'x=1', 'other'))  # not a seed
    found = read_finished_runs(parent, 'AverageReturn')
    assert list(found) == ['x=1']
    first, second, unfinished = found['x=1']
    assert first.curves == {'train': [(64, 2.0)], 'eval': []}
    assert (first.env_steps, first.wall_secs) == (64.0, 5.0)
    assert first.run.config == Config('x=1', {'A.x': 1})
    assert second.run.seed == 1 and unfinished == Run(
        Config('x=1', {}), 2, os.path.join(parent, 'x=1', 'seed2'))
    row = score_config('x=1', found['x=1'])
    assert (row['final_mean'], row['seeds_finished']) == (3.0, 2)
