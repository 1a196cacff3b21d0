"""Trainer evaluation: greedy episodes on an evaluation environment, the
``eval/`` summaries at the evaluation iterations, and no effect on the
training run."""

import functools
import os

import gin
import numpy as np
import pytest
import tensorflow as tf

from alf_rl.algorithms import ActorCriticAlgorithm
from alf_rl.bin.train import parse_gin
from alf_rl.environments.suite_unittest import PolicyUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.trainers import OnPolicyTrainer, TrainerConfig
from small_algorithms import small_actor_critic

from test_trainer import EXAMPLE, SMALL, _events

EXAMPLES = os.path.dirname(EXAMPLE)


class _CopyingActorCritic(ActorCriticAlgorithm):
    """Rollout samples from the (untrained) actor; ``predict`` copies the
    observation, the optimal action of ``PolicyUnittestEnv``."""

    def predict(self, time_step, state):
        step = super().predict(time_step, state)
        return step._replace(
            action=tf.cast(time_step.observation[:, 0], tf.int64))


def _copying_actor_critic(observation_spec, action_spec):
    return small_actor_critic(observation_spec, action_spec,
                              algorithm_class=_CopyingActorCritic)


def _policy_env(batch_size, seed):
    # Episodes of 6 steps: 5 transitions, each paying 1 for copying.
    return TFPyEnvironment(PolicyUnittestEnv(batch_size, 6, seed=seed))


def _copying_trainer(root_dir, evaluate=True):
    config = TrainerConfig(root_dir=root_dir,
                           algorithm_ctor=_copying_actor_critic,
                           num_iterations=5,
                           unroll_length=6,
                           random_seed=1,
                           evaluate=evaluate,
                           eval_interval=2,
                           num_eval_episodes=3,
                           summary_interval=1,
                           iterations_per_call=1)
    return OnPolicyTrainer(config,
                           env=functools.partial(_policy_env, 2),
                           eval_env=functools.partial(_policy_env, 3))


def test_evaluation_plays_greedy_episodes_and_writes_eval_summaries(
        tmp_path):
    root = str(tmp_path)
    trainer = _copying_trainer(root)
    try:
        assert trainer.eval_env.batch_size == 3
        result = trainer.train()
        # predict (copying) earns 1 on each of the 5 transitions of each of
        # the 3 episodes; training acts with rollout's samples, worse.
        assert result['eval/Metrics/AverageReturn'] == 5.0
        assert result['eval/Metrics/AverageEpisodeLength'] == 5.0
        assert result['Metrics/AverageReturn'] < 4.0
        assert trainer.evaluate() == {
            'Metrics/AverageReturn': 5.0,
            'Metrics/AverageEpisodeLength': 5.0
        }
    finally:
        trainer.close()
    eval_events = _events(root, 'eval')
    # eval_interval=2 of 5 iterations: at iterations 2 and 4, and once
    # more at the end of training (5).
    assert eval_events['Metrics/AverageReturn'] == [(2, 5.0), (4, 5.0),
                                                    (5, 5.0)]
    assert eval_events['Metrics/AverageEpisodeLength'] == [(2, 5.0),
                                                           (4, 5.0),
                                                           (5, 5.0)]
    # ... and against the environment steps done by then.
    train_steps = dict(_events(root, 'train')['Metrics/EnvironmentSteps'])
    assert eval_events['Metrics_vs_EnvironmentSteps/AverageReturn'] == [
        (int(train_steps[2]), 5.0), (int(train_steps[4]), 5.0),
        (int(train_steps[5]), 5.0)
    ]
    assert train_steps[2] > 0


def test_no_evaluation_without_evaluate(tmp_path):
    trainer = _copying_trainer(str(tmp_path), evaluate=False)
    try:
        assert trainer.eval_env is None  # the factory was not called
        result = trainer.train()
        assert not any(k.startswith('eval/') for k in result)
        with pytest.raises(ValueError, match='no evaluation environment'):
            trainer.evaluate()
    finally:
        trainer.close()
    assert not os.path.exists(os.path.join(str(tmp_path), 'eval'))


def _train_gin(root_dir, gin_file, params):
    """Trains a gin example; returns (result, trainable variable values)."""
    gin.clear_config()
    parse_gin([gin_file], params, root_dir)
    config = TrainerConfig()
    trainer = (config.trainer or OnPolicyTrainer)(config)
    try:
        result = trainer.train()
        values = [v.numpy() for v in trainer.algorithm.trainable_variables]
    finally:
        trainer.close()
    return result, values


def _check_same_training(tmp_path, gin_file, params):
    common = params + ['TrainerConfig.random_seed=3',
                       'TrainerConfig.iterations_per_call=1',
                       'TrainerConfig.eval_interval=2']
    with_eval, values_eval = _train_gin(
        str(tmp_path / 'eval'), gin_file,
        common + ['TrainerConfig.evaluate=True'])
    without, values = _train_gin(str(tmp_path / 'no_eval'), gin_file,
                                 common + ['TrainerConfig.evaluate=False'])
    assert 'eval/Metrics/AverageReturn' in with_eval
    for key, value in without.items():
        if not key.endswith('_secs'):
            assert with_eval[key] == value, key
    assert len(values_eval) == len(values) > 0
    for a, b in zip(values_eval, values):
        np.testing.assert_array_equal(a, b)


def test_evaluation_does_not_change_on_policy_training(tmp_path):
    _check_same_training(tmp_path, EXAMPLE, SMALL)


def test_evaluation_does_not_change_off_policy_training(tmp_path):
    _check_same_training(
        tmp_path, os.path.join(EXAMPLES, 'sac_pendulum.gin'), [
            'TrainerConfig.num_iterations=6', 'TrainerConfig.num_env_steps=0',
            'TrainerConfig.initial_collect_steps=64',
            'TrainerConfig.mini_batch_size=16',
            'TrainerConfig.num_eval_episodes=1',
            'actor/ActorDistributionNetwork.fc_layer_params=(8,)',
            'critic/CriticNetwork.joint_fc_layer_params=(8,)'
        ])


def test_the_evaluator_alone_plays_greedy_episodes():
    from alf_rl.trainers.config import EvaluationConfig
    from alf_rl.trainers.evaluation import Evaluator, create_eval_env
    from alf_rl.utils.common import set_random_seed
    set_random_seed(0)
    config = EvaluationConfig(evaluate=True, num_eval_episodes=3)
    env = create_eval_env(lambda seed: _policy_env(3, seed), config, 5)
    algorithm = _copying_actor_critic(env.observation_spec(),
                                      env.action_spec())
    evaluator = Evaluator(env, algorithm)
    try:
        # Copying pays 1 for each of the 5 transitions of every episode.
        assert evaluator.evaluate() == {'Metrics/AverageReturn': 5.0,
                                        'Metrics/AverageEpisodeLength': 5.0}
        assert isinstance(evaluator.generator, tf.random.Generator)
    finally:
        evaluator.close()
    with pytest.raises(ValueError, match='eval_env: batch size 2, expected '
                       'TrainerConfig.num_eval_episodes=3'):
        create_eval_env(lambda seed: _policy_env(2, seed), config, 5)
