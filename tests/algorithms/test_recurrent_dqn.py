"""Recurrent replay (R2D2) in DqnAlgorithm: state carried from the stored
rollout state, burn-in rows that only refresh it, sequence priorities and
value rescaling, against hand-computed or reference values."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms.dqn_algorithm import DqnAlgorithm
from alf_rl.algorithms.replay_training import (
    training_start_state,
    unroll_training_rows,
)
from alf_rl.algorithms.value_distributions import ScalarValues
from alf_rl.environments.suite_unittest import RNNPolicyUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.networks import QRnnNetwork
from alf_rl.ops.recurrent_replay import (
    inverse_value_rescale,
    sequence_priority,
    value_rescale,
)
from alf_rl.ops.td_targets import n_step_returns
from alf_rl.utils.common import set_random_seed
from recurrent_rollouts import collect_with_states, memory_task_reward


def _make(env, **kwargs):
    kwargs.setdefault('optimizer', tf_keras.optimizers.Adam(1e-2))
    return DqnAlgorithm(
        env.observation_spec(),
        env.action_spec(),
        q_network_ctor=lambda o, a: QRnnNetwork(
            o, a, input_fc_layer_params=(8,), lstm_size=(8,)
        ),
        use_rollout_state=True,
        **kwargs,
    )


def _env(batch_size=4):
    return TFPyEnvironment(
        RNNPolicyUnittestEnv(batch_size, episode_length=5, gap=3)
    )


def test_recurrent_dqn_state_specs_and_rollout_carries_state():
    set_random_seed(0)
    env = _env()
    alg = _make(env)
    ((h, c),) = alg.rollout_state_spec
    assert h.shape == (8,) and c.shape == (8,)
    # Train state: (online, target) states, both started from the stored
    # online state.
    assert alg.train_state_spec == (
        alg.rollout_state_spec,
        alg.rollout_state_spec,
    )
    state = alg.get_initial_rollout_state(4)
    step = alg.rollout(env.reset(), state)
    ((h1, _),) = step.state
    assert h1.shape == (4, 8) and np.abs(h1.numpy()).sum() > 0
    assert alg.train_state_from_rollout_state(step.state) == (
        step.state,
        step.state,
    )
    assert alg.predict(env.reset(), state).state[0][0].shape == (4, 8)


@pytest.mark.parametrize('burn_in', [0, 2])
def test_recurrent_dqn_trains_with_burn_in(burn_in):
    """Only the FIRST row (row 0) shows a non-zero observation; the rows
    after it trained are MID rows with zero observations. With a burn-in
    of 2, row 0 only refreshes the state: no gradient reaches the input
    encoder (whose ReLU sees zeros on every trained row); without, it
    trains."""
    set_random_seed(0)
    env = _env()
    alg = _make(env, burn_in_steps=burn_in)
    exp = collect_with_states(alg, env, 6)
    assert exp.state[0][0].shape == (6, 4, 8)
    variables = {v.name: v for v in alg.trainable_variables}
    before = {k: v.numpy().copy() for k, v in variables.items()}
    loss_info = alg.train(exp)
    assert np.isfinite(loss_info.loss.numpy())
    assert loss_info.extra.td_error.shape == ()
    changed = {
        k: bool(np.any(before[k] != v.numpy())) for k, v in variables.items()
    }
    for name, moved in changed.items():
        if 'input_encoder' in name or 'lstm0/kernel' in name:
            assert moved == (burn_in == 0), name
        else:
            assert moved, name


def test_burn_in_rows_only_refresh_the_state():
    """Rewards of burn-in rows never enter a loss; their observations do
    (through the refreshed state); the update trains on the later rows."""
    set_random_seed(0)
    env = _env()
    alg = _make(env, burn_in_steps=2)
    alg.prepare_off_policy_specs()
    exp = collect_with_states(alg, env, 7)

    def loss(exp):
        state, rows = training_start_state(alg, exp)
        # Burn-in rows are cut off: 5 rows train, their state refreshed
        # from row 0's stored state (no gradient flows into it).
        assert rows.step_type.shape[0] == 5
        with tf.GradientTape() as tape:
            tape.watch(state)
            per_step = alg.calc_loss(_unroll(alg, rows, state))
        grads = tape.gradient(per_step.loss, state)
        return per_step.loss.numpy(), grads

    base, _ = loss(exp)
    assert base.shape == (5, 4)
    reward = exp.reward.numpy().copy()
    reward[:2] += 100.0
    same, _ = loss(exp._replace(reward=tf.constant(reward)))
    np.testing.assert_array_equal(base, same)
    obs = exp.observation.numpy().copy()
    obs[:2] += 3.0
    other, _ = loss(exp._replace(observation=tf.constant(obs)))
    assert np.any(np.abs(other - base) > 1e-6)


def _unroll(alg, rows, state):
    return unroll_training_rows(
        alg, rows, state, alg._rollout_info_spec, alg._train_info_spec
    )


def test_burn_in_leaving_too_few_rows_raises():
    set_random_seed(0)
    env = _env()
    alg = _make(env, burn_in_steps=3)
    exp = collect_with_states(alg, env, 4)
    with pytest.raises(ValueError, match='burn_in_steps 3: it must be >= 5'):
        alg.train(exp)
    with pytest.raises(ValueError, match='burn_in_steps must be >= 0'):
        _make(env, burn_in_steps=-1)
    with pytest.raises(ValueError, match='sequence_priority_eta'):
        _make(env, sequence_priority_eta=1.5)


def test_sequence_priority_of_trained_rows():
    set_random_seed(0)
    env = _env()
    alg = _make(env, burn_in_steps=1, sequence_priority_eta=0.9)
    exp = collect_with_states(alg, env, 6)
    loss_info, priority = alg.train_with_priority(exp)
    assert priority.shape == (4,)
    # Reference: the same update's TD errors (before it changed the net)
    # from a copy of the algorithm is hard to get; instead check the op on
    # the algorithm's own per-step errors via calc_priority.
    alg.prepare_off_policy_specs()
    state, rows = training_start_state(alg, exp)
    info = _unroll(alg, rows, state)
    per_step = alg.calc_loss(info)
    td = per_step.extra.td_error.numpy()
    valid = (rows.step_type.numpy() != 2).astype(np.float32)
    valid[-1] = 0.0
    want = sequence_priority(tf.constant(td), 0.9, tf.constant(valid))
    np.testing.assert_allclose(
        alg.calc_priority(info, per_step), want, rtol=1e-6
    )
    a = np.where(valid > 0, np.abs(td), 0.0)
    np.testing.assert_allclose(
        want, 0.9 * a.max(0) + 0.1 * a.sum(0) / valid.sum(0), rtol=1e-5
    )


def test_value_rescaling_targets():
    set_random_seed(0)
    env = _env()
    alg = _make(
        env,
        value_distribution=ScalarValues(value_rescaling=True),
        gamma=0.9,
    )
    alg.prepare_off_policy_specs()
    exp = collect_with_states(alg, env, 5)
    state, rows = training_start_state(alg, exp)
    info = _unroll(alg, rows, state)
    per_step = alg.calc_loss(info)
    returns = value_rescale(
        n_step_returns(
            info.reward,
            info.discount,
            info.step_type,
            inverse_value_rescale(info.info.target_value),
            0.9,
        )
    )
    np.testing.assert_allclose(
        per_step.extra.td_error.numpy()[:-1],
        (returns - info.info.q_value[:-1]).numpy(),
        rtol=1e-5,
        atol=1e-6,
    )


def _memory_task_reward(recurrent, seed=0, iterations=40):
    """Mean reward of the greedy policy on the rewarded steps of
    ``RNNPolicyUnittestEnv`` (1: remembers the FIRST observation, 0.5:
    chance) after DQN training on whole replayed 10-step unrolls."""
    from alf_rl.networks import QNetwork

    set_random_seed(seed)
    env = TFPyEnvironment(
        RNNPolicyUnittestEnv(32, episode_length=5, gap=3, seed=seed)
    )
    if recurrent:
        alg = _make(
            env,
            gamma=0.9,
            epsilon_greedy=(1.0, 0.1),
            epsilon_decay_steps=20,
            target_update_period=4,
        )
    else:
        alg = DqnAlgorithm(
            env.observation_spec(),
            env.action_spec(),
            q_network_ctor=lambda o, a: QNetwork(o, a, fc_layer_params=(16,)),
            gamma=0.9,
            epsilon_greedy=(1.0, 0.1),
            epsilon_decay_steps=20,
            target_update_period=4,
            optimizer=tf_keras.optimizers.Adam(1e-2),
        )
    alg.prepare_off_policy_specs(32)
    return memory_task_reward(alg, env, recurrent, iterations)


def test_recurrent_dqn_remembers_and_feed_forward_does_not():
    # Observed (seed 0): recurrent 1.00, feed-forward 0.53 (chance 0.5);
    # both together ~22 s of CPU.
    recurrent = _memory_task_reward(True)
    feed_forward = _memory_task_reward(False)
    assert recurrent >= 0.95, (recurrent, feed_forward)
    assert feed_forward <= 0.75, (recurrent, feed_forward)
