"""Schedules: values that change with a step counter (learning rates, clips).

A schedule is a callable ``schedule(step) -> float32 scalar`` where ``step``
is an integer scalar tensor (e.g. an optimizer's update counter). Both
classes here are ``tf_keras`` ``LearningRateSchedule``s, so they can be
passed as an optimizer's ``learning_rate`` (driven by the optimizer's own
``iterations``), and they work anywhere a callable of a counter is accepted
(``PPOLoss.importance_ratio_clipping``). In gin::

    Adam.learning_rate = @LinearSchedule()
    LinearSchedule.initial_value = 1e-3
    LinearSchedule.final_value = 0.0
    LinearSchedule.num_steps = 10000
"""

from typing import Any, Callable, Dict, Sequence, Union

import gin
import tensorflow as tf
import tf_keras


@gin.configurable
class LinearSchedule(tf_keras.optimizers.schedules.LearningRateSchedule):
    """Goes linearly from ``initial_value`` to ``final_value``, then stays.

    ``value(step) = initial + (final - initial) * min(step / num_steps, 1)``
    (SB3's ``linear_schedule``, counted in updates instead of env steps).

    Args:
        initial_value: value at step 0.
        final_value: value from ``num_steps`` on.
        num_steps: steps (updates) over which the value changes; > 0.
    """

    def __init__(self, initial_value: float, final_value: float,
                 num_steps: int):
        if not num_steps > 0:
            raise ValueError("LinearSchedule: num_steps must be > 0, got %r" %
                             (num_steps, ))
        self.initial_value = float(initial_value)
        self.final_value = float(final_value)
        self.num_steps = int(num_steps)

    def __call__(self, step: Union[int, tf.Tensor]) -> tf.Tensor:
        """The value at ``step`` (an int or integer/float scalar tensor).

        Args:
            step: [] the counter, e.g. an optimizer's ``iterations``.

        Returns:
            float32 scalar tensor.
        """
        frac = tf.minimum(
            tf.cast(step, tf.float32) / float(self.num_steps), 1.0)
        return self.initial_value + (self.final_value -
                                     self.initial_value) * frac

    def get_config(self) -> Dict[str, Any]:
        """The constructor arguments (for Keras serialization)."""
        return dict(initial_value=self.initial_value,
                    final_value=self.final_value, num_steps=self.num_steps)


@gin.configurable
class PiecewiseConstantSchedule(
        tf_keras.optimizers.schedules.LearningRateSchedule):
    """``values[i]`` while ``boundaries[i-1] <= step < boundaries[i]``.

    Args:
        boundaries: increasing step counts, length n.
        values: n + 1 values.
    """

    def __init__(self, boundaries: Sequence[int], values: Sequence[float]):
        boundaries = [int(b) for b in boundaries]
        values = [float(v) for v in values]
        if len(values) != len(boundaries) + 1:
            raise ValueError(
                "PiecewiseConstantSchedule: need len(values) == "
                "len(boundaries) + 1, got %d values for %d boundaries" %
                (len(values), len(boundaries)))
        if any(b1 <= b0 for b0, b1 in zip(boundaries, boundaries[1:])):
            raise ValueError("PiecewiseConstantSchedule: boundaries must "
                             "increase, got %s" % (boundaries, ))
        self.boundaries = boundaries
        self.values = values

    def __call__(self, step: Union[int, tf.Tensor]) -> tf.Tensor:
        """The value at ``step``.

        Args:
            step: [] integer counter (int or tensor).

        Returns:
            float32 scalar tensor.
        """
        index = tf.reduce_sum(
            tf.cast(tf.cast(step, tf.int64) >= tf.constant(
                self.boundaries, tf.int64), tf.int32))
        return tf.gather(tf.constant(self.values, tf.float32), index)

    def get_config(self) -> Dict[str, Any]:
        """The constructor arguments (for Keras serialization)."""
        return dict(boundaries=self.boundaries, values=self.values)


def schedule_value(value_or_schedule: Union[float, Callable[[tf.Tensor],
                                                             Any]],
                   step: tf.Tensor) -> tf.Tensor:
    """``value_or_schedule(step)`` if it is callable, else the constant.

    Args:
        value_or_schedule: a float or a schedule.
        step: integer scalar tensor.
    Returns:
        float32 scalar tensor.
    """
    if callable(value_or_schedule):
        return tf.cast(value_or_schedule(step), tf.float32)
    return tf.constant(value_or_schedule, tf.float32)
