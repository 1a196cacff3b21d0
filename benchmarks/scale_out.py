"""Scale-out: env steps/s and learner updates/s versus the number of actors.

Measures, on a deliberately slow environment (``benchmarks.slow_env``:
Pendulum-v1 that sleeps ``--delay_ms`` per step, so that stepping many
environments at once shows its gain on two cores), SAC with the
``examples/sac_pendulum.gin`` settings trained by

- ``sync``: ``OffPolicyTrainer`` with N environments stepped one after
  the other in the learner's process (``use_subprocess=False``, today's
  default);
- ``sync_subprocess``: the same with N environment subprocesses
  (``ParallelPyEnvironment``; they step together, still between updates);
- ``async``: ``AsyncOffPolicyTrainer`` with N thread actors of one
  environment each;
- ``async_interop``: the same with ``TF_NUM_INTEROP_THREADS=N+2`` exported
  (an environment's ``py_function`` runs on TensorFlow's inter-op pool:
  with one thread there, the actors' environment steps take turns).
  ``AsyncOffPolicyTrainer.configure_runtime`` now sets N+2 threads itself
  when started like ``alf-train`` (as here), so ``async`` and
  ``async_interop`` should measure the same; before, ``async`` ran with
  one thread;
- ``async_2x_subprocess``: ``AsyncOffPolicyTrainer`` with 2 thread actors
  of N/2 environments each, in subprocesses (N >= 2): the actors' policy
  steps are batched, the environments step in parallel;
- ``ray``: ``AsyncOffPolicyTrainer(actors='ray')`` with N Ray actors of one
  environment each (needs the ``[dist]`` extra and
  ``alf_rl.distributed.ray_actors``).

Two learner settings (``--ratio``), each the same for every mode and N:

- ``1``: one update per env step (sac_pendulum's own setting: sync with N
  environments makes N updates per iteration; async actors send 16 steps
  per message, ``iterations_per_message=16``, one update per step);
- ``8``: one update per 8 env steps (a throughput setting where collection,
  not the learner, is the bottleneck: sync ``unroll_length = 8 / N``; async
  ``unroll_length=8``, ``iterations_per_message=2``, 16 steps per message).

Each measurement runs in a fresh process: after the first training call
(tracing and ``initial_collect_steps`` done) and ``--warmup`` more seconds,
the env steps (``EnvironmentSteps``), the gradient updates (the first
optimizer's ``iterations``) and the async driver's ``stats()`` are read,
again ``--window`` seconds later, and the run is stopped
(``request_stop``). Rates are the differences over the window.

Other sections:

- ``overhead``: Ray's cost per experience message: thread actor against Ray
  actor, N=1, ratio 8, on Pendulum without the sleep (actor-bound: the
  difference in seconds per 16-step message);
- ``score``: time-to-score (``AverageReturn >= --threshold``) on the slow
  Pendulum, sync (1 env) against async (2 and 8 thread actors), both one
  update per env step, for ``--seeds``;
- ``fast``: the plain examples (no sleep), sync against async with 2
  thread actors: sac_pendulum[_async].gin and ppo_cart_pole[_async].gin,
  alternating ``--repeats`` times in one session (the machine drifts
  between sessions: compare only side by side).

Usage (from the repository root; children inherit ``nice``)::

    nice python -m benchmarks.scale_out                 # everything
    nice python -m benchmarks.scale_out --quick         # N=1,8, short windows
    nice python -m benchmarks.scale_out --sections throughput \\
        --modes sync,async --actors 1,2,4,8 --ratio 8 --window 15 --json

Prints a markdown table per section to stdout (and, with ``--json``, one
JSON line per measurement as it finishes).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARK = 'SCALE_OUT_RESULT '
SAC = 'examples/sac_pendulum.gin'
# Bindings of every throughput run: no evaluation, no checkpoint or summary
# during the window (the async trainer's summaries reset the lag stats).
QUIET = ['TrainerConfig.evaluate=False',
         'TrainerConfig.checkpoint_interval=1000000000',
         'TrainerConfig.summary_interval=1000000000',
         'TrainerConfig.num_env_steps=1000000000',
         'TrainerConfig.num_iterations=0']


# ------------------------------------------------------------ the specs
def _env(num_envs, use_subprocess, delay_ms):
    return {'env_name': 'Pendulum-v1', 'num_envs': num_envs,
            'use_subprocess': use_subprocess, 'delay_ms': delay_ms}


def _sac_params(mode, n, ratio):
    """Gin bindings of SAC on N environments / actors at ``ratio`` env
    steps per update (see the module docstring)."""
    if mode.startswith('sync'):
        if ratio == 1:
            return ['TrainerConfig.unroll_length=1',
                    'TrainerConfig.num_updates_per_train_step=%d' % n]
        if ratio % n:
            raise ValueError('--ratio %d: not a multiple of N=%d' % (ratio, n))
        return ['TrainerConfig.unroll_length=%d' % (ratio // n),
                'TrainerConfig.num_updates_per_train_step=1']
    actors, per_actor = (2, n // 2) if mode == 'async_2x_subprocess' else (
        n, 1)
    if ratio % per_actor:
        raise ValueError('--ratio %d: not a multiple of N/2=%d' %
                         (ratio, per_actor))
    unroll = ratio // per_actor
    params = ['TrainerConfig.trainer=@AsyncOffPolicyTrainer',
              'AsyncOffPolicyTrainer.num_actors=%d' % actors,
              'TrainerConfig.unroll_length=%d' % unroll,
              'TrainerConfig.num_updates_per_train_step=1',
              'AsyncOffPolicyTrainer.iterations_per_message=%d' %
              max(16 // unroll, 1)]
    if mode == 'ray':
        params.append("AsyncOffPolicyTrainer.actors='ray'")
    return params


def _environ(mode, n):
    """Environment variables of a run's process."""
    if mode == 'async_interop':
        return {'TF_NUM_INTEROP_THREADS': str(n + 2)}
    return {}


