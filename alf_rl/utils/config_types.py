"""Type checks of configuration values (gin bindings), one line each.

gin passes whatever a binding says: ``num_iterations='ten'`` would fail far
away and ``2.5`` for an int would be truncated silently. These predicates
and ``check_arg_types`` refuse such values with the binding's name.
"""

import collections.abc
import os
import typing
from typing import Any, Callable, Dict, Optional, Union

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


#: ``resolve`` returns it for a value it cannot know before the call (a
#: gin ``@name()`` reference): every annotation accepts it.
UNKNOWN = object()

# Annotations given by name for parameters of external (unannotated)
# configurables: ``{function or class: {parameter: annotation}}``
# (``declare_param_types``).
EXTERNAL_PARAM_TYPES: Dict[Any, Dict[str, Any]] = {}

# The plural of the scalar descriptions, for "a sequence of ...".
_PLURALS = {int: 'ints', float: 'numbers', bool: 'bools', str: 'strings'}
_SEQUENCES = (collections.abc.Sequence, collections.abc.MutableSequence,
              list, tuple, collections.abc.Iterable,
              collections.abc.Collection)
_MAPPINGS = (collections.abc.Mapping, collections.abc.MutableMapping, dict)
_CALLABLES = (collections.abc.Callable, type)


def declare_param_types(fn: Any, **annotations: Any) -> None:
    """Declares the types of an external configurable's parameters (a
    ``tf_keras`` optimizer has no annotations), for ``value_mismatch``.

    Args:
        fn: the function or class (as registered with gin).
        **annotations: parameter name -> annotation, e.g.
            ``learning_rate=LearningRate``.
    """
    EXTERNAL_PARAM_TYPES.setdefault(fn, {}).update(annotations)


def value_mismatch(value: Any, annotation: Any,
                   resolve: Callable[[Any], Any] = lambda v: v
                   ) -> Optional[str]:
    """What ``annotation`` expected, when ``value`` does not fit it.

    Understood: ``int``, ``float`` (any number), ``bool``, ``str``,
    ``None``, ``Optional``/``Union``, ``Literal``, ``Sequence[X]``,
    ``List[X]``, ``Tuple[X, ...]``, ``Tuple[X, Y]``, ``Dict[K, V]``/
    ``Mapping``, ``Callable``/``Type`` (anything callable) and
    ``Annotated[X, 'description']`` (the description is what the message
    says). Other classes are checked with ``isinstance`` when the value is
    a plain literal (number, string, bool, list, tuple, dict, None);
    anything else (``Any``, type variables, forward references, protocols)
    accepts every value.

    Args:
        value: the value (a gin literal, or what ``resolve`` maps a gin
            reference to).
        annotation: the parameter's annotation.
        resolve: maps each value (and nested item) before it is checked;
            ``UNKNOWN`` for a value not known yet (accepted).

    Returns:
        None when it fits, else what was expected, e.g. ``'a number'``,
        ``'a sequence of ints or None, e.g. (64,)'``.
    """
    if _fits(value, annotation, resolve):
        return None
    expected = describe_annotation(annotation)
    item = _sequence_item(annotation)
    if item is not None and _fits(value, item, resolve):
        expected += ', e.g. (%r,)' % (value, )
    return expected


def _sequence_item(annotation: Any) -> Any:
    """``X`` of ``[Optional[]] Sequence[X]`` (or ``Tuple[X, ...]``)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Union:
        arms = [a for a in args if a is not type(None)]
        return _sequence_item(arms[0]) if len(arms) == 1 else None
    if origin is typing.Annotated:
        return _sequence_item(args[0])
    if origin in _SEQUENCES and origin is not tuple and len(args) == 1:
        return args[0]
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return args[0]
    return None


def _fits(value: Any, annotation: Any,
          resolve: Callable[[Any], Any]) -> bool:
    """Whether ``value`` fits ``annotation`` (see ``value_mismatch``)."""
    value = resolve(value)
    if value is UNKNOWN:
        return True
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _fits(value, args[0], resolve)
    if origin is Union:
        return any(_fits(value, arm, resolve) for arm in args)
    if origin is typing.Literal:
        return value in args
    if annotation in (None, type(None)):
        return value is None
    if annotation in _TYPE_CHECKS:
        return bool(_TYPE_CHECKS[annotation][0](value))
    kind = origin or annotation
    if kind in _SEQUENCES:
        if not isinstance(value, (list, tuple)):
            return False
        if kind is tuple and args and args[-1] is not Ellipsis:
            return len(value) == len(args) and all(
                _fits(v, a, resolve) for v, a in zip(value, args))
        return all(_fits(v, args[0] if args else Any, resolve)
                   for v in value)
    if kind in _MAPPINGS:
        key, item = args if len(args) == 2 else (Any, Any)
        return isinstance(value, dict) and all(
            _fits(k, key, resolve) and _fits(v, item, resolve)
            for k, v in value.items())
    if kind in _CALLABLES:
        return callable(value)
    if not isinstance(annotation, type) or type(value) not in _LITERALS:
        return True
    try:
        return isinstance(value, annotation)
    except TypeError:  # a Protocol that is not runtime-checkable
        return True


def describe_annotation(annotation: Any) -> str:
    """What an annotation asks for, in words: ``'a number or None'``,
    ``'a sequence of ints'``, ``'a tuple (int, int, int)'``; the
    description of ``Annotated[X, 'description']``."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        texts = [a for a in args[1:] if isinstance(a, str)]
        return texts[0] if texts else describe_annotation(args[0])
    if origin is Union:
        # Sorted: typing caches unions, so Union[str, Callable] may come
        # back as an earlier-made Union[Callable, str] (same set).
        texts = sorted(describe_annotation(a) for a in args
                       if a is not type(None))
        return ' or '.join(texts + (['None'] if type(None) in args else []))
    if origin is typing.Literal:
        return 'one of %s' % ', '.join(map(repr, args))
    if annotation in (None, type(None)):
        return 'None'
    if annotation in _TYPE_CHECKS:
        return _TYPE_CHECKS[annotation][1]
    kind = origin or annotation
    if kind in _SEQUENCES:
        if kind is tuple and args and args[-1] is not Ellipsis:
            return 'a tuple (%s)' % ', '.join(
                a.__name__ if a in _TYPE_CHECKS else describe_annotation(a)
                for a in args)
        if args and args[0] in _PLURALS:
            return 'a sequence of %s' % _PLURALS[args[0]]
        return ('a sequence whose items are each %s' %
                describe_annotation(args[0]) if args else 'a sequence')
    if kind in _MAPPINGS:
        return 'a dict'
    if kind in _CALLABLES:
        return 'a class' if kind is type else 'a callable'
    name = getattr(annotation, '__name__', None)
    if not name:
        return 'anything'
    return '%s %s' % ('an' if name[:1].lower() in 'aeiou' else 'a', name)


# Plain gin literals: the values whose class ``_fits`` checks against a
# class annotation (a reference's result may be any object).
_LITERALS = (int, float, str, bool, list, tuple, dict, type(None))
