"""benchmarks/events_summary.py: when a run first reached a threshold."""
import os
import subprocess
import sys

import tensorflow as tf

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SCRIPT = os.path.join(_ROOT, 'benchmarks', 'events_summary.py')


def _write(event_dir, rows):
    """``rows``: (iteration, env_steps, value), written as alf-train does
    (the tag vs iterations and vs env steps, together)."""
    writer = tf.summary.create_file_writer(event_dir)
    with writer.as_default():
        for iteration, steps, value in rows:
            tf.summary.scalar('Metrics/AverageReturn', value, step=iteration)
            tf.summary.scalar('Metrics_vs_EnvironmentSteps/AverageReturn',
                              value, step=steps)
    writer.close()


def test_first_crossing_and_max_quietly(tmp_path):
    _write(str(tmp_path / 'train'), [(10, 1280, 20.0), (20, 2560, 210.5),
                                     (30, 3840, 500.0)])
    _write(str(tmp_path / 'eval'), [(10, 1280, 9.5), (20, 2560, 120.0)])
    done = subprocess.run([sys.executable, _SCRIPT, str(tmp_path)],
                          capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert lines[0].startswith('train: Metrics/AverageReturn first >= 195 '
                               'at iteration 20, 2560 env steps'), lines
    assert lines[0].endswith('(value 210.5); max 500.0'), lines
    assert lines[1] == ('eval: Metrics/AverageReturn never reached 195; '
                        'max 120.0'), lines
    # TensorFlow's start-up notices and deprecation warnings are dropped.
    assert 'oneDNN' not in done.stderr and 'deprecated' not in done.stderr, (
        done.stderr)
