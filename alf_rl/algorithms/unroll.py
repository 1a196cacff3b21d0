"""Unrolling a step function over time into ``TrainingInfo`` rows.

One helper serves both places that run a step function row by row under a
``GradientTape`` and stack the rows into ``[T, B, ...]`` ``TrainingInfo``:
the on-policy driver (``rollout`` and an environment step per row) and
replay training (``first_train_step`` on the first stored row,
``train_step`` on the rows after it, then ``bootstrap_step``).
Rows hold distributions as their parameters (``TensorArray``s cannot hold
distributions); the caller rebuilds them after stacking.
"""

from typing import Any, Callable, Optional, Tuple

import tensorflow as tf

from alf_rl.data_structures import TrainingInfo

#: Unrolls of at most this many rows run as Python rows instead of a
#: ``tf.while_loop``: cheaper to trace, run and differentiate (one-step PPO
#: rows, two-step SAC/DQN transitions).
MAX_PYTHON_ROWS = 2

RowFn = Callable[[tf.Tensor, Any], Tuple[Any, TrainingInfo]]


def training_info_spec(action_spec: Any,
                       info_spec: Any,
                       rollout_info_spec: Any = ()) -> TrainingInfo:
    """The spec of one ``TrainingInfo`` row (no batch dim).

    Args:
        action_spec: nest of action specs.
        info_spec: nest of ``tf.TensorSpec`` of the step's info, with
            distributions as parameter specs.
        rollout_info_spec: the same for the stored rollout info (replay
            training), or ``()``.
    Returns:
        ``TrainingInfo`` of specs.
    """
    return TrainingInfo(action=action_spec,
                        step_type=tf.TensorSpec((), tf.int32),
                        reward=tf.TensorSpec((), tf.float32),
                        discount=tf.TensorSpec((), tf.float32),
                        info=info_spec,
                        rollout_info=rollout_info_spec,
                        env_id=tf.TensorSpec((), tf.int32))


def unroll(row_fn: RowFn,
           carry: Any,
           num_rows: int,
           row_spec: TrainingInfo,
           batch_size: Optional[int],
           final_row_fn: Optional[Callable[[Any], Tuple[Any,
                                                        TrainingInfo]]] = None,
           first_row_fn: Optional[Callable[[Any], Tuple[Any,
                                                        TrainingInfo]]] = None
           ) -> Tuple[Any, TrainingInfo]:
    """Runs ``row_fn`` for t = 0 .. num_rows - 1, then ``final_row_fn``.

    With ``first_row_fn``, row 0 is that function's instead of
    ``row_fn``'s (``row_fn`` then runs for t = 1 .. num_rows - 1).

    Up to ``MAX_PYTHON_ROWS`` rows run as plain Python rows (stacked);
    longer unrolls run in a ``tf.while_loop`` writing ``TensorArray``s.
    Run it under the caller's ``GradientTape`` when the rows must carry
    gradients.

    Args:
        row_fn: ``(t, carry) -> (carry, row)``; ``t`` an int32 scalar
            tensor (a Python int in Python rows), ``row`` a ``TrainingInfo``
            of [B, ...] tensors matching ``row_spec``.
        carry: initial carry nest (policy state, time step, ...).
        num_rows: N >= 0, rows produced by ``row_fn``.
        row_spec: ``TrainingInfo`` spec of one row (``training_info_spec``).
        batch_size: static B for the arrays' element shapes (None: unknown).
        final_row_fn: optional ``(carry) -> (carry, row)`` producing row N
            (a bootstrap row); runs after the loop.
        first_row_fn: optional ``(carry) -> (carry, row)`` producing row 0
            in place of ``row_fn``; runs before the loop (needs
            ``num_rows >= 1``).
    Returns:
        ``(carry, rows)``: the final carry and the stacked rows
        ``[N (+1), B, ...]``.
    """
    total = num_rows + (0 if final_row_fn is None else 1)
    start = 0
    if first_row_fn is not None:
        if num_rows < 1:
            raise ValueError("unroll: first_row_fn needs num_rows >= 1, "
                             "got num_rows=%d" % num_rows)
        start = 1
    if total <= MAX_PYTHON_ROWS:
        rows = []
        if first_row_fn is not None:
            carry, row = first_row_fn(carry)
            rows.append(row)
        for t in range(start, num_rows):
            carry, row = row_fn(t, carry)
            rows.append(row)
        if final_row_fn is not None:
            carry, row = final_row_fn(carry)
            rows.append(row)
        return carry, tf.nest.map_structure(lambda *x: tf.stack(x), *rows)

    arrays = tf.nest.map_structure(
        lambda s: tf.TensorArray(s.dtype, size=total,
                                 element_shape=[batch_size] +
                                 s.shape.as_list()), row_spec)

    def _body(t, carry, arrays):
        carry, row = row_fn(t, carry)
        arrays = tf.nest.map_structure(lambda ta, x: ta.write(t, x), arrays,
                                       row)
        return t + 1, carry, arrays

    if first_row_fn is not None:
        carry, row = first_row_fn(carry)
        arrays = tf.nest.map_structure(lambda ta, x: ta.write(0, x), arrays,
                                       row)
    _, carry, arrays = tf.while_loop(lambda t, *_: t < num_rows, _body,
                                     (tf.constant(start), carry, arrays),
                                     maximum_iterations=num_rows - start)
    if final_row_fn is not None:
        carry, row = final_row_fn(carry)
        arrays = tf.nest.map_structure(lambda ta, x: ta.write(num_rows, x),
                                       arrays, row)
    return carry, tf.nest.map_structure(lambda ta: ta.stack(), arrays)
