"""``MemoryWithUsage``: a differentiable external memory read by content
and written to its least-used slot (Wayne et al. 2018, "Unsupervised
Predictive Memory in a Goal-Directed Agent", Methods 2.3; ALF's
``MemoryWithUsage``).

The memory holds no contents itself: they are a state nest
(``MemoryState``), carried between steps by whoever owns it (the drivers
carry it as part of an algorithm's state, like an LSTM's, and reset it to
zeros -- an empty memory -- where an episode starts). The module owns only
the learned layer that turns features into read keys and strengths
(``generate_keys``). The math is ``alf_rl.ops.memory_ops``.

Deviation from ALF: no "snapshot-only" mode (contents in variables): the
state is always a nest, so gradients flow through reads into what was
written earlier in the same unroll.
"""

from typing import Any, NamedTuple, Tuple

import gin
import tensorflow as tf

from alf_rl.networks.encoding_network import EncodingNetwork
from alf_rl.ops import memory_ops


class MemoryState(NamedTuple):
    """Fields (``()`` where absent):"""

    memory: Any = ()  # [B, N, D] float32 slot contents
    usage: Any = ()  # [B, N] float32 usage of each slot


@gin.configurable
class MemoryWithUsage(tf.Module):
    """N slots of D-vectors with usage, read with K learned keys.

    Args:
        dim: D, size of one slot.
        size: N, number of slots.
        num_read_keys: K, keys per read.
        key_input_size: size F of the features ``generate_keys`` maps to
            keys and strengths (0: no key layer; pass keys to ``read``).
        usage_decay: gamma in (0, 1]: each read multiplies the usage by it
            before adding the read attention (1: no decay).
        name: module name.

    Raises:
        ValueError: a non-positive size, or ``usage_decay`` outside (0, 1].
    """

    def __init__(
        self,
        dim: int,
        size: int,
        num_read_keys: int = 1,
        key_input_size: int = 0,
        usage_decay: float = 1.0,
        name: str = 'MemoryWithUsage',
    ):
        super().__init__(name=name)
        for what, value in (
            ('dim', dim),
            ('size', size),
            ('num_read_keys', num_read_keys),
        ):
            if int(value) < 1:
                raise ValueError(
                    '%s: %s must be >= 1, got %r' % (name, what, value)
                )
        if not 0.0 < usage_decay <= 1.0:
            raise ValueError(
                '%s: usage_decay must be in (0, 1], got %r'
                % (name, usage_decay)
            )
        self._dim = int(dim)
        self._size = int(size)
        self._num_read_keys = int(num_read_keys)
        self._usage_decay = float(usage_decay)
        self._key_network = None
        if key_input_size:
            # K keys of size D and K strengths.
            self._key_network = EncodingNetwork(
                tf.TensorSpec([int(key_input_size)], tf.float32),
                last_layer_size=self._num_read_keys * (self._dim + 1),
                name='key_network',
            )

    @property
    def dim(self) -> int:
        """D, size of one slot."""
        return self._dim

    @property
    def size(self) -> int:
        """N, number of slots."""
        return self._size

    @property
    def num_read_keys(self) -> int:
        """K, keys per read."""
        return self._num_read_keys

    @property
    def read_size(self) -> int:
        """K * D, size of the flattened read of ``generate_keys_and_read``."""
        return self._num_read_keys * self._dim

    @property
    def state_spec(self) -> MemoryState:
        """``MemoryState`` of specs [N, D] and [N] (no batch dim)."""
        return MemoryState(
            memory=tf.TensorSpec([self._size, self._dim], tf.float32),
            usage=tf.TensorSpec([self._size], tf.float32),
        )

    def read(
        self, keys: tf.Tensor, strengths: tf.Tensor, state: MemoryState
    ) -> Tuple[tf.Tensor, tf.Tensor, MemoryState]:
        """Content-based read (``memory_ops.read_memory``).

        Args:
            keys: [B, K, D] float32 read keys.
            strengths: [B, K] float32 strengths (>= 0).
            state: ``MemoryState`` with [B, N, D] and [B, N] leaves.
        Returns:
            ``(read [B, K, D], attention [B, K, N], new state)``: the usage
            decayed and increased by the attention.
        """
        read, attention, usage = memory_ops.read_memory(
            keys, strengths, state.memory, state.usage, self._usage_decay
        )
        return read, attention, state._replace(usage=usage)

    def write(self, content: tf.Tensor, state: MemoryState) -> MemoryState:
        """Writes ``content`` to the least-used slot
        (``memory_ops.write_least_used``).

        Args:
            content: [B, D] float32 vectors.
            state: ``MemoryState`` with [B, N, D] and [B, N] leaves.
        Returns:
            The new ``MemoryState``.
        """
        memory, usage = memory_ops.write_least_used(
            content, state.memory, state.usage
        )
        return MemoryState(memory=memory, usage=usage)

    def generate_keys(
        self, features: tf.Tensor
    ) -> Tuple[tf.Tensor, tf.Tensor]:
        """Keys and strengths from features by the learned key layer.

        Args:
            features: [B, F] float32.
        Returns:
            ``(keys [B, K, D], strengths [B, K])``, strengths
            ``softplus(.)`` >= 0.
        Raises:
            ValueError: the memory was built without ``key_input_size``.
        """
        if self._key_network is None:
            raise ValueError(
                '%s.generate_keys: built with key_input_size=0 (no key '
                'layer); pass keys to read() or set key_input_size' % self.name
            )
        out, _ = self._key_network(features)
        out = tf.reshape(out, [-1, self._num_read_keys, self._dim + 1])
        return out[:, :, : self._dim], tf.nn.softplus(out[:, :, self._dim])

    def generate_keys_and_read(
        self, features: tf.Tensor, state: MemoryState
    ) -> Tuple[tf.Tensor, tf.Tensor, MemoryState]:
        """``generate_keys`` then ``read``.

        Args:
            features: [B, F] float32.
            state: ``MemoryState`` with [B, ...] leaves.
        Returns:
            ``(read [B, K * D] flattened, attention [B, K, N], new state)``.
        """
        keys, strengths = self.generate_keys(features)
        read, attention, state = self.read(keys, strengths, state)
        return tf.reshape(read, [-1, self.read_size]), attention, state
