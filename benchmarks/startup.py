"""Start-up of ``alf-train`` with the persistent XLA cache: cold and warm.

Runs ``alf-train --gin_file GIN`` ``--repeats`` times in each mode, the
modes alternating: ``cold`` (an empty cache directory), ``warm`` (the
directory the cold run of the same round filled) and ``off``
(``--xla_cache off``, what every run cost before the cache). Prints, per
run and as medians, the seconds from the command's start to the end of
its first iteration (the moment its ``iter 1`` progress line appears), to
its exit, the ``first_iteration_secs`` it reports (tracing and
compilation included) and the CPU seconds (user + system) the command
used, which a shared machine's load inflates less than the wall time.

``--seeds 1,16`` runs every mode with each population size (N > 1 adds
``--gin_param TrainerConfig.num_seeds=N``: N agents trained in one graph)
alternating within every round, and adds each size's exit time relative to
one seed in the same mode; ``--write`` then fills the ``startup_seeds``
block.

``--trees before=DIR,after=DIR`` compares source trees side by side: each
run runs in its tree's ``DIR`` and imports ``alf_rl`` from it (a relative
``--gin_file`` is the tree's), the trees alternating within every round,
each with a cache of its own.

    python benchmarks/startup.py [--gin_file examples/ppo_tf_cart_pole.gin]
        [--repeats 3] [--modes cold,warm,off] [--gin_param K=V ...]
        [--seeds 1,16] [--trees NAME=DIR,...] [--write docs/training.md]

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
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from docs_block import write_block  # noqa: E402

_TRAIN = [sys.executable, '-m', 'alf_rl.bin.train']


def run_once(
    gin_file: str,
    params: List[str],
    cache: str,
    tree: Optional[str] = None,
) -> Dict[str, float]:
    """Times one ``alf-train`` command.

    Args:
        gin_file: the example.
        params: extra ``--gin_param`` bindings.
        cache: the ``--xla_cache`` value (a directory or ``off``).
        tree: a source tree to run in: ``alf_rl`` is imported from it
            (the command runs in it, as ``python -m`` puts the current
            directory first on ``sys.path``, and with it as
            ``PYTHONPATH``), a relative ``gin_file`` is its file; ``None``:
            this process's directory and environment.
    Returns:
        dict: ``first_iteration_end_s`` and ``exit_s`` from the command's
        start, the run's own ``first_iteration_secs`` and ``cpu_s``, the
        command's user + system CPU seconds.
    """
    root = tempfile.mkdtemp(prefix='alf_startup_')
    command = _TRAIN + ['--gin_file', gin_file, '--root_dir', root]
    command += ['--xla_cache', cache]
    for param in params:
        command += ['--gin_param', param]
    env = dict(os.environ)
    if tree is not None:
        env['PYTHONPATH'] = os.path.abspath(tree)
    start = time.perf_counter()
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=tree,
    )
    first = float('nan')
    output = []
    assert process.stdout is not None
    for line in process.stdout:
        output.append(line)
        if line.startswith('iter 1 ') and first != first:
            first = time.perf_counter() - start
    _, status, usage = os.wait4(process.pid, 0)
    total = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    shutil.rmtree(root, ignore_errors=True)
    if process.returncode:
        raise RuntimeError('alf-train failed:\n' + ''.join(output[-20:]))
    reported = re.search(r'first_iteration_secs=([\d.]+)', ''.join(output))
    return dict(
        first_iteration_end_s=first,
        exit_s=total,
        first_iteration_secs=float(reported.group(1)) if reported else 0.0,
        cpu_s=usage.ru_utime + usage.ru_stime,
    )


def parse_trees(text: Optional[str]) -> List[Tuple[str, Optional[str]]]:
    """``--trees``' ``NAME=DIR,...`` as ``[(name, dir)]``; ``[('', None)]``
    (this environment's ``alf_rl``) when not given.

    Raises:
        SystemExit: a malformed item or a ``DIR`` without ``alf_rl/``.
    """
    if not text:
        return [('', None)]
    trees = []
    for item in text.split(','):
        name, _, directory = item.partition('=')
        if not name or not os.path.isdir(os.path.join(directory, 'alf_rl')):
            raise SystemExit(
                "startup.py: --trees expects NAME=DIR with DIR/alf_rl, "
                "got %r" % (item,)
            )
        trees.append((name, directory))
    return trees


def main() -> None:
    """Parses the flags, runs the rounds, prints every run and medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--gin_file', default='examples/ppo_tf_cart_pole.gin')
    parser.add_argument('--gin_param', action='append', default=[])
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--modes', default='cold,warm,off')
    parser.add_argument('--seeds', default=None, metavar='N,...')
    parser.add_argument('--trees', default=None, metavar='NAME=DIR,...')
    parser.add_argument('--write', default=None, metavar='PAGE')
    args = parser.parse_args()
    trees = parse_trees(args.trees)
    seeds = parse_seeds(args.seeds)
    args.load_at_start = os.getloadavg()[0]
    rows: Dict[str, List[Dict[str, float]]] = {}
    for repeat in range(args.repeats):
        for tree_name, tree in trees:
            cache = tempfile.mkdtemp(prefix='alf_xla_cache_')
            for mode in args.modes.split(','):
                for n in seeds:
                    label = seeds_label(n) if args.seeds else ''
                    row = ' '.join(x for x in (mode, tree_name, label) if x)
                    params = list(args.gin_param)
                    if n > 1:
                        params.append('TrainerConfig.num_seeds=%d' % n)
                    if mode == 'warm' and 'cold' not in args.modes.split(','):
                        run_once(args.gin_file, params, cache, tree)
                    r = run_once(
                        args.gin_file,
                        params,
                        'off' if mode == 'off' else cache,
                        tree,
                    )
                    rows.setdefault(row, []).append(r)
                    print('round %d %s: %s' % (repeat, row, r), flush=True)
            shutil.rmtree(cache, ignore_errors=True)
    lines = medians(rows, args)
    print('\n'.join(lines))
    if args.write:
        block = 'startup_seeds' if args.seeds else 'startup'
        write_block(args.write, block, lines)


def parse_seeds(text: Optional[str]) -> List[int]:
    """``--seeds``' ``N,...`` as population sizes (``[1]`` when not
    given).

    Raises:
        SystemExit: a size that is not an int >= 1.
    """
    if not text:
        return [1]
    try:
        sizes = [int(x) for x in text.split(',')]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise SystemExit(
            'startup.py: --seeds expects population sizes N,... >= 1, '
            'got %r' % (text,)
        )
    return sizes


def seeds_label(n: int) -> str:
    """A row's population label with ``--seeds`` (``'16 seeds'``)."""
    return '1 seed' if n == 1 else '%d seeds' % n


def medians(
    rows: Dict[str, List[Dict[str, float]]], args: argparse.Namespace
) -> List[str]:
    """The markdown table of the medians per mode, and a line saying
    what was run, when, and the machine's load."""
    by_seeds = bool(getattr(args, 'seeds', None))  # --seeds given
    lines = [
        '| `%s` | to the end of the 1st iteration (s) | to exit (s)'
        ' | first_iteration_secs | CPU s |%s'
        % (
            os.path.basename(args.gin_file),
            ' exit vs 1 seed |' if by_seeds else '',
        ),
        '| --- | ---: | ---: | ---: | ---: |'
        + (' ---: |' if by_seeds else ''),
    ]
    exits = {}
    for mode, runs in rows.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        exits[mode] = med['exit_s']
        ratio = ''
        if by_seeds:
            one = exits.get(re.sub(r'\d+ seeds$', '1 seed', mode))
            ratio = ' %.2fx |' % (med['exit_s'] / one) if one else ' |'
        lines.append(
            '| %s | %.1f | %.1f | %.1f | %.1f |%s'
            % (
                mode,
                med['first_iteration_end_s'],
                med['exit_s'],
                med['first_iteration_secs'],
                med['cpu_s'],
                ratio,
            )
        )
    lines += [
        '',
        'Medians of %d rounds%s, measured %s, %d CPU cores, load average'
        ' %.1f at the start and %.1f at the end.'
        % (
            args.repeats,
            ' with ' + ' '.join(args.gin_param) if args.gin_param else '',
            time.strftime('%Y-%m-%d'),
            os.cpu_count() or 0,
            getattr(args, 'load_at_start', float('nan')),
            os.getloadavg()[0],
        ),
    ]
    return lines


if __name__ == '__main__':
    main()
