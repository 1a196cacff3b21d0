"""Tests for MemoryBasedPredictor, MerlinAlgorithm and MerlinPPOAlgorithm:
state and info structure, what the predictor writes to memory, gradient
routing (the policy's loss does not train the predictor), one driver
update, PPO's advantages and epochs over stored memory states, and exact
resumes with the memory in the driver's state."""

import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms import PPOAlgorithm, PPOLoss
from alf_rl.algorithms.ppo_loss import PPOInfo
from alf_rl.algorithms.memory import MemoryState
from alf_rl.algorithms.merlin_algorithm import (
    MBPInfo,
    MBPState,
    MemoryBasedPredictor,
    MerlinAlgorithm,
    MerlinInfo,
    MerlinLossInfo,
    MerlinPPOAlgorithm,
    MerlinState,
)
from alf_rl.data_structures import Experience, StepType, TimeStep
from alf_rl.drivers import OnPolicyDriver
from alf_rl.environments.suite_unittest import RNNPolicyUnittestEnv
from alf_rl.ops import distributions as dist_ops
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.trainers import OffPolicyTrainer, OnPolicyTrainer, TrainerConfig
from alf_rl.utils.common import set_random_seed
from small_algorithms import small_actor_critic

Z, N, K = 4, 6, 2


def _predictor(observation_spec, action_spec, **kwargs):
    return MemoryBasedPredictor(
        observation_spec,
        action_spec,
        z_dim=Z,
        memory_size=N,
        num_read_keys=K,
        lstm_size=(8,),
        **kwargs,
    )


# The policy: an A2C with (8,) networks and its own Adam(1e-3).
_a2c = small_actor_critic


def _merlin(observation_spec, action_spec, **kwargs):
    return MerlinAlgorithm(
        observation_spec,
        action_spec,
        predictor_ctor=_predictor,
        rl_algorithm_ctor=_a2c,
        optimizer=tf_keras.optimizers.Adam(1e-3),
        **kwargs,
    )


def _merlin_ppo(observation_spec, action_spec, **kwargs):
    """MERLIN-PPO: a PPO policy with (8,) networks and Adam(1e-3)."""
    return MerlinPPOAlgorithm(
        observation_spec,
        action_spec,
        predictor_ctor=_predictor,
        rl_algorithm_ctor=lambda observation_spec, action_spec: _a2c(
            observation_spec,
            action_spec,
            algorithm_class=PPOAlgorithm,
            loss=PPOLoss(gamma=0.5, td_lambda=0.5),
        ),
        optimizer=tf_keras.optimizers.Adam(1e-3),
        **kwargs,
    )


def _env(batch_size=2, episode_length=5, seed=0):
    return TFPyEnvironment(
        RNNPolicyUnittestEnv(
            batch_size, episode_length, obs_dim=3, gap=2, seed=seed
        )
    )


def _time_step(step_type, observation, batch_size=2):
    return TimeStep(
        step_type=tf.fill([batch_size], step_type),
        reward=tf.zeros([batch_size]),
        discount=tf.ones([batch_size]),
        observation=tf.constant(observation, tf.float32),
        prev_action=tf.zeros([batch_size], tf.int64),
        env_id=tf.range(batch_size),
    )


def test_state_and_info_structure():
    env = _env()
    alg = _merlin(env.observation_spec(), env.action_spec())
    state = alg.get_initial_rollout_state(2)
    assert isinstance(state, MerlinState)
    assert isinstance(state.predictor, MBPState)
    assert isinstance(state.predictor.memory, MemoryState)
    assert state.predictor.memory.memory.shape == (2, N, Z)
    assert alg.predictor.output_spec.shape == (Z + K * Z,)
    step = alg.rollout(_time_step(StepType.FIRST, np.ones([2, 3])), state)
    assert step.action.shape == (2,)
    assert isinstance(step.info, MerlinInfo)
    assert isinstance(step.info.predictor, MBPInfo)
    assert step.info.predictor.read_attention.shape == (2, K, N)
    for loss in (
        step.info.predictor.vae.kl,
        step.info.predictor.observation_loss,
        step.info.predictor.reward_loss,
        step.info.predictor.action_loss,
    ):
        assert loss.shape == (2,) and np.all(loss.numpy() >= 0)
    predicted = alg.predict(
        _time_step(StepType.FIRST, np.ones([2, 3])),
        alg.get_initial_predict_state(2),
    )
    assert predicted.action.shape == (2,)


