"""``alf_rl.utils.curves`` and ``alf-plot``: curves of runs as SVG."""

import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest
import tensorflow as tf

from alf_rl.bin.plot import plot_runs
from alf_rl.utils.curves import (mean_and_range, nice_ticks, read_curve,
                                 read_scalar_events, scalar_tags,
                                 svg_line_chart)

SVG = '{http://www.w3.org/2000/svg}'


def _write(event_dir, tag, points):
    writer = tf.summary.create_file_writer(event_dir)
    with writer.as_default():
        for step, value in points:
            tf.summary.scalar(tag, value, step=step)
    writer.close()


def _run(root, train_points, eval_points=()):
    tag = 'Metrics_vs_EnvironmentSteps/AverageReturn'
    _write(os.path.join(root, 'train'), tag, train_points)
    if eval_points:
        _write(os.path.join(root, 'eval'), tag, eval_points)
    return root


def test_read_curve_sorts_and_keeps_the_last_write_of_a_step(tmp_path):
    d = str(tmp_path / 'train')
    _write(d, 'a', [(20, 2.0), (10, 1.0), (30, 3.0)])
    time.sleep(0.01)  # a resumed run: a later event file repeats step 30
    _write(d, 'a', [(30, 3.5), (40, 4.0)])
    _write(d, 'b', [(5, 9.0)])
    assert read_curve(d, 'a') == [(10, 1.0), (20, 2.0), (30, 3.5),
                                  (40, 4.0)]
    events = read_scalar_events(d, 'a')  # every write, by wall time
    walls = [wall for wall, _, _ in events]
    assert walls == sorted(walls)
    assert sorted((step, value) for _, step, value in events) == [
        (10, 1.0), (20, 2.0), (30, 3.0), (30, 3.5), (40, 4.0)]
    assert read_curve(d, 'missing') == []
    assert read_curve(str(tmp_path / 'nowhere'), 'a') == []
    # the tags there, each once, by prefix
    _write(d, 'x/c', [(1, 0.0)])
    assert scalar_tags(d) == ['a', 'b', 'x/c']
    assert scalar_tags(d, 'x/') == ['x/c']
    assert scalar_tags(str(tmp_path / 'nowhere')) == []


@pytest.mark.parametrize('low, high', [(0, 1e6), (-1234.5, 310.0),
                                       (0.5, 0.5), (3, 7)])
def test_nice_ticks_cover_the_range_with_round_steps(low, high):
    ticks = nice_ticks(low, high)
    assert ticks[0] <= low and ticks[-1] >= high
    assert 3 <= len(ticks) <= 12
    steps = {round(b - a, 9) for a, b in zip(ticks, ticks[1:])}
    assert len(steps) == 1
    step = steps.pop()
    mantissa = step / 10**int(f'{step:e}'.split('e')[1])
    assert round(mantissa, 6) in (1.0, 2.0, 5.0)


def test_svg_line_chart_draws_every_series():
    svg = svg_line_chart([('train', [(0, 1.0), (10, 5.0), (20, 3.0)]),
                          ('eval <greedy>', [(10, 4.0)])],
                         title='AverageReturn', x_label='env steps')
    root = ET.fromstring(svg)  # well-formed XML
    lines = root.findall(SVG + 'polyline')
    assert [len(p.get('points').split()) for p in lines] == [3, 1]
    texts = [t.text for t in root.iter(SVG + 'text')]
    assert 'eval <greedy>' in texts and 'AverageReturn' in texts
    # Points lie inside the drawing.
    for p in lines:
        for xy in p.get('points').split():
            x, y = map(float, xy.split(','))
            assert 0 <= x <= 760 and 0 <= y <= 440
    with pytest.raises(ValueError, match='no points'):
        svg_line_chart([('train', [])])


