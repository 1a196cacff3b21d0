"""Several ``alf-train`` runs on one machine: TensorFlow's threads per run.

Starts the given examples at the same time, one process each (``--gin_file
A --gin_file B``, or one file and ``--copies K``), every process with the
same thread setting, and reads each run's steady-state env steps per
second from its last progress line. The settings alternate round by round:
``default`` (TensorFlow's own pools, one thread per core each) and ``N``
(``TF_NUM_INTRAOP_THREADS=N TF_NUM_INTEROP_THREADS=N``). Prints each
run's rate and the machine's total, per setting, as medians over rounds,
and each setting's total relative to ``default``.

Each run trains to ``--env_steps`` with a short initial collection
(``--initial_collect_steps``), without evaluation or checkpoints, so that
most of its time is the steady state a long run spends its hours in.

    python benchmarks/runs_per_core.py --gin_file examples/td3_hopper.gin
        --copies 2 [--settings default,1] [--repeats 2] [--env_steps 8000]
        [--write docs/training.md]

``--write PAGE`` puts the table (with the date and the machine) into
PAGE's ``runs_per_core`` block (``benchmarks/docs_block.py``).
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

from alf_rl.tune.runner import THREAD_VARIABLES  # noqa: E402

_TRAIN = [sys.executable, '-m', 'alf_rl.bin.train']
_RATE = re.compile(r'\| (\d+) steps/s \|')


def _command(gin_file: str, root: str, args: argparse.Namespace) -> List[str]:
    """The ``alf-train`` command of one run of ``gin_file`` in ``root``."""
    params = [
        'TrainerConfig.initial_collect_steps=%d' % args.initial_collect_steps,
        'TrainerConfig.evaluate=False',
        'TrainerConfig.checkpoint_interval=100000000',
    ]
    command = _TRAIN + [
        '--gin_file',
        gin_file,
        '--root_dir',
        root,
        '--stop_at_env_steps',
        str(args.env_steps),
    ]
    for param in params:
        command += ['--gin_param', param]
    return command


def _environment(setting: str) -> Dict[str, str]:
    """This process's environment with ``setting``'s thread variables."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
    for name in THREAD_VARIABLES:
        env.pop(name, None)
        if setting != 'default':
            env[name] = setting
    return env


def run_round(
    gin_files: List[str], setting: str, args: argparse.Namespace
) -> List[float]:
    """Runs ``gin_files`` at once, each with the thread ``setting``.

    Returns:
        Each run's steady-state env steps per second (its last progress
        line), in the order of ``gin_files``.
    Raises:
        RuntimeError: a run failed or printed no rate.
    """
    roots = [tempfile.mkdtemp(prefix='alf_cores_') for _ in gin_files]
    try:
        processes = [
            subprocess.Popen(
                _command(g, r, args),
                env=_environment(setting),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for g, r in zip(gin_files, roots)
        ]
        outputs = [p.communicate()[0] for p in processes]
    finally:
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)
    rates = []
    for gin_file, process, output in zip(gin_files, processes, outputs):
        found = _RATE.findall(output)
        if process.returncode != 0 or not found:
            raise RuntimeError(
                '%s (threads %s) exited %d without a rate:\n%s'
                % (gin_file, setting, process.returncode, output[-2000:])
            )
        rates.append(float(found[-1]))
    return rates


def table(
    gin_files: List[str], results: Dict[str, List[List[float]]], rounds: int
) -> List[str]:
    """Markdown lines: per setting, each run's median rate and the total.

    Args:
        gin_files: the runs, in order.
        results: per setting, per round, each run's rate.
        rounds: rounds run.
    """
    names = [os.path.basename(g).replace('.gin', '') for g in gin_files]
    lines = [
        '| threads per run | '
        + ' | '.join(
            '%s (%d) steps/s' % (n, k + 1) for k, n in enumerate(names)
        )
        + ' | total | vs default |',
        '|---' * (len(names) + 3) + '|',
    ]
    totals = {
        s: statistics.median(sum(r) for r in per_round)
        for s, per_round in results.items()
    }
    base = totals.get('default', next(iter(totals.values())))
    for setting, per_round in results.items():
        medians = [
            statistics.median(r[k] for r in per_round)
            for k in range(len(names))
        ]
        total = totals[setting]
        lines.append(
            '| %s | %s | %.0f | %.2fx |'
            % (
                setting,
                ' | '.join('%.0f' % m for m in medians),
                total,
                total / base,
            )
        )
    lines.append('')
    lines.append(
        '%d runs at once, %d rounds alternating, %s, %d cores, '
        'load before %.1f.'
        % (
            len(names),
            rounds,
            time.strftime('%Y-%m-%d'),
            os.cpu_count() or 0,
            os.getloadavg()[0],
        )
    )
    return lines


def main() -> None:
    """Parses the flags, runs the rounds, prints (and writes) the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--gin_file', action='append', required=True)
    parser.add_argument('--copies', type=int, default=1)
    parser.add_argument('--settings', default='default,1')
    parser.add_argument('--repeats', type=int, default=2)
    parser.add_argument('--env_steps', type=int, default=8000)
    parser.add_argument('--initial_collect_steps', type=int, default=1000)
    parser.add_argument('--write', default=None)
    args = parser.parse_args()
    gin_files = args.gin_file * args.copies
    settings = args.settings.split(',')
    results: Dict[str, List[List[float]]] = {s: [] for s in settings}
    for k in range(args.repeats):
        for setting in settings:
            rates = run_round(gin_files, setting, args)
            results[setting].append(rates)
            print(
                'round %d, threads %s: %s steps/s'
                % (k + 1, setting, ', '.join('%.0f' % r for r in rates)),
                flush=True,
            )
    lines = table(gin_files, results, args.repeats)
    print('\n'.join(lines))
    if args.write:
        write_block(args.write, 'runs_per_core', lines)


if __name__ == '__main__':
    main()