def test_predictor_writes_each_latent_to_the_next_free_slot():
    set_random_seed(0)
    env = _env()
    predictor = _predictor(env.observation_spec(), env.action_spec())
    state = predictor.get_initial_train_state(2)
    latents = []
    for t, obs in enumerate(
        [np.ones([2, 3]), np.zeros([2, 3]), np.zeros([2, 3])]
    ):
        step = predictor.train_step(
            _time_step(StepType.FIRST if t == 0 else StepType.MID, obs), state
        )
        state = step.state
        latents.append(step.output.numpy()[:, :Z])
    memory = state.memory.memory.numpy()
    for t in range(3):
        np.testing.assert_allclose(memory[:, t], latents[t], rtol=1e-6)
    np.testing.assert_array_equal(memory[:, 3:], 0.0)
    assert np.all(state.memory.usage.numpy()[:, :3] >= 1.0)


def test_policy_loss_does_not_train_the_predictor():
    env = _env()
    alg = _merlin(env.observation_spec(), env.action_spec())
    state = alg.get_initial_rollout_state(2)
    with tf.GradientTape(persistent=True) as tape:
        step = alg.rollout(_time_step(StepType.FIRST, np.ones([2, 3])), state)
        policy_loss = tf.reduce_sum(
            step.info.rl.action_distribution.logits
        ) + tf.reduce_sum(step.info.rl.value)
        predictor_loss = tf.reduce_sum(
            alg.predictor.calc_loss(step.info.predictor).loss
        )
    predictor_vars = alg.predictor.trainable_variables
    assert all(g is None for g in tape.gradient(policy_loss, predictor_vars))
    grads = tape.gradient(predictor_loss, predictor_vars)
    assert sum(g is not None for g in grads) > 0.5 * len(predictor_vars)


def test_one_driver_update_trains_every_variable():
    set_random_seed(1)
    env = _env(batch_size=4, episode_length=5)
    alg = _merlin(env.observation_spec(), env.action_spec())
    before = [v.numpy().copy() for v in alg.trainable_variables]
    # Eager (the learning test and the example run it compiled).
    driver = OnPolicyDriver(env, alg, train_interval=6, use_tf_functions=False)
    loss_info = driver.run()
    assert isinstance(loss_info.extra, MerlinLossInfo)
    assert np.isfinite(float(loss_info.loss))
    changed = [
        not np.array_equal(b, v.numpy())
        for b, v in zip(before, alg.trainable_variables)
    ]
    names = [v.name for v, c in zip(alg.trainable_variables, changed) if not c]
    assert not names, names


def test_policy_algorithm_must_train_on_the_unroll():
    env = _env()
    with pytest.raises(ValueError, match='training_kind UNROLL'):
        MerlinAlgorithm(
            env.observation_spec(),
            env.action_spec(),
            predictor_ctor=_predictor,
            rl_algorithm_ctor=PPOAlgorithm,
            optimizer=tf_keras.optimizers.Adam(1e-3),
        )
    with pytest.raises(ValueError, match='one float TensorSpec'):
        MemoryBasedPredictor(tf.TensorSpec([3], tf.int32), env.action_spec())


def _train(root, num_iterations, ppo=False):
    """Trains MERLIN (``ppo``: MERLIN-PPO, 2 epochs of 2 sequences of 3
    steps per iteration) on 2 envs of 5-step episodes."""
    epochs = dict(
        trainer=OffPolicyTrainer,
        clear_replay_buffer=True,
        mini_batch_length=3,
        mini_batch_size=1,
        num_updates_per_train_step=2,
    )
    config = TrainerConfig(
        root_dir=root,
        algorithm_ctor=_merlin_ppo if ppo else _merlin,
        num_iterations=num_iterations,
        random_seed=3,
        unroll_length=3,
        iterations_per_call=2,
        summary_interval=2,
        checkpoint_interval=2,
        progress_interval_secs=1e6,
        use_tf_functions=False,
        **(epochs if ppo else {}),
    )
    trainer = (OffPolicyTrainer if ppo else OnPolicyTrainer)(
        config, env=_env(seed=3)
    )
    try:
        return trainer.train()
    finally:
        trainer.close()


def _checkpoint(root, iteration):
    reader = tf.train.load_checkpoint(
        os.path.join(root, 'ckpt', 'ckpt-%d' % iteration, 'ckpt')
    )
    return {
        key: reader.get_tensor(key)
        for key in reader.get_variable_to_shape_map()
        if key != '_CHECKPOINTABLE_OBJECT_GRAPH'
    }


