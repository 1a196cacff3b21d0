"""Runs a few updates of SAC and PPO on one device and under a strategy,
and prints a JSON line of the results (for ``test_strategy.py``).

A script run in a subprocess: logical CPU devices and collective ops must be
configured before TensorFlow initializes, which a pytest process has done
long before. Usage::

    python replica_check.py mirrored            # 2 logical CPU replicas
    python replica_check.py worker I PORT0 PORT1  # MultiWorkerMirrored

Both algorithms are built twice with the same weights: a reference on one
device (no strategy) and a copy under the strategy; both train on the same
batch, in which LAST (invalid) steps fall unevenly: with ``mirrored``
replica 0's half holds more of them, so the global count of valid steps
matters. Each ``worker`` passes the whole batch as its own mini-batch, so
the global batch holds it twice, whose mean update is the reference's.
SAC's reparameterized noise is drawn per replica batch, so a batch split in
two draws different noise than one device does; here every sample's noise
is a fixed function of its own action mean (``_per_example_sample``), which
keeps the comparison on the reduction and the all-reduce.
"""

import functools
import hashlib
import json
import os
import sys
import time

import numpy as np


def _create_strategy(argv):
    from alf_rl.distributed.strategy import create_strategy
    if argv[0] == 'mirrored':
        return create_strategy('mirrored', 2)
    index, ports = int(argv[1]), argv[2:4]
    os.environ['TF_CONFIG'] = json.dumps({
        'cluster': {'worker': ['localhost:%s' % p for p in ports]},
        'task': {'type': 'worker', 'index': index}})
    return create_strategy('multi_worker_mirrored')


def _per_example_sample(nest, seed=None):
    """A reparameterized sample whose noise depends only on its own
    example: ``mean + std * sin(3 mean + 1)``."""
    import tensorflow as tf
    del seed

    def _one(d):
        mean = d.mean()
        return mean + d.stddev() * tf.sin(3.0 * tf.stop_gradient(mean) + 1.0)

    return tf.nest.map_structure(_one, nest)


def _sac():
    import tf_keras
    from alf_rl.algorithms.sac_algorithm import SacAlgorithm
    from alf_rl.networks import (ActorDistributionNetwork, CriticNetwork,
                                 NormalProjectionNetwork)
    from alf_rl.specs import BoundedTensorSpec
    import tensorflow as tf
    return SacAlgorithm(
        BoundedTensorSpec((1, ), tf.float32, -1, 1),
        BoundedTensorSpec((1, ), tf.float32, 0, 1),
        actor_network_ctor=functools.partial(
            ActorDistributionNetwork, fc_layer_params=(16, ),
            continuous_projection_net_ctor=functools.partial(
                NormalProjectionNetwork, scale_distribution=False,
                state_dependent_std=True)),
        critic_network_ctor=functools.partial(CriticNetwork,
                                              joint_fc_layer_params=(16, )),
        actor_optimizer=tf_keras.optimizers.Adam(1e-2),
        critic_optimizer=tf_keras.optimizers.Adam(1e-2),
        alpha_optimizer=tf_keras.optimizers.Adam(1e-2),
        target_entropy=-1.0)


def _ppo():
    import tf_keras
    from alf_rl.algorithms import PPOAlgorithm, PPOLoss
    from alf_rl.networks import ActorDistributionNetwork, ValueNetwork
    from alf_rl.specs import BoundedTensorSpec
    import tensorflow as tf
    return PPOAlgorithm(
        BoundedTensorSpec((1, ), tf.float32, -1, 1),
        BoundedTensorSpec((), tf.int64, 0, 1),
        actor_network_ctor=functools.partial(ActorDistributionNetwork,
                                             fc_layer_params=(16, )),
        value_network_ctor=functools.partial(ValueNetwork,
                                             fc_layer_params=(16, )),
        loss=PPOLoss(normalize_advantages=False, entropy_regularization=0.01),
        optimizer=tf_keras.optimizers.legacy.Adam(1e-2),
        gradient_clipping=0.5, clip_by_global_norm=True)


