"""What a checkpoint holds: does it read back, are its values finite.

A checkpoint is never written from NaN/Inf values and never restored when
it holds them (``alf_rl.utils.checkpoint.Checkpointer``): a model, its
optimizer slots or a replay buffer with a NaN in it would poison every run
resumed from it. Two checks, both cheap next to a save or a restore:

- ``non_finite_variable``: the first floating variable of the live objects
  holding NaN or Inf (one reduction per variable, before a save);
- ``read_back``: every tensor of a checkpoint on disk read (TensorFlow
  verifies each tensor's checksum as it reads it) and its floating ones
  checked for NaN/Inf (before a restore).

TensorFlow is imported inside the functions: ``alf-train`` imports the
checkpoint module before TensorFlow.
"""

from typing import Any, Iterable, List, NamedTuple, Optional

#: The suffix ``tf.train.Checkpoint`` gives a variable's key.
_KEY_SUFFIX = '/.ATTRIBUTES/VARIABLE_VALUE'


def checkpoint_variables(checkpoint: Any) -> List[Any]:
    """Every ``tf.Variable`` a ``tf.train.Checkpoint`` would save.

    Args:
        checkpoint: a ``tf.train.Checkpoint``.

    Returns:
        The variables, each once, in the checkpoint's traversal order.
    """
    import tensorflow as tf

    found, seen = [], set()
    for trackable in tf.train.TrackableView(checkpoint).descendants():
        if isinstance(trackable, tf.Variable) and id(trackable) not in seen:
            seen.add(id(trackable))
            found.append(trackable)
    return found


def non_finite_variable(variables: Iterable[Any]) -> Optional[str]:
    """The name of the first floating variable holding NaN or Inf, or None
    (then these values are fit to checkpoint).

    Args:
        variables: ``tf.Variable``s (e.g. an algorithm's ``variables``, or
            ``checkpoint_variables(...)``: the model, the optimizer slots,
            the replay buffer).
    """
    import tensorflow as tf

    for v in variables:
        if v.dtype.is_floating and not bool(
            tf.reduce_all(tf.math.is_finite(v))
        ):
            return v.name
    return None


class ReadBack(NamedTuple):
    """What reading a whole checkpoint back found.

    Attributes:
        problem: why it does not read back completely (``'<Error>:
            <reason>'``), or None.
        non_finite: the key of its first floating tensor holding NaN or
            Inf (``'algorithm/_actor_network/.../kernel'``), or None.
        value: ``'NaN'`` or ``'Inf'`` for ``non_finite``, else None.
    """

    problem: Optional[str] = None
    non_finite: Optional[str] = None
    value: Optional[str] = None


def non_finite_kind(value: Any) -> Optional[str]:
    """``'NaN'`` or ``'Inf'`` when the numpy array ``value`` is floating
    and holds one (NaN first), else None."""
    import numpy as np

    if value.dtype.kind != 'f' or np.isfinite(value).all():
        return None
    return 'NaN' if np.isnan(value).any() else 'Inf'


def problem_line(error: BaseException) -> str:
    """``'<Error>: <reason>'`` on one line (at most 200 characters of the
    reason): ``ReadBack.problem`` for an error met reading back."""
    return '%s: %s' % (
        type(error).__name__,
        ' '.join(str(error).split())[:200],
    )


def read_back(prefix: str, chunks: bool = True) -> ReadBack:
    """Reads every tensor of the checkpoint at ``prefix`` (its chunk files
    too, a chunk at a time: ``chunked_state.check_chunks``) and checks the
    floating ones for NaN/Inf.

    Args:
        prefix: the checkpoint prefix (``.../ckpt-<step>/ckpt``).
        chunks: whether to read its chunk files (the replay data) too;
            False for a reader that restores none of it.

    Returns:
        A ``ReadBack``: ``problem`` when a tensor does not read back (the
        index missing, a checksum mismatch...), else ``non_finite`` naming
        the first tensor with NaN/Inf, if any.
    """
    import os

    import numpy as np
    import tensorflow as tf

    from alf_rl.utils.chunked_state import check_chunks

    if not os.path.exists(prefix + '.index'):
        return ReadBack(
            problem='%s is missing' % os.path.basename(prefix + '.index')
        )
    bad = None
    try:
        reader = tf.train.load_checkpoint(prefix)
        for name in sorted(reader.get_variable_to_shape_map()):
            kind = non_finite_kind(np.asarray(reader.get_tensor(name)))
            if bad is None and kind is not None:
                bad = (name, kind)
    except (
        tf.errors.OpError,
        OSError,
        ValueError,
        IndexError,
        RuntimeError,
    ) as e:
        return ReadBack(problem=problem_line(e))
    if bad is None:
        return check_chunks(prefix) if chunks else ReadBack()
    name = (
        bad[0][: -len(_KEY_SUFFIX)] if bad[0].endswith(_KEY_SUFFIX) else bad[0]
    )
    return ReadBack(non_finite=name, value=bad[1])


def finite_checkpoint_before(
    ckpt_dir: str, steps: Iterable[int], before: int
) -> Optional[int]:
    """The newest of ``steps`` older than ``before`` whose checkpoint
    reads back completely with finite values (``read_back``), or None.

    Args:
        ckpt_dir: the checkpoint directory (``ckpt-<step>/ckpt`` in it).
        steps: the steps of the checkpoints on disk.
        before: an iteration; only checkpoints of earlier ones count.
    """
    import os

    for step in sorted((s for s in steps if s < before), reverse=True):
        found = read_back(os.path.join(ckpt_dir, 'ckpt-%d' % step, 'ckpt'))
        if found.problem is None and found.non_finite is None:
            return step
    return None
