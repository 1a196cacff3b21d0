"""``TargetNetwork``: a slowly-following copy of a network, never trained.

Variable collection (``Algorithm.get_optimizer_and_variable_sets``) skips
modules of this type, so a target network can never end up in an
optimizer's variable list, whatever attribute name holds it. Its variables
follow the online network only through an explicit update (e.g.
``alf_rl.ops.target_ops.soft_update``).
"""

from typing import Any, Optional, Sequence

import tensorflow as tf

from alf_rl.ops.target_ops import soft_update


class TargetNetwork(tf.Module):
    """Holds a fresh copy of ``network`` (``network.copy(name)``).

    Calling it calls the copy with the same arguments. Its variables are
    excluded from training by type; they are checkpointed with the
    algorithm that holds it.

    Args:
        network: the online network; must have ``copy(name=...)``.
        name: name of the copy (default: ``'target_' + network.name``).
    """

    def __init__(self, network: tf.Module, name: Optional[str] = None):
        if not hasattr(network, 'copy'):
            raise TypeError("TargetNetwork: %s has no copy(name=...) "
                            "method" % type(network).__name__)
        name = name or 'target_' + network.name
        super().__init__(name=name)
        self._network = network.copy(name=name)

    @property
    def network(self) -> tf.Module:
        """The copied network (its variables are the target's)."""
        return self._network

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the copied network: ``(outputs, state)`` for alf_rl
        networks, with the same [B, ...] / [T, B, ...] shapes."""
        return self._network(*args, **kwargs)


class PeriodicSoftUpdate(tf.Module):
    """Soft-updates target variables every ``period`` calls.

    Args:
        target_variables: list of target ``tf.Variable``.
        source_variables: list of source ``tf.Variable``.
        tau: soft-update rate.
        period: update every this many calls (1: every call).
    """

    def __init__(self,
                 target_variables: Sequence[tf.Variable],
                 source_variables: Sequence[tf.Variable],
                 tau: float = 0.005,
                 period: int = 1,
                 name: str = 'PeriodicSoftUpdate'):
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

    def __call__(self) -> Optional[tf.Operation]:
        """Counts one call and updates when the period is reached.

        Returns:
            The grouped update op in graph mode (None eagerly with period 1).
        """
        self._count.assign_add(1)
        if self._period == 1:
            return soft_update(self._targets, self._sources, self._tau)
        return tf.cond(
            tf.equal(self._count % self._period, 0),
            lambda: tf.group(soft_update(self._targets, self._sources,
                                         self._tau)), tf.no_op)