def _sac_spec(mode, n, ratio, delay_ms, args, section='throughput'):
    sync = mode.startswith('sync')
    split = mode == 'async_2x_subprocess'
    params = QUIET + _sac_params(mode, n, ratio)
    if mode == 'ray':
        params += args.ray_param
    return {'section': section, 'mode': mode, 'n': n, 'ratio': ratio,
            'delay_ms': delay_ms, 'kind': 'rate', 'gin_file': SAC,
            'params': params, 'environ': _environ(mode, n),
            'env': _env(n if sync else n // 2 if split else 1,
                        mode in ('sync_subprocess', 'async_2x_subprocess'),
                        delay_ms),
            'warmup': args.warmup, 'window': args.window}


def throughput_specs(args):
    """The throughput section's runs: delay x ratio x mode x N."""
    return [_sac_spec(mode, n, ratio, delay, args)
            for delay in args.delay_ms for ratio in args.ratio
            for mode in args.modes for n in args.actors]


def overhead_specs(args):
    """Thread and Ray actor, N=1, ratio 8, no sleep (alternating)."""
    return [_sac_spec(mode, 1, 8, 0.0, args, section='overhead')
            for _ in range(args.repeats) for mode in ('async', 'ray')]


def score_specs(args):
    """Time-to-score runs on the slow Pendulum, one update per env step."""
    specs = []
    for seed in args.seeds:
        for mode, n in args.score_runs:
            params = _sac_params(mode, n, 1) + [
                'TrainerConfig.evaluate=False',
                'TrainerConfig.random_seed=%d' % seed,
                'TrainerConfig.num_env_steps=%d' % args.max_score_steps,
                'TrainerConfig.stop_at_average_return=%r' % args.threshold]
            if 210 * n > 1000:
                # AverageReturn reads 0 before any episode ended, and the
                # stop condition does not check that one did: collect
                # until every actor's first (200-step) episode can end.
                params.append('TrainerConfig.initial_collect_steps=%d' %
                              (210 * n))
            specs.append({'section': 'score', 'mode': mode, 'n': n,
                          'seed': seed, 'kind': 'score', 'gin_file': SAC,
                          'params': params, 'environ': _environ(mode, n),
                          'env': _env(1, False, args.delay_ms[0])})
    return specs


def fast_specs(args):
    """The plain examples, sync and async alternating."""
    specs = []
    for _ in range(args.repeats):
        for example in args.fast_examples:
            for mode in args.fast_modes:
                suffix = '' if mode == 'sync' else '_async'
                specs.append({
                    'section': 'fast', 'mode': mode, 'example': example,
                    'n': 2 if suffix else 1, 'kind': 'rate',
                    'gin_file': 'examples/%s%s.gin' % (example, suffix),
                    'params': list(QUIET), 'env': None,
                    'environ': _environ(mode, 2),
                    'warmup': args.warmup, 'window': args.window})
    return specs


