"""ops.masks: masked means and LossInfo reduction, against hand-computed
values."""

import pytest
import tensorflow as tf

from alf_rl.data_structures import LossInfo
from alf_rl.ops.masks import is_unset, masked_mean, reduce_loss_info


def test_masked_mean_divides_by_valid_count():
    x = tf.constant([[1.0, 2.0], [3.0, 100.0]])
    mask = tf.constant([[1.0, 1.0], [1.0, 0.0]])
    # (1 + 2 + 3) / 3
    assert float(masked_mean(x, mask)) == pytest.approx(2.0)
    assert float(masked_mean(x, tf.zeros_like(mask))) == 0.0


def test_masked_mean_weights_and_identities():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    # A mask of ones is the plain mean; no mask too.
    assert float(masked_mean(x, tf.ones_like(x))) == pytest.approx(2.5)
    assert float(masked_mean(x, None)) == pytest.approx(2.5)
    # Weights: (2*1 + 0*2 + 1*3 + 1*4) / 4
    w = tf.constant([[2.0, 0.0], [1.0, 1.0]])
    assert float(masked_mean(x, w)) == pytest.approx(9.0 / 4.0)
    # A scalar is already reduced.
    assert float(masked_mean(tf.constant(7.0), w)) == 7.0


def test_masked_mean_refuses_mask_of_another_rank():
    with pytest.raises(ValueError, match=r'mask of shape \(2, 2\) .* '
                       r'values of shape \(2,\)'):
        masked_mean(tf.constant([1.0, 2.0]), tf.ones([2, 2]))
    with pytest.raises(ValueError, match='ranks 1 vs 2'):
        masked_mean(tf.ones([2, 2]), tf.ones([2]))


def test_reduce_loss_info():
    info = LossInfo(loss=tf.constant([[1.0, 3.0], [5.0, 7.0]]),
                    scalar_loss=tf.constant(0.5),
                    extra={'a': tf.constant([[2.0, 2.0], [4.0, 8.0]])})
    mask = tf.constant([[1.0, 0.0], [1.0, 1.0]])
    out = reduce_loss_info(info, mask)
    assert float(out.loss) == pytest.approx((1.0 + 5.0 + 7.0) / 3)
    assert float(out.scalar_loss) == 0.5
    assert float(out.extra['a']) == pytest.approx((2.0 + 4.0 + 8.0) / 3)
    unset = reduce_loss_info(LossInfo(loss=tf.ones([2])), None)
    assert is_unset(unset.scalar_loss) and is_unset(unset.extra)
    with pytest.raises(ValueError, match='scalar_loss must be a scalar'):
        reduce_loss_info(LossInfo(loss=tf.ones([2]), scalar_loss=tf.ones([2])),
                         None)
