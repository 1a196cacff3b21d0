"""Distribution helpers: distribution <-> parameters, sampling, mode, log-prob.

TensorArrays, queues and the replay buffer hold tensors only, so a
distribution in a nest (e.g. an ``info.action_distribution``) travels as the
nest of its *parameters* and is rebuilt from a small ``DistributionSpec``::

    spec = extract_spec(nest)                   # once, e.g. from a trace
    params = distributions_to_params(nest)      # tensors only
    ...                                         # TensorArray / replay
    nest = params_to_distributions(params, spec)

Parameters are found generically from ``distribution.parameters`` (the
constructor arguments TFP records): floating tensors become parameters,
sub-distributions (``Independent``, ``TransformedDistribution``) are recursed
into, bijectors are captured with their constant parameters converted to numpy
(so a spec extracted from a ``tf.function`` trace can be used in any other
graph), and everything else (``dtype``, ``reinterpreted_batch_ndims``, ...) is
captured as is. Rebuilding uses the parameter tensors directly, so gradients
flow from a rebuilt distribution back to whatever produced the parameters.

Tested with ``Categorical`` (any integer dtype), ``Normal``, ``Deterministic``,
``Independent``, and ``TransformedDistribution`` with constant bijectors
(``Shift``/``Scale``/``Tanh``/``StableTanh`` chains, the tanh-squashed
normal). Parameters must carry the outer (batch/time) dims.
"""

from typing import Any, Callable, Dict, Optional, Union

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
from tensorflow_probability import bijectors as tfb
from tensorflow_probability import distributions as tfd

from alf_rl.utils import nest as nest_utils
from alf_rl.utils.common import make_stateless_seed

from alf_rl.utils.nest import Nest
#: ``None``, an int, or a stateless [2] int seed tensor.
Seed = Union[None, int, tf.Tensor]


class StableTanh(tfb.Tanh):
    """``tfb.Tanh`` whose inverse clips ``y`` into the open interval (-1, 1).

    In float32 ``tanh(x)`` is exactly 1 for ``x > ~9``, and an action clipped
    to its bound maps to +-1, so ``atanh`` would give inf and ``log_prob``
    NaN/inf. Clipping to ``1 - eps`` keeps ``log_prob`` finite (the
    log-det-Jacobian is the numerically stable one of ``tfb.Tanh``).
    """

    def __init__(self, validate_args: bool = False,
                 name: str = 'stable_tanh'):
        super().__init__(validate_args=validate_args, name=name)

    def _inverse(self, y):
        eps = np.finfo(y.dtype.as_numpy_dtype).eps
        return tf.atanh(tf.clip_by_value(y, -1. + eps, 1. - eps))


def _is_param(value):
    """Whether a constructor argument is a (batched) parameter tensor."""
    return ((tf.is_tensor(value) or isinstance(value, tf.Variable))
            and tf.as_dtype(value.dtype).is_floating)


class _BijectorRecipe(object):
    """Rebuilds a bijector from constant (numpy) parameters.

    The bijector is constructed anew at each build: a bijector converts its
    parameters to tensors when constructed, so one constructed inside a
    ``tf.function`` trace could not be used in any other graph.
    """

    def __init__(self, cls, kwargs):
        self._cls = cls
        self._kwargs = kwargs

    def __call__(self):
        kwargs = {}
        for key, value in self._kwargs.items():
            if isinstance(value, _BijectorRecipe):
                value = value()
            elif isinstance(value, list) and value and all(
                    isinstance(v, _BijectorRecipe) for v in value):
                value = [v() for v in value]
            kwargs[key] = value
        return self._cls(**kwargs)


def _static_bijector(bijector):
    """A ``_BijectorRecipe`` of ``bijector`` with numpy parameters.

    Raises:
        ValueError: if a parameter of the bijector is not a constant.
    """
    kwargs = {}
    for key, value in bijector.parameters.items():
        if isinstance(value, tfb.Bijector):
            value = _static_bijector(value)
        elif isinstance(value, (list, tuple)) and value and all(
                isinstance(b, tfb.Bijector) for b in value):
            value = [_static_bijector(b) for b in value]
        elif tf.is_tensor(value) or isinstance(value, tf.Variable):
            static = (None if isinstance(value, tf.Variable) else
                      tf.get_static_value(value))
            if static is None:
                raise ValueError(
                    "bijector %r: parameter %r is not a constant; a "
                    "DistributionSpec can only capture bijectors with "
                    "constant parameters (put trainable quantities into the "
                    "base distribution instead)" % (bijector.name, key))
            value = static
        kwargs[key] = value
    return _BijectorRecipe(type(bijector), kwargs)