# ------------------------------------------------------------ the child
class _Counters(object):
    """Reads a running trainer's env steps, updates and async stats (from
    another thread: variable reads only)."""

    def __init__(self, trainer):
        self._trainer = trainer
        self._steps = trainer.metrics.env_steps
        self._optimizer = [
            o for o, _ in trainer.algorithm.get_optimizer_and_variable_sets()
            if o is not None][0]
        driver = trainer._driver
        self._stats = getattr(driver, 'stats', None)

    def started(self):
        """Whether the first training call (tracing) is done."""
        return int(self._trainer._iteration.numpy()) >= 1

    def read(self):
        """``(time, env steps, updates, async stats)``; the stats' lags are
        those since the previous read."""
        stats = self._stats() if self._stats else {}
        return (time.time(), int(self._steps.result()),
                int(self._optimizer.iterations.numpy()), stats)


def _rates(a, b):
    dt = b[0] - a[0]
    steps, updates = b[1] - a[1], b[2] - a[2]
    row = {'secs': dt, 'env_steps_per_sec': steps / dt,
           'updates_per_sec': updates / dt,
           'updates_per_env_step': updates / max(steps, 1)}
    stats = b[3]
    for key in ('policy_lag_mean', 'policy_lag_max'):
        if 'async/' + key in stats:
            row[key] = stats['async/' + key]
    for key, value in stats.items():
        if key.startswith('ray/'):
            row[key] = value
    if 'async/dropped_messages' in stats:
        row['dropped_messages'] = (stats['async/dropped_messages'] -
                                   a[3].get('async/dropped_messages', 0.0))
    return row


def _measure_rate(trainer, warmup, window):
    """Trains until the window after the warm-up has passed; the rates."""
    counters = _Counters(trainer)
    result, finished = {}, threading.Event()

    def _monitor():
        try:
            while not counters.started():
                if finished.wait(0.1):
                    return
            if finished.wait(warmup):
                return
            first = counters.read()
            if finished.wait(window):
                return
            result.update(_rates(first, counters.read()))
        finally:
            trainer.request_stop()

    thread = threading.Thread(target=_monitor, daemon=True)
    thread.start()
    try:
        trainer.train()
    finally:
        finished.set()
        thread.join(timeout=30)
    if not result:
        raise RuntimeError('training ended before the measurement window')
    return result


def _measure_score(trainer, start):
    result = trainer.train()
    return {'reached': bool(result['Metrics/AverageReturn'] >=
                            _query('TrainerConfig.stop_at_average_return')),
            'average_return': result['Metrics/AverageReturn'],
            'env_steps': int(result['Metrics/EnvironmentSteps']),
            'train_secs': result['train_secs'],
            'first_iteration_secs': result['first_iteration_secs'],
            'process_secs': time.time() - start}


def _query(name):
    import gin
    return gin.query_parameter(name)


def run_child(spec):
    """Builds the trainer of ``spec`` in this process and measures it."""
    start = time.time()
    from alf_rl.bin.quiet import import_tensorflow
    import_tensorflow(start_runtime=False)
    from alf_rl.bin.train import parse_gin, start_training_runtime
    root = tempfile.mkdtemp(prefix='alf_scale_out_')
    parse_gin([os.path.join(ROOT, spec['gin_file'])], spec['params'], root)
    import functools
    from alf_rl.trainers import TrainerConfig, create_trainer
    from benchmarks.slow_env import make_env
    config = TrainerConfig()
    start_training_runtime(config)  # as alf-train does
    env = (functools.partial(make_env, **spec['env'])
           if spec['env'] else None)
    trainer = create_trainer(config, env=env)
    try:
        if spec['kind'] == 'rate':
            row = _measure_rate(trainer, spec['warmup'], spec['window'])
        else:
            row = _measure_score(trainer, start)
    finally:
        trainer.close()
    print(MARK + json.dumps(row), flush=True)


# ------------------------------------------------------------ the parent
def run_spec(spec, timeout):
    """Runs one measurement in a fresh process; the spec with its result
    (or ``error``)."""
    env = dict(os.environ)
    env.update(spec.get('environ', {}))
    env['PYTHONPATH'] = os.pathsep.join(
        [ROOT] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep)
                  if p])
    try:
        proc = subprocess.run(
            [sys.executable, '-m', 'benchmarks.scale_out', '--child',
             json.dumps(spec)], cwd=ROOT, env=env, capture_output=True,
            text=True, timeout=timeout)
        out, err = proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        out, err = e.stdout or '', 'timed out after %d s' % timeout
        if isinstance(out, bytes):
            out = out.decode('utf-8', 'replace')
    row = dict(spec)
    lines = [l for l in out.splitlines() if l.startswith(MARK)]
    if lines:
        row.update(json.loads(lines[-1][len(MARK):]))
    else:
        tail = [l for l in (err or '').splitlines() if l.strip()]
        row['error'] = tail[-1] if tail else 'no result'
    return row


