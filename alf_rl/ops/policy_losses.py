"""Policy-gradient losses and their diagnostics (pure TF, no state).

Notation (rlax): ``log_pi_t`` the log-probability of the action taken at step
t under the policy being trained, ``log_ratio_t = log pi(a_t|s_t) -
log pi_old(a_t|s_t)`` and ``r_t = exp(log_ratio_t)`` the importance ratio
against the behaviour policy, ``adv_t`` the advantage, ``v_t`` a value
estimate, ``target_t`` its regression target, ``mask_t`` in {0, 1} whether
step t counts. Every op is element-wise over any shape ([T, B] or [B]) unless
it says otherwise.

These ops do not stop gradients: the losses stop them on their inputs
(advantages and targets are constants of the policy and value losses).
"""

from typing import Callable, Optional, Union

import tensorflow as tf

from alf_rl.ops import losses, masks

Scalar = Union[float, tf.Tensor]


def policy_gradient_loss(log_pi_t: tf.Tensor, adv_t: tf.Tensor) -> tf.Tensor:
    """The REINFORCE / A2C policy loss ``-A_t log pi(a_t|s_t)``.

    Its gradient is ``-A_t grad log pi(a_t|s_t)``, the policy-gradient
    estimate (Williams 1992; Mnih et al. 2016) when ``adv_t`` is a constant.

    Args:
        log_pi_t: [T, B] float32 log-probability of the action taken.
        adv_t: [T, B] float32 advantage (stop its gradient).
    Returns:
        [T, B] float32.
    """
    return -adv_t * log_pi_t


def clipped_surrogate_loss(r_t: tf.Tensor, adv_t: tf.Tensor,
                           epsilon: Scalar) -> tf.Tensor:
    """PPO's clipped surrogate loss (Schulman et al. 2017, eq. 7), negated.

        L_t = -min(r_t A_t, clip(r_t, 1 - eps, 1 + eps) A_t)

    Inside ``[1 - eps, 1 + eps]`` it equals the plain surrogate ``-r_t A_t``;
    outside, the ratio gets no gradient that would move it further out.

    Args:
        r_t: [T, B] float32 importance ratio ``pi / pi_old`` (with gradient).
        adv_t: [T, B] float32 advantage (stop its gradient).
        epsilon: clip range eps > 0, a float or a scalar tensor.
    Returns:
        [T, B] float32.
    """
    clipped_r_t = tf.clip_by_value(r_t, 1.0 - epsilon, 1.0 + epsilon)
    return -tf.minimum(r_t * adv_t, clipped_r_t * adv_t)


def approx_kl(log_ratio_t: tf.Tensor) -> tf.Tensor:
    """Per-sample estimate of ``KL(pi_old || pi)`` from the log ratio.

        k3_t = (r_t - 1) - log r_t,   r_t = exp(log_ratio_t)

    Schulman's "k3" estimator (as SB3): unbiased for ``a_t ~ pi_old``, never
    negative (``log x <= x - 1``), 0 exactly where ``r_t = 1``, and far less
    noisy over one mini-batch than ``-log r_t``.

    Args:
        log_ratio_t: [T, B] float32 ``log pi(a_t|s_t) - log pi_old(a_t|s_t)``.
    Returns:
        [T, B] float32, >= 0.
    """
    return tf.exp(log_ratio_t) - 1.0 - log_ratio_t


def clip_fraction(r_t: tf.Tensor, epsilon: Scalar) -> tf.Tensor:
    """1.0 where the ratio is outside the clip range: ``|r_t - 1| > eps``.

    Args:
        r_t: [T, B] float32 importance ratio.
        epsilon: clip range eps, a float or a scalar tensor.
    Returns:
        [T, B] float32 in {0, 1} (its mean is the clipped fraction).
    """
    return tf.cast(tf.greater(tf.abs(r_t - 1.0), epsilon), tf.float32)


def clipped_value_loss(
        v_t: tf.Tensor,
        v_old_t: tf.Tensor,
        target_t: tf.Tensor,
        epsilon: Scalar,
        loss_fn: Callable[[tf.Tensor, tf.Tensor], tf.Tensor] = losses.
    element_wise_squared_loss
) -> tf.Tensor:
    """The value loss clipped around the behaviour value (OpenAI baselines).

        v^clip_t = v_old_t + clip(v_t - v_old_t, -eps, eps)
        L_t      = max(l(G_t, v_t), l(G_t, v^clip_t))

    With ``|v_t - v_old_t| <= eps`` it equals ``l(G_t, v_t)``.

    Args:
        v_t: [T, B] float32 current value (with gradient).
        v_old_t: [T, B] float32 value at collection time (stop its gradient).
        target_t: [T, B] float32 target ``G_t``.
        epsilon: clip range eps > 0.
        loss_fn: element-wise ``(target, prediction) -> loss``.
    Returns:
        [T, B] float32.
    """
    clipped_v_t = v_old_t + tf.clip_by_value(v_t - v_old_t, -epsilon,
                                             epsilon)
    return tf.maximum(loss_fn(target_t, v_t), loss_fn(target_t, clipped_v_t))


def normalize_advantages(adv_t: tf.Tensor,
                         mask_t: tf.Tensor,
                         normalize: bool = True,
                         clip: Optional[float] = None,
                         replica_context: masks.ReplicaContext = None
                         ) -> tf.Tensor:
    """Advantages normalized over the valid steps, then clipped.

        A_t <- (A_t - mean_m(A)) / (std_m(A) + 1e-8)   if ``normalize``
        A_t <- clip(A_t, -c, c)                          if ``clip`` = c

    where the moments are over the entries with ``mask_t = 1``
    (``losses.normalize_masked``).

    Args:
        adv_t: [T, B] float32 advantages.
        mask_t: [T, B] float32 in {0, 1}, the steps the moments are over.
        normalize: whether to normalize.
        clip: c > 0 to clip to [-c, c]; None or 0 for no clipping.
        replica_context: the ``tf.distribute`` replica context of the
            update (moments over every replica's steps), or None.
    Returns:
        [T, B] float32 (masked-out entries are transformed too).
    """
    adv_t = tf.convert_to_tensor(adv_t)
    if normalize:
        adv_t = losses.normalize_masked(adv_t, mask_t,
                                        replica_context=replica_context)
    if clip:
        adv_t = tf.clip_by_value(adv_t, -clip, clip)
    return adv_t
