"""ops.recurrent_replay: value rescaling and sequence priorities against
numpy references."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.ops.recurrent_replay import (
    inverse_value_rescale,
    sequence_priority,
    value_rescale,
)


def _np_h(x, eps):
    return np.sign(x) * (np.sqrt(np.abs(x) + 1.0) - 1.0) + eps * x


@pytest.mark.parametrize('eps', [1e-3, 1e-2])
def test_value_rescale_matches_numpy_and_inverts(eps):
    x = np.array([[-1000.0, -3.5, -1e-4], [0.0, 0.7, 475.0]], np.float32)
    y = value_rescale(tf.constant(x), eps).numpy()
    np.testing.assert_allclose(
        y, _np_h(x.astype(np.float64), eps), rtol=1e-5, atol=1e-6
    )
    # Hand-computed: h(3) = sqrt(4) - 1 + 3 eps = 1 + 3 eps.
    assert float(value_rescale(tf.constant(3.0), eps)) == pytest.approx(
        1.0 + 3.0 * eps
    )
    back = inverse_value_rescale(tf.constant(y), eps).numpy()
    np.testing.assert_allclose(back, x, rtol=1e-4, atol=1e-4)
    # And the other way round: h(h^-1(y)) = y.
    y2 = np.array([-20.0, -0.5, 0.0, 0.25, 9.0], np.float32)
    np.testing.assert_allclose(
        value_rescale(
            inverse_value_rescale(tf.constant(y2), eps), eps
        ).numpy(),
        y2,
        rtol=1e-4,
        atol=1e-5,
    )


def test_sequence_priority_mixes_max_and_mean():
    td = np.array([[1.0, -2.0], [-3.0, 0.5], [2.0, 100.0]], np.float32)
    mask = np.array([[1, 1], [1, 1], [1, 0]], np.float32)
    eta = 0.9
    got = sequence_priority(tf.constant(td), eta, tf.constant(mask)).numpy()
    # Column 0: max 3, mean 2; column 1 (its last step masked): max 2,
    # mean 1.25.
    want = [eta * 3.0 + 0.1 * 2.0, eta * 2.0 + 0.1 * 1.25]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # No mask: every step counts.
    a = np.abs(td)
    np.testing.assert_allclose(
        sequence_priority(tf.constant(td), 0.5).numpy(),
        0.5 * a.max(0) + 0.5 * a.mean(0),
        rtol=1e-6,
    )
    # A sequence with no counted step gets priority 0.
    assert sequence_priority(
        tf.constant(td), eta, tf.zeros_like(td)
    ).numpy().tolist() == [0, 0]