class DistributionSpec(object):
    """Rebuilds a distribution from its parameter tensors.

    Args:
        builder: callable ``builder(**params) -> tfd.Distribution`` where
            ``params`` is a dict shaped like ``input_params_spec``.
        input_params_spec: nest (a dict) of ``tf.TensorSpec`` describing one
            element of the parameters (no outer dims).
    """

    def __init__(self, builder: Callable[..., tfd.Distribution],
                 input_params_spec: Dict[str, Any]):
        self._builder = builder
        self._input_params_spec = input_params_spec

    @property
    def builder(self) -> Callable[..., tfd.Distribution]:
        """The callable that builds the distribution from parameters."""
        return self._builder

    @property
    def input_params_spec(self) -> Dict[str, Any]:
        """dict nest of ``tf.TensorSpec`` of the parameters, no outer dims."""
        return self._input_params_spec

    def build_distribution(self, params: Dict[str, Any]
                           ) -> tfd.Distribution:
        """The distribution for ``params``.

        Args:
            params: dict nest like ``input_params_spec`` of tensors with outer
                dims, e.g. ``{'loc': [B, n], 'scale': [B, n]}``.

        Returns:
            A ``tfd.Distribution`` whose batch shape holds the outer dims.
        """
        nest_utils.assert_same_structure(params, self._input_params_spec,
                                         'params', 'input_params_spec',
                                         prefix='params')
        return self._builder(**params)

    def __repr__(self):
        builder = (self._builder.description
                   if isinstance(self._builder, _Builder) else self._builder)
        return "DistributionSpec(%s, %s)" % (builder, self._input_params_spec)


class _Builder(object):
    """``builder(**params)`` for one distribution class (see module doc)."""

    def __init__(self, cls, static_kwargs, sub_specs):
        self._cls = cls
        self._static = static_kwargs
        self._sub_specs = sub_specs  # {key: DistributionSpec}

    @property
    def description(self):
        subs = ', '.join('%s=%s' % (k, v) for k, v in self._sub_specs.items())
        return '%s(%s)' % (self._cls.__name__, subs)

    def __call__(self, **params):
        kwargs = {
            k: v() if isinstance(v, _BijectorRecipe) else v
            for k, v in self._static.items()
        }
        for key, value in params.items():
            if key in self._sub_specs:
                value = self._sub_specs[key].build_distribution(value)
            kwargs[key] = value
        return self._cls(**kwargs)


def _params_and_spec(dist, from_dim):
    """(params dict, DistributionSpec) of one distribution."""
    params, params_spec, static, sub_specs = {}, {}, {}, {}
    for key, value in dist.parameters.items():
        if isinstance(value, tfd.Distribution):
            p, s = _params_and_spec(value, from_dim)
            params[key], params_spec[key], sub_specs[key] = (
                p, s.input_params_spec, s)
        elif isinstance(value, tfb.Bijector):
            static[key] = _static_bijector(value)
        elif _is_param(value):
            value = tf.convert_to_tensor(value)
            params[key] = value
            params_spec[key] = tf.TensorSpec(value.shape[from_dim:],
                                             value.dtype)
        elif tf.is_tensor(value):
            static_value = tf.get_static_value(value)
            if static_value is None:
                raise ValueError(
                    "%s: non-floating parameter %r is not a constant and "
                    "cannot be captured in a DistributionSpec" %
                    (type(dist).__name__, key))
            static[key] = static_value
        else:
            static[key] = value
    return params, DistributionSpec(_Builder(type(dist), static, sub_specs),
                                    params_spec)


def _tensor_spec(tensor, from_dim):
    return tf.TensorSpec(tensor.shape[from_dim:], tensor.dtype)


