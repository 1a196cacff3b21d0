"""Env steps/s of TF-native environments (suite_tf) beside gymnasium.

Prints, for CartPole-v1:
1. a random-action rollout of ``suite_tf`` environments in one
   ``tf.while_loop`` for batch sizes 1 .. 4096, plain graph and XLA;
2. the same with a 64-64 MLP policy (``ActorDistributionNetwork``) sampling
   the actions in a bare while loop, and the driver's ``rollout`` loop with
   a 64-64 actor-critic (actor and value network, metrics; no training);
3. gymnasium beside them: raw ``SyncVectorEnv`` and ``TFPyEnvironment`` in
   a ``tf.while_loop`` (8 envs);
4. full PPO training iterations (rollout + epochs of updates) of
   ``examples/ppo_tf_cart_pole.gin`` and ``examples/ppo_cart_pole.gin``;
5. with ``--time_to_score``: both examples trained to AverageReturn >= 475
   side by side (each in a fresh process via ``time_to_score.py``).

Usage: python benchmarks/tf_env_throughput.py [--steps 2000]
    [--batch_sizes 1,16,256,1024,4096] [--time_to_score]
    [--only_time_to_score] [--seeds 0]
"""

import argparse
import os
import subprocess
import sys
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from rollout_throughput import _best_of, raw_gym  # noqa: E402


def random_rollout_rate(tf, suite_tf, batch_size, steps, jit):
    """Env steps/s of random actions in a while loop (best of 3)."""
    env = suite_tf.load('CartPole-v1', batch_size, seed=0)
    return _loop_rate(tf, env, _random_actions(tf, suite_tf, batch_size),
                      steps, jit)


def _random_actions(tf, suite_tf, batch_size):
    """``action_fn(i, time_step)`` drawing [B] random CartPole actions."""

    def action_fn(i, time_step):
        u = suite_tf.stateless_uniform([batch_size], [7, i], 0.0, 2.0)
        return tf.cast(u, tf.int64)

    return action_fn


def _loop_rate(tf, env, action_fn, steps, jit):
    """Env steps/s (best of 3) of ``env.step(action_fn(i, time_step))`` in
    one compiled ``tf.while_loop`` of ``steps`` steps."""

    @tf.function(autograph=False, jit_compile=jit)
    def loop(time_step, num):

        def body(i, ts):
            return i + 1, env.step(action_fn(i, ts))

        return tf.while_loop(lambda i, _: i < num, body,
                             (tf.constant(0), time_step))[1]

    time_step = env.reset()
    loop(time_step, tf.constant(10))

    def measure():
        start = time.perf_counter()
        loop(time_step, tf.constant(steps)).reward.numpy()
        return steps * env.batch_size / (time.perf_counter() - start)

    return _best_of(measure)


def mlp_policy_rate(tf, suite_tf, batch_size, steps, jit):
    """Env steps/s of a 64-64 MLP policy sampling actions in a while loop.

    The policy is an ``ActorDistributionNetwork`` (categorical head)
    sampled with ``ops.distributions.sample_action_distribution``; no value
    network, metrics or experience (compare ``policy_rollout_rate``).
    """
    from alf_rl.networks import ActorDistributionNetwork
    from alf_rl.ops import distributions as dist_ops

    env = suite_tf.load('CartPole-v1', batch_size, seed=0)
    actor = ActorDistributionNetwork(env.observation_spec(),
                                     env.action_spec(),
                                     fc_layer_params=(64, 64))

    def action_fn(i, time_step):
        dist, _ = actor(time_step.observation)
        return dist_ops.sample_action_distribution(dist,
                                                   seed=tf.stack([7, i]))

    return _loop_rate(tf, env, action_fn, steps, jit)


def policy_rollout_rate(tf, suite_tf, batch_size, steps, jit):
    """Env steps/s of ``Driver.rollout`` with a 64-64 MLP sampling actions."""
    import tf_keras
    from alf_rl.algorithms import ActorCriticAlgorithm
    from alf_rl.drivers import OnPolicyDriver
    from alf_rl.networks import ActorDistributionNetwork, ValueNetwork

    env = suite_tf.load('CartPole-v1', batch_size, seed=0)
    alg = ActorCriticAlgorithm(
        env.observation_spec(), env.action_spec(),
        actor_network_ctor=lambda o, a: ActorDistributionNetwork(
            o, a, fc_layer_params=(64, 64)),
        value_network_ctor=lambda o: ValueNetwork(o, fc_layer_params=(64, 64)),
        optimizer=tf_keras.optimizers.Adam(1e-3))
    driver = OnPolicyDriver(env, alg, train_interval=8, jit_compile=jit)
    driver.rollout(10)

    def measure():
        start = time.perf_counter()
        driver.rollout(steps)
        driver._time_step.reward.numpy()
        return steps * batch_size / (time.perf_counter() - start)

    return _best_of(measure)


