"""Env steps per second of an alf_rl training run after its first
iteration (compile- and start-up-free), for side-by-side comparisons with
``benchmarks/sb3_reference.py --algo ppo_atari``.

Usage::

    python benchmarks/atari_throughput.py [--gin_file examples/ppo_atari_pong.gin]
        [--budget 40960] [--root_dir DIR] [--gin_param ...]

Trains ``--budget`` env steps with ``alf-train`` (summaries every
iteration, no evaluation) into a fresh ``--root_dir`` (a temporary one by
default) and reads ``time/elapsed_secs``, ``time/cpu_secs`` and
``Metrics/EnvironmentSteps`` from its events: env steps per second and per
CPU-second of the training process (``--warmup N``: from the first summary
past N env steps, e.g. past a replay method's initial collection).

Compare a replay method with SB3's in the same session, alternating::

    python benchmarks/atari_throughput.py --gin_file examples/qrdqn_atari_pong.gin \
        --budget 12000 --warmup 2000 \
        --gin_param TrainerConfig.initial_collect_steps=1000 \
        --gin_param TrainerConfig.replay_buffer_capacity=100000
    /tmp/sb3venv/bin/python benchmarks/sb3_reference.py --algo qrdqn_atari \
        --budget 12000
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

from alf_rl.utils.curves import read_scalar_events  # noqa: E402


def after_first_iteration(train_dir: str, warmup: int = 0) -> tuple:
    """(env steps, seconds, steps/s, CPU seconds or None) from the first
    iteration's summary (the first one at or past ``warmup`` env steps) to
    the last one of the events in ``train_dir``; the CPU seconds are the
    training process's (``time/cpu_secs``), None for runs without them."""
    secs = {s: v for _, s, v in read_scalar_events(train_dir,
                                                   'time/elapsed_secs')}
    cpu = {s: v for _, s, v in read_scalar_events(train_dir,
                                                  'time/cpu_secs')}
    steps = {s: v for _, s, v in read_scalar_events(
        train_dir, 'Metrics/EnvironmentSteps')}
    its = [i for i in sorted(set(secs) & set(steps)) if steps[i] >= warmup]
    if len(its) < 2:
        raise SystemExit('atari_throughput: fewer than 2 summaries past %d '
                         'env steps in %s' % (warmup, train_dir))
    first, last = its[0], its[-1]
    n, t = steps[last] - steps[first], secs[last] - secs[first]
    c = cpu[last] - cpu[first] if first in cpu and last in cpu else None
    return n, t, n / t, c


def main(argv=None) -> None:
    """Runs the training and prints its throughput."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--gin_file', default='examples/ppo_atari_pong.gin')
    parser.add_argument('--budget', type=int, default=40960)
    parser.add_argument('--root_dir', default=None)
    parser.add_argument('--gin_param', action='append', default=[])
    parser.add_argument('--warmup', type=int, default=0,
                        help='measure from the first summary at or past '
                        'this many env steps (e.g. past a replay '
                        "method's initial collection)")
    args = parser.parse_args(argv)
    root = args.root_dir or tempfile.mkdtemp(prefix='atari_throughput_')
    params = ['TrainerConfig.num_env_steps=%d' % args.budget,
              'TrainerConfig.summary_interval=1',
              'TrainerConfig.evaluate=False'] + args.gin_param
    command = [sys.executable, '-m', 'alf_rl.bin.train', '--root_dir', root,
               '--gin_file', args.gin_file]
    for p in params:
        command += ['--gin_param', p]
    subprocess.run(command, check=True)
    n, t, rate, cpu = after_first_iteration(os.path.join(root, 'train'),
                                            args.warmup)
    print('alf_rl %s: %d env steps in %.1f s after the first iteration: '
          '%.1f env steps/s%s' % (
              os.path.basename(args.gin_file), n, t, rate,
              '' if cpu is None else
              ', %.1f CPU s: %.1f env steps per CPU-second' % (cpu, n / cpu)),
          flush=True)
    if args.root_dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == '__main__':
    main()
