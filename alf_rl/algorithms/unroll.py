"""Unrolling a step function over time into stacked ``[T, B, ...]`` rows.

The one helper behind every loop that runs a step function row by row and
stacks what each row returns: the on-policy driver (``rollout`` and an
environment step per row, under a ``GradientTape``), replay training
(``first_train_step`` on the first stored row, ``train_step`` on the rows
after it, then ``bootstrap_step``) and the asynchronous rollout worker
(``rollout`` and an environment step per row, rows of ``Experience``).

``TensorArray``s cannot hold distributions: where the row spec holds a
``DistributionSpec`` (as from ``ops.distributions.extract_spec``), rows are
written as the distributions' parameters and the stacked rows are rebuilt
once, here, so that callers neither convert nor see parameters.
"""

from typing import Any, Callable, Optional, Tuple

import tensorflow as tf

from alf_rl.data_structures import TrainingInfo
from alf_rl.ops import distributions as dist_ops
from alf_rl.utils.nest import Nest

#: Unrolls of at most this many rows run as Python rows instead of a
#: ``tf.while_loop``: cheaper to trace, run and differentiate (one-step PPO
#: rows, two-step SAC/DQN transitions).
MAX_PYTHON_ROWS = 2

#: ``(t, carry) -> (carry, row)``.
RowFn = Callable[[tf.Tensor, Any], Tuple[Any, Nest]]
#: ``(carry) -> (carry, row)``.
EdgeRowFn = Callable[[Any], Tuple[Any, Nest]]


def training_info_spec(action_spec: Any,
                       info_spec: Any,
                       rollout_info_spec: Any = ()) -> TrainingInfo:
    """The spec of one ``TrainingInfo`` row (no batch dim).

    Args:
        action_spec: nest of action specs.
        info_spec: nest of ``tf.TensorSpec`` (and ``DistributionSpec``) of
            the step's info.
        rollout_info_spec: the same for the stored rollout info, or ``()``.
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
           row_spec: Nest,
           batch_size: Optional[int],
           final_row_fn: Optional[EdgeRowFn] = None,
           first_row_fn: Optional[EdgeRowFn] = None) -> Tuple[Any, Any]:
    """Runs ``row_fn`` for t = 0 .. num_rows - 1, then ``final_row_fn``.

    With ``first_row_fn``, row 0 is that function's instead of
    ``row_fn``'s (``row_fn`` then runs for t = 1 .. num_rows - 1).

    Up to ``MAX_PYTHON_ROWS`` rows run as plain Python rows (stacked);
    longer unrolls run in a ``tf.while_loop`` writing ``TensorArray``s.
    Run it under the caller's ``GradientTape`` when the rows must carry
    gradients.

    Args:
        row_fn: ``(t, carry) -> (carry, row)``; ``t`` an int32 scalar
            tensor (a Python int in Python rows), ``row`` a nest of [B, ...]
            tensors and distributions matching ``row_spec``.
        carry: initial carry nest (policy state, time step, ...).
        num_rows: N >= 0, rows produced by ``row_fn``.
        row_spec: nest of ``tf.TensorSpec`` and ``DistributionSpec`` of one
            row, no batch dim (e.g. ``training_info_spec``).
        batch_size: static B for the arrays' element shapes (None: unknown).
        final_row_fn: optional ``(carry) -> (carry, row)`` producing row N
            (a bootstrap row); runs after the loop.
        first_row_fn: optional ``(carry) -> (carry, row)`` producing row 0
            in place of ``row_fn``; runs before the loop (needs
            ``num_rows >= 1``).
    Returns:
        ``(carry, rows)``: the final carry and the stacked rows
        ``[N (+1), B, ...]``, distributions where ``row_spec`` has them.
    Raises:
        ValueError: ``first_row_fn`` with ``num_rows < 1``.
    """
    if first_row_fn is not None and num_rows < 1:
        raise ValueError("unroll: first_row_fn needs num_rows >= 1, "
                         "got num_rows=%d" % num_rows)
    total = num_rows + (0 if final_row_fn is None else 1)
    if total <= MAX_PYTHON_ROWS:
        carry, stacked = _python_rows(row_fn, carry, num_rows, final_row_fn,
                                      first_row_fn)
    else:
        carry, stacked = _loop_rows(row_fn, carry, num_rows, total,
                                    dist_ops.to_params_spec(row_spec),
                                    batch_size, final_row_fn, first_row_fn)
    return carry, dist_ops.params_to_distributions(stacked, row_spec)


def _python_rows(row_fn, carry, num_rows, final_row_fn, first_row_fn):
    """``unroll``'s rows as Python calls; the stacked parameters."""
    rows = []
    if first_row_fn is not None:
        carry, row = first_row_fn(carry)
        rows.append(row)
    for t in range(0 if first_row_fn is None else 1, num_rows):
        carry, row = row_fn(t, carry)
        rows.append(row)
    if final_row_fn is not None:
        carry, row = final_row_fn(carry)
        rows.append(row)
    rows = [dist_ops.distributions_to_params(row) for row in rows]
    return carry, tf.nest.map_structure(lambda *x: tf.stack(x), *rows)


def _loop_rows(row_fn, carry, num_rows, total, params_spec, batch_size,
               final_row_fn, first_row_fn):
    """``unroll``'s rows in a ``tf.while_loop`` writing ``TensorArray``s;
    the stacked parameters."""
    arrays = tf.nest.map_structure(
        lambda s: tf.TensorArray(s.dtype, size=total,
                                 element_shape=[batch_size] +
                                 s.shape.as_list()), params_spec)

    def _write(t, arrays, row):
        return tf.nest.map_structure(lambda ta, x: ta.write(t, x), arrays,
                                     dist_ops.distributions_to_params(row))

    def _body(t, carry, arrays):
        carry, row = row_fn(t, carry)
        return t + 1, carry, _write(t, arrays, row)

    start = 0
    if first_row_fn is not None:
        carry, row = first_row_fn(carry)
        arrays, start = _write(0, arrays, row), 1
    _, carry, arrays = tf.while_loop(lambda t, *_: t < num_rows, _body,
                                     (tf.constant(start), carry, arrays),
                                     maximum_iterations=num_rows - start)
    if final_row_fn is not None:
        carry, row = final_row_fn(carry)
        arrays = _write(num_rows, arrays, row)
    return carry, tf.nest.map_structure(lambda ta: ta.stack(), arrays)
