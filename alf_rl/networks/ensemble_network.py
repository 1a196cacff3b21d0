"""``EnsembleNetwork``: K independent MLPs evaluated as one batched op.

The members' weights are stacked ([K, in, out] kernels), so the K forward
passes are one batched matmul per layer: what a learned dynamics ensemble
(PETS, MBPO) runs thousands of times per planning step. A probabilistic
ensemble (``probabilistic=True``) outputs a diagonal Gaussian per member,
its log-variance softly bounded by learned limits (Chua et al. 2018,
"Deep Reinforcement Learning in a Handful of Trials using Probabilistic
Dynamics Models", appendix A.1):

    log_var = max_lv - softplus(max_lv - raw)
    log_var = min_lv + softplus(log_var - min_lv)
"""

import math
from typing import Tuple

import gin
import tensorflow as tf


def _truncated_normal(shape: Tuple[int, ...], fan_in: int) -> tf.Tensor:
    """PETS' initialisation: truncated normal, std ``1 / (2 sqrt(fan_in))``."""
    std = 1.0 / (2.0 * math.sqrt(fan_in))
    return tf.random.truncated_normal(shape, stddev=std)


@gin.configurable
class EnsembleNetwork(tf.Module):
    """K MLPs with swish hidden layers, evaluated together.

    Args:
        input_size: size of one input vector.
        output_size: size of one output vector (of the mean, for a
            probabilistic ensemble).
        ensemble_size: K, the number of members.
        hidden_layers: sizes of the hidden layers.
        probabilistic: also output a log-variance per output entry.
        name: module name.

    Raises:
        ValueError: a size < 1.
    """

    def __init__(
        self,
        input_size: int,
        output_size: int,
        ensemble_size: int = 5,
        hidden_layers: Tuple[int, ...] = (200, 200, 200),
        probabilistic: bool = True,
        name: str = 'EnsembleNetwork',
    ):
        super().__init__(name=name)
        sizes = [input_size, *hidden_layers, output_size]
        if min(sizes + [ensemble_size]) < 1:
            raise ValueError(
                '%s: sizes must be >= 1, got input %r, output %r, ensemble '
                '%r, hidden %r'
                % (name, input_size, output_size, ensemble_size, hidden_layers)
            )
        self.ensemble_size = ensemble_size
        self.output_size = output_size
        self.probabilistic = probabilistic
        outputs = 2 * output_size if probabilistic else output_size
        sizes[-1] = outputs
        with self.name_scope:
            self._kernels = [
                tf.Variable(
                    _truncated_normal((ensemble_size, n_in, n_out), n_in),
                    name='kernel%d' % i,
                )
                for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:]))
            ]
            self._biases = [
                tf.Variable(tf.zeros([ensemble_size, 1, n]), name='bias%d' % i)
                for i, n in enumerate(sizes[1:])
            ]
            if probabilistic:
                # The learned soft bounds of the log-variance (PETS).
                self.max_log_var = tf.Variable(
                    tf.fill([output_size], 0.5), name='max_log_var'
                )
                self.min_log_var = tf.Variable(
                    tf.fill([output_size], -10.0), name='min_log_var'
                )

    def __call__(self, inputs: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        """Runs every member on its own rows.

        Args:
            inputs: [K, N, input_size] float32 (member k sees ``inputs[k]``).
        Returns:
            ``(mean, log_var)``, [K, N, output_size] each; ``log_var`` is
            zeros for a deterministic ensemble.
        """
        h = inputs
        last = len(self._kernels) - 1
        for i, (kernel, bias) in enumerate(zip(self._kernels, self._biases)):
            h = tf.matmul(h, kernel) + bias
            if i < last:
                h = tf.nn.silu(h)
        if not self.probabilistic:
            return h, tf.zeros_like(h)
        mean, raw = tf.split(h, 2, axis=-1)
        log_var = self.max_log_var - tf.nn.softplus(self.max_log_var - raw)
        log_var = self.min_log_var + tf.nn.softplus(log_var - self.min_log_var)
        return mean, log_var

    def log_var_bound_penalty(self) -> tf.Tensor:
        """``sum(max_log_var) - sum(min_log_var)``: PETS adds 0.01 times this
        to the loss so the learned bounds stay tight (a scalar)."""
        if not self.probabilistic:
            return tf.constant(0.0)
        return tf.reduce_sum(self.max_log_var) - tf.reduce_sum(
            self.min_log_var
        )
