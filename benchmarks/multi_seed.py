"""Throughput of N seeds of ppo_tf_cart_pole trained in one compiled graph.

For each population size N, builds a ``PopulationTrainer`` with
``examples/ppo_tf_cart_pole.gin``'s settings (16 CartPole-v1 environments x
32 steps per seed per iteration, 10 epochs of mini-batches of 256, PPO as
``ppo_cart_pole.gin``), times the first (compiling) iteration and then
``--iterations`` more, and prints a table: seconds per iteration, env steps
per second over all seeds, and the projected wall time of a whole run of
every seed (``TrainerConfig.num_env_steps = 100000`` per seed: the first
iteration plus the rest at the measured rate) relative to one seed.

    python benchmarks/multi_seed.py [--sizes 1,4,16,64] [--iterations 5] [--xla]
        [--write docs/training.md]

``--write PAGE`` also puts the table (with the date and the machine's load)
into PAGE's ``multi_seed`` block, or ``multi_seed_xla`` with ``--xla``
(``benchmarks/docs_block.py``).
"""

import argparse
import os
import sys
import time
from typing import Dict, List

from alf_rl.bin.quiet import import_tensorflow

tf = import_tensorflow()  # quietly, with alf-train's thread settings

from alf_rl.trainers.population_trainer import PopulationTrainer  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from docs_block import write_block  # noqa: E402

_ENVS, _UNROLL = 16, 32


def measure(
    num_seeds: int, iterations: int, jit_compile: bool
) -> Dict[str, float]:
    """Times one population size.

    Args:
        num_seeds: N, the population size (seeds 0 .. N-1).
        iterations: timed iterations after the first.
        jit_compile: compile with XLA.
    Returns:
        dict: ``first_s`` (first iteration, with compilation),
        ``iteration_s`` (mean of the rest), ``iteration_cpu_s`` (this
        process's CPU seconds per iteration, all threads: what a loaded
        machine does not inflate), ``steps_per_s`` (all seeds).
    """
    trainer = PopulationTrainer(
        list(range(num_seeds)),
        num_envs=_ENVS,
        unroll_length=_UNROLL,
        mini_batch_size=256,
        num_epochs=10,
        jit_compile=jit_compile,
    )
    start = time.perf_counter()
    trainer.run_iteration()
    first = time.perf_counter() - start
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(iterations):
        trainer.run_iteration()
    per_iteration = (time.perf_counter() - start) / iterations
    return dict(
        first_s=first,
        iteration_s=per_iteration,
        iteration_cpu_s=(time.process_time() - cpu) / iterations,
        steps_per_s=num_seeds * _ENVS * _UNROLL / per_iteration,
    )


def table(rows: Dict[int, Dict[str, float]], env_steps: int) -> List[str]:
    """The markdown table lines (projected run: ``env_steps`` per seed)."""
    iterations = -(-env_steps // (_ENVS * _UNROLL))
    lines = [
        '| N | first iteration (s) | s / iteration | CPU s / iteration'
        ' | env steps/s (all seeds) | projected run (s) | vs N=1 |',
        '| ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ]
    base = None
    for n, r in sorted(rows.items()):
        run = r['first_s'] + (iterations - 1) * r['iteration_s']
        base = run if base is None else base
        lines.append(
            '| %d | %.1f | %.3f | %.3f | %.0f | %.0f | %.2fx |'
            % (
                n,
                r['first_s'],
                r['iteration_s'],
                r['iteration_cpu_s'],
                r['steps_per_s'],
                run,
                run / base,
            )
        )
    return lines


def main() -> None:
    """Parses the flags, measures every size and prints the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sizes', default='1,4,16,64')
    parser.add_argument('--iterations', type=int, default=5)
    parser.add_argument('--env_steps', type=int, default=100000)
    # --xla: the iteration compiled with XLA (TrainerConfig.jit_compile);
    # its table goes to the page's 'multi_seed_xla' block.
    parser.add_argument('--xla', action='store_true')
    parser.add_argument('--write', default=None, metavar='PAGE')
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(',')]
    rows = {}
    for n in sizes:
        rows[n] = measure(n, args.iterations, args.xla)
        print('N=%d: %s' % (n, rows[n]), flush=True)
    print(
        'devices: %s'
        % [d.device_type for d in tf.config.list_logical_devices()]
    )
    lines = table(rows, args.env_steps)
    lines.append('')
    lines.append(
        'Measured %s, %d CPU cores, load average %.1f at the end%s.'
        % (
            time.strftime('%Y-%m-%d'),
            os.cpu_count() or 0,
            os.getloadavg()[0],
            ', XLA' if args.xla else '',
        )
    )
    print('\n'.join(lines))
    if args.write:
        write_block(args.write,
                    'multi_seed_xla' if args.xla else 'multi_seed', lines)


if __name__ == '__main__':
    main()
