"""``TrustedUpdater``: shrink an update until a measured change is bounded
(the trust-region step of ALF's TRAC, reimplemented).

Usage, around any optimizer step::

    updater = TrustedUpdater(actor.trainable_variables, max_change=0.1)
    updater.remember()                    # before the update
    optimizer.apply_gradients(...)        # the update
    change, steps = updater.adjust(change_fn)   # after it

``adjust`` evaluates ``change_fn()`` (e.g. a KL between the policy before
and after the update) and, while ``r = max_i change_i / max_change_i`` is
above 1, pulls the variables back towards the remembered values,
``var <- old + (var - old) * shrink_factor / r``, and measures again. For a
change that grows linearly with the step, one shrink lands at
``shrink_factor * max_change``; for a quadratic one (a KL) pass its square
root as the change, or accept a more conservative first shrink.

Everything runs in a ``tf.while_loop`` (eagerly and inside ``tf.function``).
If the change is still too large after ``max_iterations`` shrinks, the
update is dropped (the variables get their remembered values back) instead
of stopping training, as ALF did.
"""

from typing import Any, Callable, Iterable, Tuple

import tensorflow as tf


class TrustedUpdater(object):
    """Bounds the change made by an update of ``variables``.

    Not a ``tf.Module``: the backup copies are scratch state, neither
    trained nor checkpointed (they are rewritten by ``remember``).

    Args:
        variables: list of ``tf.Variable``s the update changes.
        max_change: a positive float, or a nest of positive floats matching
            the structure ``change_fn`` returns.
        shrink_factor: in (0, 1]; the target fraction of the bound after a
            shrink (margin for changes that are not linear in the step).
        max_iterations: shrinks before the update is dropped (>= 1).

    Raises:
        ValueError: no variables, non-positive bounds, bad factor or
            iteration count.
    """

    def __init__(self,
                 variables: Iterable[tf.Variable],
                 max_change: Any,
                 shrink_factor: float = 0.9,
                 max_iterations: int = 20):
        variables = list(variables)
        if not variables:
            raise ValueError("TrustedUpdater: no variables to update")
        flat = tf.nest.flatten(max_change)
        if not flat or not all(float(m) > 0 for m in flat):
            raise ValueError("TrustedUpdater: every max_change must be > 0, "
                             "got %s" % (max_change, ))
        if not 0 < shrink_factor <= 1:
            raise ValueError("TrustedUpdater: shrink_factor must be in "
                             "(0, 1], got %s" % shrink_factor)
        if int(max_iterations) < 1:
            raise ValueError("TrustedUpdater: max_iterations must be >= 1, "
                             "got %s" % max_iterations)
        self._variables = variables
        self._max_change = max_change
        self._shrink_factor = float(shrink_factor)
        self._max_iterations = int(max_iterations)
        self._backups = [
            tf.Variable(tf.zeros_like(v), trainable=False,
                        name='trusted_backup') for v in variables
        ]

    @property
    def variables(self) -> list:
        """The variables whose updates are bounded."""
        return list(self._variables)

    def remember(self) -> None:
        """Stores the current values of the variables (call before the
        update)."""
        for b, v in zip(self._backups, self._variables):
            b.assign(v)

    def _ratio(self, change):
        """[] float32 ``max_i change_i / max_change_i``."""
        tf.nest.assert_same_structure(change, self._max_change)
        ratios = [
            tf.cast(tf.convert_to_tensor(c), tf.float32) / float(m)
            for c, m in zip(tf.nest.flatten(change),
                            tf.nest.flatten(self._max_change))
        ]
        return tf.reduce_max(tf.stack([tf.reshape(r, []) for r in ratios]))

    def _scale(self, scale):
        for b, v in zip(self._backups, self._variables):
            v.assign(b + (v - b) * tf.cast(scale, v.dtype))

    def adjust(self, change_fn: Callable[[], Any]) -> Tuple[Any, tf.Tensor]:
        """Shrinks the update since ``remember`` until the change is bounded.

        Args:
            change_fn: callable ``() -> change``, a [] float tensor or a nest
                of them like ``max_change``, computed from the current
                values of the variables.
        Returns:
            ``(change, num_steps)``: the change before any shrink (same
            nest as ``change_fn``'s) and [] int32 the number of shrinks done
            (``max_iterations + 1`` when the update was dropped).
        """
        change = change_fn()
        ratio = self._ratio(change)

        def _cond(steps, ratio):
            return tf.logical_and(ratio > 1.0, steps < self._max_iterations)

        def _body(steps, ratio):
            self._scale(self._shrink_factor / ratio)
            return steps + 1, self._ratio(change_fn())

        steps, ratio = tf.while_loop(_cond, _body, (tf.constant(0), ratio))
        # Still beyond the bound: drop the update altogether.
        dropped = ratio > 1.0
        for b, v in zip(self._backups, self._variables):
            v.assign(tf.where(dropped, b, v))
        steps = steps + tf.cast(dropped, tf.int32)
        return change, steps

    __call__ = adjust
