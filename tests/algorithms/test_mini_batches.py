"""Mini-batch ordering and gathering of replay training."""

import numpy as np
import tensorflow as tf

from alf_rl.algorithms.mini_batches import mini_batch, shuffled_orders


def test_orders_are_ranges_unshuffled_and_seeded_permutations_shuffled():
    plain = shuffled_orders(2, 5, shuffle=False, seed=None).numpy()
    np.testing.assert_array_equal(plain, [[0, 1, 2, 3, 4]] * 2)
    first = shuffled_orders(3, 6, shuffle=True, seed=7).numpy()
    again = shuffled_orders(3, 6, shuffle=True, seed=7).numpy()
    np.testing.assert_array_equal(first, again)
    assert first.shape == (3, 6)
    for row in first:
        assert sorted(row.tolist()) == list(range(6))


def test_mini_batch_follows_the_order_of_its_pass():
    # [T=4, B=2]: value 10 * t + b; L=2 gives 4 sequences, env-major.
    x = tf.constant([[10 * t + b for b in range(2)] for t in range(4)])
    orders = tf.constant([[3, 0, 1, 2], [2, 1, 0, 3]])
    # step 2 with 2 batches per pass: pass 1, batch 0 -> sequences 2, 1.
    out = mini_batch(x, orders, tf.constant(2), 2, 2, 2).numpy()
    # sequence 2: env 1, steps 0..1; sequence 1: env 0, steps 2..3.
    np.testing.assert_array_equal(out, [[1, 20], [11, 30]])
    assert mini_batch(x, orders, tf.constant(0), 1, 2, 4) is x
