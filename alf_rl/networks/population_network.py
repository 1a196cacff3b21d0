"""``PopulationMLP``: one MLP per seed of a population, run as batched matmuls.

The P members' weights are stacked ([P, in, out] kernels, [P, 1, out]
biases), so the forward pass of every member is one ``tf.matmul`` of
[P, N, in] by [P, in, out] per layer. Member k is initialised from its own
seed only (Glorot-uniform kernels drawn with stateless ops, zero biases), so
a member of a population equals the one-member population with that seed.
An element-wise optimizer (Adam) over the stacked variables then updates
every member exactly as its own optimizer would.
"""

import math
from typing import Sequence, Tuple

import tensorflow as tf

_ACTIVATIONS = {'tanh': tf.tanh, 'relu': tf.nn.relu, 'linear': tf.identity}


def glorot_uniform_stack(
    seeds: Sequence[int], shape: Tuple[int, int], stream: int
) -> tf.Tensor:
    """[P, in, out] float32 Glorot-uniform kernels, member k from ``seeds[k]``.

        W ~ U(-l, l),   l = sqrt(6 / (in + out))

    Args:
        seeds: the P members' int seeds.
        shape: ``(in, out)`` of one kernel.
        stream: which kernel of the member (its layer number), a counter
            that keeps the layers' draws distinct.
    Returns:
        [P, in, out] float32.
    """
    limit = math.sqrt(6.0 / (shape[0] + shape[1]))
    return tf.stack(
        [
            tf.random.stateless_uniform(
                shape,
                tf.constant([seed % 2**63, stream], tf.int64),
                -limit,
                limit,
            )
            for seed in seeds
        ]
    )


def check_seeds(seeds: Sequence[int], owner: str) -> Tuple[int, ...]:
    """The seeds as a tuple of ints; ValueError for none, a non-int or a
    repeated seed (two members with one seed would be one agent twice).

    Args:
        seeds: the population's seeds.
        owner: the name used in the message.
    Returns:
        The seeds as a tuple of Python ints.
    """
    seeds = tuple(seeds)
    if not seeds or any(
        isinstance(s, bool) or not isinstance(s, int) for s in seeds
    ):
        raise ValueError(
            '%s: seeds must be a non-empty sequence of ints, got %r'
            % (owner, seeds)
        )
    if len(set(seeds)) != len(seeds):
        raise ValueError('%s: seeds must be distinct, got %r' % (owner, seeds))
    return seeds


class PopulationMLP(tf.Module):
    """P independent MLPs (one per seed) evaluated together.

    Args:
        seeds: P distinct int seeds, one per member.
        input_size: size of one input vector.
        output_size: size of one output vector.
        hidden_layers: sizes of the hidden layers.
        activation: hidden activation, ``'tanh'``, ``'relu'`` or
            ``'linear'``.
        name: module name.

    Raises:
        ValueError: bad seeds, a size < 1 or an unknown activation.
    """

    def __init__(
        self,
        seeds: Sequence[int],
        input_size: int,
        output_size: int,
        hidden_layers: Tuple[int, ...] = (64, 64),
        activation: str = 'tanh',
        name: str = 'PopulationMLP',
    ):
        super().__init__(name=name)
        seeds = check_seeds(seeds, name)
        sizes = [input_size, *hidden_layers, output_size]
        if min(sizes) < 1:
            raise ValueError(
                '%s: sizes must be >= 1, got input %r, output %r, hidden %r'
                % (name, input_size, output_size, hidden_layers)
            )
        if activation not in _ACTIVATIONS:
            raise ValueError(
                '%s: activation must be one of %s, got %r'
                % (name, sorted(_ACTIVATIONS), activation)
            )
        self.population_size = len(seeds)
        self._activation = _ACTIVATIONS[activation]
        pairs = list(zip(sizes[:-1], sizes[1:]))
        with self.name_scope:
            self.kernels = [
                tf.Variable(
                    glorot_uniform_stack(seeds, pair, i), name='kernel%d' % i
                )
                for i, pair in enumerate(pairs)
            ]
            self.biases = [
                tf.Variable(
                    tf.zeros([len(seeds), 1, n_out]), name='bias%d' % i
                )
                for i, (_, n_out) in enumerate(pairs)
            ]

    def __call__(self, inputs: tf.Tensor) -> tf.Tensor:
        """Runs every member on its own rows.

        Args:
            inputs: [P, N, input_size] float32 (member k sees ``inputs[k]``).
        Returns:
            [P, N, output_size] float32.
        """
        h = inputs
        last = len(self.kernels) - 1
        for i, (kernel, bias) in enumerate(zip(self.kernels, self.biases)):
            h = tf.matmul(h, kernel) + bias
            if i < last:
                h = self._activation(h)
        return h
