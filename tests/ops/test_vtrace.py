"""Tests for alf_rl.ops.vtrace: a numpy reference of the paper's equations
and identities with this library's returns (rlax style)."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.ops import value_ops
from alf_rl.ops.td_targets import n_step_returns
from alf_rl.ops.vtrace import vtrace_returns

F, M, L = 0, 1, 2
GAMMA = 0.9


def _ends(step_types):
    """[T, B] bool: LAST steps and steps followed by a FIRST step."""
    ends = step_types == L
    ends[:-1] |= step_types[1:] == F
    return ends


def _reference(log_rhos, rewards, values, step_types, discounts,
               clip_rho, clip_pg_rho, td_lambda):
    """IMPALA eq. (1) and the section 4.2 advantage as explicit sums.

    For each start s (a column at a time), sums the weighted temporal
    differences of eq. (1) forward to the end of the episode or window,
    written in this library's alignment: the transition out of step t has
    reward ``r[t+1]`` and discount ``d[t+1]``; a LAST step, and a step
    followed by a FIRST step (a seam), has no successor in its episode.
    """
    t_len, batch = values.shape
    ends = _ends(step_types)
    rho = np.exp(log_rhos)
    rho_bar = rho if clip_rho is None else np.minimum(clip_rho, rho)
    pg_rho = rho if clip_pg_rho is None else np.minimum(clip_pg_rho, rho)
    c = td_lambda * np.minimum(1.0, rho)
    vs = np.zeros((t_len - 1, batch))
    adv = np.zeros((t_len - 1, batch))
    for b in range(batch):
        def v_trace(s, b=b):
            if s == t_len - 1 or ends[s, b]:
                return values[s, b]
            total, weight = values[s, b], 1.0
            for t in range(s, t_len - 1):
                if ends[t, b]:
                    break
                delta = rho_bar[t, b] * (rewards[t + 1, b] + discounts[
                    t + 1, b] * values[t + 1, b] - values[t, b])
                total += weight * delta
                weight *= discounts[t + 1, b] * c[t, b]
            return total

        for s in range(t_len - 1):
            vs[s, b] = v_trace(s)
            if not ends[s, b]:
                adv[s, b] = pg_rho[s, b] * (
                    rewards[s + 1, b] + discounts[s + 1, b] * v_trace(s + 1)
                    - values[s, b])
    return vs, adv


def _random_inputs(seed, t_len=7, batch=5):
    rng = np.random.RandomState(seed)
    step_types = rng.choice([F, M, M, M, L], size=(t_len, batch)).astype(
        np.int32)
    # Half the LAST steps terminate (discount 0), half are time limits.
    discounts = np.where((step_types == L) & (rng.rand(t_len, batch) < .5),
                         0.0, GAMMA).astype(np.float32)
    return dict(log_rhos=rng.normal(0., 1., (t_len, batch)).astype(
        np.float32),
                rewards=rng.normal(0., 1., (t_len, batch)).astype(np.float32),
                values=rng.normal(0., 1., (t_len, batch)).astype(np.float32),
                step_types=step_types,
                discounts=discounts)


@pytest.mark.parametrize('clip_rho, clip_pg_rho, td_lambda', [
    (1.0, 1.0, 1.0),
    (1.0, 1.0, 0.9),
    (2.0, 0.5, 0.5),
    (None, None, 1.0),
    (0.3, None, 0.0),
])
@pytest.mark.parametrize('seed', [0, 1, 2])
def test_matches_the_papers_equations(seed, clip_rho, clip_pg_rho,
                                      td_lambda):
    inputs = _random_inputs(seed)
    got = vtrace_returns(**inputs, clip_rho_threshold=clip_rho,
                         clip_pg_rho_threshold=clip_pg_rho,
                         td_lambda=td_lambda)
    vs, adv = _reference(**inputs, clip_rho=clip_rho,
                         clip_pg_rho=clip_pg_rho, td_lambda=td_lambda)
    assert got.vs.shape == (6, 5) and got.pg_advantages.shape == (6, 5)
    np.testing.assert_allclose(got.vs.numpy(), vs, atol=1e-5)
    np.testing.assert_allclose(got.pg_advantages.numpy(), adv, atol=1e-5)


def test_reference_checked_by_hand():
    """One column, T=3, no episode end: the sums written out."""
    log_rhos = np.log([[2.0], [0.5], [1.0]]).astype(np.float32)
    rewards = np.array([[0.], [1.], [2.]], np.float32)
    values = np.array([[1.], [2.], [4.]], np.float32)
    step_types = np.array([[F], [M], [M]], np.int32)
    discounts = np.full((3, 1), 0.5, np.float32)
    got = vtrace_returns(log_rhos, rewards, values, step_types, discounts)
    # rho_bar = (1, .5), c = (1, .5); delta_0 = 1*(1 + .5*2 - 1) = 1,
    # delta_1 = .5*(2 + .5*4 - 2) = 1. vs_1 = 2 + 1 = 3,
    # vs_0 = 1 + 1 + .5*1*1 = 2.5; A_0 = 1*(1 + .5*3 - 1) = 1.5,
    # A_1 = .5*(2 + .5*4 - 2) = 1.
    np.testing.assert_allclose(got.vs.numpy(), [[2.5], [3.]])
    np.testing.assert_allclose(got.pg_advantages.numpy(), [[1.5], [1.]])


@pytest.mark.parametrize('seed', [0, 1])
def test_on_policy_reduces_to_a2c_returns_and_advantages(seed):
    inputs = _random_inputs(seed)
    inputs['log_rhos'] = np.zeros_like(inputs['log_rhos'])
    got = vtrace_returns(**inputs)
    args = (inputs['rewards'], inputs['values'], inputs['step_types'],
            inputs['discounts'])
    returns = value_ops.discounted_return(*args)
    np.testing.assert_allclose(got.vs.numpy(), returns.numpy(), atol=1e-5)
    np.testing.assert_allclose(got.pg_advantages.numpy(),
                               (returns - inputs['values'][:-1]).numpy(),
                               atol=1e-5)
    # The same as td_targets' n-step returns (gamma given separately).
    mask = inputs['discounts'] / GAMMA
    np.testing.assert_allclose(
        got.vs.numpy(),
        n_step_returns(inputs['rewards'], mask, inputs['step_types'],
                       inputs['values'], GAMMA).numpy(), atol=1e-5)


@pytest.mark.parametrize('td_lambda', [0.0, 0.5, 0.95])
def test_on_policy_vs_is_the_td_lambda_return(td_lambda):
    inputs = _random_inputs(3)
    inputs['log_rhos'] = np.zeros_like(inputs['log_rhos'])
    got = vtrace_returns(**inputs, td_lambda=td_lambda)
    advantages, returns = value_ops.advantages_and_returns(
        inputs['rewards'], inputs['values'], inputs['step_types'],
        inputs['discounts'], td_lambda=td_lambda)
    np.testing.assert_allclose(got.vs.numpy(), returns.numpy(), atol=1e-5)
    # The advantage bootstraps from vs_{t+1}: delta_t + d_{t+1} A^lambda_{t+1}
    # (GAE itself only when lambda = 1).
    delta = (inputs['rewards'][1:] + inputs['discounts'][1:] *
             inputs['values'][1:] - inputs['values'][:-1])
    a_tp1 = np.concatenate([advantages.numpy()[1:], np.zeros((1, 5))])
    ends = _ends(inputs['step_types'])
    a_tp1 = np.where(ends[1:], 0.0, a_tp1)
    expected = np.where(ends[:-1], 0.0,
                        delta + inputs['discounts'][1:] * a_tp1)
    np.testing.assert_allclose(got.pg_advantages.numpy(), expected,
                               atol=1e-5)


def test_large_ratios_are_truncated_to_on_policy():
    inputs = _random_inputs(4)
    big = dict(inputs, log_rhos=np.abs(inputs['log_rhos']) + 3.0)
    on_policy = dict(inputs, log_rhos=np.zeros_like(inputs['log_rhos']))
    got = vtrace_returns(**big, clip_rho_threshold=1.0,
                         clip_pg_rho_threshold=1.0)
    expected = vtrace_returns(**on_policy)
    np.testing.assert_allclose(got.vs.numpy(), expected.vs.numpy(),
                               atol=1e-6)
    np.testing.assert_allclose(got.pg_advantages.numpy(),
                               expected.pg_advantages.numpy(), atol=1e-6)
    # Without truncation the large weights do change the result.
    untruncated = vtrace_returns(**big, clip_rho_threshold=None,
                                 clip_pg_rho_threshold=None)
    assert not np.allclose(untruncated.vs.numpy(), expected.vs.numpy())


def test_episode_ends_cut_the_recursion():
    """Column 0 terminates at t=2 (d=0), column 1 hits a time limit at t=2
    (LAST, d=gamma): nothing after step 2 reaches rows 0..1 except, for the
    time limit, v_2; rows from the LAST step on are of the next episode."""
    t_len = 6
    step_types = np.array([[F, F], [M, M], [L, L], [F, F], [M, M], [M, M]],
                          np.int32)
    discounts = np.array([[GAMMA, GAMMA], [GAMMA, GAMMA], [0., GAMMA],
                          [GAMMA, GAMMA], [GAMMA, GAMMA], [GAMMA, GAMMA]],
                         np.float32)
    rng = np.random.RandomState(5)
    log_rhos = rng.normal(0., .5, (t_len, 2)).astype(np.float32)
    rewards = rng.normal(0., 1., (t_len, 2)).astype(np.float32)
    values = rng.normal(0., 1., (t_len, 2)).astype(np.float32)
    got = vtrace_returns(log_rhos, rewards, values, step_types, discounts)
    changed = vtrace_returns(log_rhos, rewards + np.array(
        [[0.], [0.], [0.], [9.], [9.], [9.]], np.float32), values + np.array(
            [[0.], [0.], [0.], [7.], [7.], [7.]], np.float32), step_types,
                             discounts)
    np.testing.assert_allclose(changed.vs.numpy()[:3], got.vs.numpy()[:3])
    np.testing.assert_allclose(changed.pg_advantages.numpy()[:3],
                               got.pg_advantages.numpy()[:3])
    # At the LAST step: vs = v and no advantage.
    np.testing.assert_allclose(got.vs.numpy()[2], values[2])
    np.testing.assert_allclose(got.pg_advantages.numpy()[2], [0., 0.])
    # Step 1 bootstraps with d_2 * v_2: nothing for the terminated column.
    rho_1 = np.minimum(1.0, np.exp(log_rhos[1]))
    np.testing.assert_allclose(
        got.pg_advantages.numpy()[1],
        rho_1 * (rewards[2] + discounts[2] * values[2] - values[1]),
        rtol=1e-6)


def test_no_gradient_flows_into_the_outputs():
    inputs = _random_inputs(6)
    tensors = {k: tf.constant(v) for k, v in inputs.items()}
    with tf.GradientTape(persistent=True) as tape:
        for k in ('log_rhos', 'rewards', 'values'):
            tape.watch(tensors[k])
        out = vtrace_returns(**tensors)
        total = tf.reduce_sum(out.vs) + tf.reduce_sum(out.pg_advantages)
    for k in ('log_rhos', 'rewards', 'values'):
        assert tape.gradient(total, tensors[k]) is None, k


def test_compiled_equals_eager():
    inputs = _random_inputs(7)
    eager = vtrace_returns(**inputs, td_lambda=0.7)
    compiled = tf.function(lambda: vtrace_returns(**inputs,
                                                  td_lambda=0.7))()
    np.testing.assert_allclose(compiled.vs.numpy(), eager.vs.numpy(),
                               atol=1e-6)
    np.testing.assert_allclose(compiled.pg_advantages.numpy(),
                               eager.pg_advantages.numpy(), atol=1e-6)


def test_bad_arguments_are_named():
    inputs = _random_inputs(0)
    with pytest.raises(ValueError, match='clip_rho_threshold.*got 0'):
        vtrace_returns(**inputs, clip_rho_threshold=0.0)
    with pytest.raises(ValueError, match='clip_pg_rho_threshold.*got -1'):
        vtrace_returns(**inputs, clip_pg_rho_threshold=-1.0)
    with pytest.raises(ValueError, match=r'td_lambda.*\[0, 1\].*1.5'):
        vtrace_returns(**inputs, td_lambda=1.5)
    with pytest.raises(ValueError, match=r'log_rhos: expected the shape'):
        vtrace_returns(**dict(inputs, log_rhos=inputs['log_rhos'][:-1]))
    with pytest.raises(ValueError, match='T >= 2'):
        vtrace_returns(**{k: v[:1] for k, v in inputs.items()})
    with pytest.raises(TypeError, match='step_types: expected an integer'):
        vtrace_returns(**dict(inputs, step_types=inputs['step_types'] * 1.))
