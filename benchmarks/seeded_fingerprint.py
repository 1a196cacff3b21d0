"""Seeded fingerprints of short training runs, to show a refactor changed
nothing that the library computes.

For each example it trains a few iterations with a fixed seed (evaluation
off, one iteration per call) and prints one JSON line: the final losses and
metrics of the result dict and the sum / sum of squares of every trainable
variable of the algorithm. Run it on two checkouts and diff the output:

    python benchmarks/seeded_fingerprint.py > after.jsonl
    (cd ../old && python benchmarks/seeded_fingerprint.py) > before.jsonl
    python benchmarks/seeded_fingerprint.py --compare before.jsonl after.jsonl
"""

import argparse
import json
import os
import sys
import tempfile

DEFAULT_RUNS = [
    # (gin file, iterations)
    ('ac_cart_pole.gin', 20),
    ('ppo_cart_pole.gin', 3),
    ('ppo_tf_cart_pole.gin', 3),
    ('ppo_pendulum.gin', 2),
    ('ppo_rnn_cart_pole_po.gin', 2),
    ('off_policy_ac_cart_pole.gin', 20),
    ('sac_pendulum.gin', 300),
    ('sac_cart_pole.gin', 300),
    ('sac_tf_pendulum.gin', 300),
    ('ddpg_pendulum.gin', 300),
    ('td3_pendulum.gin', 300),
    ('sarsa_pendulum.gin', 300),
    ('dqn_cart_pole.gin', 1200),
    ('dqn_tf_cart_pole.gin', 300),
]


def _fingerprint(gin_file, iterations, extra_params):
    import numpy as np

    from alf_rl.bin.train import parse_gin
    from alf_rl.bin.quiet import import_tensorflow
    import_tensorflow()
    import gin
    gin.clear_config()
    root_dir = tempfile.mkdtemp(prefix='fingerprint_')
    parse_gin([gin_file], [
        'TrainerConfig.num_iterations=%d' % iterations,
        'TrainerConfig.num_env_steps=0', 'TrainerConfig.evaluate=False',
        'TrainerConfig.random_seed=0', 'TrainerConfig.iterations_per_call=1',
        'TrainerConfig.summary_interval=1000000',
        'TrainerConfig.checkpoint_interval=1000000',
    ] + list(extra_params), root_dir)
    from alf_rl.trainers import TrainerConfig, create_trainer
    trainer = create_trainer(TrainerConfig())
    try:
        result = trainer.train()
        variables = trainer.algorithm.trainable_variables
        values = [v.numpy().astype(np.float64) for v in variables]
    finally:
        trainer.close()
    out = {'gin_file': os.path.basename(gin_file), 'iterations': iterations}
    for key, value in sorted(result.items()):
        if key.endswith('_secs'):
            continue  # wall times differ from run to run
        try:
            out[key] = float(value)
        except (TypeError, ValueError):
            pass
    out['num_variables'] = len(values)
    out['var_sum'] = float(sum(v.sum() for v in values))
    out['var_sq_sum'] = float(sum((v * v).sum() for v in values))
    return out


def _compare(before_file, after_file, rtol):
    def _load(path):
        with open(path) as f:
            return {d['gin_file']: d for d in
                    (json.loads(line) for line in f if line.startswith('{'))}

    before, after = _load(before_file), _load(after_file)
    worst = 0
    for name in sorted(before):
        if name not in after:
            print('%s: missing after' % name)
            worst = max(worst, 2)
            continue
        diffs = []
        for key, b in before[name].items():
            a = after[name].get(key)
            if isinstance(b, float) and a is not None:
                rel = abs(a - b) / max(abs(b), 1e-12)
                if rel > 0:
                    diffs.append('%s %.9g -> %.9g (rel %.1e)' % (key, b, a,
                                                                 rel))
                    worst = max(worst, 1 if rel <= rtol else 2)
        print('%s: %s' % (name, 'identical' if not diffs else
                          '; '.join(diffs)))
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--only', default='',
                        help='comma-separated gin files (default: all)')
    parser.add_argument('--gin_param', action='append', default=[])
    parser.add_argument('--compare', nargs=2, metavar=('BEFORE', 'AFTER'))
    parser.add_argument('--rtol', type=float, default=1e-5,
                        help='with --compare: largest relative difference '
                        'still reported as rounding (exit 1, not 2)')
    args = parser.parse_args()
    if args.compare:
        sys.exit(_compare(args.compare[0], args.compare[1], args.rtol))
    examples = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                            'examples')
    runs = DEFAULT_RUNS
    if args.only:
        wanted = set(args.only.split(','))
        runs = [r for r in runs if r[0] in wanted]
    for gin_file, iterations in runs:
        out = _fingerprint(os.path.join(examples, gin_file), iterations,
                           args.gin_param)
        print(json.dumps(out), flush=True)


if __name__ == '__main__':
    main()
