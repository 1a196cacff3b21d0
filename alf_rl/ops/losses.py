"""Element-wise losses, actor losses of Q-based methods and advantage
helpers (pure TF, no state).

Names inside the math follow rlax: ``a_t`` an action, ``q_t`` a Q value,
``log_pi_t`` a log-probability, ``dqda_t`` the critic's gradient with respect
to the action.
"""

from typing import List, Optional, Union

import tensorflow as tf

from alf_rl.ops.masks import ReplicaContext, replica_sum

from alf_rl.utils.nest import Nest
Scalar = Union[float, tf.Tensor]


def element_wise_squared_loss(target: tf.Tensor,
                              prediction: tf.Tensor) -> tf.Tensor:
    """0.5 * (target - prediction)^2, element-wise.

    Args:
        target: [T, B] (any shape) float32.
        prediction: same shape.
    Returns:
        Same shape as the inputs.
    """
    return 0.5 * tf.square(target - prediction)


def element_wise_huber_loss(target: tf.Tensor, prediction: tf.Tensor,
                            delta: float = 1.0) -> tf.Tensor:
    """Huber loss with threshold ``delta``, element-wise.

    ``0.5 x^2`` for ``|x| <= delta``, ``delta (|x| - 0.5 delta)`` beyond,
    with ``x = target - prediction``.

    Args:
        target: [T, B] (any shape) float32.
        prediction: same shape.
        delta: the threshold (> 0).
    Returns:
        Same shape as the inputs.
    """
    x = tf.abs(target - prediction)
    quadratic = tf.minimum(x, delta)
    return 0.5 * tf.square(quadratic) + delta * (x - quadratic)


def normalize_masked(x_t: tf.Tensor, mask_t: tf.Tensor,
                     epsilon: float = 1e-8,
                     replica_context: ReplicaContext = None) -> tf.Tensor:
    """(x - mean) / (std + epsilon) with moments over entries where mask=1.

    Args:
        x_t: [T, B] float32.
        mask_t: [T, B] float32 in {0, 1}.
        epsilon: added to the std.
        replica_context: the ``tf.distribute`` replica context of the
            update (moments over every replica's entries), or None.
    Returns:
        [T, B] float32; masked-out entries are normalized too (and usually
        ignored by the caller).
    """
    def _sum(x):
        return replica_sum(tf.reduce_sum(x), replica_context)

    n = tf.maximum(_sum(mask_t), 1.0)
    mean = _sum(x_t * mask_t) / n
    var = _sum(tf.square(x_t - mean) * mask_t) / n
    return (x_t - mean) / (tf.sqrt(var) + epsilon)


def explained_variance(returns_t: tf.Tensor, values_t: tf.Tensor,
                       mask_t: tf.Tensor,
                       replica_context: ReplicaContext = None) -> tf.Tensor:
    """1 - Var[returns - values] / Var[returns] over masked entries.

    Args:
        returns_t: [T, B] float32 targets.
        values_t: [T, B] float32 predictions.
        mask_t: [T, B] float32 in {0, 1}.
        replica_context: the ``tf.distribute`` replica context of the
            update (variances over every replica's entries), or None.
    Returns:
        [] float32 (1 is perfect, 0 is no better than a constant).
    """
    def _sum(x):
        return replica_sum(tf.reduce_sum(x), replica_context)

    n = tf.maximum(_sum(mask_t), 1.0)

    def _var(x):
        mean = _sum(x * mask_t) / n
        return _sum(tf.square(x - mean) * mask_t) / n

    return 1.0 - _var(returns_t - values_t) / tf.maximum(_var(returns_t), 1e-8)


def _sum_but_batch(x: tf.Tensor) -> tf.Tensor:
    """[B] sum of a [B, ...] tensor over everything but its first dim."""
    return tf.reduce_sum(tf.reshape(x, [tf.shape(x)[0], -1]), axis=-1)


