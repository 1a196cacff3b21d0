"""SAC on Pendulum-v1 from Python, without gin.

The settings of ``examples/sac_pendulum.gin`` (see its comments for their
origin and measured results), built as Python objects: a tanh-squashed
Gaussian actor with (128, 128) hidden units, twin (128, 128) critics,
automatic temperature with target entropy -1, one update of 256
transitions per environment step after 1,000 initial steps. Under the same
seed it trains exactly as ``alf-train --gin_file examples/sac_pendulum.gin``
does.

Run (a short budget by default; rerunning on the same ``--root_dir``
resumes)::

    python examples/python/sac_pendulum.py --num_iterations 6000
    tensorboard --logdir /tmp/alf_rl_examples/sac_pendulum
"""

import argparse
import functools
import os
import tempfile
from typing import Any, Dict, Optional, Sequence

import tf_keras

from alf_rl.algorithms import SacAlgorithm
from alf_rl.environments.utils import create_environment
from alf_rl.networks import (ActorDistributionNetwork, CriticNetwork,
                             NormalProjectionNetwork)
from alf_rl.ops.losses import element_wise_squared_loss
from alf_rl.trainers import OffPolicyTrainer, TrainerConfig


def make_env(seed: int, num_environments: int = 1) -> Any:
    """``num_environments`` Pendulum-v1 environments seeded ``seed + i``."""
    return create_environment('Pendulum-v1',
                              num_parallel_environments=num_environments,
                              seed=seed)


def make_algorithm(observation_spec: Any, action_spec: Any) -> SacAlgorithm:
    """SAC with (128, 128) networks and Adam(1e-3) for actor, critics and
    temperature."""
    return SacAlgorithm(
        observation_spec,
        action_spec,
        actor_network_ctor=functools.partial(
            ActorDistributionNetwork,
            fc_layer_params=(128, 128),
            continuous_projection_net_ctor=functools.partial(
                NormalProjectionNetwork,
                scale_distribution=True,
                state_dependent_std=True)),
        critic_network_ctor=functools.partial(CriticNetwork,
                                              joint_fc_layer_params=(128,
                                                                     128)),
        actor_optimizer=tf_keras.optimizers.Adam(learning_rate=1e-3),
        critic_optimizer=tf_keras.optimizers.Adam(learning_rate=1e-3),
        alpha_optimizer=tf_keras.optimizers.Adam(learning_rate=1e-3),
        gamma=0.99,
        tau=0.005,
        target_update_period=1,
        initial_log_alpha=0.0,
        target_entropy=-1.0,
        td_error_loss_fn=element_wise_squared_loss)


def build_trainer(root_dir: str, num_iterations: int, seed: Optional[int],
                  eval_interval: int,
                  num_eval_episodes: int = 5) -> OffPolicyTrainer:
    """The trainer of this example (call ``train()``, then ``close()``).

    Args:
        root_dir: the run's directory (rerunning on it resumes).
        num_iterations: training iterations (one environment step and one
            update each, after 1,000 initial steps).
        seed: the run's seed (``None``: a fresh one).
        eval_interval: iterations between greedy evaluations.
        num_eval_episodes: episodes (of 200 steps) per evaluation.
    """
    config = TrainerConfig(root_dir=root_dir,
                           algorithm_ctor=make_algorithm,
                           num_iterations=num_iterations,
                           num_env_steps=0,
                           random_seed=seed,
                           initial_collect_steps=1000,
                           unroll_length=1,
                           num_updates_per_train_step=1,
                           mini_batch_size=256,
                           mini_batch_length=2,
                           replay_buffer_capacity=100000,
                           evaluate=True,
                           eval_interval=eval_interval,
                           num_eval_episodes=num_eval_episodes,
                           summary_interval=100,
                           checkpoint_interval=5000)
    return OffPolicyTrainer(
        config,
        env=make_env,
        eval_env=functools.partial(make_env,
                                   num_environments=num_eval_episodes))


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Parses ``argv`` (``sys.argv[1:]`` when None), trains, prints and
    returns the result dict of ``Trainer.train``."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--root_dir',
                        default=os.path.join(tempfile.gettempdir(),
                                             'alf_rl_examples',
                                             'sac_pendulum'),
                        help='directory of the run (rerunning resumes)')
    parser.add_argument('--num_iterations', type=int, default=2000,
                        help='training iterations of one env step and one '
                        'update (about 5,000 reach an average return of '
                        '-200)')
    parser.add_argument('--seed', type=int, default=0, help='random seed')
    parser.add_argument('--eval_interval', type=int, default=1000,
                        help='iterations between greedy evaluations')
    args = parser.parse_args(argv)
    trainer = build_trainer(args.root_dir, args.num_iterations, args.seed,
                            args.eval_interval)
    try:
        result = trainer.train()
    finally:
        trainer.close()
    print('done: ' + ', '.join('%s=%.4g' % (k, v)
                               for k, v in sorted(result.items())))
    return result


if __name__ == '__main__':
    main()
