"""Target-network updates (pure TF; the periodic updater with its counter
is ``alf_rl.networks.target_network.PeriodicSoftUpdate``)."""

from typing import Optional, Sequence

import tensorflow as tf


def soft_update(target_variables: Sequence[tf.Variable],
                source_variables: Sequence[tf.Variable],
                tau: float = 1.0) -> Optional[tf.Operation]:
    """target <- (1 - tau) * target + tau * source, variable by variable.

    Args:
        target_variables: list of ``tf.Variable``.
        source_variables: list of ``tf.Variable``, same shapes, same order.
        tau: in (0, 1]; 1 copies.
    Returns:
        A grouped op (None eagerly).
    """
    if len(target_variables) != len(source_variables):
        raise ValueError("soft_update: %d target variables vs %d source "
                         "variables" % (len(target_variables),
                                        len(source_variables)))
    updates = []
    for t, s in zip(target_variables, source_variables):
        if t.shape != s.shape:
            raise ValueError("soft_update: %s has shape %s but %s has %s" %
                             (t.name, t.shape, s.name, s.shape))
        if tau == 1.0:
            updates.append(t.assign(s))
        else:
            updates.append(t.assign((1.0 - tau) * t + tau * s))
    if tf.executing_eagerly():
        return None
    return tf.group(*updates)
