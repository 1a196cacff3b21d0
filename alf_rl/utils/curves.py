"""Training curves from a run's TensorBoard event files, drawn as SVG.

``alf-train`` writes ``Metrics/<name>`` against the iteration and
``Metrics_vs_EnvironmentSteps/<name>`` against the env step count, under
``ROOT_DIR/train`` (training episodes) and ``ROOT_DIR/eval`` (greedy
evaluation). ``read_curve`` reads one such scalar; ``svg_line_chart``
draws curves as a self-contained SVG image (no plotting library needed;
any browser shows it). ``alf-plot`` (``alf_rl.bin.plot``) puts them
together.

Reading event files imports TensorFlow plainly; a command-line tool that
wants TensorFlow's start-up notices hidden imports it first with
``alf_rl.bin.quiet.import_tensorflow`` (utils never imports ``bin``).
"""

import glob
import math
import os
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple
from xml.sax.saxutils import escape

# Colour-blind-safe palette (Okabe-Ito).
_COLORS = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9',
           '#F0E442', '#000000']


def _scalar_values(event_dir: str) -> Iterator[Tuple[Any, Any]]:
    """``(event, summary value)`` of every value in a directory's event
    files (TensorBoard's ``tf.compat.v1.train.summary_iterator``)."""
    import tensorflow as tf  # lazily: drawing needs no TensorFlow
    for path in glob.glob(os.path.join(event_dir, 'events.*')):
        for event in tf.compat.v1.train.summary_iterator(path):
            for v in event.summary.value:
                yield event, v


def read_scalar_events(event_dir: str,
                       tag: str) -> List[Tuple[float, int, float]]:
    """Every write of a scalar in a directory's event files.

    Args:
        event_dir: a directory with ``events.*`` files (e.g. ROOT/train).
        tag: the scalar's tag, e.g. ``'Metrics/AverageReturn'``.
    Returns:
        List of ``(wall_time, step, value)`` (float, int, float), sorted by
        wall time; empty when the directory has no such scalar.
    """
    import tensorflow as tf
    rows = []
    for event, v in _scalar_values(event_dir):
        if v.tag != tag:
            continue
        value = (float(tf.make_ndarray(v.tensor))
                 if v.HasField('tensor') else float(v.simple_value))
        rows.append((event.wall_time, int(event.step), value))
    return sorted(rows)


def scalar_tags(event_dir: str, prefix: str = '') -> List[str]:
    """The tags starting with ``prefix`` in a directory's event files,
    sorted (e.g. to say which metrics a run has).

    Args:
        event_dir: a directory with ``events.*`` files.
        prefix: e.g. ``'Metrics_vs_EnvironmentSteps/'``.
    Returns:
        Sorted list of distinct tags.
    """
    return sorted({v.tag for _, v in _scalar_values(event_dir)
                   if v.tag.startswith(prefix)})


def read_curve(event_dir: str, tag: str) -> List[Tuple[int, float]]:
    """The ``(step, value)`` points of a scalar in a directory's event files.

    A resumed run writes a new event file that may repeat steps; the value
    written last (by wall time) wins.

    Args:
        event_dir: a directory with ``events.*`` files (e.g. ROOT/train).
        tag: the scalar's tag, e.g. ``'Metrics/AverageReturn'``.
    Returns:
        List of ``(step, value)`` (int, float), sorted by step; empty when
        the directory has no such scalar.
    """
    latest = {}
    for _, step, value in read_scalar_events(event_dir, tag):
        latest[step] = value
    return sorted(latest.items())


def nice_ticks(low: float, high: float, count: int = 5) -> List[float]:
    """About ``count`` round tick values covering ``[low, high]``.

    Args:
        low: the data range's lower end (``low <= high``).
        high: the data range's upper end.
        count: the number of intervals wanted.
    Returns:
        List of floats, ascending, from <= low to >= high, spaced by 1, 2 or
        5 times a power of ten.
    """
    if not high > low:
        low, high = low - 1.0, high + 1.0
    raw = (high - low) / max(count, 1)
    magnitude = 10.0**math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10)
                if m * magnitude >= raw)
    first = math.floor(low / step) * step
    ticks = []
    value = first
    while value < high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 12))
    return ticks


def _format(value: float) -> str:
    """A short label: 1.2M, 250k, 0.5, -200."""
    a = abs(value)
    if a >= 1e6:
        return '%gM' % round(value / 1e6, 3)
    if a >= 1e4:
        return '%gk' % round(value / 1e3, 3)
    return '%g' % round(value, 6)


def _grid(xs: List[float], ys: List[float], px: Callable[[float], float],
          py: Callable[[float], float],
          box: Tuple[int, int, int, int]) -> List[str]:
    """SVG grid lines and tick labels of a chart (``box``: left, top, w, h)."""
    left, top, plot_w, plot_h = box
    out = []
    for x in xs:
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>'
                   % (px(x), top, px(x), top + plot_h))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' %
                   (px(x), top + plot_h + 18, _format(x)))
    for y in ys:
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>'
                   % (left, py(y), left + plot_w, py(y)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' %
                   (left - 6, py(y) + 4, _format(y)))
    return out


def _check_bands(series: Sequence, bands: Optional[Sequence]) -> List:
    """``bands`` as a list with one entry per series (``None``: none)."""
    if bands is None:
        return [None] * len(series)
    if len(bands) != len(series):
        raise ValueError("svg_line_chart: bands must have one entry per "
                         "series (%d), got %d" % (len(series), len(bands)))
    return list(bands)


