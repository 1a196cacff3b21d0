"""Type checks of configuration values (gin bindings), one line each.

gin passes whatever a binding says: ``num_iterations='ten'`` would fail far
away and ``2.5`` for an int would be truncated silently. These predicates
and ``check_arg_types`` refuse such values with the binding's name.
"""

import os
import typing
from typing import Any, Callable, Dict, Union

import numpy as np


def is_int(value: Any) -> bool:
    """A Python or numpy integer, not a bool."""
    return (isinstance(value, (int, np.integer))
            and not isinstance(value, (bool, np.bool_)))


def is_number(value: Any) -> bool:
    """An int or a float (Python or numpy), not a bool."""
    return is_int(value) or isinstance(value, (float, np.floating))


# Annotation -> (check, what the message says was expected).
_TYPE_CHECKS = {
    int: (is_int, 'an int'),
    float: (is_number, 'a number'),
    bool: (lambda v: isinstance(v, (bool, np.bool_)), 'a bool'),
    str: (lambda v: isinstance(v, (str, os.PathLike)), 'a string'),
}


def check_arg_types(owner: str, fn: Callable[..., Any],
                    values: Dict[str, Any]) -> None:
    """Refuses numeric, boolean and string arguments of the wrong type.

    Checks every parameter of ``fn`` annotated ``int``, ``float``, ``bool``
    or ``str`` (or ``Optional`` of one): gin passes what a binding says,
    and ``num_iterations='ten'`` would otherwise fail far away, while
    ``2.5`` for an int would be truncated silently.

    Args:
        owner: the name in the message (``'TrainerConfig'``).
        fn: the function whose annotations say the types.
        values: argument name -> value (e.g. ``locals()``).

    Raises:
        TypeError: ``"TrainerConfig.num_iterations: expected an int, got
            'ten' (str)"``.
    """
    hints = typing.get_type_hints(fn)
    for name, value in values.items():
        expected = hints.get(name)
        optional = False
        if typing.get_origin(expected) is Union:
            args = typing.get_args(expected)
            kinds = [a for a in args if a is not type(None)]
            optional = len(kinds) < len(args)
            expected = kinds[0] if len(kinds) == 1 else None
        if expected not in _TYPE_CHECKS or (value is None and optional):
            continue
        check, what = _TYPE_CHECKS[expected]
        if not check(value):
            raise TypeError("%s.%s: expected %s%s, got %r (%s)" %
                            (owner, name, what, ' or None' if optional else
                             '', value, type(value).__name__))