def _experience(alg, action_type):
    """[8, 4] experience with uneven LAST steps (rows 0-3: replica 0)."""
    import tensorflow as tf
    from alf_rl.data_structures import StepType, make_experience
    from alf_rl.environments.suite_unittest import PolicyUnittestEnv
    from alf_rl.environments.tf_environment import TFPyEnvironment
    from alf_rl.ops import distributions as dist_ops
    env = TFPyEnvironment(PolicyUnittestEnv(8, 10, action_type=action_type,
                                            seed=3))
    time_step, rows = env.reset(), []
    state = alg.get_initial_rollout_state(8)
    for _ in range(4):
        step = alg.rollout(alg.transform_timestep(time_step), state)
        state = step.state
        step = step._replace(
            info=dist_ops.distributions_to_params(step.info))
        rows.append(make_experience(time_step, step, ()))
        time_step = env.step(step.action)
    exp = tf.nest.map_structure(lambda *x: tf.stack(x), *rows)
    last = np.zeros([4, 8], bool)  # time-major [T, B]
    last[0, 0] = last[1, 1] = last[0, 2] = last[2, 3] = last[1, 6] = True
    step_type = tf.where(last, tf.cast(StepType.LAST, exp.step_type.dtype),
                         exp.step_type)
    return exp._replace(step_type=step_type)


def _build(make, strategy):
    """The algorithm and its optimizers' slots, under ``strategy``."""
    from alf_rl.distributed.strategy import learner_scope
    from alf_rl.utils.common import set_random_seed
    with learner_scope(strategy):
        set_random_seed(0)
        alg = make()
        alg.prepare_off_policy_specs(8)
        alg.build_optimizers()
    return alg


def _train_fn(name, alg, runner):
    import tensorflow as tf
    if name == 'sac':
        return tf.function(lambda exp: alg.train(exp, update_runner=runner),
                           autograph=False)
    return tf.function(lambda exp: alg.train(
        exp, num_updates=2, mini_batch_size=4, mini_batch_length=2, seed=7,
        update_runner=runner), autograph=False)


def _run(name, strategy, num_calls=3):
    """Variables of the reference and the distributed copy after
    ``num_calls`` trainings on the same batch, and the time per call."""
    from alf_rl.distributed.strategy import ReplicaRunner
    make, action_type = {'sac': (_sac, 'continuous'),
                         'ppo': (_ppo, 'discrete')}[name]
    ref = _build(make, None)
    dist = _build(make, strategy)
    for r, d in zip(ref.variables, dist.variables):
        d.assign(r)
    exp = _experience(ref, action_type)
    initial = [np.asarray(v.numpy()) for v in ref.trainable_variables]
    out = {}
    for key, alg, runner in (('ref', ref, None),
                             ('dist', dist, ReplicaRunner(strategy))):
        fn = _train_fn(name, alg, runner)
        losses = [float(fn(exp).loss)]
        start = time.time()
        for _ in range(num_calls - 1):
            losses.append(float(fn(exp).loss))
        out[key] = dict(
            secs=(time.time() - start) / max(num_calls - 1, 1),
            losses=losses,
            values=[np.asarray(v.numpy()) for v in alg.variables],
            trained=[np.asarray(v.numpy()) for v in alg.trainable_variables])
    diff = max(float(np.max(np.abs(a.astype(np.float64) - b)))
               for a, b in zip(out['ref']['values'], out['dist']['values']))
    digest = hashlib.sha256(b''.join(
        v.tobytes() for v in out['dist']['values'])).hexdigest()
    return dict(max_abs_diff=diff, sha256=digest,
                loss_diff=max(abs(a - b) for a, b in zip(
                    out['ref']['losses'], out['dist']['losses'])),
                changed=float(max(np.max(np.abs(a - b)) for a, b in zip(
                    out['ref']['trained'], initial))),
                ref_secs=out['ref']['secs'], dist_secs=out['dist']['secs'],
                num_replicas=strategy.num_replicas_in_sync)


def main(argv):
    strategy = _create_strategy(argv)
    from alf_rl.ops import distributions as dist_ops
    dist_ops.sample_action_distribution = _per_example_sample
    result = {name: _run(name, strategy) for name in ('sac', 'ppo')}
    print('RESULT ' + json.dumps(result), flush=True)


if __name__ == '__main__':
    main(sys.argv[1:])