def _band_polygon(band: Sequence[Tuple[float, float, float]], color: str,
                  px: Callable[[float], float],
                  py: Callable[[float], float]) -> str:
    """An SVG polygon filling between a band's low and high edges."""
    edge = ['%.1f,%.1f' % (px(x), py(high)) for x, _, high in band]
    edge += ['%.1f,%.1f' % (px(x), py(low)) for x, low, _ in reversed(band)]
    return ('<polygon fill="%s" fill-opacity="0.2" stroke="none" '
            'points="%s"/>' % (color, ' '.join(edge)))


def _series_lines(series: Sequence[Tuple[str, Sequence[Tuple[float, float]]]],
                  px: Callable[[float], float], py: Callable[[float], float],
                  left: int, top: int) -> List[str]:
    """SVG polylines of the series and their legend entries."""
    out = []
    for i, (label, pts) in enumerate(series):
        color = _COLORS[i % len(_COLORS)]
        if pts:
            out.append('<polyline fill="none" stroke="%s" stroke-width="1.8" '
                       'points="%s"/>' % (color, ' '.join(
                           '%.1f,%.1f' % (px(x), py(y)) for x, y in pts)))
        ly = top + 16 + 18 * i
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" '
                   'stroke-width="3"/>' % (left + 10, ly - 4, left + 34,
                                           ly - 4, color))
        out.append('<text x="%d" y="%d">%s</text>' %
                   (left + 40, ly, escape(label)))
    return out


def svg_line_chart(series: Sequence[Tuple[str, Sequence[Tuple[float,
                                                              float]]]],
                   title: str = '', x_label: str = '', y_label: str = '',
                   width: int = 760, height: int = 440,
                   bands: Optional[Sequence[Optional[Sequence[Tuple[
                       float, float, float]]]]] = None) -> str:
    """Draws line series as an SVG document.

    Args:
        series: list of ``(label, points)``; ``points`` a list of ``(x, y)``
            numbers (at least one series must have a point).
        title: the chart's title.
        x_label: the horizontal axis' label.
        y_label: the vertical axis' label.
        width: width in pixels.
        height: height in pixels.
        bands: optional, one entry per series (``None`` for none): a list
            of ``(x, low, high)`` drawn as a shaded area in the series'
            colour behind the lines (e.g. the min-max over seeds around
            their mean). The axes cover the bands too.
    Returns:
        The SVG document (str).
    Raises:
        ValueError: when no series has a point, or ``bands`` does not have
            one entry per series.
    """
    bands = _check_bands(series, bands)
    points = [p for _, pts in series for p in pts]
    points += [(x, y) for band in bands for x, low, high in band or ()
               for y in (low, high)]
    if not points:
        raise ValueError("svg_line_chart: no points to draw (series: %s)" %
                         [label for label, _ in series])
    left, right, top, bottom = 70, 20, 40, 60
    plot_w, plot_h = width - left - right, height - top - bottom
    xs = nice_ticks(min(p[0] for p in points), max(p[0] for p in points))
    ys = nice_ticks(min(p[1] for p in points), max(p[1] for p in points))

    def px(x):
        return left + (x - xs[0]) / (xs[-1] - xs[0]) * plot_w

    def py(y):
        return top + plot_h - (y - ys[0]) / (ys[-1] - ys[0]) * plot_h

    out = [
        '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
        'viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">' %
        (width, height, width, height),
        '<rect width="100%" height="100%" fill="white"/>',
        '<text x="%d" y="22" font-size="15" text-anchor="middle">%s</text>' %
        (width // 2, escape(title)),
    ]
    out += _grid(xs, ys, px, py, (left, top, plot_w, plot_h))
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" '
               'stroke="#444"/>' % (left, top, plot_w, plot_h))
    out.append('<text x="%d" y="%d" text-anchor="middle">%s</text>' %
               (left + plot_w // 2, height - 18, escape(x_label)))
    out.append('<text transform="translate(16,%d) rotate(-90)" '
               'text-anchor="middle">%s</text>' %
               (top + plot_h // 2, escape(y_label)))
    for i, band in enumerate(bands):
        if band:
            out.append(_band_polygon(band, _COLORS[i % len(_COLORS)], px, py))
    out += _series_lines(series, px, py, left, top)
    out.append('</svg>')
    return '\n'.join(out) + '\n'


def mean_and_range(
        curves: Sequence[Sequence[Tuple[float, float]]]
) -> List[Tuple[float, float, float, float]]:
    """The mean, minimum and maximum of several curves (seeds of one run
    configuration) at every x any of them has a point at.

    A curve is linearly interpolated between its points; at an x outside
    a curve's own range that curve is left out (so near the ends the
    statistics may cover fewer curves: no extrapolation).

    Args:
        curves: list of curves, each a list of ``(x, y)`` sorted by x
            (e.g. ``read_curve`` of each seed).
    Returns:
        List of ``(x, mean, min, max)`` sorted by x; empty when no curve
        has a point.
    """
    import numpy as np
    xs = sorted({float(x) for curve in curves for x, _ in curve})
    rows = []
    for x in xs:
        values = [float(np.interp(x, [p[0] for p in c], [p[1] for p in c]))
                  for c in curves if c and c[0][0] <= x <= c[-1][0]]
        rows.append((x, float(np.mean(values)), min(values), max(values)))
    return rows
