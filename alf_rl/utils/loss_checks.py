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
"""

import re
from typing import NamedTuple, Optional, Sequence, Tuple

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
