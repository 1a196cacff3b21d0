"""Mistakes in a user's own algorithm or replay settings, named at trace time.

Each test asserts the message a user reads (the method, what was expected,
what came back) instead of a raw TensorFlow error, and that nothing was
written to or lost from the run's directory.

- ``calc_loss`` returning one row too few (was: ``Dimensions must be equal,
  but are 4 and 5 for '{{node mul_4}}'``) or a tensor instead of a
  ``LossInfo`` (was: ``AttributeError: 'SymbolicTensor' object has no
  attribute 'loss'``);
- ``rollout``/``train_step`` returning something that is not a
  ``PolicyStep``, on-policy and from replay;
- ``mini_batch_size`` larger than a full replay buffer holds (SAC).
"""

import functools
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms import ActorCriticAlgorithm
from alf_rl.data_structures import LossInfo, PolicyStep
from alf_rl.environments.suite_unittest import PolicyUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.networks import ActorDistributionNetwork, ValueNetwork
from alf_rl.trainers import OffPolicyTrainer, OnPolicyTrainer, TrainerConfig

EXAMPLES = os.path.join(os.path.dirname(__file__), '..', '..', 'examples')


def _kwargs():
    return dict(
        actor_network_ctor=functools.partial(ActorDistributionNetwork,
                                             fc_layer_params=(8, )),
        value_network_ctor=functools.partial(ValueNetwork,
                                             fc_layer_params=(8, )),
        optimizer=tf_keras.optimizers.Adam(1e-3))


class _OneRowTooFew(ActorCriticAlgorithm):
    """Drops the last (bootstrap) row of the loss, as a TD loss over rows
    0..T-2 would."""

    def calc_loss(self, training_info):
        loss_info = super().calc_loss(training_info)
        return loss_info._replace(loss=loss_info.loss[:-1])


class _TensorLoss(ActorCriticAlgorithm):
    """Returns the per-step loss tensor instead of a ``LossInfo``."""

    def calc_loss(self, training_info):
        return super().calc_loss(training_info).loss


class _ActionOnly(ActorCriticAlgorithm):
    """``rollout`` returns the action tensor instead of a ``PolicyStep``."""

    def rollout(self, time_step, state):
        return super().rollout(time_step, state).action


class _TrainStepTensor(ActorCriticAlgorithm):
    """``train_step`` (replay training) returns the action tensor."""

    def train_step(self, experience, state):
        return super().train_step(experience, state).action


def _env(seed):
    return TFPyEnvironment(PolicyUnittestEnv(2, 6, seed=seed))


def _train(root_dir, algorithm_cls, trainer_cls=OnPolicyTrainer, **config):
    settings = dict(root_dir=root_dir,
                    algorithm_ctor=lambda observation_spec, action_spec:
                    algorithm_cls(observation_spec, action_spec,
                                  **_kwargs()),
                    num_iterations=2, unroll_length=4, random_seed=1,
                    checkpoint_interval=1, iterations_per_call=1)
    settings.update(config)
    trainer = trainer_cls(TrainerConfig(**settings), env=_env)
    try:
        return trainer.train()
    finally:
        trainer.close()


def _message(raised):
    """The error's own text (gin appends "In call to configurable ..." on
    a line of its own when a configurable raised)."""
    return str(raised.value).splitlines()[0]


def _nothing_written(root_dir):
    ckpt = os.path.join(root_dir, 'ckpt')
    return not os.path.isdir(ckpt) or not [
        n for n in os.listdir(ckpt) if n.startswith('ckpt-')
        and not n.endswith('-0')
    ]


def test_calc_loss_one_row_too_few_is_named(tmp_path):
    root = str(tmp_path)
    # 4 steps + the bootstrap row ('redo' final-step mode): 5 rows.
    with pytest.raises(ValueError) as raised:
        _train(root, _OneRowTooFew)
    assert _message(raised) == (
        "_OneRowTooFew.calc_loss returned loss of shape [4, 2], expected "
        "[5, 2] (the [T, B] rows of the training info it was given): every "
        "per-step LossInfo leaf must be [T, B] or a scalar -- a TD loss over "
        "rows 0..T-2 needs its last row back (alf_rl.ops.masks.pad_last_row)")
    assert _nothing_written(root)


def test_calc_loss_returning_a_tensor_is_named(tmp_path):
    root = str(tmp_path)
    with pytest.raises(TypeError) as raised:
        _train(root, _TensorLoss)
    message = _message(raised)
    assert message.startswith(
        "_TensorLoss.calc_loss must return a LossInfo (loss=[T, B] per-step "
        "losses, extra=summaries), got ")
    assert message.endswith(
        "Tensor of shape [5, 2] float32 -- wrap it: LossInfo(loss=...)")
    assert _nothing_written(root)


