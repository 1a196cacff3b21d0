"""Mini-batches of sequences cut from time-major stored experience.

Replay training (``alf_rl.algorithms.replay_training``) numbers the
sequences of a [T, B, ...] batch env-major (``b * (T // L) + c`` for steps
``c * L .. c * L + L - 1`` of env ``b``), draws one order per pass, and
gathers each mini-batch [L, b, ...] in one gather, without transposing.
"""

from typing import Any, Optional

import tensorflow as tf

from alf_rl.utils.common import make_stateless_seed


def shuffled_orders(num_passes: int, num_sequences: int, shuffle: bool,
                    seed: Optional[int]) -> tf.Tensor:
    """[num_passes, num_sequences] int32: one permutation per pass, drawn
    with stateless ops (the same numbers eagerly and compiled under a fixed
    seed).

    Args:
        num_passes: passes (epochs) over the sequences.
        num_sequences: sequences in the batch.
        shuffle: permute (else every pass is ``range(num_sequences)``).
        seed: optional int seed (default: drawn from the global generator).
    Returns:
        [num_passes, num_sequences] int32 tensor.
    """
    orders = []
    for epoch in range(num_passes):
        if shuffle:
            op_seed = (make_stateless_seed() if seed is None else
                       tf.constant([seed, epoch], tf.int32))
            orders.append(tf.argsort(tf.random.stateless_uniform(
                [num_sequences], op_seed)))
        else:
            orders.append(tf.range(num_sequences))
    return tf.stack(orders)


def gather_sequences(experience: Any, index: tf.Tensor, length: int) -> Any:
    """Sequences ``index`` of time-major experience, time-major.

    Args:
        experience: nest of [T, B, ...], T a multiple of ``length``; its
            sequences are numbered env-major, ``b * (T // L) + c`` for steps
            ``c * L .. c * L + L - 1`` of env ``b``.
        index: [b] int32 sequence numbers.
        length: L, a Python int.
    Returns:
        nest of [L, b, ...]: one gather, no transpose.
    """
    total, batch = tf.nest.flatten(experience)[0].shape[:2]
    if length == total:
        return tf.nest.map_structure(lambda x: tf.gather(x, index, axis=1),
                                     experience)
    chunks = total // length
    steps = ((index % chunks) * length)[tf.newaxis] + tf.range(length)[:,
                                                                    None]
    flat_index = steps * batch + (index // chunks)[tf.newaxis]
    return tf.nest.map_structure(
        lambda x: tf.gather(tf.reshape(x, [total * batch] +
                                       x.shape[2:].as_list()), flat_index),
        experience)


def mini_batch(experience: Any, orders: tf.Tensor, step: tf.Tensor,
               num_batches: int, mini_batch_size: int,
               mini_batch_length: int) -> Any:
    """The mini-batch of update ``step``: pass ``step // num_batches``,
    batch ``step % num_batches`` of that pass's order.

    Args:
        experience: nest of [T, B, ...] (B * T // L sequences).
        orders: [passes, num_sequences] int32 from ``shuffled_orders``.
        step: int32 scalar, the update's number.
        num_batches: mini-batches per pass.
        mini_batch_size: b, sequences per mini-batch.
        mini_batch_length: L, steps per sequence.
    Returns:
        nest of [L, b, ...]; ``experience`` itself when the mini-batch is
        the whole batch.
    """
    length, batch_size = tf.nest.flatten(experience)[0].shape[:2]
    if (mini_batch_size == batch_size * (length // mini_batch_length)
            and mini_batch_length == length):
        return experience
    epoch, b = step // num_batches, step % num_batches
    return gather_sequences(
        experience, tf.slice(orders[epoch], [b * mini_batch_size],
                             [mini_batch_size]), mini_batch_length)
