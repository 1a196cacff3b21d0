"""Exploration and target-policy noise (pure TF, no state).

Every random function takes explicit stateless ``[2]`` int32 seeds: the
caller draws them (``alf_rl.utils.common.make_stateless_seed``), so these
ops hold no state and give the same numbers eagerly and compiled. Noise
scales of continuous actions are in units of the action's half-range
``r = (maximum - minimum) / 2``.
"""

from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf

from alf_rl.specs import BoundedTensorSpec

Scalar = Union[float, tf.Tensor]


def half_range(spec: BoundedTensorSpec) -> tf.Tensor:
    """``r = (maximum - minimum) / 2`` of a bounded spec.

    Args:
        spec: a bounded float spec.
    Returns:
        [*spec.shape] float32 constant.
    """
    shape = spec.shape.as_list()
    low = np.broadcast_to(np.asarray(spec.minimum, np.float32), shape)
    high = np.broadcast_to(np.asarray(spec.maximum, np.float32), shape)
    return tf.constant((high - low) / 2., tf.float32)


def ou_step(x_tm1: tf.Tensor, damping: Scalar, stddev: Scalar,
            seed: tf.Tensor) -> tf.Tensor:
    """One Ornstein-Uhlenbeck step towards 0.

    ``x_t = x_tm1 + damping * (0 - x_tm1) + stddev * eps``,
    ``eps ~ N(0, 1)``; with ``stddev = 0`` it decays geometrically.

    Args:
        x_tm1: [B, ...] float32 current value.
        damping: theta, the pull towards 0.
        stddev: sigma of the innovation.
        seed: [2] int32 stateless seed.
    Returns:
        [B, ...] float32 next value.
    """
    noise = tf.random.stateless_normal(tf.shape(x_tm1), seed, stddev=stddev)
    return x_tm1 * (1.0 - damping) + noise


def exploration_noise(
        a_t: Sequence[tf.Tensor], ou_tm1: Optional[Sequence[tf.Tensor]],
        half_ranges: Sequence[tf.Tensor], kind: str, stddev: Scalar,
        damping: Scalar, seeds: Sequence[tf.Tensor]
) -> Tuple[List[tf.Tensor], Optional[List[tf.Tensor]]]:
    """Adds Gaussian or OU noise to flat action leaves.

    ``a_t + r * n_t`` with ``n_t ~ N(0, stddev^2)`` (``'gaussian'``) or
    ``n_t = ou_step(ou_tm1, damping, stddev)`` (``'ou'``).

    Args:
        a_t: list of [B, ...] float32 deterministic action leaves.
        ou_tm1: matching list, the OU processes' values (``'ou'`` only;
            ignored otherwise).
        half_ranges: matching list of half-ranges ``r``.
        kind: ``'gaussian'`` or ``'ou'``.
        stddev: noise scale in half-range units.
        damping: OU damping (theta).
        seeds: one [2] int32 seed per leaf.
    Returns:
        ``(noisy leaves, new OU values or None)``; leaves not clipped.
    Raises:
        ValueError: an unknown ``kind``.
    """
    if kind == 'ou':
        if ou_tm1 is None:
            raise ValueError("ou_tm1: the OU processes' values are needed "
                             "for kind='ou', got None")
        noise = [ou_step(x, damping, stddev, s) for x, s in zip(ou_tm1, seeds)]
        new_ou = noise
    elif kind == 'gaussian':
        noise = [
            tf.random.stateless_normal(tf.shape(a), s, stddev=stddev)
            for a, s in zip(a_t, seeds)
        ]
        new_ou = None
    else:
        raise ValueError("exploration_noise: kind must be 'gaussian' or "
                         "'ou', got %r" % (kind, ))
    return [a + n * r for a, n, r in zip(a_t, noise, half_ranges)], new_ou


def smoothed_target_action(a_t: tf.Tensor, half_range_: tf.Tensor,
                           noise_stddev: Scalar, noise_clip: Scalar,
                           seed: tf.Tensor) -> tf.Tensor:
    """TD3's target policy smoothing for one action leaf.

    ``a_t + r * clip(eps, -c, c)``, ``eps ~ N(0, sigma^2)``; with
    ``sigma = 0`` (or ``c = 0``) it is ``a_t``.

    Args:
        a_t: [B, ...] float32 target-actor action ``mu'(s_t)``.
        half_range_: [...] float32 half-range ``r``.
        noise_stddev: sigma, in half-range units.
        noise_clip: c, in half-range units.
        seed: [2] int32 stateless seed.
    Returns:
        [B, ...] float32 (not yet clipped to the spec).
    """
    noise = tf.random.stateless_normal(tf.shape(a_t), seed,
                                       stddev=noise_stddev)
    noise = tf.clip_by_value(noise, -noise_clip, noise_clip)
    return a_t + noise * half_range_


def epsilon_greedy_action(q_t: tf.Tensor, epsilon: Scalar,
                          seed: tf.Tensor) -> tf.Tensor:
    """Epsilon-greedy action indices from Q values.

    ``argmax_a q_t(a)`` with probability ``1 - epsilon``, else uniform.

    Args:
        q_t: [B, A] float32 ``Q(s_t, .)``.
        epsilon: [] float32 probability of a uniformly random action.
        seed: [2] int32 stateless seed.
    Returns:
        [B] int32 indices in [0, A).
    """
    greedy = tf.argmax(q_t, axis=-1, output_type=tf.int32)
    seeds = tf.random.experimental.stateless_split(seed, 2)
    batch = tf.shape(q_t)[:1]
    num_actions = tf.shape(q_t)[-1]
    random_action = tf.random.stateless_uniform(batch, seeds[0], minval=0,
                                                maxval=num_actions,
                                                dtype=tf.int32)
    explore = tf.random.stateless_uniform(batch, seeds[1]) < epsilon
    return tf.where(explore, random_action, greedy)
