"""The in-graph check that a loss is finite, and reading its failure back.

A check inside a compiled call can only fail as a
``tf.errors.InvalidArgumentError`` carrying text: no Python exception type
crosses the graph. So the check's message has one declared form, written
by ``check_loss_finite`` (every raiser calls it) and read back by
``failed_loss_check``, both here::

    loss of <owner> (<where>) : Tensor had <NaN|Inf> values

``<owner>`` is the algorithm's name; ``<where>`` is
``components: <path>, <path>...`` for the check before the update is
applied, or one of ``XLA_ITERATION`` / ``XLA_UPDATE`` for the checks
after an XLA-compiled iteration or update (XLA drops ``CheckNumerics``
inside a cluster, so the update with the bad loss was applied then).
Only a line of exactly that form is recognized: other errors that happen
to mention a loss or NaN are not mistaken for it.

The update's own check (``check_update_finite``, before an optimizer
applies its gradients) has a second declared form, read back by
``failed_update_check``::

    non-finite update of <owner>: the gradient of <variable> holds NaN/Inf
    values; not applied

(inside a graph TensorFlow's ``Assert`` prints each part in brackets).
"""

import re
from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

#: ``<where>`` of the check after an XLA-compiled driver iteration.
XLA_ITERATION = 'XLA-compiled iteration'
#: ``<where>`` of the check after an XLA-compiled off-policy update.
XLA_UPDATE = 'XLA-compiled update'

_FORM = re.compile(
    r'loss of (?P<owner>[^\s()]+) \((?:components: (?P<components>[^()]*)|'
    r'(?P<xla>%s|%s))\) : Tensor had (?P<value>NaN|Inf) values' %
    (re.escape(XLA_ITERATION), re.escape(XLA_UPDATE)))


def check_loss_finite(loss: tf.Tensor, owner: str,
                      components: Sequence[str] = (),
                      xla: Optional[str] = None) -> tf.Tensor:
    """``loss`` after a check that it holds no NaN or Inf.

    Args:
        loss: the loss (any shape, float).
        owner: the algorithm's name (the ``loss_name`` of the error).
        components: the paths of the loss's parts (``'loss.pg_loss'``...),
            for the check before the update.
        xla: ``XLA_ITERATION`` or ``XLA_UPDATE`` for a check after an
            XLA-compiled call, else None.

    Returns:
        ``loss``, with the check as a dependency.
    """
    if xla not in (None, XLA_ITERATION, XLA_UPDATE):
        raise ValueError("check_loss_finite: xla must be None, %r or %r, "
                         "got %r" % (XLA_ITERATION, XLA_UPDATE, xla))
    where = xla if xla is not None else 'components: %s' % ', '.join(
        components)
    return tf.debugging.check_numerics(loss,
                                       'loss of %s (%s)' % (owner, where))


class LossCheckFailure(NamedTuple):
    """A failed ``check_loss_finite``, read back from its error.

    Attributes:
        owner: the algorithm's name.
        components: the loss's parts (``()`` for the XLA checks).
        value: ``'NaN'`` or ``'Inf'``.
        update_applied: the check ran after an XLA-compiled iteration or
            update, whose update was already applied.
        detail: the check's line, ``loss of ... : Tensor had NaN values``.
    """
    owner: str
    components: Tuple[str, ...]
    value: str
    update_applied: bool
    detail: str


def failed_loss_check(error: BaseException) -> Optional[LossCheckFailure]:
    """The ``check_loss_finite`` failure behind ``error``, or None.

    Args:
        error: what a compiled call raised (a ``tf.errors.OpError``; a
            graph error's text holds the check's line among others).
    """
    text = getattr(error, 'message', str(error))
    match = _FORM.search(text)
    if match is None:
        return None
    components = match.group('components')
    return LossCheckFailure(
        owner=match.group('owner'),
        components=tuple(p.strip() for p in (components or '').split(',')
                         if p.strip()),
        value=match.group('value'),
        update_applied=match.group('xla') is not None,
        detail=match.group(0))


_UPDATE_HEAD = 'non-finite update of %s: the gradient of'
_UPDATE_TAIL = 'holds NaN/Inf values; not applied'
# The graph form (no string op, which XLA cannot compile, picks the name):
# "non-finite update of <owner> (of <name>, <name>...): the gradient of
# number] [<index>] [holds NaN/Inf values; not applied".
_UPDATE_FORM = re.compile(
    r'non-finite update of (?P<owner>[^\s:()]+)(?: \(of (?P<names>[^()]*)\))?'
    r': the gradient of(?: number\] \[(?P<index>\d+)\] \[| '
    r'(?P<variable>\S+) )' + re.escape(_UPDATE_TAIL))


def check_update_finite(grads: List[tf.Tensor], names: List[str],
                        owner: str) -> tf.Tensor:
    """One all-finite flag over an update's gradients, and a check on it
    that fails naming the first non-finite gradient's variable.

    Inside a graph the check is an ``Assert`` that the returned flag
    depends on (XLA compiles it away); eagerly it raises at once.

    Args:
        grads: the gradients ([...] float tensors, or ``IndexedSlices``).
        names: their variables' names, one per gradient (no parentheses).
        owner: the algorithm's name.

    Returns:
        [] bool, True when every gradient is finite (in a graph, after the
        check: what depends on it runs only when the check passed).

    Raises:
        tf.errors.InvalidArgumentError: eagerly, for a non-finite gradient
            (the declared form).
    """
    flags = tf.stack([
        tf.reduce_all(tf.math.is_finite(
            g.values if isinstance(g, tf.IndexedSlices) else g))
        for g in grads])
    ok = tf.reduce_all(flags)
    if tf.executing_eagerly():
        if not bool(ok):
            first = names[int(np.argmin(flags.numpy()))]
            raise tf.errors.InvalidArgumentError(
                None, None, '%s %s %s' % (_UPDATE_HEAD % owner, first,
                                          _UPDATE_TAIL))
        return ok
    head = _UPDATE_HEAD % ('%s (of %s)' % (owner, ', '.join(
        n.replace('(', '[').replace(')', ']') for n in names)))
    check = tf.debugging.Assert(ok, [head + ' number',
                                     tf.argmin(tf.cast(flags, tf.int32)),
                                     _UPDATE_TAIL])
    with tf.control_dependencies([check]):
        return tf.identity(ok)


class UpdateCheckFailure(NamedTuple):
    """A failed ``check_update_finite``, read back from its error.

    Attributes:
        owner: the algorithm's name.
        variable: the variable whose gradient held NaN/Inf.
        detail: the check's line (brackets removed).
    """
    owner: str
    variable: str
    detail: str


def failed_update_check(error: BaseException
                        ) -> Optional[UpdateCheckFailure]:
    """The ``check_update_finite`` failure behind ``error``, or None.

    Args:
        error: what a compiled call raised.
    """
    text = getattr(error, 'message', str(error))
    match = _UPDATE_FORM.search(text)
    if match is None:
        return None
    owner, variable = match.group('owner'), match.group('variable')
    if variable is None:
        names = (match.group('names') or '').split(', ')
        index = int(match.group('index'))
        variable = names[index] if index < len(names) else '#%d' % index
    return UpdateCheckFailure(
        owner=owner, variable=variable,
        detail='%s %s %s' % (_UPDATE_HEAD % owner, variable, _UPDATE_TAIL))
