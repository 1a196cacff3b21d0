"""Env steps/s of OnPolicyDriver on CartPole-v1 beside raw gymnasium.

Prints, for 8 CartPole-v1 environments:
1. raw gymnasium ``SyncVectorEnv`` stepping random actions (no TensorFlow),
2. ``TFPyEnvironment`` stepping random actions in a ``tf.while_loop``,
3. ``OnPolicyDriver.rollout``: the driver's in-graph rollout with a 64-64
   MLP actor-critic sampling actions (no training),
4. ``OnPolicyDriver.run``: full training iterations (rollout under the tape
   plus the A2C update), for unroll lengths 8 and 32.

Usage: python benchmarks/rollout_throughput.py [--num_envs 8] [--steps 20000]
"""

import argparse
import os
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402


def raw_gym(num_envs, steps):
    envs = gym.vector.SyncVectorEnv(
        [lambda: gym.make('CartPole-v1') for _ in range(num_envs)])
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 2, size=(steps, num_envs))
    start = time.perf_counter()
    for a in actions:
        envs.step(a)
    elapsed = time.perf_counter() - start
    envs.close()
    return steps * num_envs / elapsed


def _best_of(fn, repeats=3):
    return max(fn() for _ in range(repeats))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--num_envs', type=int, default=8)
    parser.add_argument('--steps', type=int, default=20000,
                        help='batched steps per measurement')
    args = parser.parse_args()
    from alf_rl.bin.quiet import import_tensorflow
    tf = import_tensorflow()
    import tf_keras
    from alf_rl.algorithms import ActorCriticAlgorithm
    from alf_rl.drivers import OnPolicyDriver
    from alf_rl.environments.utils import create_environment
    from alf_rl.networks import ActorDistributionNetwork, ValueNetwork
    from alf_rl.utils.common import set_random_seed

    n, steps = args.num_envs, args.steps
    print('raw gymnasium SyncVectorEnv (%d envs, random actions): %9.0f env '
          'steps/s' % (n, _best_of(lambda: raw_gym(n, steps))), flush=True)

    set_random_seed(0)
    env = create_environment('CartPole-v1', n, seed=0)

    @tf.function(autograph=False)
    def random_loop(time_step, num):
        def body(i, ts):
            a = tf.random.uniform([n], 0, 2, tf.int64)
            return i + 1, env.step(a)
        return tf.while_loop(lambda i, ts: i < num, body,
                             (tf.constant(0), time_step))[1]

    def measure_random():
        ts = env.reset()
        random_loop(ts, tf.constant(10))
        start = time.perf_counter()
        random_loop(ts, tf.constant(steps))
        return steps * n / (time.perf_counter() - start)

    print('TFPyEnvironment in tf.while_loop (random actions):  %9.0f env '
          'steps/s' % _best_of(measure_random), flush=True)

    alg = ActorCriticAlgorithm(
        env.observation_spec(), env.action_spec(),
        actor_network_ctor=lambda o, a: ActorDistributionNetwork(
            o, a, fc_layer_params=(64, 64)),
        value_network_ctor=lambda o: ValueNetwork(o, fc_layer_params=(64, 64)),
        optimizer=tf_keras.optimizers.Adam(1e-3))
    driver = OnPolicyDriver(env, alg, train_interval=8)

    def measure_rollout():
        driver.rollout(10)
        start = time.perf_counter()
        driver.rollout(steps)
        return steps * n / (time.perf_counter() - start)

    print('OnPolicyDriver.rollout (64-64 MLP, sampling):       %9.0f env '
          'steps/s' % _best_of(measure_rollout), flush=True)

    for unroll in (8, 32):
        driver = OnPolicyDriver(env, alg, train_interval=unroll)

        def measure_train(driver=driver, unroll=unroll):
            driver.run()
            iterations = max(steps // unroll // 4, 20)
            start = time.perf_counter()
            for _ in range(iterations):
                driver.run()
            return (iterations * driver.env_steps_per_iteration /
                    (time.perf_counter() - start))

        print('OnPolicyDriver.run, A2C training, unroll %2d:         %9.0f '
              'env steps/s' % (unroll, _best_of(measure_train)), flush=True)
    env.close()


if __name__ == '__main__':
    main()
