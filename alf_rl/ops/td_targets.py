"""Temporal-difference targets of Q learning (pure TF, no state).

Conventions as in ``alf_rl.ops.value_ops``: time-major ``[T, B]``; ``r_t``
and ``discount_t`` arrive *with* step t (they belong to the transition into
step t), so the target of ``q_tm1 = Q(s_{t-1}, a_{t-1})`` is built from
``r_t``, ``discount_t`` and the bootstrap value ``v_t`` of step t.
``discount_t`` is the environment's 0/1 termination mask; ``gamma`` is
separate. Every target is returned with its gradient stopped.
"""

from typing import Tuple, Union

import tensorflow as tf

from alf_rl.data_structures import StepType
from alf_rl.ops.masks import cut_seams
from alf_rl.ops.value_ops import discounted_return

Scalar = Union[float, tf.Tensor]


def one_step_td_target(r_t: tf.Tensor, discount_t: tf.Tensor,
                       v_t: tf.Tensor, gamma: Scalar) -> tf.Tensor:
    """``y_{t-1} = r_t + gamma * discount_t * v_t``, gradient stopped.

    The target of DDPG, TD3, SARSA and SAC critics; for SAC ``v_t`` is the
    soft value (``soft_state_value``), so no separate "soft target" exists.
    The target of a row whose successor is FIRST (a LAST step, or a seam:
    ``alf_rl.ops.masks.cut_seams``) means nothing; the caller masks it.

    Args:
        r_t: [T-1, B] float32, rewards arriving with steps 1..T-1.
        discount_t: [T-1, B] float32, 0 where step t terminated the episode.
        v_t: [T-1, B] float32 bootstrap values of steps 1..T-1.
        gamma: discount factor.
    Returns:
        [T-1, B] float32 targets of ``q_tm1`` (steps 0..T-2).
    """
    return tf.stop_gradient(r_t + gamma * discount_t * v_t)


def n_step_returns(r_t: tf.Tensor, discount_t: tf.Tensor,
                   step_type: tf.Tensor, v_t: tf.Tensor,
                   gamma: Scalar) -> tf.Tensor:
    """Returns over every row's available horizon, cut at LAST steps.

    ``G_t = r_{t+1} + gamma * discount_{t+1} * G_{t+1}``;
    ``G_{T-1} = v_{T-1}``; ``G_t = v_t`` at a LAST step t and at a step t
    followed by a FIRST step (a seam: ``alf_rl.ops.masks.cut_seams``). Row 0 of a
    [T, B] window gets a (T-1)-step return, row T-2 a one-step return (so
    with T = 2 this is ``one_step_td_target``).

    Args:
        r_t: [T, B] float32 rewards, ``r_t`` arriving with step t.
        discount_t: [T, B] float32 0/1 termination mask (gamma excluded).
        step_type: [T, B] int32 ``StepType``.
        v_t: [T, B] float32 bootstrap values.
        gamma: discount factor.
    Returns:
        [T-1, B] float32 returns ``G_0 .. G_{T-2}``, gradient stopped.
    """
    return tf.stop_gradient(
        discounted_return(r_t, v_t, step_type, gamma * discount_t))


def fold_n_step(r_t: tf.Tensor, discount_t: tf.Tensor,
                step_type: tf.Tensor,
                gamma: Scalar) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Row 0's n-step transition of a window as one step: where it
    bootstraps, and the reward and discount that lead there.

    With k the first row in 1..T-1 that is LAST (or a seam: followed by a
    FIRST step, ``alf_rl.ops.masks.cut_seams``), T-1 if none:

        R = sum_{j=1}^{k} gamma^{j-1} (prod_{i=1}^{j-1} discount_i) r_j
        D = gamma^{k-1} prod_{i=1}^{k} discount_i

    so that ``R + gamma * D * v_k`` is row 0's return ``G_0`` of
    ``n_step_returns`` (the same for every bootstrap value ``v_k``, scalar
    or distributional). A [2, B] window whose row 1 is step k with reward R
    and discount D therefore trains row 0 as the [T, B] window would, with
    the networks run on two rows instead of T.

    Args:
        r_t: [T, B] float32 rewards, ``r_t`` arriving with step t (T >= 2).
        discount_t: [T, B] float32 0/1 termination mask (gamma excluded).
        step_type: [T, B] int32 ``StepType``.
        gamma: discount factor.
    Returns:
        ``(k, R, D)``: [B] int32 bootstrap rows (1..T-1) and [B] float32
        folded rewards and discounts.
    """
    r_t = tf.convert_to_tensor(r_t, tf.float32)
    discount_t = tf.cast(discount_t, tf.float32)
    is_last = tf.equal(cut_seams(tf.convert_to_tensor(step_type)),
                       tf.cast(StepType.LAST, step_type.dtype))[1:]
    # Step j (row j-1 here) is in the return unless a LAST step came
    # before it among steps 1..j-1.
    ended = tf.cumsum(tf.cast(is_last, tf.float32), axis=0, exclusive=True)
    live = tf.cast(tf.equal(ended, 0.0), tf.float32)
    k = tf.cast(tf.reduce_sum(live, axis=0), tf.int32)
    # w_j = gamma^{j-1} prod_{i<j} discount_i.
    weights = tf.math.cumprod(gamma * discount_t[1:], axis=0, exclusive=True)
    reward = tf.reduce_sum(live * weights * r_t[1:], axis=0)
    at_k = tf.stack([k - 1, tf.range(tf.shape(k)[0])], axis=-1)
    discount = (tf.gather_nd(weights, at_k) *
                tf.gather_nd(discount_t[1:], at_k))
    return k, tf.stop_gradient(reward), tf.stop_gradient(discount)


def soft_state_value(q_t: tf.Tensor, log_pi_t: tf.Tensor,
                     alpha: Scalar) -> tf.Tensor:
    """One-sample soft value ``v_t = q_t - alpha * log pi(a_t|s_t)``.

    With ``alpha = 0`` it is ``q_t``.

    Args:
        q_t: [B] (or [T, B]) float32 ``Q(s_t, a_t)`` at a sampled ``a_t``.
        log_pi_t: same shape, ``log pi(a_t|s_t)``.
        alpha: [] float32 temperature.
    Returns:
        Same shape float32.
    """
    return q_t - alpha * log_pi_t


def expected_soft_state_value(pi_t: tf.Tensor, log_pi_t: tf.Tensor,
                              q_t: tf.Tensor, alpha: Scalar) -> tf.Tensor:
    """Exact soft value of a categorical policy.

    ``v_t = sum_a pi(a|s_t) (q_t(a) - alpha * log pi(a|s_t))``; with
    ``alpha = 0`` it is the policy's expected ``Q``.

    Args:
        pi_t: [B, n] float32 ``pi(.|s_t)``.
        log_pi_t: [B, n] float32 ``log pi(.|s_t)``.
        q_t: [B, n] float32 ``Q(s_t, .)``.
        alpha: [] float32 temperature.
    Returns:
        [B] float32.
    """
    return tf.reduce_sum(pi_t * (q_t - alpha * log_pi_t), axis=-1)