def extract_spec(nest: Nest, from_dim: int = 1) -> Nest:
    """Specs of a nest of tensors and distributions.

    Args:
        nest: nest of tensors and ``tfd.Distribution`` (eager or symbolic).
        from_dim: number of leading (outer) dims to drop: 1 for [B, ...],
            2 for [T, B, ...].

    Returns:
        A nest like ``nest`` with each distribution replaced by a
        ``DistributionSpec`` and each tensor by a ``tf.TensorSpec``.
    """

    def _extract(x):
        if isinstance(x, tfd.Distribution):
            return _params_and_spec(x, from_dim)[1]
        return _tensor_spec(tf.convert_to_tensor(x), from_dim)

    return tf.nest.map_structure(_extract, nest)


def to_params_spec(nest_of_specs: Nest) -> Nest:
    """Replaces each ``DistributionSpec`` by its ``input_params_spec``.

    Args:
        nest_of_specs: nest of ``tf.TensorSpec`` and ``DistributionSpec``
            (as from ``extract_spec``).

    Returns:
        A nest of ``tf.TensorSpec`` describing ``distributions_to_params``'
        output, e.g. for TensorArrays or the replay buffer.
    """
    return tf.nest.map_structure(
        lambda s: s.input_params_spec
        if isinstance(s, DistributionSpec) else s, nest_of_specs)


def distributions_to_params(nest: Nest) -> Nest:
    """Replaces each distribution by its dict of parameter tensors.

    Args:
        nest: nest of tensors and ``tfd.Distribution``.

    Returns:
        A nest of tensors: distributions become dicts (nested for
        ``Independent``/``TransformedDistribution``), e.g. ``Normal`` ->
        ``{'loc': [B, ...], 'scale': [B, ...]}``; tensors are unchanged.
    """
    return tf.nest.map_structure(
        lambda x: _params_and_spec(x, 0)[0]
        if isinstance(x, tfd.Distribution) else x, nest)


def params_to_distributions(nest_of_params: Nest, nest_of_specs: Nest
                            ) -> Nest:
    """Inverse of ``distributions_to_params``.

    Args:
        nest_of_params: nest of tensors, dicts where ``nest_of_specs`` holds a
            ``DistributionSpec``.
        nest_of_specs: nest of ``tf.TensorSpec`` and ``DistributionSpec``.

    Returns:
        A nest like ``nest_of_specs`` of tensors and distributions. Gradients
        flow from the distributions into the parameter tensors.
    """
    flat_specs = nest_utils.flatten_with_path(nest_of_specs, 'params')
    flat_params = _flatten_up_to(nest_of_specs, nest_of_params)
    result = []
    for (path, spec), p in zip(flat_specs, flat_params):
        if isinstance(spec, DistributionSpec):
            nest_utils.assert_same_structure(p, spec.input_params_spec,
                                             'params', 'input_params_spec',
                                             prefix=path)
            p = spec.build_distribution(p)
        result.append(p)
    return tf.nest.pack_sequence_as(nest_of_specs, result)


def _flatten_up_to(shallow, nest, path='params'):
    """Flattens ``nest`` down to the leaves of ``shallow`` (``tf.nest``
    order); a leaf of ``shallow`` takes the whole sub-nest of ``nest``."""
    if isinstance(shallow, dict):
        if not isinstance(nest, dict) or set(nest) != set(shallow):
            raise ValueError("%s: expected a dict with keys %s to match the "
                             "specs, got %s" % (path, sorted(shallow), nest))
        pairs = [("[%r]" % (k, ), shallow[k], nest[k]) for k in sorted(shallow)]
    elif isinstance(shallow, (list, tuple)):
        if not isinstance(nest, (list, tuple)) or len(nest) != len(shallow):
            raise ValueError("%s: expected a sequence of length %d to match "
                             "the specs, got %s" % (path, len(shallow), nest))
        pairs = [("[%d]" % i, a, b)
                 for i, (a, b) in enumerate(zip(shallow, nest))]
    else:
        return [nest]
    result = []
    for label, sub_shallow, sub_nest in pairs:
        result.extend(_flatten_up_to(sub_shallow, sub_nest, path + label))
    return result


