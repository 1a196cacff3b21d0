"""Test setup: quiet TensorFlow, deterministic seeds per test."""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
os.environ.setdefault('SDL_VIDEODRIVER', 'dummy')
os.environ.setdefault('TF_NUM_INTEROP_THREADS', '1')  # as the CLI does
# Ray (the [dist] tests): no token file under ~/.ray, no usage reporting.
os.environ.setdefault('RAY_AUTH_MODE', 'disabled')
os.environ.setdefault('RAY_USAGE_STATS_ENABLED', '0')
# alf-train subprocesses: no persistent XLA cache shared between tests.
os.environ.setdefault('ALF_RL_XLA_CACHE', 'off')

# TensorFlow's start-up notices print before TF_CPP_MIN_LOG_LEVEL applies:
# alf_rl's import hook drops them, also when a conftest or test module
# imports tensorflow before alf_rl.
import alf_rl  # noqa: E402,F401
import gin  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _clear_gin():
    gin.clear_config()
    yield
    gin.clear_config()


@pytest.fixture
def memory_task_networks():
    """``networks(recurrent) -> (actor_network_ctor, value_network_ctor)``:
    the small LSTM or feed-forward pair the memory-task learning tests
    compare (``RNNPolicyUnittestEnv``)."""
    from alf_rl.networks import (ActorDistributionNetwork,
                                 ActorDistributionRnnNetwork, ValueNetwork,
                                 ValueRnnNetwork)

    def networks(recurrent):
        if recurrent:
            return (lambda o, a: ActorDistributionRnnNetwork(
                o, a, input_fc_layer_params=(32, ), lstm_size=(16, )),
                    lambda o: ValueRnnNetwork(
                        o, input_fc_layer_params=(32, ), lstm_size=(16, )))
        return (lambda o, a: ActorDistributionNetwork(
            o, a, fc_layer_params=(32, )),
                lambda o: ValueNetwork(o, fc_layer_params=(32, )))

    return networks


@pytest.fixture
def chain_exploration():
    """``run(module_ctor, seed, root_dir) -> int``: trains PPO (alone when
    ``module_ctor`` is None, else as the RL algorithm of an ``Agent`` with
    that intrinsic-reward module, coefficients 1) on
    ``ChainUnittestEnv(8 envs, length 20)`` for 30 iterations of 16 steps
    (3,840 env steps) through the replay path, and returns how many
    rewards (episodes that reached the far end) the chain handed out."""
    import functools

    import numpy as np
    import tf_keras

    from alf_rl.algorithms import Agent, PPOAlgorithm, PPOLoss
    from alf_rl.environments.suite_unittest import ChainUnittestEnv
    from alf_rl.environments.tf_environment import TFPyEnvironment
    from alf_rl.networks import ActorDistributionNetwork, ValueNetwork
    from alf_rl.trainers.off_policy_trainer import OffPolicyTrainer
    from alf_rl.trainers.trainer import TrainerConfig

    class CountingChain(ChainUnittestEnv):
        rewards_given = 0

        def _reward(self, step, action):
            reward = super()._reward(step, action)
            self.rewards_given += int(np.sum(reward))
            return reward

    def ppo(observation_spec, action_spec):
        return PPOAlgorithm(
            observation_spec, action_spec,
            actor_network_ctor=functools.partial(ActorDistributionNetwork,
                                                 fc_layer_params=(32, )),
            value_network_ctor=functools.partial(ValueNetwork,
                                                 fc_layer_params=(32, )),
            loss=PPOLoss(gamma=0.99),
            optimizer=tf_keras.optimizers.Adam(1e-3))

    def agent(module_ctor, observation_spec, action_spec):
        return Agent(observation_spec, action_spec, rl_algorithm_ctor=ppo,
                     intrinsic_reward_module_ctor=module_ctor)

    def run(module_ctor, seed, root_dir):
        env = CountingChain(8, 20, seed=seed)
        config = TrainerConfig(
            root_dir=str(root_dir),
            algorithm_ctor=(ppo if module_ctor is None else
                            functools.partial(agent, module_ctor)),
            random_seed=seed, num_iterations=30, unroll_length=16,
            clear_replay_buffer=True, mini_batch_size=32,
            mini_batch_length=1, num_updates_per_train_step=4,
            summary_interval=1000, checkpoint_interval=100000)
        OffPolicyTrainer(config, env=TFPyEnvironment(env)).train()
        return env.rewards_given

    return run