def training_rate(gin_file, iterations, extra_params=()):
    """(env steps/s of training iterations, first-iteration secs)."""
    import gin
    import tempfile
    from alf_rl.bin.train import parse_gin
    from alf_rl.trainers import TrainerConfig

    gin.clear_config()
    parse_gin([gin_file], list(extra_params), tempfile.mkdtemp())
    config = TrainerConfig()
    trainer = config.trainer(config)
    start = time.perf_counter()
    trainer._train_iterations(1)
    first = time.perf_counter() - start
    trainer._train_iterations(1)
    steps_before = trainer._env_steps()
    start = time.perf_counter()
    loss, done = trainer._train_iterations(iterations)
    assert int(done) == iterations
    float(loss.loss)
    elapsed = time.perf_counter() - start
    rate = (trainer._env_steps() - steps_before) / elapsed
    trainer.close()
    return rate, first


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--steps', type=int, default=2000,
                        help='batched steps per rollout measurement')
    parser.add_argument('--batch_sizes', default='1,16,256,1024,4096')
    parser.add_argument('--iterations', type=int, default=20,
                        help='training iterations per measurement')
    parser.add_argument('--time_to_score', action='store_true')
    parser.add_argument('--only_time_to_score', action='store_true',
                        help='skip the throughput measurements (1.-4.)')
    parser.add_argument('--seeds', default='0')
    args = parser.parse_args()
    if args.only_time_to_score:
        _time_to_score(args.seeds)
        return
    from alf_rl.bin.quiet import import_tensorflow
    tf = import_tensorflow()
    from alf_rl.environments import suite_tf
    from alf_rl.utils.common import set_random_seed
    set_random_seed(0)
    batch_sizes = [int(b) for b in args.batch_sizes.split(',')]

    print('CartPole-v1, env steps/s (best of 3)', flush=True)
    print('%-44s %12s %12s' % ('', 'graph', 'XLA'), flush=True)
    for b in batch_sizes:
        steps = max(min(args.steps, 200000 // b), 200)
        rates = [random_rollout_rate(tf, suite_tf, b, steps, jit)
                 for jit in (False, True)]
        print('%-44s %12.0f %12.0f' %
              ('suite_tf random actions, batch %d' % b, *rates), flush=True)
    for b in (8, max(batch_sizes)):
        steps = max(min(args.steps, 100000 // b), 100)
        rates = [mlp_policy_rate(tf, suite_tf, b, steps, jit)
                 for jit in (False, True)]
        print('%-44s %12.0f %12.0f' %
              ('suite_tf + 64-64 MLP policy, batch %d' % b, *rates),
              flush=True)
        rates = [policy_rollout_rate(tf, suite_tf, b, steps, jit)
                 for jit in (False, True)]
        print('%-44s %12.0f %12.0f' %
              ('driver rollout, actor-critic, batch %d' % b, *rates),
              flush=True)
    print('%-44s %12.0f' % ('gymnasium SyncVectorEnv random, 8 envs',
                            _best_of(lambda: raw_gym(8, 20000))), flush=True)

    from alf_rl.environments.utils import create_environment
    env = create_environment('CartPole-v1', 8, seed=0)

    gym_rate = _loop_rate(tf, env, _random_actions(tf, suite_tf, 8), 5000,
                          jit=False)
    print('%-44s %12.0f' % ('TFPyEnvironment (gymnasium) random, 8 envs',
                            gym_rate), flush=True)
    env.close()

    print('\nPPO training iterations (rollout + updates), env steps/s:',
          flush=True)
    for name in ('ppo_tf_cart_pole', 'ppo_cart_pole'):
        rate, first = training_rate(
            os.path.join(ROOT, 'examples', name + '.gin'), args.iterations)
        print('%-44s %12.0f   (first iteration with tracing: %.1f s)' %
              (name, rate, first), flush=True)

    if args.time_to_score:
        _time_to_score(args.seeds)


def _time_to_score(seeds):
    """Trains both PPO examples to AverageReturn >= 475 (``time_to_score.py``
    in a fresh process each, tf first) and prints each seed's line."""
    print('\nTime to AverageReturn >= 475 (fresh process each):', flush=True)
    for name in ('ppo_tf_cart_pole', 'ppo_cart_pole'):
        out = subprocess.run(
            [sys.executable, os.path.join(HERE, 'time_to_score.py'),
             '--gin_file', os.path.join(ROOT, 'examples', name + '.gin'),
             '--threshold', '475', '--seeds', seeds],
            capture_output=True, text=True)
        lines = [l for l in out.stdout.splitlines() if l.startswith('seed ')]
        for line in lines:
            print('%s: %s' % (name, line), flush=True)
        if out.returncode:
            print(out.stderr[-2000:], flush=True)

if __name__ == '__main__':
    main()
