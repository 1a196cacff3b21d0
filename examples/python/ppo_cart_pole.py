"""PPO on CartPole-v1 from Python, without gin.

The settings of ``examples/ppo_cart_pole.gin`` (see its comments for their
origin and measured results), built as Python objects: the environment
factory, the algorithm constructor and the ``TrainerConfig`` go to an
``OffPolicyTrainer``, which trains PPO through the one-time replay path
(each iteration collects 32 steps of 8 environments, then 20 epochs of
mini-batches of 256 transitions). Under the same seed it trains exactly as
``alf-train --gin_file examples/ppo_cart_pole.gin`` does.

Run (a short budget by default; rerunning on the same ``--root_dir``
resumes)::

    python examples/python/ppo_cart_pole.py --num_iterations 100
    tensorboard --logdir /tmp/alf_rl_examples/ppo_cart_pole
"""

import argparse
import functools
import os
import tempfile
from typing import Any, Dict, Optional, Sequence

import tf_keras

from alf_rl.algorithms import PPOAlgorithm, PPOLoss
from alf_rl.environments.utils import create_environment
from alf_rl.networks import ActorDistributionNetwork, ValueNetwork
from alf_rl.ops.losses import element_wise_squared_loss
from alf_rl.trainers import OffPolicyTrainer, TrainerConfig

NUM_ENVS = 8


def make_env(seed: int, num_environments: int = NUM_ENVS) -> Any:
    """``num_environments`` CartPole-v1 environments seeded ``seed + i``."""
    return create_environment('CartPole-v1',
                              num_parallel_environments=num_environments,
                              seed=seed)


def make_algorithm(observation_spec: Any, action_spec: Any) -> PPOAlgorithm:
    """PPO with separate (64, 64) tanh actor and critic networks."""
    return PPOAlgorithm(
        observation_spec,
        action_spec,
        actor_network_ctor=functools.partial(ActorDistributionNetwork,
                                             fc_layer_params=(64, 64),
                                             activation='tanh'),
        value_network_ctor=functools.partial(ValueNetwork,
                                             fc_layer_params=(64, 64),
                                             activation='tanh'),
        loss=PPOLoss(gamma=0.98,
                     td_lambda=0.8,
                     importance_ratio_clipping=0.2,
                     normalize_advantages=True,
                     entropy_regularization=None,
                     td_loss_weight=0.5,
                     td_error_loss_fn=element_wise_squared_loss),
        # tf_keras' legacy Adam: one fused kernel per variable.
        optimizer=tf_keras.optimizers.legacy.Adam(learning_rate=1e-3,
                                                  epsilon=1e-5),
        gradient_clipping=0.5,
        clip_by_global_norm=True)


def build_trainer(root_dir: str, num_iterations: int, seed: Optional[int],
                  eval_interval: int,
                  num_eval_episodes: int = 10) -> OffPolicyTrainer:
    """The trainer of this example (call ``train()``, then ``close()``).

    Args:
        root_dir: the run's directory (rerunning on it resumes).
        num_iterations: training iterations (256 environment steps each).
        seed: the run's seed (``None``: a fresh one).
        eval_interval: iterations between greedy evaluations.
        num_eval_episodes: episodes per evaluation.
    """
    config = TrainerConfig(root_dir=root_dir,
                           algorithm_ctor=make_algorithm,
                           num_iterations=num_iterations,
                           num_env_steps=0,
                           random_seed=seed,
                           unroll_length=32,
                           clear_replay_buffer=True,
                           mini_batch_length=1,
                           mini_batch_size=256,
                           num_updates_per_train_step=20,
                           evaluate=True,
                           eval_interval=eval_interval,
                           num_eval_episodes=num_eval_episodes,
                           summary_interval=20,
                           checkpoint_interval=500)
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
                                             'ppo_cart_pole'),
                        help='directory of the run (rerunning resumes)')
    parser.add_argument('--num_iterations', type=int, default=40,
                        help='training iterations of 256 env steps '
                        '(about 100 reach an average return of 475)')
    parser.add_argument('--seed', type=int, default=0, help='random seed')
    parser.add_argument('--eval_interval', type=int, default=20,
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