def test_plot_runs_writes_an_svg_of_train_and_eval(tmp_path):
    a = _run(str(tmp_path / 'a'), [(100, 10.0), (200, 50.0)], [(200, 40.0)])
    b = _run(str(tmp_path / 'b'), [(100, 5.0)])
    out = str(tmp_path / 'curves.svg')
    counts = plot_runs([a, b], out)
    assert counts == {'a train': 2, 'a eval': 1, 'b train': 1}
    assert len(ET.parse(out).getroot().findall(SVG + 'polyline')) == 3
    assert plot_runs([a], out, include_eval=False) == {'train': 2}
    with pytest.raises(ValueError, match='not a training run'):
        plot_runs([str(tmp_path / 'nope')], out)
    with pytest.raises(ValueError, match="no 'Metrics_vs_EnvironmentSteps/"
                       "Return' scalar"):
        plot_runs([a], out, metric='Return')
    with pytest.raises(ValueError, match='.svg'):
        plot_runs([a], str(tmp_path / 'curves.png'))
    with pytest.raises(ValueError, match="'env_steps' or 'iterations'"):
        plot_runs([a], out, x='time')


def test_cli_writes_the_file_and_reports_errors(tmp_path):
    a = _run(str(tmp_path / 'a'), [(100, 10.0), (200, 50.0)])
    out = str(tmp_path / 'c.svg')
    cmd = [sys.executable, '-m', 'alf_rl.bin.plot', '--root_dir', a]
    ok = subprocess.run(cmd + ['--out', out], capture_output=True,
                        text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert 'wrote %s (train: 2 points)' % out in ok.stdout
    assert os.path.getsize(out) > 0
    bad = subprocess.run(cmd + ['--out', out, '--metric', 'Nope'],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1
    assert "alf-plot: error:" in bad.stderr and 'Nope' in bad.stderr


def test_mean_and_range_interpolates_without_extrapolating():
    rows = mean_and_range([[(0, 0.0), (10, 10.0)], [(0, 2.0), (5, 4.0)]])
    # x=5: first curve interpolates to 5.0; x=10: only the first reaches.
    assert rows == [(0.0, 1.0, 0.0, 2.0), (5.0, 4.5, 4.0, 5.0),
                    (10.0, 10.0, 10.0, 10.0)]
    assert mean_and_range([]) == []


def test_svg_line_chart_draws_a_band_behind_its_series():
    series = [('mean', [(0, 1.0), (10, 2.0)]), ('other', [(0, 0.0)])]
    plain = svg_line_chart(series)
    assert svg_line_chart(series, bands=[None, None]) == plain
    svg = svg_line_chart(series, bands=[[(0, 0.5, 1.5), (10, -3.0, 9.0)],
                                        None])
    root = ET.fromstring(svg)
    polygons = root.findall(SVG + 'polygon')
    assert len(polygons) == 1
    assert polygons[0].get('fill') == '#0072B2'  # the first series' colour
    corners = [tuple(map(float, p.split(',')))
               for p in polygons[0].get('points').split()]
    assert len(corners) == 4  # high edge forward, low edge back
    assert corners[0][0] == corners[3][0] and corners[1][0] == corners[2][0]
    assert corners[1][1] < corners[2][1]  # y=9 above y=-3 on screen
    # The axes grew to cover the band: nice_ticks(-3, 9) = -5, 0, 5, 10.
    labels = [t.text for t in root.iter(SVG + 'text')]
    assert '-5' in labels and '10' in labels
    assert '-5' not in [t.text for t in ET.fromstring(plain).iter(SVG +
                                                                 'text')]
    with pytest.raises(ValueError, match='one entry per series'):
        svg_line_chart(series, bands=[None])


def test_plot_runs_band_draws_the_mean_of_seeds(tmp_path):
    a = _run(str(tmp_path / 's0'), [(100, 10.0), (200, 50.0)],
             [(200, 40.0)])
    b = _run(str(tmp_path / 's1'), [(100, 20.0), (200, 30.0)])
    out = str(tmp_path / 'band.svg')
    counts = plot_runs([a, b], out, band=True)
    assert counts == {'train mean of 2': 2, 'eval mean of 1': 1}
    root = ET.parse(out).getroot()
    assert len(root.findall(SVG + 'polygon')) == 2
    texts = [t.text for t in root.iter(SVG + 'text')]
    assert 'train mean of 2' in texts