def _leaf_seeds(seed, n):
    """One seed per leaf: ``seed + i`` for an int, split for a tensor seed."""
    if seed is None:
        return [None] * n
    if isinstance(seed, (int, np.integer)):
        return [int(seed) + i for i in range(n)]
    return tf.unstack(tfp.random.split_seed(seed, n))


def sample_action_distribution(nest_of_distributions: Nest,
                               seed: Seed = None) -> Nest:
    """Samples one action from each distribution of a nest.

    Args:
        nest_of_distributions: nest of ``tfd.Distribution`` (tensors, e.g.
            deterministic actions, pass through).
        seed: ``None``, an int (leaf i uses ``seed + i``), or a stateless
            ``[2]`` int seed tensor (split per leaf).

    Returns:
        A nest of actions ``[B, ...]`` (or ``[T, B, ...]``) with each
        distribution's dtype (integer for the networks' categoricals).
    """
    flat = tf.nest.flatten(nest_of_distributions)
    seeds = _leaf_seeds(seed, len(flat))
    samples = [
        d.sample(seed=s) if isinstance(d, tfd.Distribution) else d
        for d, s in zip(flat, seeds)
    ]
    return tf.nest.pack_sequence_as(nest_of_distributions, samples)


def _mode(dist):
    if not isinstance(dist, tfd.Distribution):
        return dist
    if isinstance(dist, (tfd.Normal, tfd.Deterministic)):
        return tf.convert_to_tensor(dist.loc)
    if isinstance(dist, tfd.Independent):
        return _mode(dist.distribution)
    if isinstance(dist, tfd.TransformedDistribution):
        # For the tanh-squashed normal this is bijector(mean), the usual
        # greedy action; it is not the mode of the transformed density.
        return dist.bijector.forward(_mode(dist.distribution))
    return dist.mode()


def mode(nest: Nest) -> Nest:
    """The greedy action of each distribution of a nest.

    ``argmax`` for ``Categorical`` (keeping its dtype), ``loc`` for
    ``Normal``/``Deterministic``, ``bijector(mode(base))`` for a
    ``TransformedDistribution`` (e.g. ``tanh``-squashed normal ->
    ``shift + scale * tanh(mean)``); other distributions use ``.mode()``.

    Args:
        nest: nest of distributions (tensors pass through).

    Returns:
        A nest of actions ``[B, ...]``.
    """
    return tf.nest.map_structure(_mode, nest)


def _reduce_to_outer(x, outer_rank):
    if outer_rank is None or len(x.shape) <= outer_rank:
        return x
    return tf.reduce_sum(x, axis=list(range(outer_rank, len(x.shape))))


def log_prob(nest_of_distributions: Nest,
             nest_of_actions: Nest,
             outer_rank: Optional[int] = None) -> tf.Tensor:
    """Sum of the log-probabilities of a nest of actions.

    Args:
        nest_of_distributions: nest of distributions whose batch shape is the
            outer dims (as the networks make them: vector actions are wrapped
            in ``Independent``).
        nest_of_actions: matching nest of actions ``[B, ...]``; integer
            actions are cast to their distribution's integer dtype.
        outer_rank: if given, each leaf's log-prob is also summed over the
            dims after the first ``outer_rank`` (for distributions with action
            dims left in their batch shape, e.g. a bare ``Normal``).

    Returns:
        [B] (or [T, B]) float32: summed over action dims and the nest.
    """
    tf.nest.assert_same_structure(nest_of_distributions, nest_of_actions)
    terms = []
    for d, a in zip(tf.nest.flatten(nest_of_distributions),
                    tf.nest.flatten(nest_of_actions)):
        a = tf.convert_to_tensor(a)
        if (a.dtype.is_integer and d.dtype is not None
                and tf.as_dtype(d.dtype).is_integer and a.dtype != d.dtype):
            # e.g. int8 actions (cast to their spec) of an int64 categorical
            a = tf.cast(a, d.dtype)
        terms.append(_reduce_to_outer(d.log_prob(a), outer_rank))
    return tf.add_n(terms)


