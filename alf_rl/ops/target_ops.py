"""Target-network updates and exploration noise processes (pure TF)."""

import tensorflow as tf


def soft_update(target_variables, source_variables, tau=1.0):
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


class PeriodicSoftUpdate(tf.Module):
    """Soft-updates target variables every ``period`` calls.

    Args:
        target_variables: list of target ``tf.Variable``.
        source_variables: list of source ``tf.Variable``.
        tau: soft-update rate.
        period: update every this many calls (1: every call).
    """

    def __init__(self, target_variables, source_variables, tau=0.005,
                 period=1, name='PeriodicSoftUpdate'):
        super().__init__(name=name)
        if not 0.0 < tau <= 1.0:
            raise ValueError("tau must be in (0, 1], got %s" % tau)
        if period < 1:
            raise ValueError("period must be >= 1, got %s" % period)
        self._targets = list(target_variables)
        self._sources = list(source_variables)
        self._tau = tau
        self._period = int(period)
        self._count = tf.Variable(0, dtype=tf.int64, trainable=False,
                                  name='count')
        soft_update(self._targets, self._sources, 1.0)

    def __call__(self):
        """Counts one call and updates when the period is reached."""
        self._count.assign_add(1)
        if self._period == 1:
            return soft_update(self._targets, self._sources, self._tau)
        return tf.cond(
            tf.equal(self._count % self._period, 0),
            lambda: tf.group(soft_update(self._targets, self._sources,
                                         self._tau)), tf.no_op)


class OUProcess(tf.Module):
    """Ornstein-Uhlenbeck noise, one process per [B, ...] element.

    x_{t+1} = x_t + theta * (0 - x_t) + sigma * N(0, 1)

    Args:
        shape: [B, ...] shape of the noise.
        damping: theta.
        stddev: sigma.
    """

    def __init__(self, shape, damping=0.15, stddev=0.2, name='OUProcess'):
        super().__init__(name=name)
        self._x = tf.Variable(tf.zeros(shape), trainable=False, name='x')
        self._damping = damping
        self._stddev = stddev

    def __call__(self, seed):
        """Advances the process; returns [B, ...] noise.

        Args:
            seed: [2] int32 stateless seed.
        """
        noise = tf.random.stateless_normal(tf.shape(self._x), seed,
                                           stddev=self._stddev)
        return self._x.assign(self._x * (1.0 - self._damping) + noise)