def dqda_loss(a_t: Nest, dqda_t: Nest,
              dqda_clipping: Optional[float] = None) -> tf.Tensor:
    """Deterministic policy gradient as a loss (Silver et al. 2014).

    ``L = sum 0.5 * (sg(a_t + clip(dqda_t, -c, c)) - a_t)^2`` over the action
    entries. Its gradient with respect to ``a_t`` is ``-clip(dqda_t)``
    (ascend Q), and the stopped target keeps the critic out of the actor's
    loss. Its value is ``0.5 * |clip(dqda_t)|^2`` (0 at a stationary point
    of Q).

    Args:
        a_t: nest of [B, ...] float32, ``mu(s_t)`` (differentiable).
        dqda_t: matching nest of [B, ...] float32, ``dQ/da`` at ``a_t``.
        dqda_clipping: optional bound ``c`` on each entry of ``dqda_t``.
    Returns:
        [B] float32, summed over action entries and leaves.
    """

    def _leaf(a, g):
        if dqda_clipping is not None:
            g = tf.clip_by_value(g, -dqda_clipping, dqda_clipping)
        return _sum_but_batch(0.5 * tf.square(tf.stop_gradient(a + g) - a))

    return tf.add_n(tf.nest.flatten(tf.nest.map_structure(_leaf, a_t,
                                                          dqda_t)))


def soft_actor_loss(log_pi_t: tf.Tensor, q_t: tf.Tensor,
                    a_t: List[tf.Tensor], dqda_t: List[tf.Tensor],
                    alpha: Scalar) -> tf.Tensor:
    """Reparameterized SAC actor loss with the critic's gradient stopped.

    Value ``alpha * log_pi_t - q_t``; gradient
    ``alpha * dlog_pi_t - sg(dqda_t) * da_t/dtheta``, through the sample
    ``a_t`` only (the critics' variables get none of it, as the surrogate
    ``sum dqda_t * (a_t - sg(a_t))`` is 0 in value).

    Args:
        log_pi_t: [B] float32 ``log pi(a_t|s_t)`` of a reparameterized
            sample.
        q_t: [B] float32 ``Q(s_t, a_t)`` (stopped here).
        a_t: list of [B, ...] float32 sampled action leaves.
        dqda_t: matching list of ``dQ/da`` at ``a_t`` (stopped here).
        alpha: [] float32 temperature (stopped by the caller).
    Returns:
        [B] float32.
    """
    dqda_t = [tf.stop_gradient(d) for d in dqda_t]
    surrogate = tf.add_n([
        _sum_but_batch(d * (x - tf.stop_gradient(x)))
        for d, x in zip(dqda_t, a_t)
    ])
    return alpha * log_pi_t - (tf.stop_gradient(q_t) + surrogate)


def discrete_soft_actor_loss(pi_t: tf.Tensor, log_pi_t: tf.Tensor,
                             q_t: tf.Tensor, alpha: Scalar) -> tf.Tensor:
    """SAC-discrete actor loss ``sum_a pi (alpha log pi - sg(q_t))``.

    ``q_t`` and ``alpha`` are stopped: only the policy is trained. With
    ``alpha = 0`` it is minus the policy's expected Q.

    Args:
        pi_t: [B, n] float32 ``pi(.|s_t)``.
        log_pi_t: [B, n] float32 ``log pi(.|s_t)``.
        q_t: [B, n] float32 ``Q(s_t, .)`` (e.g. the min of twin critics).
        alpha: [] float32 temperature.
    Returns:
        [B] float32.
    """
    q_t = tf.stop_gradient(q_t)
    alpha = tf.stop_gradient(alpha)
    return tf.reduce_sum(pi_t * (alpha * log_pi_t - q_t), axis=-1)


def temperature_loss(log_alpha: tf.Tensor, entropy_t: tf.Tensor,
                     target_entropy: float) -> tf.Tensor:
    """``log_alpha * sg(H_t - H_target)`` (SAC's temperature loss).

    Equal to ``-log_alpha * (log pi + H_target)`` for the one-sample
    estimate ``H_t = -log pi``. Descending it lowers alpha when the
    entropy exceeds the target and raises it otherwise.

    Args:
        log_alpha: [] float32 (a variable).
        entropy_t: [B] float32 entropy estimate.
        target_entropy: the target ``H_target``.
    Returns:
        [B] float32.
    """
    return log_alpha * tf.stop_gradient(entropy_t - target_entropy)