def _entropy(dist, seed, outer_rank):
    try:
        ent = dist.entropy()
    except NotImplementedError:
        # e.g. tanh-squashed normal: one-sample estimate; gradients flow
        # through the reparameterized sample.
        ent = -dist.log_prob(dist.sample(seed=seed))
    return _reduce_to_outer(ent, outer_rank)


def entropy(nest_of_distributions: Nest,
            seed: Seed = None,
            outer_rank: Optional[int] = None) -> tf.Tensor:
    """Sum of the entropies of a nest of distributions.

    Analytic where TFP has it; otherwise (the tanh-squashed normal) the
    one-sample estimate ``-log_prob(sample)``.

    Args:
        nest_of_distributions: nest of distributions.
        seed: seed for the sampled estimates (see
            ``sample_action_distribution``).
        outer_rank: as in ``log_prob``.

    Returns:
        [B] (or [T, B]) float32.
    """
    flat = tf.nest.flatten(nest_of_distributions)
    seeds = _leaf_seeds(seed, len(flat))
    return tf.add_n(
        [_entropy(d, s, outer_rank) for d, s in zip(flat, seeds)])


def cast_to_spec(nest_of_actions: Nest, nest_of_specs: Nest) -> Nest:
    """Casts a nest of actions to the dtypes of a nest of specs.

    Args:
        nest_of_actions: nest of [B, ...] tensors.
        nest_of_specs: matching nest of ``tf.TensorSpec``.

    Returns:
        The nest with each tensor cast to its spec's dtype.
    """
    return tf.nest.map_structure(lambda a, s: tf.cast(a, s.dtype),
                                 nest_of_actions, nest_of_specs)


def merge_outer_dims(nest: Nest) -> Nest:
    """A nest of [T, B, ...] tensors and [T, B] distributions as [T * B].

    Distributions are rebuilt from their parameters reshaped to
    ``[T * B, ...]`` (gradients flow into the parameters); tensors are
    reshaped. Inner dims must be static.

    Args:
        nest: nest of tensors [T, B, ...] and distributions with batch
            [T, B].
    Returns:
        The same nest with [T * B, ...] tensors and [T * B] distributions.
    """
    spec = extract_spec(nest, from_dim=2)
    params = tf.nest.map_structure(
        lambda x: tf.reshape(x, [-1] + x.shape[2:].as_list()),
        distributions_to_params(nest))
    return params_to_distributions(params, spec)


def action_distance(old: Nest, new: Nest, seed: Seed = None) -> tf.Tensor:
    """Per-sample divergence between two nests of action distributions.

        D(old, new) = sum_leaves KL(old_i || new_i)

    ``KL(old || new)`` per leaf: analytic where TFP has it; for two
    ``TransformedDistribution``s (e.g. tanh-squashed normals from one
    network, hence the same bijector) the KL of their base distributions,
    which a bijection leaves unchanged; otherwise the one-sample estimate
    ``log old(a) - log new(a)`` with ``a ~ old``. Tensor leaves
    (deterministic actions) give the squared distance ``||new - old||^2``
    summed over the action dims. Leaves are summed. 0 when ``old`` and
    ``new`` are the same; >= 0 except for the sampled estimate.

    Args:
        old: nest of distributions (or action tensors) with batch [N].
        new: the same nest with batch [N].
        seed: stateless seed for sampled estimates (None: draw one from
            the global generator, only when a leaf needs it).
    Returns:
        [N] float32.
    """
    tf.nest.assert_same_structure(old, new)
    terms = []
    for p, q in zip(tf.nest.flatten(old), tf.nest.flatten(new)):
        if not isinstance(p, tfd.Distribution):
            d = tf.square(tf.cast(q, tf.float32) - tf.cast(p, tf.float32))
            terms.append(tf.reduce_sum(tf.reshape(d, [tf.shape(d)[0], -1]),
                                       axis=-1))
            continue
        if (isinstance(p, tfd.TransformedDistribution)
                and isinstance(q, tfd.TransformedDistribution)):
            p, q = p.distribution, q.distribution
        try:
            kl = tfd.kl_divergence(p, q)
        except NotImplementedError:
            a = p.sample(
                seed=make_stateless_seed() if seed is None else seed)
            kl = p.log_prob(a) - q.log_prob(a)
        terms.append(kl)
    return tf.add_n(terms)
