"""Resident memory of a long ``alf-train`` run, sampled over time (Linux).

Starts ``alf-train`` on a gin file in a fresh root_dir, reads the process'
resident set size (``VmRSS`` in ``/proc/<pid>/status``) every
``--interval`` seconds and the iteration from its progress line, and
writes ``soak.csv`` (seconds, iteration, env steps, RSS MB) and
``soak.svg`` (RSS against iterations) into ``--out``. A leak shows as
low points (after each garbage collection) that keep rising; a flat
curve after the first minutes (replay buffer filled, graphs traced) is
what a leak-free run gives.

Usage: python benchmarks/memory_soak.py --gin_file examples/sac_pendulum.gin
    --minutes 60 --out ~/runs/soak [--gin_param ...]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

_PROGRESS = re.compile(r'iter (\d+) \| env steps (\d+)')


def rss_mb(pid: int) -> float:
    """Resident set size of a process in MB (0 when it has exited)."""
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def _follow(stream, latest):
    """Keeps ``latest`` = [iteration, env steps] from the progress lines."""
    for line in stream:
        match = _PROGRESS.search(line)
        if match:
            latest[:] = [int(match.group(1)), int(match.group(2))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--gin_file', required=True)
    parser.add_argument('--gin_param', action='append', default=[])
    parser.add_argument('--minutes', type=float, default=60.0)
    parser.add_argument('--interval', type=float, default=10.0)
    parser.add_argument('--out', required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    root = tempfile.mkdtemp(prefix='soak_run_', dir=args.out)
    command = [sys.executable, '-m', 'alf_rl.bin.train', '--gin_file',
               args.gin_file, '--root_dir', root]
    for binding in args.gin_param:
        command += ['--gin_param', binding]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONUNBUFFERED='1')
    proc = subprocess.Popen(command, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env,
                            cwd=ROOT)
    latest = [0, 0]
    threading.Thread(target=_follow, args=(proc.stdout, latest),
                     daemon=True).start()
    rows = []
    start = time.time()
    try:
        while proc.poll() is None and time.time() - start < args.minutes * 60:
            rows.append((time.time() - start, latest[0], latest[1],
                         rss_mb(proc.pid)))
            time.sleep(args.interval)
    finally:
        proc.terminate()
        proc.wait(timeout=120)
    with open(os.path.join(args.out, 'soak.csv'), 'w') as f:
        f.write('seconds,iteration,env_steps,rss_mb\n')
        for row in rows:
            f.write('%.1f,%d,%d,%.1f\n' % row)
    from alf_rl.utils.curves import svg_line_chart
    points = [(it, mb) for _, it, _, mb in rows if it > 0]
    with open(os.path.join(args.out, 'soak.svg'), 'w') as f:
        f.write(svg_line_chart([('RSS (MB)', points)],
                          title='alf-train resident memory: %s' %
                          os.path.basename(args.gin_file),
                          x_label='iteration', y_label='MB'))
    tail = [mb for _, it, _, mb in rows if it > 0]
    if tail:
        third = max(len(tail) // 3, 1)
        print('samples %d, iterations %d, RSS MB: min of first third %.0f, '
              'of last third %.0f, max %.0f' %
              (len(rows), rows[-1][1], min(tail[:third]), min(tail[-third:]),
               max(tail)))


if __name__ == '__main__':
    main()
