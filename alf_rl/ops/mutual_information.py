"""Variational lower bounds on mutual information (pure TF, no state).

Each bound is computed from the scores of a statistics network ``T``:
``t_joint = T(x_i, y_i)`` on samples of the joint ``p(x, y)`` and
``t_marginal = T(x_i, y'_j)`` on samples of the product of marginals
``p(x) p(y)`` (in practice ``y'`` is ``y`` shuffled within the batch).
``t_joint`` is [B] (or [T, B]); ``t_marginal`` is any shape, every element
one sample of the product of marginals: [B] for one shuffled partner per
sample, [B, B] for all pairs ``T(x_i, y_j)``. The expectations are means over
every element.

* Donsker-Varadhan (MINE, Belghazi et al. 2018):
  ``I >= E_p[T] - log E_q[e^T]``. Its minibatch gradient
  ``E_p[grad T] - E_q[e^T grad T] / E_q[e^T]`` is biased by the minibatch
  estimate of the denominator; MINE divides by a moving average of
  ``E_q[e^T]`` instead (``dv_loss``'s ``log_denominator``, maintained with
  ``next_log_moving_average``).
* NWJ / KL (Nguyen, Wainwright and Jordan 2010, the f-divergence bound of
  the KL divergence): ``I >= E_p[T] - E_q[e^(T - 1)]``, unbiased on
  minibatches; optimal at ``T = 1 + log p(x, y) / (p(x) p(y))``.
* JSD (Hjelm et al. 2019, Deep InfoMax):
  ``E_p[-softplus(-T)] - E_q[softplus(T)]``, which equals
  ``2 JSD(p || q) - 2 log 2`` at its optimum: a bound on the Jensen-Shannon
  divergence, not on the MI, but its optimal ``T`` is the log density ratio
  ``log p(x, y) / (p(x) p(y))``, whose mean under ``p`` is the MI.

Here ``p`` is the joint and ``q`` the product of marginals. Every ``*_loss``
returns per-sample losses of ``t_joint``'s shape whose mean equals minus the
bound, and whose gradient is minus the bound's gradient (for ``dv_loss``,
the MINE-corrected one), so that minimizing it maximizes the bound. Under a
``tf.distribute`` strategy the means are per replica.
"""

from typing import Optional, Union

import numpy as np
import tensorflow as tf

Scalar = Union[float, tf.Tensor]


def log_mean_exp(t: tf.Tensor) -> tf.Tensor:
    """``log mean(e^t)`` over every element, computed stably (logsumexp).

    Args:
        t: float32 tensor of any non-empty shape.
    Returns:
        [] float32.
    """
    n = tf.cast(tf.size(t), t.dtype)
    return tf.reduce_logsumexp(t) - tf.math.log(n)


def dv_bound(t_joint: tf.Tensor, t_marginal: tf.Tensor) -> tf.Tensor:
    """Donsker-Varadhan bound ``mean(t_joint) - log mean(e^t_marginal)``.

    Args:
        t_joint: [B] (any shape) float32 scores on joint samples.
        t_marginal: [B] or [B, B] (any shape) float32 scores on samples of
            the product of marginals.
    Returns:
        [] float32, in nats.
    """
    return tf.reduce_mean(t_joint) - log_mean_exp(t_marginal)


def dv_pointwise_mi(t_joint: tf.Tensor, t_marginal: tf.Tensor) -> tf.Tensor:
    """Per-sample DV estimate ``t_joint_i - log mean(e^t_marginal)``.

    At the optimum ``T = log p(x, y) / (p(x) p(y)) + c`` this is the
    pointwise MI of sample i; its mean is ``dv_bound``.

    Args:
        t_joint: [B] (any shape) float32.
        t_marginal: any shape float32.
    Returns:
        float32 of ``t_joint``'s shape.
    """
    return t_joint - log_mean_exp(t_marginal)


def dv_loss(t_joint: tf.Tensor, t_marginal: tf.Tensor,
            log_denominator: Optional[tf.Tensor] = None) -> tf.Tensor:
    """Per-sample loss of the DV bound with MINE's corrected gradient.

    ``loss_i = -t_joint_i + sg(L) + R - sg(R)`` with
    ``L = log mean(e^t_marginal)``, ``R = exp(L - sg(log_denominator))``
    and ``sg`` the stop-gradient. Its mean is ``-dv_bound`` (``R - sg(R)``
    is 0) and its mean's gradient is
    ``-mean(grad t_joint) + mean(e^t_marginal grad t_marginal) / D`` with
    ``D = exp(log_denominator)``: the DV gradient with the minibatch
    denominator ``mean(e^t_marginal)`` replaced by ``D`` (MINE's moving
    average). ``R`` stays finite whenever ``D`` includes a positive share
    of this batch's ``mean(e^t_marginal)``, as a moving average does.

    Args:
        t_joint: [B] (or [T, B]) float32 scores on joint samples.
        t_marginal: any shape float32 scores on marginal samples.
        log_denominator: [] float32 log of the denominator (gradient
            ignored); None uses this batch's ``L`` (the plain, biased DV
            gradient).
    Returns:
        float32 of ``t_joint``'s shape.
    """
    lme = log_mean_exp(t_marginal)
    if log_denominator is None:
        log_denominator = lme
    ratio = tf.exp(lme - tf.stop_gradient(log_denominator))
    return (-t_joint + tf.stop_gradient(lme) +
            (ratio - tf.stop_gradient(ratio)))


