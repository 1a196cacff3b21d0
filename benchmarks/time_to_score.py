"""Wall-clock time and env steps for an example to reach a score.

Runs an example in-process (``alf_rl.bin.train.train``) on a fresh root
dir, stopping as soon as ``Metrics/AverageReturn`` (training, mean of the last
10 episodes) reaches ``--threshold``; prints the env steps, the seconds
since the process started (imports, tracing and initial collection
included) and the training updates/s.

Several ``--gin_file``s are run alternating (seed 0 of each, then seed 1
of each, ...), so that machine drift hits them alike, and a markdown table
of env steps and loop seconds per seed and file ends the output
(``--module_path`` puts a directory of your own modules on ``sys.path``).

Usage::

    python benchmarks/time_to_score.py --gin_file examples/sac_pendulum.gin \
        --threshold -200 [--gin_param ...] [--seeds 0,1,2] \
        [--gin_file another.gin ...]
"""

import argparse
import os
import shutil
import tempfile
import time

START = time.time()
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--gin_file', action='append', required=True)
    parser.add_argument('--threshold', type=float, required=True)
    parser.add_argument('--gin_param', action='append', default=[])
    parser.add_argument('--seeds', default='0')
    parser.add_argument('--root_dir', default=None)
    parser.add_argument('--module_path', action='append', default=[])
    args = parser.parse_args()
    from alf_rl.bin.quiet import import_tensorflow
    import_tensorflow()
    import gin
    from alf_rl.bin.train import add_module_paths, train

    add_module_paths(args.module_path)
    seeds = [int(s) for s in args.seeds.split(',')]
    results = {}
    for seed in seeds:
        for gin_file in args.gin_file:
            results[gin_file, seed] = _run(gin, train, gin_file, seed, args)
    if len(args.gin_file) > 1 or len(seeds) > 1:
        print(_table(results, args.gin_file, seeds, args.threshold))


def _run(gin, train, gin_file, seed, args):
    """(env steps, loop seconds, reached) of one seeded run to the
    threshold, printed as it ends."""
    gin.clear_config()
    root = args.root_dir or tempfile.mkdtemp(prefix='alf_bench_')
    root = os.path.join(root, '%s_seed%d' % (
        os.path.splitext(os.path.basename(gin_file))[0], seed))
    shutil.rmtree(root, ignore_errors=True)
    result = train(root, [gin_file], args.gin_param + [
        'TrainerConfig.random_seed=%d' % seed,
        'TrainerConfig.stop_at_average_return=%r' % args.threshold,
    ])
    now = time.time()
    # train() leaves no configuration behind: read the run's own.
    gin.clear_config()
    gin.parse_config_file(os.path.join(root, 'config.gin'),
                          skip_unknown=True)
    updates = result['iterations'] * _updates_per_iteration(gin)
    rate = updates / max(result['train_secs'], 1e-9)
    reached = result['Metrics/AverageReturn'] >= args.threshold
    first = result['first_iteration_secs']
    print('%s seed %d: %s %g: AverageReturn %.1f after %d env steps, '
          '%.1f s after process start, %.1f s in the training loop '
          '(first iteration, with tracing/compilation: %.1f s; the rest: '
          '%.1f s); %d updates, %.0f updates/s' %
          (os.path.basename(gin_file), seed,
           'reached' if reached else 'did NOT reach', args.threshold,
           result['Metrics/AverageReturn'],
           result['Metrics/EnvironmentSteps'], now - START,
           result['train_secs'], first, result['train_secs'] - first,
           updates, rate), flush=True)
    return result['Metrics/EnvironmentSteps'], result['train_secs'], reached


def _table(results, gin_files, seeds, threshold):
    """Markdown: per gin file, env steps (and loop seconds) per seed and
    their median; a run that stopped below the threshold is marked '>' (and
    the median, when most of them did)."""
    import numpy as np
    lines = ['| example | %s | median env steps |' % ' | '.join(
        'seed %d: env steps (s)' % s for s in seeds),
             '|---|%s---|' % ('---|' * len(seeds))]
    for gin_file in gin_files:
        cells, steps = [], []
        for seed in seeds:
            n, secs, reached = results[gin_file, seed]
            cells.append('%s%.1fk (%.0f s)' % ('' if reached else '>',
                                               n / 1e3, secs))
            steps.append(n)
        missed = sum(not results[gin_file, seed][2] for seed in seeds)
        lines.append('| %s | %s | %s%.1fk |' % (
            os.path.basename(gin_file), ' | '.join(cells),
            '>' if 2 * missed > len(seeds) else '', np.median(steps) / 1e3))
    lines.append('(to a training AverageReturn >= %g; s: seconds in the '
                 'training loop, first iteration\'s tracing included)'
                 % threshold)
    return '\n'.join(lines)


def _updates_per_iteration(gin):
    """Gradient updates per training iteration of the configured trainer."""
    epochs = _query(gin, 'TrainerConfig.num_updates_per_train_step', 1)
    if not _query(gin, 'TrainerConfig.clear_replay_buffer', False):
        return epochs  # one sampled mini-batch per update
    # Epochs over what one iteration collected, in mini-batches.
    envs = _query(gin, 'create_environment.num_parallel_environments', 1)
    unroll = _query(gin, 'TrainerConfig.unroll_length', 8)
    length = _query(gin, 'TrainerConfig.mini_batch_length', None) or unroll
    size = _query(gin, 'TrainerConfig.mini_batch_size', None)
    sequences = envs * unroll // length
    return epochs * max(sequences // (size or sequences), 1)


def _query(gin, name, default):
    try:
        return gin.query_parameter(name)
    except ValueError:
        return default


if __name__ == '__main__':
    main()
