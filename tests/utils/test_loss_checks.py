"""The loss check's declared form: written by check_loss_finite, read back
by failed_loss_check, and nothing else mistaken for it."""

import pytest
import tensorflow as tf

from alf_rl.utils.loss_checks import (XLA_ITERATION, XLA_UPDATE,
                                      check_loss_finite, failed_loss_check)


def _failure(value, **kwargs):
    @tf.function(autograph=False)
    def _check(x):
        return check_loss_finite(x, **kwargs)

    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        _check(tf.constant(value))
    return failed_loss_check(raised.value)


def test_a_failed_check_reads_back_with_its_fields():
    check = _failure(float('nan'), owner='PPOAlgorithm',
                     components=['loss.pg_loss', 'loss.td_loss'])
    assert check.owner == 'PPOAlgorithm'
    assert check.components == ('loss.pg_loss', 'loss.td_loss')
    assert (check.value, check.update_applied) == ('NaN', False)
    assert check.detail == ('loss of PPOAlgorithm (components: loss.pg_loss, '
                            'loss.td_loss) : Tensor had NaN values')
    for where in (XLA_ITERATION, XLA_UPDATE):
        check = _failure(float('inf'), owner='SacAlgorithm', xla=where)
        assert (check.components, check.value, check.update_applied) == (
            (), 'Inf', True)


def test_finite_losses_pass_and_other_errors_are_not_loss_checks():
    assert float(check_loss_finite(tf.constant(2.0), 'A')) == 2.0
    assert failed_loss_check(tf.errors.InvalidArgumentError(
        None, None, 'the loss of A (x) had NaN values somewhere')) is None
    with pytest.raises(ValueError, match='xla must be None'):
        check_loss_finite(tf.constant(1.0), 'A', xla='XLA')
