"""Losses of offline RL: behaviour cloning, CQL's conservative penalty,
IQL's expectile regression and advantage weights (pure TF, no state).

Names inside the math follow rlax: ``a_t`` an action, ``q_t`` a Q value,
``u_t`` a residual, ``log_pi_t`` a log-probability.
"""

import tensorflow as tf


def squared_action_error(a_t: tf.Tensor, target_a_t: tf.Tensor) -> tf.Tensor:
    """Deterministic behaviour cloning: ``sum_i (a_t[i] - target_a_t[i])^2``.

    Args:
        a_t: [B, D] float32, the policy's actions.
        target_a_t: [B, D] float32, the dataset's actions.

    Returns:
        [B] float32, summed over the action dims.
    """
    return tf.reduce_sum(tf.square(a_t - target_a_t), axis=-1)


def expectile_loss(u_t: tf.Tensor, expectile: float) -> tf.Tensor:
    """The asymmetric squared loss of expectile regression (IQL, Kostrikov
    et al. 2022, eq. 5):

        L_tau(u) = |tau - 1(u < 0)| * u^2

    with ``u = target - prediction``; ``tau = 0.5`` is half the squared
    error, ``tau -> 1`` approaches the maximum of the target.

    Args:
        u_t: [T, B] (any shape) float32 residuals ``target - prediction``.
        expectile: tau in (0, 1).

    Returns:
        same shape as ``u_t``.
    """
    weight = tf.where(u_t < 0, 1.0 - expectile, expectile)
    return weight * tf.square(u_t)


def advantage_weights(
    adv_t: tf.Tensor, temperature: float, max_weight: float = 100.0
) -> tf.Tensor:
    """Advantage-weighted regression weights (IQL's policy extraction,
    eq. 7; AWR):

        w_t = min(exp(adv_t / temperature), max_weight)

    Args:
        adv_t: [B] float32 advantages ``Q(s, a) - V(s)`` (no gradient).
        temperature: beta^-1 > 0 (IQL's ``beta`` is its inverse).
        max_weight: clip of the weights (IQL's code uses 100).

    Returns:
        [B] float32 weights.
    """
    return tf.minimum(tf.exp(adv_t / temperature), max_weight)


def cql_penalty(
    q_sampled_t: tf.Tensor, log_density_t: tf.Tensor, q_data_t: tf.Tensor
) -> tf.Tensor:
    """The conservative penalty of CQL(H) (Kumar et al. 2020, eq. 4), with
    the importance-sampled log-sum-exp of their appendix F:

        log sum_a exp Q(s, a)  ~  logsumexp_n (Q(s, a_n) - log mu(a_n|s))
                                  - log N
        penalty(s, a) = log sum_a exp Q(s, a) - Q(s, a_data)

    where ``a_n`` are N actions sampled from proposals ``mu`` (uniform and
    the current policy) and ``log_density_t`` their log-densities.

    Args:
        q_sampled_t: [N, B] float32 Q values of the sampled actions.
        log_density_t: [N, B] float32 log-densities of those actions under
            the distribution they were drawn from.
        q_data_t: [B] float32 Q values of the dataset's actions.

    Returns:
        [B] float32 penalties.
    """
    n = tf.cast(tf.shape(q_sampled_t)[0], q_sampled_t.dtype)
    soft_max = tf.reduce_logsumexp(
        q_sampled_t - log_density_t, axis=0
    ) - tf.math.log(n)
    return soft_max - q_data_t


def discrete_cql_penalty(q_t: tf.Tensor, q_data_t: tf.Tensor) -> tf.Tensor:
    """The conservative penalty of CQL(H) for discrete actions (Kumar et
    al. 2020, eq. 4, the log-sum-exp exact over the A actions):

        penalty(s, a) = log sum_a' exp Q(s, a') - Q(s, a_data)

    ``cql_penalty`` with every action sampled once under the uniform
    proposal (``log mu = -log A``) is the same number.

    Args:
        q_t: [B, A] float32 Q values of every action.
        q_data_t: [B] float32 Q values of the dataset's actions.

    Returns:
        [B] float32 penalties (>= 0 when ``q_data_t`` is a column of
        ``q_t``).
    """
    return tf.reduce_logsumexp(q_t, axis=-1) - q_data_t
