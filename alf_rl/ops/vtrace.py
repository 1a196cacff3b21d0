"""V-trace: off-policy value targets and policy-gradient advantages.

Espeholt et al. 2018, "IMPALA: Scalable Distributed Deep-RL with Importance
Weighted Actor-Learner Architectures", eq. (1) and section 4.2. Actors act
with a behaviour policy ``mu`` (a stale copy of the policy); the learner
trains the current policy ``pi`` on their unrolls, correcting with truncated
importance weights of the actions taken.

In the paper's indexing (reward ``r_t`` of the transition out of ``x_t``)::

    v_s      = V(x_s) + sum_{t>=s} gamma^{t-s} (prod_{i=s}^{t-1} c_i) dV_t
    dV_t     = rho_t (r_t + gamma V(x_{t+1}) - V(x_t))
    rho_t    = min(rho_bar, pi(a_t|x_t) / mu(a_t|x_t))
    c_i      = lambda * min(1, pi(a_i|x_i) / mu(a_i|x_i))
    A^pg_s   = rho^pg_s (r_s + gamma v_{s+1} - V(x_s)),
    rho^pg_s = min(rho_bar_pg, pi(a_s|x_s) / mu(a_s|x_s))

Conventions as in ``alf_rl.ops.value_ops``: time-major ``[T, B]``; the reward
and discount stored at step t belong to the transition *into* step t, so the
transition out of step t has ``r_{t+1}`` and ``d_{t+1}`` (gamma already
folded in: 0 after termination, gamma after a time limit); nothing
bootstraps through a LAST step, nor into a FIRST step (a step followed by
one counts as LAST: ``alf_rl.ops.masks.cut_seams``); row T-1 only
bootstraps, so T-1 rows come back. In that indexing the recursion computed here is::

    delta_t        = rho_t (r_{t+1} + d_{t+1} v_{t+1} - v_t)
    vs_{T-1}       = v_{T-1}
    vs_t - v_t     = 0                                     at a LAST step t
    vs_t - v_t     = delta_t + d_{t+1} c_t (vs_{t+1} - v_{t+1})   otherwise
    A^pg_t         = 0                                     at a LAST step t
    A^pg_t         = rho^pg_t (r_{t+1} + d_{t+1} vs_{t+1} - v_t)  otherwise

Identities (tested): with ``log_rhos = 0`` and ``td_lambda = 1``, ``vs`` is
``value_ops.discounted_return`` and ``A^pg = vs - v``, the advantages of
A2C; with ``log_rhos = 0`` and any lambda, ``vs`` is the TD(lambda) return
of ``value_ops.advantages_and_returns``.

Deviations: the trace cutoff ``c_bar`` is fixed to 1, as in the paper's
experiments; lambda multiplies the truncated trace as section 4.1 of the
paper suggests.
"""

from typing import Any, NamedTuple, Optional, Union

import numpy as np
import tensorflow as tf

from alf_rl.data_structures import StepType
from alf_rl.ops.masks import cut_seams

TensorLike = Union[tf.Tensor, np.ndarray]

class VTraceReturns(NamedTuple):
    """What ``vtrace_returns`` computes."""
    vs: Any = ()  # [T-1, B] V-trace value targets vs_0 .. vs_{T-2}
    pg_advantages: Any = ()  # [T-1, B] policy-gradient advantages A^pg_t


