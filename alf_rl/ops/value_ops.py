"""Returns and advantages over a window of steps (ALF's convention).

Conventions (see ``alf_rl/data_structures.py``):

- Inputs are time-major ``[T, B]`` (or ``[T]``); ``time_major=False`` takes
  ``[B, T]`` and returns ``[B, T-1]``.
- ``reward[t]`` and ``discount[t]`` arrive *with* step t: they belong to the
  transition that led to step t. So step t's return and advantage use
  ``r_{t+1}``, ``d_{t+1}`` and ``v_{t+1}``.
- ``discount`` already includes gamma: it is ``gamma`` on an ordinary step,
  ``0`` on a terminating LAST step and ``gamma`` on a LAST step caused by a
  time limit (so truncation bootstraps from the value of the LAST step).
- Nothing bootstraps *through* a LAST step: the step after a LAST step is the
  FIRST step of another episode. At a LAST step t the return is ``v_t`` and
  the advantage is 0; the step before it bootstraps with ``d_LAST * v_LAST``.
- Nor *into* a FIRST step: a step followed by a FIRST step ends its window's
  episode as a LAST step does (``alf_rl.ops.masks.cut_seams``). In a single
  environment stream that step is LAST anyway; it differs at a *seam*, a MID
  step followed by a new episode's FIRST step (a collector that started
  over: a resumed run with Python environments, a restarted worker).
- The window's last step T-1 has no successor, so only T-1 results come back.

These ops do not stop gradients; callers using the results as targets should
wrap them (or their inputs) in ``tf.stop_gradient``.
"""

from typing import Optional, Tuple, Union

import numpy as np
import tensorflow as tf

from alf_rl.data_structures import StepType
from alf_rl.ops.masks import cut_seams

TensorLike = Union[tf.Tensor, np.ndarray]


def _prepare(rewards, values, step_types, discounts, time_major):
    """Converts the inputs to time-major tensors and checks their shapes.

    Returns:
        ``(r, v, is_last, d)``: ``r``, ``v``, ``d`` float [T, ...] in the
        dtype of ``values``; ``is_last`` bool [T, ...], True at LAST steps
        and at steps followed by a FIRST step (``cut_seams``).
    """
    values = tf.convert_to_tensor(values)
    if not values.dtype.is_floating:
        raise TypeError("values: expected a float tensor, got %s" %
                        values.dtype.name)
    rewards = tf.cast(tf.convert_to_tensor(rewards), values.dtype)
    discounts = tf.cast(tf.convert_to_tensor(discounts), values.dtype)
    step_types = tf.convert_to_tensor(step_types)
    if step_types.dtype.is_floating or step_types.dtype == tf.bool:
        raise TypeError("step_types: expected an integer StepType tensor, "
                        "got %s" % step_types.dtype.name)

    rank = values.shape.rank
    for name, x in (('rewards', rewards), ('step_types', step_types),
                    ('discounts', discounts)):
        if rank is not None and x.shape.rank is not None and (
                not x.shape.is_compatible_with(values.shape)):
            raise ValueError("%s: expected the shape of values %s, got %s" %
                             (name, values.shape, x.shape))
    if not time_major:
        if rank is not None and rank < 2:
            raise ValueError("time_major=False expects [B, T] inputs, got "
                             "values of shape %s" % values.shape)
        rewards, values, step_types, discounts = [
            _swap_first_two(x)
            for x in (rewards, values, step_types, discounts)
        ]
    t = values.shape[0] if rank else None
    if t is not None and t < 2:
        raise ValueError("values: the time dimension must be at least 2 "
                         "(one step and its successor), got shape %s" %
                         values.shape)
    is_last = tf.equal(cut_seams(step_types),
                       tf.cast(StepType.LAST, step_types.dtype))
    return rewards, values, is_last, discounts


def _swap_first_two(x):
    """[B, T, ...] <-> [T, B, ...]."""
    rank = x.shape.rank
    perm = [1, 0] + list(range(2, rank))
    return tf.transpose(x, perm)


def _finish(x, time_major):
    return x if time_major else _swap_first_two(x)


def discounted_return(rewards: TensorLike,
                      values: TensorLike,
                      step_types: TensorLike,
                      discounts: TensorLike,
                      final_value: Optional[TensorLike] = None,
                      time_major: bool = True) -> tf.Tensor:
    """Discounted returns of the first T-1 steps, restarting at LAST steps.

    G_{T-1} = final_value (default v_{T-1})
    G_t     = v_t                            if step t is LAST (or step t+1
                                             is FIRST: a seam)
    G_t     = r_{t+1} + d_{t+1} * G_{t+1}    otherwise

    So the step before a LAST step gets ``r_LAST + d_LAST * v_LAST``: no
    bootstrap after termination (d=0), a bootstrap from the LAST step's value
    after a time limit (d=gamma).

    Args:
        rewards: [T, B] float, ``r_t`` received on arriving at step t.
        values: [T, B] float, ``v_t`` estimated value of step t.
        step_types: [T, B] int32 ``StepType``.
        discounts: [T, B] float, ``d_t``, gamma times 0/1 termination mask.
        final_value: optional [B] float, the bootstrap value of step T-1
            (used even if step T-1 is LAST); ``values[T-1]`` if ``None``.
        time_major: ``False`` for [B, T] inputs (result then [B, T-1]).

    Returns:
        [T-1, B] returns ``G_0 .. G_{T-2}`` in the dtype of ``values``.
    """
    r_t, v_t, is_last_t, d_t = _prepare(rewards, values, step_types,
                                        discounts, time_major)
    if final_value is None:
        g_final = v_t[-1]
    else:
        g_final = tf.cast(tf.convert_to_tensor(final_value), v_t.dtype)
        g_final = tf.broadcast_to(g_final, tf.shape(v_t[-1]))

    def step(g_tp1, elems):
        r_tp1, d_tp1, v, is_last = elems
        return tf.where(is_last, v, r_tp1 + d_tp1 * g_tp1)

    returns = tf.scan(step, (r_t[1:], d_t[1:], v_t[:-1], is_last_t[:-1]),
                      initializer=g_final,
                      reverse=True)
    return _finish(returns, time_major)


