"""``NoisyDense``: the factorized-Gaussian noisy linear layer.

Fortunato et al. 2018, "Noisy Networks for Exploration", section 3.2:

    y = (μ_w + σ_w ⊙ ε_w) x + μ_b + σ_b ⊙ ε_b,
    ε_w = f(ε_in) f(ε_out)^T,  ε_b = f(ε_out),  f(x) = sgn(x) sqrt(|x|),

with ε_in [p] and ε_out [q] independent standard normals, μ initialized
uniformly in ±1/sqrt(p) and σ to σ0/sqrt(p) (σ0 = 0.5).

The noise is held in (non-trainable) variables and changes only when
``resample()`` is called, so every call between two resamplings uses the
same weights: the algorithm decides when (``DqnAlgorithm``'s
``noise_resampling``: per rollout step, per update). Its random numbers
come from the global ``tf.random.Generator`` (``make_stateless_seed``), the
same eagerly and compiled. Inside ``without_noise(...)`` the layers compute
with their mean weights μ alone, as Dopamine's and Kaixhin's Rainbow
evaluate: the greedy policy (``predict``, evaluation, export) is then
deterministic.

Two ways to the same product: for a few rows (acting: one row per
environment) ``x μ_w + ((x ⊙ f(ε_in)) σ_w) ⊙ f(ε_out)`` reads the two
[p, q] matrices once and makes no [p, q] noise matrix (a 3136 x 512 layer
of one row: 0.47 ms against 1.09 ms on one core); for more rows
(training batches) the noisy kernel is made once and multiplied, which
also costs less to differentiate (see ``FACTORIZED_ROWS``).
"""

import contextlib
import math
import threading
from typing import Any, Callable, Dict, Iterator, Optional, Sequence

import tensorflow as tf
import tf_keras

from alf_rl.utils.common import make_stateless_seed


#: Inputs of at most this many rows (the product of the leading dims) take
#: the factorized product; more rows, the kernel. Measured on one core for
#: a 3136 x 512 layer: forward 0.78 vs 1.20 ms at 8 rows, 1.23 vs 1.58 at
#: 16; forward and gradient 2.41 vs 2.14 ms at 8 rows (1.45 vs 1.66 at 1).
FACTORIZED_ROWS = 8


#: Per thread, the ids of the ``NoisyDense`` layers inside ``without_noise``
#: (a count each, for nesting): per thread, so that replicas traced in
#: parallel threads (``tf.distribute``) never see each other's.
_QUIET = threading.local()


def _quiet_counts() -> Dict[int, int]:
    counts = getattr(_QUIET, 'counts', None)
    if counts is None:
        counts = _QUIET.counts = {}
    return counts


def _f(x: tf.Tensor) -> tf.Tensor:
    return tf.sign(x) * tf.sqrt(tf.abs(x))


class NoisyDense(tf.Module):
    """``y = activation(x (μ_w + σ_w ε_w) + μ_b + σ_b ε_b)``.

    Args:
        input_size: p, the size of the input's last dim.
        units: q, the number of outputs.
        activation: optional activation of the output.
        sigma0: σ0 of the initial noise scale σ0/sqrt(p).
        name: module name.

    Raises:
        ValueError: a non-positive size or a negative ``sigma0``.
    """

    def __init__(
        self,
        input_size: int,
        units: int,
        activation: Optional[Callable[[tf.Tensor], tf.Tensor]] = None,
        sigma0: float = 0.5,
        name: str = 'noisy_dense',
    ):
        super().__init__(name=name)
        if input_size < 1 or units < 1 or sigma0 < 0:
            raise ValueError(
                "%s: expected input_size >= 1, units >= 1 and sigma0 >= 0, "
                "got %r, %r, %r" % (name, input_size, units, sigma0)
            )
        bound = 1.0 / math.sqrt(input_size)

        def uniform(shape):
            # A fresh instance per variable: an unseeded tf_keras
            # initializer instance repeats its values.
            return tf_keras.initializers.RandomUniform(-bound, bound)(shape)

        sigma = sigma0 / math.sqrt(input_size)
        self._activation = activation
        with self.name_scope:
            self.kernel_mu = tf.Variable(
                uniform([input_size, units]), name='kernel_mu'
            )
            self.bias_mu = tf.Variable(uniform([units]), name='bias_mu')
            self.kernel_sigma = tf.Variable(
                tf.fill([input_size, units], sigma), name='kernel_sigma'
            )
            self.bias_sigma = tf.Variable(
                tf.fill([units], sigma), name='bias_sigma'
            )
            self.epsilon_in = tf.Variable(
                tf.zeros([input_size]), trainable=False, name='epsilon_in'
            )
            self.epsilon_out = tf.Variable(
                tf.zeros([units]), trainable=False, name='epsilon_out'
            )
        self.resample()

    @property
    def noisy(self) -> bool:
        """False inside ``without_noise`` (in this thread): read when the
        layer is called, or traced."""
        return id(self) not in _quiet_counts()

    def resample(self) -> None:
        """Draws new ε_in, ε_out (stored; used until the next call)."""
        seed = make_stateless_seed()
        p = self.epsilon_in.shape[0]
        eps = tf.random.stateless_normal([p + self.epsilon_out.shape[0]], seed)
        self.epsilon_in.assign(eps[:p])
        self.epsilon_out.assign(eps[p:])

    def __call__(self, x: tf.Tensor) -> tf.Tensor:
        """The noisy affine map.

        Args:
            x: [..., p] float32.
        Returns:
            [..., q] float32.
        """
        y = self._affine(x)
        if self._activation is not None:
            y = self._activation(y)
        return y

    def _affine(self, x: tf.Tensor) -> tf.Tensor:
        """The map before the activation: the mean weights' inside
        ``without_noise``, else the noisy weights' (see the module
        docstring for the two ways)."""
        if not self.noisy:
            return tf.tensordot(x, self.kernel_mu, axes=1) + self.bias_mu
        eps_in, eps_out = _f(self.epsilon_in), _f(self.epsilon_out)
        bias = self.bias_mu + self.bias_sigma * eps_out
        rows = x.shape[:-1].num_elements()
        if rows is not None and rows <= FACTORIZED_ROWS:
            return (
                tf.tensordot(x, self.kernel_mu, axes=1)
                + tf.tensordot(x * eps_in, self.kernel_sigma, axes=1) * eps_out
                + bias
            )
        kernel = self.kernel_mu + self.kernel_sigma * (
            eps_in[:, None] * eps_out[None, :]
        )
        return tf.tensordot(x, kernel, axes=1) + bias


@contextlib.contextmanager
def without_noise(modules: Sequence[Any]) -> Iterator[None]:
    """Within it, every ``NoisyDense`` of ``modules`` (any ``tf.Module``s,
    e.g. Q networks; those without one are left alone) computes with its
    mean weights: ``y = x μ_w + μ_b``. A graph traced inside keeps that.
    It holds for the calling thread only, and nests.

    Args:
        modules: the modules whose noisy layers go quiet.
    Yields:
        None; the layers are noisy again after it (also on an error).
    """
    layers = [
        m
        for module in modules
        for m in (module, *getattr(module, 'submodules', ()))
        if isinstance(m, NoisyDense)
    ]
    counts = _quiet_counts()
    for layer in layers:
        counts[id(layer)] = counts.get(id(layer), 0) + 1
    try:
        yield
    finally:
        for layer in layers:
            counts[id(layer)] -= 1
            if not counts[id(layer)]:
                del counts[id(layer)]
