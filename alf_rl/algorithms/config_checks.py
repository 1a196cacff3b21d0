"""Checks of algorithm constructor arguments shared by several methods.

One argument name per concept: the loss of a TD error is ``td_error_loss_fn``
and the soft target-update rate is ``tau`` in every algorithm. The old
spellings are refused with a message naming the new one, whether they come
from Python or from a gin binding (the constructors take ``**kwargs``, so
gin passes an unknown name through to them).
"""

from typing import Any, Mapping

# Retired spelling -> the one name used now.
RETIRED_ARGUMENTS = {
    'td_errors_loss_fn': 'td_error_loss_fn',
    'td_loss_fn': 'td_error_loss_fn',
    'target_update_tau': 'tau',
}


def reject_retired_arguments(name: str, kwargs: Mapping[str, Any]) -> None:
    """Raises TypeError when ``kwargs`` holds a retired argument name.

    Args:
        name: the algorithm's name, for the message.
        kwargs: the keyword arguments a constructor did not consume.
    Raises:
        TypeError: e.g. ``DqnAlgorithm: argument 'td_loss_fn' was renamed to
            'td_error_loss_fn'``.
    """
    for old in sorted(kwargs):
        if old in RETIRED_ARGUMENTS:
            new = RETIRED_ARGUMENTS[old]
            raise TypeError(
                "%s: argument %r was renamed to %r; pass %s=... instead (in "
                "a gin file: %s.%s = ...)" % (name, old, new, new, name, new))


def check_unit_interval(name: str, argument: str, value: float) -> float:
    """Returns ``float(value)``; ValueError unless it lies in [0, 1].

    Args:
        name: the algorithm's name, for the message.
        argument: the argument's name, for the message.
        value: the number to check (gamma, an epsilon, ...).
    Returns:
        ``float(value)``.
    Raises:
        ValueError: ``value`` outside [0, 1].
    """
    if not 0.0 <= value <= 1.0:
        raise ValueError("%s: %s must be in [0, 1], got %r" %
                         (name, argument, value))
    return float(value)
