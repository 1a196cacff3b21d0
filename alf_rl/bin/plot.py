r"""Draws training curves of one or more runs as an SVG image.

Usage::

    alf-plot --root_dir RUN [--root_dir RUN2 ...] --out curves.svg
        [--metric AverageReturn] [--x env_steps|iterations] [--no_eval]
        [--band]

For every ``--root_dir`` (a directory ``alf-train`` wrote) it draws the
training curve (``RUN/train``: the stochastic policy's last episodes) and,
when there is one, the evaluation curve (``RUN/eval``: greedy episodes) of
``Metrics/<metric>`` against env steps (default) or iterations.

With ``--band`` the directories are the seeds of one configuration (e.g.
``PARENT/<config>/seed*`` of ``alf-grid-search``): it draws the mean over
them of the training (and evaluation) curve, with the range from the
lowest to the highest seed as a shaded band (curves are interpolated
between their points; see ``alf_rl.utils.curves.mean_and_range``).
"""

import sys

from absl import app, flags

from alf_rl.runs.plot import plot_runs
from alf_rl.runs.quiet import run_app

FLAGS = flags.FLAGS


def _define_flags():
    """Defines the command-line flags (only when run as a script)."""
    flags.DEFINE_multi_string('root_dir', None, 'Run directory (repeatable).')
    flags.DEFINE_string('out', None, 'Output .svg file.')
    flags.DEFINE_string('metric', 'AverageReturn', 'Metric name.')
    flags.DEFINE_enum('x', 'env_steps', ['env_steps', 'iterations'],
                      'Horizontal axis.')
    flags.DEFINE_bool('no_eval', False, 'Leave out the evaluation curves.')
    flags.DEFINE_string('title', None, 'Chart title (default: the metric).')
    flags.DEFINE_bool('band', False,
                      'The directories are seeds of one configuration: '
                      'draw their mean with the min-max range as a band.')


def _main(argv):
    if len(argv) > 1:
        raise app.UsageError('unexpected arguments: %s' % argv[1:])
    if not FLAGS.root_dir:
        raise app.UsageError('--root_dir is required')
    if not FLAGS.out:
        raise app.UsageError('--out is required')
    try:
        counts = plot_runs(FLAGS.root_dir, FLAGS.out, FLAGS.metric, FLAGS.x,
                           not FLAGS.no_eval, FLAGS.title, FLAGS.band)
    except ValueError as e:
        print('alf-plot: error: %s' % e, file=sys.stderr)
        sys.exit(1)
    print('alf-plot: wrote %s (%s)' % (FLAGS.out, ', '.join(
        '%s: %d points' % kv for kv in counts.items())))


def main() -> None:
    """Console entry point of ``alf-plot``."""
    _define_flags()
    run_app(_main)


if __name__ == '__main__':
    main()