def test_a_good_loss_info_passes_the_check():
    alg = ActorCriticAlgorithm(tf.TensorSpec((1, ), tf.float32),
                               PolicyUnittestEnv(1, 2).action_spec(),
                               **_kwargs())
    mask = tf.ones([3, 2])
    # [T, B] leaves and scalars pass; no optimizer step is needed for it.
    alg._check_loss_info(LossInfo(loss=tf.zeros([3, 2]),
                                  extra={'a': tf.zeros([3, 2]),
                                         'b': tf.zeros([])}), mask)
    with pytest.raises(ValueError, match=r"ActorCriticAlgorithm.calc_loss "
                       r"returned extra\['a'\] of shape \[3, 1\], expected "
                       r"\[3, 2\]"):
        alg._check_loss_info(LossInfo(loss=tf.zeros([3, 2]),
                                      extra={'a': tf.zeros([3, 1])}), mask)


def test_rollout_returning_a_tensor_is_named_on_policy(tmp_path):
    root = str(tmp_path)
    with pytest.raises(TypeError) as raised:
        _train(root, _ActionOnly)
    message = _message(raised)
    assert message.startswith(
        "_ActionOnly.rollout must return a PolicyStep(action, state, info), "
        "got ")
    assert message.endswith(
        "Tensor of shape [2] int64 -- wrap the action: "
        "PolicyStep(action=..., state=state)")
    assert _nothing_written(root)


def test_rollout_returning_a_tensor_is_named_for_replay(tmp_path):
    root = str(tmp_path)
    with pytest.raises(TypeError, match=r"^_ActionOnly.rollout must return a "
                       r"PolicyStep\(action, state, info\) \(or an "
                       r"AlgStep\), got \w*Tensor of shape \[2\] int64(\n|$)"):
        _train(root, _ActionOnly, OffPolicyTrainer, clear_replay_buffer=True)
    assert _nothing_written(root)


def test_train_step_returning_a_tensor_is_named(tmp_path):
    root = str(tmp_path)
    with pytest.raises(TypeError, match=r"^_TrainStepTensor.train_step must "
                       r"return a PolicyStep\(action, state, info\) \(or an "
                       r"AlgStep\), got \w*Tensor of shape \[2\] int64(\n|$)"):
        _train(root, _TrainStepTensor, OffPolicyTrainer,
               clear_replay_buffer=True)
    assert _nothing_written(root)


def test_rollout_state_structure_is_checked():
    from alf_rl.drivers.driver import check_policy_step
    alg = ActorCriticAlgorithm(tf.TensorSpec((1, ), tf.float32),
                               PolicyUnittestEnv(1, 2).action_spec(),
                               **_kwargs())
    good = PolicyStep(action=tf.zeros([2], tf.int64),
                      state=alg.get_initial_rollout_state(2))
    check_policy_step(good, alg, 'rollout')
    with pytest.raises(ValueError, match=r"state"):
        check_policy_step(good._replace(state=(tf.zeros([2]), )), alg,
                          'rollout')
    with pytest.raises(ValueError, match=r"action.*expected.*int64"):
        check_policy_step(good._replace(action=tf.zeros([2])), alg,
                          'rollout')


def test_mini_batch_larger_than_a_full_replay_buffer_is_refused(tmp_path):
    from alf_rl.bin.train import train
    root = str(tmp_path / 'run')
    with pytest.raises(ValueError) as raised:
        train(root, [os.path.join(EXAMPLES, 'sac_pendulum.gin')], [
            'TrainerConfig.replay_buffer_capacity=200',
            'TrainerConfig.mini_batch_size=256',
            'TrainerConfig.num_env_steps=0', 'TrainerConfig.num_iterations=2',
            'TrainerConfig.evaluate=False',
        ])
    assert _message(raised) == (
        "TrainerConfig.mini_batch_size 256 is larger than the replay buffer "
        "can ever hold: replay_buffer_capacity 200 over 1 envs keeps 200 "
        "steps per env, 199 distinct sequences of length 2; lower "
        "mini_batch_size or raise replay_buffer_capacity")
    assert _nothing_written(root)


def test_mini_batch_within_a_full_replay_buffer_is_accepted(tmp_path):
    # 64 steps over 2 envs: 2 x 31 = 62 distinct sequences of length 2.
    result = _train(str(tmp_path), ActorCriticAlgorithm, OffPolicyTrainer,
                    clear_replay_buffer=False, replay_buffer_capacity=64,
                    initial_collect_steps=8, mini_batch_size=62,
                    mini_batch_length=2)
    assert result['iterations'] == 2
    assert np.isfinite(result['Metrics/AverageReturn'])
    with pytest.raises(ValueError, match=r"mini_batch_size 63 is larger "
                       r"than the replay buffer can ever hold: "
                       r"replay_buffer_capacity 64 over 2 envs keeps 32 "
                       r"steps per env, 62 distinct sequences of length 2"):
        _train(str(tmp_path / 'b'), ActorCriticAlgorithm, OffPolicyTrainer,
               clear_replay_buffer=False, replay_buffer_capacity=64,
               initial_collect_steps=8, mini_batch_size=63,
               mini_batch_length=2)
