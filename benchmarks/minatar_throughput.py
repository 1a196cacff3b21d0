"""Env steps/s of MinAtar in TF ops (suite_minatar), random actions.

For each game, a random-action rollout of ``suite_minatar`` environments
in one ``tf.while_loop`` (the observation is computed every step, as a
driver needs it), plain graph and XLA (``jit_compile=True``), for batch
sizes 1, 64 and 4096 by default; beside it the ``minatar`` Python package
(one game, random actions, if installed). Each rate is the best of 3, by
wall time and by this process's CPU time (steps per CPU-second, summed
over threads): on a shared machine the second is the steadier figure.

Usage: python benchmarks/minatar_throughput.py [--games Breakout,Asterix]
    [--batch_sizes 1,64,4096] [--steps 1000]
"""

import argparse
import os
import sys
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from rollout_throughput import _best_of  # noqa: E402

_MODULES = {
    'Breakout': 'breakout',
    'Freeway': 'freeway',
    'Asterix': 'asterix',
    'SpaceInvaders': 'space_invaders',
    'Seaquest': 'seaquest',
}


def tf_rate(tf, game, batch_size, steps, jit):
    """Env steps/s (best of 3) of ``MinAtar/<game>-v0``, random actions."""
    from alf_rl.environments import suite_minatar
    from alf_rl.environments.suite_tf import stateless_uniform

    env = suite_minatar.load('MinAtar/%s-v0' % game, batch_size, seed=0)

    def action_fn(i, time_step):
        u = stateless_uniform([batch_size], [7, i], 0.0, 6.0)
        return tf.cast(u, tf.int64)

    return _loop_rates(tf, env, action_fn, steps, jit)


def _loop_rates(tf, env, action_fn, steps, jit):
    """(wall, CPU) env steps/s, each the best of 3, of
    ``env.step(action_fn(i, time_step))`` in one compiled while loop."""

    @tf.function(autograph=False, jit_compile=jit)
    def loop(time_step, num):

        def body(i, ts):
            return i + 1, env.step(action_fn(i, ts))

        return tf.while_loop(
            lambda i, _: i < num, body, (tf.constant(0), time_step)
        )[1]

    time_step = env.reset()
    loop(time_step, tf.constant(10))
    rates = []
    for _ in range(3):
        wall, cpu = time.perf_counter(), time.process_time()
        loop(time_step, tf.constant(steps)).reward.numpy()
        n = steps * env.batch_size
        rates.append(
            (n / (time.perf_counter() - wall), n / (time.process_time() - cpu))
        )
    return max(r[0] for r in rates), max(r[1] for r in rates)


def python_rate(game, steps=20000):
    """Env steps/s of the ``minatar`` package (one game, random actions,
    reset on termination); None if it is not installed."""
    try:
        from minatar.environment import Environment
    except ImportError:
        return None
    import numpy as np

    env = Environment(_MODULES[game])
    env.seed(0)
    env.reset()
    actions = np.random.RandomState(0).randint(6, size=steps)

    def measure():
        start = time.perf_counter()
        for a in actions:
            env.act(a)
            env.state()
            if env.env.terminal:
                env.reset()
        return steps / (time.perf_counter() - start)

    return _best_of(measure)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--games', default=','.join(_MODULES))
    parser.add_argument('--batch_sizes', default='1,64,4096')
    parser.add_argument(
        '--steps',
        type=int,
        default=1000,
        help='batched steps per measurement (at most)',
    )
    args = parser.parse_args()
    from alf_rl.bin.quiet import import_tensorflow

    tf = import_tensorflow()
    print(
        '%-32s %11s %11s %11s %11s'
        % ('env steps/s (best of 3)', 'graph', 'graph/CPU', 'XLA', 'XLA/CPU'),
        flush=True,
    )
    for game in args.games.split(','):
        for b in [int(b) for b in args.batch_sizes.split(',')]:
            steps = max(min(args.steps, 400000 // b), 50)
            rates = [tf_rate(tf, game, b, steps, jit) for jit in (False, True)]
            print(
                '%-32s %11.0f %11.0f %11.0f %11.0f'
                % ('%s, TF ops, batch %d' % (game, b), *rates[0], *rates[1]),
                flush=True,
            )
        rate = python_rate(game)
        if rate is not None:
            print(
                '%-32s %11.0f' % ('%s, minatar package' % game, rate),
                flush=True,
            )


if __name__ == '__main__':
    main()