@pytest.mark.parametrize('ppo', [False, True], ids=['a2c', 'ppo'])
def test_resumed_run_equals_straight_run_with_memory_in_driver_state(
    tmp_path, ppo
):
    straight, split = str(tmp_path / 'straight'), str(tmp_path / 'split')
    result = _train(straight, 4, ppo)
    _train(split, 2, ppo)
    resumed = _train(split, 4, ppo)
    a, b = _checkpoint(straight, 4), _checkpoint(split, 4)
    assert sorted(a) == sorted(b)
    # The memory ([B, N, Z], mid-episode: 12 steps of 5-step episodes) is
    # part of the driver's saved state.
    memories = [
        k
        for k in a
        if k.startswith('driver_state/') and a[k].shape == (2, N, Z)
    ]
    assert memories and np.any(a[memories[0]] != 0)
    for key in a:
        if ppo and key.startswith('replayer/') and '_generator' in key:
            # The replay buffer's sampler generator: built without a seed
            # (non-deterministic state) and unused when each iteration
            # trains on all it collected; as with PPO alone.
            continue
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert result['Metrics/AverageReturn'] == resumed['Metrics/AverageReturn']


def test_policy_reads_train_only_their_keys():
    env = _env()
    alg = _merlin(
        env.observation_spec(), env.action_spec(), num_policy_read_keys=3
    )
    # The policy sees [z_t, m_t, m~_t]: Z + K * Z + 3 * Z.
    assert alg.rl_algorithm.observation_spec.shape == (Z + K * Z + 3 * Z,)
    state = alg.get_initial_rollout_state(2)
    with tf.GradientTape(persistent=True) as tape:
        step = alg.rollout(_time_step(StepType.FIRST, np.ones([2, 3])), state)
        policy_loss = tf.reduce_sum(step.info.rl.action_distribution.logits)
    assert step.action.shape == (2,)
    others = {
        id(v)
        for v in alg.predictor.trainable_variables
        + alg.rl_algorithm.trainable_variables
    }
    # The policy's key layer: a kernel and a bias.
    keys = [v for v in alg.trainable_variables if id(v) not in others]
    assert len(keys) == 2
    assert all(g is not None for g in tape.gradient(policy_loss, keys))
    predictor_vars = alg.predictor.trainable_variables
    assert all(g is None for g in tape.gradient(policy_loss, predictor_vars))
    # Right after FIRST the memory holds z_0 alone (slot 0, the other
    # slots are zeros, of cosine 0): each policy read is a_0 * z_0 with
    # a_0 = e^{beta c} / (e^{beta c} + N - 1), here checked as a multiple
    # of z_0, the z part of the policy's observation.
    time_step = _time_step(StepType.FIRST, np.ones([2, 3]))
    policy_step, _ = alg._policy_input(time_step, state)
    observation = policy_step.observation.numpy()
    z0, reads = observation[:, :Z], observation[:, Z + K * Z :]
    for k in range(3):
        read = reads[:, k * Z : (k + 1) * Z]
        ratio = read / z0
        np.testing.assert_allclose(ratio, ratio[:, :1] + 0 * ratio, rtol=1e-4)
        assert np.all((ratio > 0) & (ratio < 1))
    with pytest.raises(ValueError, match='num_policy_read_keys must be >= 0'):
        _merlin(
            env.observation_spec(), env.action_spec(), num_policy_read_keys=-1
        )


def test_action_in_prior_changes_the_prior():
    env = _env()
    predictor = _predictor(
        env.observation_spec(), env.action_spec(), use_action_in_prior=True
    )
    hidden = tf.ones([2, 8])
    read = tf.ones([2, K * Z])
    actions = tf.constant([[1.0, 0.0], [0.0, 1.0]])  # one-hot a_{t-1}
    mean, log_var = predictor.vae.prior((hidden, read, actions))
    assert mean.shape == (2, Z) and log_var.shape == (2, Z)
    assert not np.allclose(mean[0], mean[1])
    step = predictor.train_step(
        _time_step(StepType.MID, np.zeros([2, 3])),
        predictor.get_initial_train_state(2),
    )
    assert step.output.shape == (2, Z + K * Z)
    # Without the option the prior takes (h, m) alone: equal rows.
    plain = _predictor(env.observation_spec(), env.action_spec())
    mean, _ = plain.vae.prior((hidden, read))
    np.testing.assert_allclose(mean[0], mean[1])