def next_log_moving_average(log_average: tf.Tensor, log_value: tf.Tensor,
                            rate: Scalar,
                            initialized: Union[bool, tf.Tensor]) -> tf.Tensor:
    """Log of the moving average ``(1 - rate) A + rate v``, from logs.

    ``log((1 - rate) e^log_average + rate e^log_value)`` (a logaddexp, so
    the average of ``e^T`` neither overflows nor underflows); before the
    first update (``initialized`` false) the average is ``v`` itself.

    Args:
        log_average: [] float32 log of the current average.
        log_value: [] float32 log of the new value.
        rate: the weight of the new value, in (0, 1].
        initialized: [] bool, whether ``log_average`` holds an average yet.
    Returns:
        [] float32, gradient stopped.
    """
    rate = tf.cast(rate, log_value.dtype)
    mixed = tf.reduce_logsumexp(
        tf.stack([tf.math.log1p(-rate) + log_average,
                  tf.math.log(rate) + log_value]))
    # log1p(-1) = -inf and 0 * inf would give nan: rate = 1 is the new value.
    mixed = tf.where(rate >= 1.0, log_value, mixed)
    return tf.stop_gradient(tf.where(initialized, mixed, log_value))


def nwj_bound(t_joint: tf.Tensor, t_marginal: tf.Tensor) -> tf.Tensor:
    """NWJ (f-divergence / KL) bound ``mean(t_joint) - mean(e^(t_marginal-1))``.

    Args:
        t_joint: [B] (any shape) float32.
        t_marginal: any shape float32.
    Returns:
        [] float32, in nats.
    """
    return tf.reduce_mean(t_joint) - tf.reduce_mean(tf.exp(t_marginal - 1.0))


def nwj_pointwise_mi(t_joint: tf.Tensor, t_marginal: tf.Tensor) -> tf.Tensor:
    """Per-sample NWJ estimate ``t_joint_i - mean(e^(t_marginal - 1))``.

    Its mean is ``nwj_bound``; at the optimum it is the pointwise MI.

    Args:
        t_joint: [B] (any shape) float32.
        t_marginal: any shape float32.
    Returns:
        float32 of ``t_joint``'s shape.
    """
    return t_joint - tf.reduce_mean(tf.exp(t_marginal - 1.0))


def nwj_loss(t_joint: tf.Tensor, t_marginal: tf.Tensor) -> tf.Tensor:
    """Per-sample loss ``-t_joint_i + mean(e^(t_marginal - 1))``.

    Its mean (and the mean's gradient) is minus ``nwj_bound``'s.

    Args:
        t_joint: [B] (or [T, B]) float32.
        t_marginal: any shape float32.
    Returns:
        float32 of ``t_joint``'s shape.
    """
    return -nwj_pointwise_mi(t_joint, t_marginal)


def jsd_bound(t_joint: tf.Tensor, t_marginal: tf.Tensor) -> tf.Tensor:
    """JSD bound ``mean(-softplus(-t_joint)) - mean(softplus(t_marginal))``.

    Equals ``2 JSD - 2 log 2`` at its optimum (a binary cross-entropy of the
    classifier ``sigmoid(T)`` of joint against marginal samples, negated).

    Args:
        t_joint: [B] (any shape) float32.
        t_marginal: any shape float32.
    Returns:
        [] float32, in nats, in ``[-2 log 2, 0]`` at the optimum.
    """
    return (-tf.reduce_mean(tf.nn.softplus(-t_joint)) -
            tf.reduce_mean(tf.nn.softplus(t_marginal)))


def jsd_loss(t_joint: tf.Tensor, t_marginal: tf.Tensor) -> tf.Tensor:
    """Per-sample loss ``softplus(-t_joint_i) + mean(softplus(t_marginal))``.

    Its mean (and the mean's gradient) is minus ``jsd_bound``'s.

    Args:
        t_joint: [B] (or [T, B]) float32.
        t_marginal: any shape float32.
    Returns:
        float32 of ``t_joint``'s shape.
    """
    return (tf.nn.softplus(-t_joint) +
            tf.reduce_mean(tf.nn.softplus(t_marginal)))


def gaussian_mutual_information(rho: float, dim: int) -> float:
    """Analytic MI of ``dim`` independent pairs of standard normals with
    correlation ``rho`` each: ``-(dim / 2) log(1 - rho^2)`` nats.

    Args:
        rho: correlation, in (-1, 1).
        dim: number of pairs (>= 1).
    Returns:
        float, nats.
    Raises:
        ValueError: ``rho`` outside (-1, 1) or ``dim < 1``.
    """
    if not -1.0 < rho < 1.0:
        raise ValueError("gaussian_mutual_information: rho must be in "
                         "(-1, 1), got %s" % rho)
    if dim < 1:
        raise ValueError("gaussian_mutual_information: dim must be >= 1, "
                         "got %s" % dim)
    return float(-0.5 * dim * np.log1p(-rho * rho))