def vtrace_returns(log_rhos: TensorLike,
                   rewards: TensorLike,
                   values: TensorLike,
                   step_types: TensorLike,
                   discounts: TensorLike,
                   clip_rho_threshold: Optional[float] = 1.0,
                   clip_pg_rho_threshold: Optional[float] = 1.0,
                   td_lambda: float = 1.0) -> VTraceReturns:
    """V-trace targets and advantages of the first T-1 steps (see module).

    Args:
        log_rhos: [T, B] float, ``log pi(a_t|s_t) - log mu(a_t|s_t)`` of the
            action taken at step t; row T-1 is not used (its action has no
            successor in the window).
        rewards: [T, B] float, ``r_t`` received on arriving at step t.
        values: [T, B] float, ``v_t`` the current value estimate of step t;
            ``v_{T-1}`` is the bootstrap value.
        step_types: [T, B] int32 ``StepType``.
        discounts: [T, B] float, ``d_t`` (gamma already included).
        clip_rho_threshold: ``rho_bar`` > 0 truncating the weights of the
            temporal differences; None: no truncation.
        clip_pg_rho_threshold: ``rho_bar_pg`` > 0 truncating the weights of
            the policy-gradient advantages; None: no truncation.
        td_lambda: lambda in [0, 1] scaling the traces ``c_t``.
    Returns:
        ``VTraceReturns(vs, pg_advantages)``, both [T-1, B] in the dtype of
        ``values``, gradients stopped (they are targets).
    Raises:
        ValueError: a threshold <= 0, lambda outside [0, 1], shapes that
            differ from ``values``', or T < 2.
        TypeError: float ``values`` or integer ``step_types`` expected.
    """
    for name, x in (('clip_rho_threshold', clip_rho_threshold),
                    ('clip_pg_rho_threshold', clip_pg_rho_threshold)):
        if x is not None and not x > 0:
            raise ValueError("%s: expected None or a value > 0, got %r" %
                             (name, x))
    if not 0.0 <= td_lambda <= 1.0:
        raise ValueError("td_lambda: expected a value in [0, 1], got %r" %
                         (td_lambda, ))
    log_rho_t, r_t, v_t, is_last_t, d_t = _time_major_inputs(
        log_rhos, rewards, values, step_types, discounts)
    rho_t = tf.exp(log_rho_t[:-1])
    clipped_rho_t = _truncate(rho_t, clip_rho_threshold)
    c_t = td_lambda * tf.minimum(tf.ones_like(rho_t), rho_t)
    delta_t = clipped_rho_t * (r_t[1:] + d_t[1:] * v_t[1:] - v_t[:-1])

    def step(acc_tp1, elems):
        # acc_t = vs_t - v_t
        delta, d_tp1, c, is_last = elems
        return tf.where(is_last, tf.zeros_like(delta),
                        delta + d_tp1 * c * acc_tp1)

    vs_minus_v = tf.scan(step, (delta_t, d_t[1:], c_t, is_last_t[:-1]),
                         initializer=tf.zeros_like(v_t[-1]),
                         reverse=True)
    vs_t = vs_minus_v + v_t[:-1]
    vs_tp1 = tf.concat([vs_t[1:], v_t[-1:]], axis=0)
    pg_advantages = tf.where(
        is_last_t[:-1], tf.zeros_like(vs_t),
        _truncate(rho_t, clip_pg_rho_threshold) *
        (r_t[1:] + d_t[1:] * vs_tp1 - v_t[:-1]))
    return VTraceReturns(vs=tf.stop_gradient(vs_t),
                         pg_advantages=tf.stop_gradient(pg_advantages))


def _truncate(rho_t, threshold):
    """``min(threshold, rho_t)``, or ``rho_t`` when ``threshold`` is None."""
    if threshold is None:
        return rho_t
    return tf.minimum(tf.cast(threshold, rho_t.dtype), rho_t)


def _time_major_inputs(log_rhos, rewards, values, step_types, discounts):
    """Tensors in the dtype of ``values`` (``is_last`` bool), checked to
    have ``values``' [T, B] shape with T >= 2."""
    values = tf.convert_to_tensor(values)
    if not values.dtype.is_floating:
        raise TypeError("values: expected a float tensor, got %s" %
                        values.dtype.name)
    step_types = tf.convert_to_tensor(step_types)
    if step_types.dtype.is_floating or step_types.dtype == tf.bool:
        raise TypeError("step_types: expected an integer StepType tensor, "
                        "got %s" % step_types.dtype.name)
    log_rhos, rewards, discounts = [
        tf.cast(tf.convert_to_tensor(x), values.dtype)
        for x in (log_rhos, rewards, discounts)]
    for name, x in (('log_rhos', log_rhos), ('rewards', rewards),
                    ('step_types', step_types), ('discounts', discounts)):
        if not x.shape.is_compatible_with(values.shape):
            raise ValueError("%s: expected the shape of values %s, got %s" %
                             (name, values.shape, x.shape))
    if values.shape.rank is not None and (
            values.shape.rank == 0 or
            (values.shape[0] is not None and values.shape[0] < 2)):
        raise ValueError("values: expected [T, B] with T >= 2 (a step and "
                         "its successor), got shape %s" % values.shape)
    is_last = tf.equal(cut_seams(step_types),
                       tf.cast(StepType.LAST, step_types.dtype))
    return log_rhos, rewards, values, is_last, discounts