def test_ppo_policy_needs_merlin_ppo_and_the_stored_state():
    env = _env()
    with pytest.raises(ValueError, match='for PPO use MerlinPPOAlgorithm'):
        _merlin(env.observation_spec(), env.action_spec()).__class__(
            env.observation_spec(),
            env.action_spec(),
            predictor_ctor=_predictor,
            rl_algorithm_ctor=PPOAlgorithm,
        )
    with pytest.raises(ValueError, match='training_kind EPOCHS.*got Actor'):
        MerlinPPOAlgorithm(
            env.observation_spec(),
            env.action_spec(),
            predictor_ctor=_predictor,
            rl_algorithm_ctor=_a2c,
        )
    with pytest.raises(ValueError, match='use_rollout_state must be True'):
        _merlin_ppo(
            env.observation_spec(), env.action_spec(), use_rollout_state=False
        )


def test_ppo_stores_the_memory_and_fills_the_policy_advantages():
    env = _env()
    alg = _merlin_ppo(env.observation_spec(), env.action_spec())
    spec = alg.prepare_off_policy_specs(2)
    # Stored: the whole rollout state (memory [N, Z] included) and only
    # the policy's info (train_step recomputes the predictor's).
    assert spec.state.predictor.memory.memory.shape == (N, Z)
    assert spec.rollout_info.predictor == ()
    first, mid = int(StepType.FIRST), int(StepType.MID)
    zeros = tf.zeros([3, 2])
    experience = Experience(
        step_type=tf.constant([[first] * 2, [mid] * 2, [mid] * 2]),
        reward=tf.constant([[0.0, 0.0], [1.0, 0.0], [1.0, 2.0]]),
        discount=tf.ones([3, 2]),
        rollout_info=MerlinInfo(
            rl=PPOInfo(
                action_distribution=(),
                value=zeros,
                returns=zeros,
                advantages=zeros,
            )
        ),
    )
    out = alg.preprocess_experience(experience)
    # GAE with v = 0, gamma = lambda = 0.5: A_1 = r_2, A_0 = r_1 + 0.25
    # r_2; the last row (no successor) gets 0 and becomes LAST.
    np.testing.assert_allclose(
        out.rollout_info.rl.advantages,
        [[1.25, 0.5], [1.0, 2.0], [0.0, 0.0]],
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        out.rollout_info.rl.returns, out.rollout_info.rl.advantages
    )
    assert list(out.step_type[-1].numpy()) == [int(StepType.LAST)] * 2
    assert out.rollout_info.predictor == ()


def _collect(env, alg, steps):
    """[T, B] experience of ``rollout`` as the trainers store it (rollout
    info as parameters, the state passed into each step)."""
    time_step = env.reset()
    state = alg.get_initial_rollout_state(env.batch_size)
    rows = []
    for _ in range(steps):
        step = alg.rollout(time_step, state)
        rows.append(
            Experience(
                step_type=time_step.step_type,
                reward=time_step.reward,
                discount=time_step.discount,
                observation=time_step.observation,
                prev_action=time_step.prev_action,
                env_id=time_step.env_id,
                action=step.action,
                rollout_info=dist_ops.distributions_to_params(step.info),
                state=state,
            )
        )
        state = step.state
        time_step = env.step(alg.env_action(step.action))
    return tf.nest.map_structure(lambda *x: tf.stack(x), *rows)


def test_ppo_epochs_train_every_variable_from_the_stored_memory():
    set_random_seed(1)
    env = _env(batch_size=4, episode_length=5)
    alg = _merlin_ppo(env.observation_spec(), env.action_spec())
    alg.prepare_off_policy_specs(4)
    experience = _collect(env, alg, 6)
    # The memory stored with row 3 is what rows 0-2 wrote (non-zero).
    assert np.any(experience.state.predictor.memory.memory[3].numpy() != 0)
    alg.build_optimizers()
    before = [v.numpy().copy() for v in alg.trainable_variables]
    # 2 epochs of 2 mini-batches of 2 sequences of 3 steps: 4 updates.
    loss_info = alg.train(
        experience, num_updates=2, mini_batch_size=4, mini_batch_length=3
    )
    assert isinstance(loss_info.extra, MerlinLossInfo)
    assert np.isfinite(float(loss_info.loss))
    assert float(loss_info.extra.predictor_loss) > 0
    assert int(alg.rl_algorithm.num_updates.numpy()) == 4
    unchanged = [
        v.name
        for b, v in zip(before, alg.trainable_variables)
        if np.array_equal(b, v.numpy())
    ]
    assert not unchanged, unchanged