def generalized_advantage_estimation(rewards: TensorLike,
                                     values: TensorLike,
                                     step_types: TensorLike,
                                     discounts: TensorLike,
                                     td_lambda: Union[float, tf.Tensor] = 1.0,
                                     time_major: bool = True) -> tf.Tensor:
    """GAE(λ) advantages of the first T-1 steps, cut at LAST steps.

    delta_t = r_{t+1} + d_{t+1} * v_{t+1} - v_t
    A_{T-1} = 0
    A_t     = 0                                    if step t is LAST (or
                                                   step t+1 is FIRST)
    A_t     = delta_t + λ * d_{t+1} * A_{t+1}      otherwise

    With λ=1, ``A = discounted_return(...) - values[:-1]``; with λ=0, ``A`` is
    the one-step TD error, 0 at LAST steps.

    Args:
        rewards: [T, B] float, ``r_t`` received on arriving at step t.
        values: [T, B] float, ``v_t``.
        step_types: [T, B] int32 ``StepType``.
        discounts: [T, B] float, ``d_t`` (gamma already included).
        td_lambda: λ in [0, 1], a Python float or a scalar tensor.
        time_major: ``False`` for [B, T] inputs (result then [B, T-1]).

    Returns:
        [T-1, B] advantages ``A_0 .. A_{T-2}`` in the dtype of ``values``.
    """
    if isinstance(td_lambda, (int, float)) and not 0.0 <= td_lambda <= 1.0:
        raise ValueError("td_lambda: expected a value in [0, 1], got %r" %
                         (td_lambda, ))
    r_t, v_t, is_last_t, d_t = _prepare(rewards, values, step_types,
                                        discounts, time_major)
    lambda_ = tf.cast(td_lambda, v_t.dtype)
    delta_t = r_t[1:] + d_t[1:] * v_t[1:] - v_t[:-1]

    def step(a_tp1, elems):
        delta, d_tp1, is_last = elems
        return tf.where(is_last, tf.zeros_like(delta),
                        delta + lambda_ * d_tp1 * a_tp1)

    advantages = tf.scan(step, (delta_t, d_t[1:], is_last_t[:-1]),
                         initializer=tf.zeros_like(v_t[-1]),
                         reverse=True)
    return _finish(advantages, time_major)


def advantages_and_returns(rewards: TensorLike,
                           values: TensorLike,
                           step_types: TensorLike,
                           discounts: TensorLike,
                           td_lambda: Union[float, tf.Tensor] = 1.0,
                           time_major: bool = True
                           ) -> Tuple[tf.Tensor, tf.Tensor]:
    """GAE(λ) advantages and the TD(λ) returns they imply, in one pass.

    A^λ_t = ``generalized_advantage_estimation`` (0 at LAST steps)
    G^λ_t = A^λ_t + v_t

    So ``G^λ_t = v_t`` at LAST steps and otherwise
    ``G^λ_t = r_{t+1} + d_{t+1} * ((1-λ) v_{t+1} + λ G^λ_{t+1})``, with
    ``G^λ_{T-1} = v_{T-1}``; with λ=1, ``G^λ`` is ``discounted_return``.

    Args:
        rewards: [T, B] float, ``r_t`` received on arriving at step t.
        values: [T, B] float, ``v_t``.
        step_types: [T, B] int32 ``StepType``.
        discounts: [T, B] float, ``d_t`` (gamma already included).
        td_lambda: λ in [0, 1].
        time_major: ``False`` for [B, T] inputs (results then [B, T-1]).

    Returns:
        ``(advantages, returns)``, both [T-1, B] in the dtype of ``values``.
    """
    advantages = generalized_advantage_estimation(
        rewards, values, step_types, discounts, td_lambda, time_major)
    values = tf.convert_to_tensor(values)
    v_tm1 = values[:-1] if time_major else values[:, :-1]
    return advantages, advantages + v_tm1


def td_lambda_return(rewards: TensorLike,
                     values: TensorLike,
                     step_types: TensorLike,
                     discounts: TensorLike,
                     td_lambda: Union[float, tf.Tensor] = 1.0,
                     time_major: bool = True) -> tf.Tensor:
    """TD(λ) returns of the first T-1 steps: GAE(λ) advantages plus values.

    The returns of ``advantages_and_returns``: same arguments, and the
    equation is there.

    Returns:
        [T-1, B] (``[B, T-1]`` when not ``time_major``) λ-returns in the
        dtype of ``values``.
    """
    return advantages_and_returns(rewards, values, step_types, discounts,
                                  td_lambda, time_major)[1]

