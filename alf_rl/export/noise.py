"""Sampling an action distribution with the noise given as an input.

An exported stochastic policy takes its randomness as an input, so the model
stays a pure function (no random ops: TFLite's builtin ops have no seeded
sampler, and a caller can reproduce any action):

* categorical: Gumbel-max. With ``g ~ Gumbel(0, 1)`` i.i.d. per value,
  ``argmax_i(logits_i + g_i)`` is distributed as ``Categorical(logits)``.
  Noise shape: the logits' ([B, *action_shape, num_values]).
* normal: ``loc + scale * eps`` with ``eps ~ N(0, 1)``; the same value TFP's
  ``Normal.sample`` gives for the same standard-normal draw.
* transformed (e.g. the tanh-squashed normal of SAC): the bijector applied
  to the base sample; ``Independent`` passes through to its base.
* deterministic actions (tensors, ``Deterministic``): no noise.
"""

from typing import Any, List, Optional

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

from alf_rl.utils.nest import Nest

tfd = tfp.distributions


def _noise_leaf_shape(dist: Any) -> List[int]:
    """Shape (batch dims included) of the noise one leaf consumes, [] for
    none."""
    if isinstance(dist, tfd.Categorical):
        return tf.convert_to_tensor(dist.logits_parameter()).shape.as_list()
    if isinstance(dist, tfd.Normal):
        return (tf.convert_to_tensor(dist.loc) +
                tf.convert_to_tensor(dist.scale)).shape.as_list()
    if isinstance(dist, tfd.Independent):
        return _noise_leaf_shape(dist.distribution)
    if isinstance(dist, tfd.TransformedDistribution):
        return _noise_leaf_shape(dist.distribution)
    if isinstance(dist, tfd.Deterministic) or not isinstance(
            dist, tfd.Distribution):
        return []
    raise TypeError("sampling with given noise supports Categorical, Normal, "
                    "Independent, TransformedDistribution and Deterministic; "
                    "got %s" % type(dist).__name__)


def noise_shapes(nest_of_distributions: Nest, outer_rank: int = 1
                 ) -> List[Optional[List[int]]]:
    """The noise each leaf of a distribution nest consumes, without the
    outer (batch) dims.

    Args:
        nest_of_distributions: nest of distributions with batch shape [B]
            (tensors, i.e. deterministic actions, are allowed).
        outer_rank: number of outer dims to drop (1 for [B]).

    Returns:
        One shape per leaf in ``tf.nest`` order: the logits' inner shape
        ``[*action_shape, num_values]`` for a categorical, the action shape
        for a normal, ``None`` for a leaf that takes no noise.

    Raises:
        TypeError: naming a distribution type this module cannot sample.
    """
    shapes = []
    for dist in tf.nest.flatten(nest_of_distributions):
        is_deterministic = (not isinstance(dist, tfd.Distribution)
                            or isinstance(dist, tfd.Deterministic))
        shapes.append(None if is_deterministic else
                      _noise_leaf_shape(dist)[outer_rank:])
    return shapes


def _leaf_kind(dist: Any) -> Optional[str]:
    if isinstance(dist, (tfd.Independent, tfd.TransformedDistribution)):
        return _leaf_kind(dist.distribution)
    if isinstance(dist, tfd.Categorical):
        return 'gumbel'
    if isinstance(dist, tfd.Normal):
        return 'eps'
    return None


def noise_kinds(nest_of_distributions: Nest) -> List[Optional[str]]:
    """The kind of noise each leaf of a distribution nest consumes.

    Args:
        nest_of_distributions: nest of distributions (or tensors).
    Returns:
        One entry per leaf in ``tf.nest`` order: ``'gumbel'`` (standard
        Gumbel, for a categorical), ``'eps'`` (standard normal, for a
        possibly transformed normal) or ``None`` (no noise).
    """
    return [_leaf_kind(d) for d in tf.nest.flatten(nest_of_distributions)]


def _sample_leaf(dist: Any, noise: tf.Tensor) -> tf.Tensor:
    if not isinstance(dist, tfd.Distribution):
        return dist
    if isinstance(dist, tfd.Deterministic):
        return tf.convert_to_tensor(dist.loc)
    if isinstance(dist, tfd.Categorical):
        logits = tf.convert_to_tensor(dist.logits_parameter())
        return tf.argmax(logits + noise, axis=-1, output_type=dist.dtype)
    if isinstance(dist, tfd.Normal):
        return dist.loc + dist.scale * noise
    if isinstance(dist, tfd.Independent):
        return _sample_leaf(dist.distribution, noise)
    if isinstance(dist, tfd.TransformedDistribution):
        return dist.bijector.forward(_sample_leaf(dist.distribution, noise))
    raise TypeError("sampling with given noise: unsupported distribution %s"
                    % type(dist).__name__)


def sample_with_noise(nest_of_distributions: Nest, noise: List[Any]) -> Nest:
    """One action per distribution of a nest, from the given noise.

    Args:
        nest_of_distributions: nest of distributions with batch shape [B]
            (or tensors: deterministic actions pass through).
        noise: list in ``tf.nest`` order of the nest's leaves: for a
            categorical, [B, *action_shape, num_values] float32 standard
            Gumbel noise; for a normal (possibly transformed), [B,
            *action_shape] float32 standard-normal ``eps``; ``None`` for a
            deterministic leaf.

    Returns:
        Nest of [B, ...] actions with each distribution's dtype.

    Raises:
        ValueError: ``noise`` has the wrong number of entries.
    """
    flat = tf.nest.flatten(nest_of_distributions)
    if len(noise) != len(flat):
        raise ValueError("noise: expected %d entries (one per action leaf), "
                         "got %d" % (len(flat), len(noise)))
    return tf.nest.pack_sequence_as(
        nest_of_distributions,
        [_sample_leaf(d, n) for d, n in zip(flat, noise)])


def gumbel_from_uniform(uniform: tf.Tensor) -> tf.Tensor:
    """Standard Gumbel noise ``-log(-log(u))`` from uniforms in (0, 1).

    Args:
        uniform: float tensor of any shape with values in (0, 1).

    Returns:
        Tensor of the same shape, standard Gumbel distributed.
    """
    tiny = np.finfo(uniform.dtype.as_numpy_dtype).tiny
    uniform = tf.clip_by_value(uniform, tiny, 1.0 - 1e-7)
    return -tf.math.log(-tf.math.log(uniform))
