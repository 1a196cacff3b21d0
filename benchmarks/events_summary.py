"""Prints when a run's TensorBoard scalar first reached a threshold.

Usage: python benchmarks/events_summary.py ROOT_DIR [--tag Metrics/AverageReturn]
       [--threshold 195]

Reads ROOT_DIR/train and ROOT_DIR/eval event files and prints, for each,
the first iteration/env step/wall time at which the tag reached the
threshold, and the maximum value.
"""

import argparse
import os

from alf_rl.bin.quiet import import_tensorflow

import_tensorflow(start_runtime=False)  # TF's start-up notices dropped

from alf_rl.utils.curves import read_scalar_events as read_scalars  # noqa


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('root_dir')
    parser.add_argument('--tag', default='Metrics/AverageReturn')
    parser.add_argument('--threshold', type=float, default=195.0)
    args = parser.parse_args()
    for sub in ('train', 'eval'):
        rows = read_scalars(os.path.join(args.root_dir, sub), args.tag)
        # Each summary writes the tag vs iterations and vs env steps
        # together, so the i-th rows of both belong together.
        env_steps = [s for _, s, _ in read_scalars(
            os.path.join(args.root_dir, sub),
            args.tag.replace('Metrics/', 'Metrics_vs_EnvironmentSteps/'))]
        if not rows:
            print('%s: no %s' % (sub, args.tag))
            continue
        start = rows[0][0]
        hit = [(i, r) for i, r in enumerate(rows) if r[2] >= args.threshold]
        best = max(r[2] for r in rows)
        if hit:
            index, (wall, it, value) = hit[0]
            steps = env_steps[index] if index < len(env_steps) else '?'
            print('%s: %s first >= %g at iteration %d, %s env steps, %.1f s '
                  'after the first summary (value %.1f); max %.1f' %
                  (sub, args.tag, args.threshold, it, steps,
                   wall - start, value, best))
        else:
            print('%s: %s never reached %g; max %.1f' %
                  (sub, args.tag, args.threshold, best))


if __name__ == '__main__':
    main()
