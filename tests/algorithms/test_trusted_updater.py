"""TrustedUpdater: shrinking steps that change too much, eagerly and in a
tf.function, nested changes, and dropping an unreducible step."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.algorithms import TrustedUpdater


def _quadratic_setup():
    """x moves from 0 by a step; the change is |x - 0| (linear in step)."""
    x = tf.Variable([0.0, 0.0])
    updater = TrustedUpdater([x], max_change=1.0)

    def change():
        return tf.norm(x)

    return x, updater, change


@pytest.mark.parametrize('compiled', [False, True])
def test_too_large_step_is_shrunk_within_bound(compiled):
    x, updater, change = _quadratic_setup()

    def update_and_adjust():
        updater.remember()
        x.assign_add([3.0, 4.0])  # |step| = 5 > 1
        return updater.adjust(change)

    fn = tf.function(update_and_adjust, autograph=False) if compiled else (
        update_and_adjust)
    before, steps = fn()
    assert float(before) == pytest.approx(5.0)
    assert int(steps) == 1
    # One shrink by 0.9 / 5: lands at 0.9 of the bound, same direction.
    np.testing.assert_allclose(x.numpy(), [0.54, 0.72], rtol=1e-5)
    assert float(change()) <= 1.0


def test_step_within_bound_is_untouched():
    x, updater, change = _quadratic_setup()
    updater.remember()
    x.assign_add([0.3, 0.4])
    before, steps = updater(change)
    assert int(steps) == 0
    assert float(before) == pytest.approx(0.5)
    np.testing.assert_array_equal(x.numpy(), np.float32([0.3, 0.4]))


def test_quadratic_change_needs_several_shrinks_in_graph():
    """A change quadratic in the step, (x - x_old)^2 against 0.1, with a
    small margin (shrink_factor 0.99): a shrink by 0.99 / r of the step
    shrinks the change by (0.99 / r)^2; the loop, compiled, still ends
    within the bound and keeps the step's direction."""
    x = tf.Variable(0.0)
    updater = TrustedUpdater([x], max_change=0.1, shrink_factor=0.99)

    @tf.function(autograph=False)
    def run():
        updater.remember()
        x.assign_add(10.0)
        return updater.adjust(lambda: tf.square(x))

    before, steps = run()
    assert float(before) == pytest.approx(100.0)
    assert int(steps) >= 1
    assert float(tf.square(x)) <= 0.1 + 1e-6
    assert float(x) > 0


def test_nested_change_uses_the_largest_ratio():
    """Changes (2, 8) against bounds (1, 2): the ratio is 4, so one shrink
    by 0.9 / 4 brings both below their bounds (as ALF's test)."""
    a = tf.Variable(0.0)
    b = tf.Variable(0.0)
    updater = TrustedUpdater([a, b], max_change={'a': 1.0, 'b': 2.0})
    updater.remember()
    a.assign(2.0)
    b.assign(8.0)
    before, steps = updater.adjust(lambda: {'a': tf.abs(a), 'b': tf.abs(b)})
    assert int(steps) == 1
    assert float(before['a']) == pytest.approx(2.0)
    assert float(a) == pytest.approx(2.0 * 0.225)
    assert float(b) == pytest.approx(8.0 * 0.225)


def test_unreducible_change_drops_the_update():
    x = tf.Variable(1.0)
    updater = TrustedUpdater([x], max_change=0.5, max_iterations=3)
    updater.remember()
    x.assign(2.0)
    # The change never goes below 1, whatever the step.
    _, steps = updater.adjust(lambda: tf.constant(1.0) + tf.abs(x - 1.0))
    assert int(steps) == 4
    assert float(x) == 1.0


@pytest.mark.parametrize('kwargs', [
    dict(max_change=0.0),
    dict(max_change={'a': 1.0, 'b': -1.0}),
    dict(max_change=1.0, shrink_factor=1.5),
    dict(max_change=1.0, max_iterations=0),
])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError, match='TrustedUpdater'):
        TrustedUpdater([tf.Variable(0.0)], **kwargs)
