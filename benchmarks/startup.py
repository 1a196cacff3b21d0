"""Start-up of ``alf-train`` with the persistent XLA cache: cold and warm.

Runs ``alf-train --gin_file GIN`` ``--repeats`` times in each mode, the
modes alternating: ``cold`` (an empty cache directory), ``warm`` (the
directory the cold run of the same round filled) and ``off``
(``--xla_cache off``, what every run cost before the cache). Prints, per
run and as medians, the seconds from the command's start to the end of
its first iteration (the moment its ``iter 1`` progress line appears), to
its exit, and the ``first_iteration_secs`` it reports (tracing and
compilation included).

    python benchmarks/startup.py [--gin_file examples/ppo_tf_cart_pole.gin]
        [--repeats 3] [--modes cold,warm,off] [--gin_param K=V ...]
        [--write docs/training.md]

``--write PAGE`` also puts the medians (with the date and the machine's
load) into PAGE's ``startup`` block (``benchmarks/docs_block.py``).
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from docs_block import write_block  # noqa: E402

_TRAIN = [sys.executable, '-m', 'alf_rl.bin.train']


def run_once(gin_file: str, params: List[str], cache: str) -> Dict[str, float]:
    """Times one ``alf-train`` command.

    Args:
        gin_file: the example.
        params: extra ``--gin_param`` bindings.
        cache: the ``--xla_cache`` value (a directory or ``off``).
    Returns:
        dict: ``first_iteration_end_s`` and ``exit_s`` from the command's
        start, and the run's own ``first_iteration_secs``.
    """
    root = tempfile.mkdtemp(prefix='alf_startup_')
    command = _TRAIN + ['--gin_file', gin_file, '--root_dir', root]
    command += ['--xla_cache', cache]
    for param in params:
        command += ['--gin_param', param]
    start = time.perf_counter()
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    first = float('nan')
    output = []
    assert process.stdout is not None
    for line in process.stdout:
        output.append(line)
        if line.startswith('iter 1 ') and first != first:
            first = time.perf_counter() - start
    process.wait()
    total = time.perf_counter() - start
    shutil.rmtree(root, ignore_errors=True)
    if process.returncode:
        raise RuntimeError('alf-train failed:\n' + ''.join(output[-20:]))
    reported = re.search(r'first_iteration_secs=([\d.]+)', ''.join(output))
    return dict(
        first_iteration_end_s=first,
        exit_s=total,
        first_iteration_secs=float(reported.group(1)) if reported else 0.0,
    )


def main() -> None:
    """Parses the flags, runs the rounds, prints every run and medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--gin_file', default='examples/ppo_tf_cart_pole.gin')
    parser.add_argument('--gin_param', action='append', default=[])
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--modes', default='cold,warm,off')
    parser.add_argument('--write', default=None, metavar='PAGE')
    args = parser.parse_args()
    modes = args.modes.split(',')
    rows: Dict[str, List[Dict[str, float]]] = {m: [] for m in modes}
    for repeat in range(args.repeats):
        cache = tempfile.mkdtemp(prefix='alf_xla_cache_')
        for mode in modes:
            if mode == 'warm' and 'cold' not in modes:
                run_once(args.gin_file, args.gin_param, cache)  # fill it
            r = run_once(
                args.gin_file,
                args.gin_param,
                'off' if mode == 'off' else cache,
            )
            rows[mode].append(r)
            print('round %d %s: %s' % (repeat, mode, r), flush=True)
        shutil.rmtree(cache, ignore_errors=True)
    lines = medians(rows, args)
    print('\n'.join(lines))
    if args.write:
        write_block(args.write, 'startup', lines)


def medians(
    rows: Dict[str, List[Dict[str, float]]], args: argparse.Namespace
) -> List[str]:
    """The markdown table of the medians per mode, and a line saying
    what was run, when, and the machine's load."""
    lines = [
        '| `%s` | to the end of the 1st iteration (s) | to exit (s)'
        ' | first_iteration_secs |' % os.path.basename(args.gin_file),
        '| --- | ---: | ---: | ---: |',
    ]
    for mode, runs in rows.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        lines.append(
            '| %s | %.1f | %.1f | %.1f |'
            % (
                mode,
                med['first_iteration_end_s'],
                med['exit_s'],
                med['first_iteration_secs'],
            )
        )
    lines += [
        '',
        'Medians of %d rounds%s, measured %s, %d CPU cores, load average'
        ' %.1f at the end.'
        % (
            args.repeats,
            ' with ' + ' '.join(args.gin_param) if args.gin_param else '',
            time.strftime('%Y-%m-%d'),
            os.cpu_count() or 0,
            os.getloadavg()[0],
        ),
    ]
    return lines


if __name__ == '__main__':
    main()