def _fmt(value, pattern='%.0f'):
    return '-' if value is None else pattern % value


def throughput_table(rows, title):
    """Markdown: one line per (ratio, mode, N)."""
    base = {(r['ratio'], r['mode']): r.get('env_steps_per_sec')
            for r in rows if r['n'] == 1}
    lines = ['### %s' % title, '',
             '| env steps/update | mode | N | env steps/s | updates/s | '
             'updates/env step | x sync N=1 | lag mean | lag max | '
             'dropped msgs |', '|' + '---|' * 10]
    for r in rows:
        ref = base.get((r['ratio'], 'sync'))
        rate = r.get('env_steps_per_sec')
        lines.append('| %d | %s | %d | %s | %s | %s | %s | %s | %s | %s |' % (
            r['ratio'], r['mode'], r['n'], _fmt(rate),
            _fmt(r.get('updates_per_sec')),
            _fmt(r.get('updates_per_env_step'), '%.3f'),
            _fmt(rate / ref if rate and ref else None, '%.2f'),
            _fmt(r.get('policy_lag_mean'), '%.1f'),
            _fmt(r.get('policy_lag_max')), _fmt(r.get('dropped_messages')))
            + (' error: %s' % r['error'] if 'error' in r else ''))
    return '\n'.join(lines)


def overhead_table(rows):
    """Markdown: seconds per 16-step message, thread against Ray."""
    lines = ['### Ray overhead per message (N=1, no sleep, 16 steps/msg)', '',
             '| mode | env steps/s | ms per message | updates/s |',
             '|---|---|---|---|']
    means = {}
    for r in rows:
        rate = r.get('env_steps_per_sec')
        ms = 16000.0 / rate if rate else None
        means.setdefault(r['mode'], []).append(ms)
        lines.append('| %s | %s | %s | %s |' % (
            r['mode'], _fmt(rate), _fmt(ms, '%.1f'),
            _fmt(r.get('updates_per_sec'))) +
            (' error: %s' % r['error'] if 'error' in r else ''))
    thread = [m for m in means.get('async', []) if m]
    ray = [m for m in means.get('ray', []) if m]
    if thread and ray:
        lines.append('\nRay overhead: %.1f ms per message (mean %.1f vs '
                     '%.1f ms)' % (sum(ray) / len(ray) - sum(thread) /
                                   len(thread), sum(ray) / len(ray),
                                   sum(thread) / len(thread)))
    return '\n'.join(lines)


def score_table(rows, threshold):
    """Markdown: env steps and seconds to the threshold."""
    lines = ['### Time to AverageReturn >= %g (slow Pendulum, 1 update per '
             'env step)' % threshold, '',
             '| mode | N | seed | reached | env steps | training loop s | '
             'first iteration s | process s |', '|' + '---|' * 8]
    for r in rows:
        lines.append('| %s | %d | %d | %s | %s | %s | %s | %s |' % (
            r['mode'], r['n'], r['seed'], r.get('reached', '-'),
            _fmt(r.get('env_steps')), _fmt(r.get('train_secs'), '%.1f'),
            _fmt(r.get('first_iteration_secs'), '%.1f'),
            _fmt(r.get('process_secs'), '%.1f')) +
            (' error: %s' % r['error'] if 'error' in r else ''))
    return '\n'.join(lines)


def fast_table(rows):
    """Markdown: env steps/s of the plain examples, run by run."""
    lines = ['### Fast environments (no sleep), alternating runs', '',
             '| example | mode | env steps/s | updates/s | lag mean |',
             '|---|---|---|---|---|']
    totals = {}
    for r in rows:
        rate = r.get('env_steps_per_sec')
        if rate:
            totals.setdefault((r['example'], r['mode']), []).append(rate)
        lines.append('| %s | %s | %s | %s | %s |' % (
            r['example'], r['mode'], _fmt(rate),
            _fmt(r.get('updates_per_sec')),
            _fmt(r.get('policy_lag_mean'), '%.1f')) +
            (' error: %s' % r['error'] if 'error' in r else ''))
    for (example, mode), rates in sorted(totals.items()):
        sync = totals.get((example, 'sync'))
        if mode != 'sync' and sync:
            s, a = sum(sync) / len(sync), sum(rates) / len(rates)
            lines.append('\n%s: %s/sync = %.2f (means %.0f vs %.0f env '
                         'steps/s)' % (example, mode, a / s, a, s))
    return '\n'.join(lines)


