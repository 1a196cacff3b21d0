"""What the finiteness checks cost per training iteration.

Builds each ``--gin_file``'s trainer twice in one process, as ``alf-train``
does: once as shipped (environment outputs and updates checked for NaN/Inf,
the defaults) and once with ``create_environment.check_finite=False`` and
``check_finite_updates.enabled=False``. Each is traced by a first call
and warmed up by an untimed call of the timed size; then calls of
``--iterations`` iterations are timed alternately
(``--rounds`` rounds), so that machine drift hits both alike, and the
median per iteration of each and the overhead in % are printed, both of
the wall-clock and of the CPU time of this process (all its threads:
``time.process_time``), which other jobs on a loaded machine disturb far
less.

Usage::

    python benchmarks/finite_check_cost.py \
        --gin_file examples/sac_pendulum.gin \
        --gin_file examples/ppo_cart_pole.gin [--rounds 7] [--iterations 20]
"""

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

_OFF = (
    'create_environment.check_finite = False',
    'check_finite_updates.enabled = False',
)


def _trainer(gin_file: str, checks: bool, root_dir: str):
    """The example's trainer, traced by one call (the bindings are read
    when the environment is built and the update traced)."""
    import gin
    from alf_rl.bin.train import parse_gin
    from alf_rl.trainers import OnPolicyTrainer, TrainerConfig

    gin.clear_config()
    parse_gin(
        [gin_file],
        ['TrainerConfig.evaluate = False'] + ([] if checks else list(_OFF)),
        root_dir,
    )
    config = TrainerConfig()
    trainer = (config.trainer or OnPolicyTrainer)(config)
    trainer._train_iterations(1)
    return trainer


def measure(gin_file: str, rounds: int, iterations: int) -> dict:
    """Median seconds per iteration with the checks on and off.

    Args:
        gin_file: an example.
        rounds: alternating rounds.
        iterations: iterations per timed call.

    Returns:
        ``{'gin_file', 'on', 'off', 'overhead_pct', 'cpu_on', 'cpu_off',
        'cpu_overhead_pct', 'on_all', 'off_all'}`` (seconds).
    """
    with tempfile.TemporaryDirectory() as root:
        trainers = {
            'on': _trainer(gin_file, True, os.path.join(root, 'a')),
            'off': _trainer(gin_file, False, os.path.join(root, 'b')),
        }
        for trainer in trainers.values():  # traces the timed call size
            trainer._train_iterations(iterations)
        times = {'on': [], 'off': []}
        cpu = {'on': [], 'off': []}
        for _ in range(rounds):
            for name, trainer in trainers.items():
                start, start_cpu = time.perf_counter(), time.process_time()
                trainer._train_iterations(iterations)
                times[name].append((time.perf_counter() - start) / iterations)
                cpu[name].append(
                    (time.process_time() - start_cpu) / iterations
                )
        for trainer in trainers.values():
            trainer.close()
    on, off = statistics.median(times['on']), statistics.median(times['off'])
    cpu_on, cpu_off = (
        statistics.median(cpu['on']),
        statistics.median(cpu['off']),
    )
    return {
        'gin_file': gin_file,
        'on': on,
        'off': off,
        'overhead_pct': 100.0 * (on - off) / off,
        'cpu_on': cpu_on,
        'cpu_off': cpu_off,
        'cpu_overhead_pct': 100.0 * (cpu_on - cpu_off) / cpu_off,
        'on_all': times['on'],
        'off_all': times['off'],
    }


def main() -> None:
    """Parses the flags and prints one line per example."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--gin_file', action='append', required=True)
    parser.add_argument('--rounds', type=int, default=7)
    parser.add_argument('--iterations', type=int, default=20)
    args = parser.parse_args()
    for gin_file in args.gin_file:
        r = measure(gin_file, args.rounds, args.iterations)
        print(
            '%s: CPU %.2f ms/iteration with the checks, %.2f without: '
            '%+.1f%%; wall-clock %.2f vs %.2f ms: %+.1f%% (wall per round '
            'on: %s; off: %s)'
            % (
                os.path.basename(gin_file),
                1e3 * r['cpu_on'],
                1e3 * r['cpu_off'],
                r['cpu_overhead_pct'],
                1e3 * r['on'],
                1e3 * r['off'],
                r['overhead_pct'],
                ', '.join('%.1f' % (1e3 * t) for t in r['on_all']),
                ', '.join('%.1f' % (1e3 * t) for t in r['off_all']),
            ),
            flush=True,
        )


if __name__ == '__main__':
    main()
