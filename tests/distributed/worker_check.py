"""Trains with a trainer under a strategy and prints a JSON line of what
this process collected and learned (for ``test_workers.py``).

A script run in subprocesses (a strategy is configured before TensorFlow
initializes, and a ``MultiWorkerMirroredStrategy`` needs one process per
worker). Usage::

    python worker_check.py mirrored ROOT           # one process, one CPU
    python worker_check.py worker I ROOT PORT0 PORT1  # worker I of two

Each trains an on-policy A2C (``OnPolicyTrainer``) and an off-policy SAC
(``OffPolicyTrainer``, replay buffer) for a few iterations on
``suite_unittest``'s copy task, built from the environment seed the
trainer hands its factory; the environment records every observation it
returns and every action it receives.
"""

import hashlib
import json
import os
import sys

import numpy as np

#: Iterations, environments, steps per environment per iteration.
ITERATIONS, ENVS, UNROLL = 4, 4, 5


def _create_strategy(argv):
    from alf_rl.distributed.strategy import create_strategy

    if argv[0] == 'mirrored':
        return 'mirrored', create_strategy('mirrored')
    index, ports = int(argv[1]), argv[3:5]
    os.environ['TF_CONFIG'] = json.dumps(
        {
            'cluster': {'worker': ['localhost:%s' % p for p in ports]},
            'task': {'type': 'worker', 'index': index},
        }
    )
    return 'multi_worker_mirrored', create_strategy('multi_worker_mirrored')


def _digest(arrays):
    return hashlib.sha256(
        b''.join(np.ascontiguousarray(a).tobytes() for a in arrays)
    ).hexdigest()


def _recording_env(action_type, seeds, log):
    """A factory of copy-task environments that records the seed it was
    given, and every observation and action, into ``seeds``/``log``."""
    from alf_rl.environments.suite_unittest import PolicyUnittestEnv
    from alf_rl.environments.tf_environment import TFPyEnvironment

    class _Recording(PolicyUnittestEnv):
        def _observation(self, step):
            obs = super()._observation(step)
            log['observations'].append(obs)
            return obs

        def _reward(self, step, action):
            log['actions'].append(np.asarray(action))
            return super()._reward(step, action)

    def _make(seed):
        seeds.append(seed)
        return TFPyEnvironment(
            _Recording(ENVS, 6, action_type=action_type, seed=seed)
        )

    return _make


def _sac(observation_spec, action_spec):
    import functools

    import tf_keras
    from alf_rl.algorithms.sac_algorithm import SacAlgorithm
    from alf_rl.networks import ActorDistributionNetwork, CriticNetwork

    return SacAlgorithm(
        observation_spec,
        action_spec,
        actor_network_ctor=functools.partial(
            ActorDistributionNetwork, fc_layer_params=(8,)
        ),
        critic_network_ctor=functools.partial(
            CriticNetwork, joint_fc_layer_params=(8,)
        ),
        actor_optimizer=tf_keras.optimizers.Adam(1e-2),
        critic_optimizer=tf_keras.optimizers.Adam(1e-2),
        alpha_optimizer=tf_keras.optimizers.Adam(1e-2),
    )


def _a2c(observation_spec, action_spec):
    import functools

    import tf_keras
    from alf_rl.algorithms import ActorCriticAlgorithm
    from alf_rl.networks import ActorDistributionNetwork, ValueNetwork

    return ActorCriticAlgorithm(
        observation_spec,
        action_spec,
        actor_network_ctor=functools.partial(
            ActorDistributionNetwork, fc_layer_params=(8,)
        ),
        value_network_ctor=functools.partial(
            ValueNetwork, fc_layer_params=(8,)
        ),
        optimizer=tf_keras.optimizers.Adam(1e-2),
    )


def _train(kind, name, root):
    """Trains ``kind`` ('on_policy' or 'off_policy') and returns what
    this process collected and learned."""
    import tensorflow as tf
    from alf_rl.trainers import OffPolicyTrainer, OnPolicyTrainer
    from alf_rl.trainers import TrainerConfig

    seeds, log = [], {'observations': [], 'actions': []}
    settings = dict(
        root_dir=os.path.join(root, kind),
        random_seed=1,
        num_iterations=ITERATIONS,
        unroll_length=UNROLL,
        strategy=name,
        iterations_per_call=2,
        checkpoint_interval=1000,
        progress_interval_secs=1e9,
    )
    if kind == 'on_policy':
        trainer_class, make, action_type = OnPolicyTrainer, _a2c, 'discrete'
    else:
        trainer_class, make, action_type = (
            OffPolicyTrainer,
            _sac,
            'continuous',
        )
        settings.update(
            mini_batch_size=4,
            mini_batch_length=2,
            replay_buffer_capacity=400,
            initial_collect_steps=0,
        )
    trainer = trainer_class(
        TrainerConfig(algorithm_ctor=make, **settings),
        env=_recording_env(action_type, seeds, log),
    )
    initial = _digest([v.numpy() for v in trainer.algorithm.variables])
    try:
        result = trainer.train()
    finally:
        trainer.close()
    alg = trainer.algorithm
    optimizers = [o for o, _ in alg.get_optimizer_and_variable_sets()]
    slots = [v.numpy() for o in optimizers for v in o.variables]
    return dict(
        env_seeds=seeds,
        initial=initial,
        observations=_digest(log['observations']),
        actions=_digest(log['actions']),
        num_actions=len(log['actions']),
        weights=_digest([v.numpy() for v in alg.trainable_variables]),
        slots=_digest(slots),
        num_slots=len(slots),
        generator=tf.random.get_global_generator().state.numpy().tolist(),
        env_steps=int(result['Metrics/EnvironmentSteps']),
        iterations=int(result['iterations']),
    )


def main(argv):
    name, strategy = _create_strategy(argv)
    root = argv[2] if argv[0] == 'worker' else argv[1]
    out = {'num_replicas': strategy.num_replicas_in_sync}
    for kind in ('on_policy', 'off_policy'):
        out[kind] = _train(kind, name, root)
    print('RESULT ' + json.dumps(out), flush=True)


if __name__ == '__main__':
    main(sys.argv[1:])