def _ints(text):
    return [int(x) for x in text.split(',') if x]


def _parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--child', help=argparse.SUPPRESS)
    parser.add_argument('--quick', action='store_true',
                        help='N=1,8, ratio 8, 6 s windows, one repeat')
    parser.add_argument('--json', action='store_true',
                        help='also print one JSON line per measurement')
    parser.add_argument('--max_minutes', type=float, default=0,
                        help='skip the runs left after this many minutes')
    parser.add_argument('--sections', default='throughput,overhead,score,'
                        'fast')
    parser.add_argument('--modes', default='sync,sync_subprocess,async,'
                        'async_interop,ray')
    parser.add_argument('--actors', default='1,2,4,8')
    parser.add_argument('--ratio', default='8,1',
                        help='env steps per update, comma separated')
    parser.add_argument('--delay_ms', default='5',
                        help='ms of sleep per env step, comma separated')
    parser.add_argument('--warmup', type=float, default=3.0)
    parser.add_argument('--window', type=float, default=15.0)
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--seeds', default='0')
    parser.add_argument('--threshold', type=float, default=-200.0)
    parser.add_argument('--max_score_steps', type=int, default=20000)
    parser.add_argument('--score_runs', default='sync:1,async:2,'
                        'async_interop:8', help='mode:N of the score runs')
    parser.add_argument('--fast_modes', default='sync,async',
                        help="the fast section's modes (sync, async, "
                        'async_interop)')
    parser.add_argument('--fast_examples', default='sac_pendulum,'
                        'ppo_cart_pole')
    parser.add_argument('--ray_param', action='append', default=[],
                        help='extra gin binding of the ray runs')
    args = parser.parse_args(argv)
    if args.quick:
        args.actors, args.ratio, args.window, args.warmup = '1,8', '8', 6, 2
        args.repeats = 1
    args.sections = args.sections.split(',')
    args.modes = args.modes.split(',')
    args.actors, args.ratio = _ints(args.actors), _ints(args.ratio)
    args.seeds = _ints(args.seeds)
    args.fast_modes = args.fast_modes.split(',')
    args.fast_examples = args.fast_examples.split(',')
    args.delay_ms = [float(x) for x in args.delay_ms.split(',') if x]
    args.score_runs = [(r.split(':')[0], int(r.split(':')[1]))
                       for r in args.score_runs.split(',') if r]
    return args


def _ray_ready():
    """None if Ray and the Ray actor pool are installed, else what is
    missing (found without importing them: no TensorFlow here)."""
    import importlib.util
    for name in ('ray', 'alf_rl.distributed.ray_actors'):
        try:
            if importlib.util.find_spec(name) is None:
                return 'no module named %s' % name
        except ImportError as e:
            return str(e)
    return None


def main(argv=None):
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    if args.child:
        return run_child(json.loads(args.child))
    missing = _ray_ready() if 'ray' in args.modes or (
        'overhead' in args.sections) else None
    if missing:
        print('Ray mode skipped (not measured): %s' % missing, flush=True)
        args.modes = [m for m in args.modes if m != 'ray']
        args.sections = [s for s in args.sections if s != 'overhead']
    builders = {'throughput': throughput_specs, 'overhead': overhead_specs,
                'score': score_specs, 'fast': fast_specs}
    tables, start = [], time.time()
    for section in args.sections:
        rows = []
        for spec in builders[section](args):
            timeout = 900 if spec['kind'] == 'score' else int(
                spec['warmup'] + spec['window'] + 240)
            if args.max_minutes and time.time() - start > 60 * args.max_minutes:
                row = dict(spec, error='skipped: --max_minutes reached')
            else:
                row = run_spec(spec, timeout)
            rows.append(row)
            if args.json:
                print(json.dumps(row), flush=True)
        tables.append(_table(section, rows, args))
        print('\n' + tables[-1] + '\n', flush=True)
    if len(tables) > 1:
        print('## All sections\n\n' + '\n\n'.join(tables))


def _table(section, rows, args):
    if section == 'throughput':
        return '\n\n'.join(
            throughput_table([r for r in rows if r['delay_ms'] == delay],
                             'Slow Pendulum (%g ms/step): SAC, %g s window'
                             % (delay, args.window))
            for delay in args.delay_ms)
    if section == 'overhead':
        return overhead_table(rows)
    if section == 'score':
        return score_table(rows, args.threshold)
    return fast_table(rows)


if __name__ == '__main__':
    main()
