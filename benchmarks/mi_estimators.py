"""Mutual-information estimators on correlated Gaussians: estimate vs the
analytic value.

For each rho in ``--rhos`` and dimension d in ``--dims``, x ~ N(0, I_d) and
y = rho x + sqrt(1 - rho^2) e (so I(x; y) = -(d/2) log(1 - rho^2) nats);
an ``MIEstimator`` of each type (DV/MINE, KL/NWJ, JSD) is trained from the
same initialization for ``--steps`` Adam updates on fresh batches of
``--batch_size``, and its estimate (the batch mean of the step's per-sample
output) is taken on ``--eval_size`` fresh samples. Prints a markdown table
of estimate vs analytic and the training seconds of each estimator.

Usage::

    python benchmarks/mi_estimators.py [--steps 3000] [--batch_size 256]
        [--rhos 0.5,0.9,0.99] [--dims 1,10] [--seed 0]
"""

import argparse
import functools
import os
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

ESTIMATORS = ('DV', 'KL', 'JSD')


def _train_one(estimator_type, rho, dim, args):
    """(estimate in nats, training seconds) of one estimator."""
    import numpy as np
    import tensorflow as tf
    import tf_keras

    from alf_rl.algorithms import MIEstimator
    from alf_rl.data_structures import TrainingInfo
    from alf_rl.networks import EncodingNetwork
    from alf_rl.utils.common import set_random_seed

    set_random_seed(args.seed)
    spec = tf.TensorSpec([dim], tf.float32)
    hidden = tuple(int(h) for h in args.hidden.split(','))
    alg = MIEstimator(
        spec, spec,
        network_ctor=functools.partial(EncodingNetwork,
                                       fc_layer_params=hidden,
                                       last_layer_size=1),
        estimator_type=estimator_type,
        optimizer=tf_keras.optimizers.Adam(args.learning_rate))
    generator = tf.random.Generator.from_seed(args.seed + 1)

    def sample(n):
        x = generator.normal([n, dim])
        return x, rho * x + np.sqrt(1 - rho**2) * generator.normal([n, dim])

    @tf.function(autograph=False)
    def update():
        with tf.GradientTape() as tape:
            step = alg.train_step(sample(args.batch_size))
        alg.train_complete(tape, TrainingInfo(info=step.info))

    start = time.time()
    for _ in range(args.steps):
        update()
    seconds = time.time() - start
    estimate = float(tf.reduce_mean(alg.train_step(
        sample(args.eval_size)).output))
    return estimate, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--steps', type=int, default=3000)
    parser.add_argument('--batch_size', type=int, default=256)
    parser.add_argument('--eval_size', type=int, default=16384)
    parser.add_argument('--hidden', default='128,128')
    parser.add_argument('--learning_rate', type=float, default=1e-3)
    parser.add_argument('--rhos', default='0.5,0.9,0.99')
    parser.add_argument('--dims', default='1,10')
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args()
    from alf_rl.bin.quiet import import_tensorflow
    import_tensorflow()
    from alf_rl.ops.mutual_information import gaussian_mutual_information

    print('steps=%d batch_size=%d eval_size=%d hidden=(%s) lr=%g seed=%d\n'
          % (args.steps, args.batch_size, args.eval_size, args.hidden,
             args.learning_rate, args.seed))
    print('| rho | d | analytic (nats) | %s | train s (%s) |' %
          (' | '.join(ESTIMATORS), '/'.join(ESTIMATORS)))
    print('|---|---|---|%s---|' % ('---|' * len(ESTIMATORS)))
    for dim in [int(d) for d in args.dims.split(',')]:
        for rho in [float(r) for r in args.rhos.split(',')]:
            analytic = gaussian_mutual_information(rho, dim)
            cells, times = [], []
            for estimator_type in ESTIMATORS:
                estimate, seconds = _train_one(estimator_type, rho, dim, args)
                cells.append('%.3f (%+.0f%%)' %
                             (estimate, 100 * (estimate / analytic - 1)))
                times.append('%.0f' % seconds)
            print('| %g | %d | %.3f | %s | %s |' %
                  (rho, dim, analytic, ' | '.join(cells), '/'.join(times)),
                  flush=True)


if __name__ == '__main__':
    main()
