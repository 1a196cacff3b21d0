"""Every gin binding checked against its configurable before training.

gin passes what a binding says: ``PPOLoss.gamma = 'high'`` failed inside
the loss's constructor with ``'<=' not supported between instances of
'float' and 'str'``, and ``LegacyAdam.learning_rate = 'fast'`` only at the
first update. ``check_bindings`` compares each bound value with its
parameter's annotation (``alf_rl.utils.config_types.value_mismatch``;
unannotated external configurables such as ``tf_keras`` optimizers get
theirs from ``declare_param_types`` in ``alf_rl.configurables``) and
refuses the first misfit with one line naming the binding::

    PPOLoss.gamma: expected a number, got 'high' (str)
    ActorDistributionNetwork.fc_layer_params: expected a sequence of ints
        or None, e.g. (64,), got 64 (int)

It also names a parameter that no constructor takes where gin cannot: an
``alf_rl`` class whose ``**kwargs`` go to its base classes (an algorithm)
or to the network it builds (``kwargs_forwarded_to``, e.g. an actor
network's ``fc_layer_params`` go to its ``encoding_network_ctor``).

``explain_configurable_error`` turns an error raised inside a configurable
(a range check such as ``gamma must be in [0, 1]``) into one line naming
the configurable and its bindings that the message mentions.
``python -m alf_rl.runs.binding_checks`` checks gin files and bindings in
a process of its own (``alf-grid-search`` runs it before any run).
"""

import argparse
import difflib
import functools
import inspect
import re
import sys
import typing
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from alf_rl.utils.config_types import (EXTERNAL_PARAM_TYPES, UNKNOWN,
                                       value_mismatch)

# ``_parameter`` found no parameter of that name where one must be.
_MISSING = object()
_IN_CALL = re.compile(r"In call to configurable '(?P<name>[^']+)'")


def check_bindings() -> None:
    """Checks every parsed gin binding's value against the annotation of
    the parameter it binds (see the module docstring).

    Raises:
        ValueError: one line naming the first bad binding, what was
            expected and what it holds, e.g. ``"PPOLoss.gamma: expected a
            number, got 'high' (str)"``; or, for a parameter no constructor
            takes, gin's ``"Configurable 'X' doesn't have a parameter
            named 'y'"`` with the nearest known name suggested.
    """
    import gin
    registry = gin.config._REGISTRY  # gin has no public listing
    for (scope, selector), params in list(gin.config._CONFIG.items()):
        configurable = registry.get(selector)
        if configurable is None or selector in ('gin.macro',
                                                'gin.constant'):
            continue
        short = registry.minimal_selector(selector)
        key = '%s%s' % (scope + '/' if scope else '', short)
        bound = _bindings_of(selector, scope)
        for name, value in params.items():
            problem = binding_problem(configurable.wrapped, key, name,
                                      value, bound)
            if problem:
                raise ValueError(problem)


def binding_problem(fn: Any, key: str, name: str, value: Any,
                    bound: Dict[str, Any]) -> Optional[str]:
    """What is wrong with binding ``value`` to ``fn``'s ``name``, if
    anything.

    Args:
        fn: the configurable's function or class.
        key: its gin name, with the scope if any (``'PPOLoss'``,
            ``'eval/create_environment'``), for the message.
        name: the parameter.
        value: the bound value (a gin literal or reference).
        bound: all parameters bound for ``fn`` (the one that
            ``kwargs_forwarded_to`` names decides where ``**kwargs`` go).

    Returns:
        None, or one line: ``"PPOLoss.gamma: expected a number, got
        'high' (str)"``.
    """
    # Imported here: alf_rl.algorithms imports TensorFlow.
    from alf_rl.algorithms.config_checks import (RETIRED_ARGUMENTS,
                                                 reject_retired_arguments)
    annotation, known, note = _parameter(fn, name, bound)
    if annotation is _MISSING:
        if name in RETIRED_ARGUMENTS:
            try:
                reject_retired_arguments(key, {name: value})
            except TypeError as e:
                return str(e)
        message = ("Configurable '%s' doesn't have a parameter named '%s'%s"
                   % (key, name, note))
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        return message + ('; did you mean %s?' % close[0] if close else '')
    expected = value_mismatch(value, annotation, _resolve)
    if expected is None:
        return None
    return '%s.%s: expected %s, got %s' % (key, name, expected,
                                           _value_text(value))


def _value_text(value: Any) -> str:
    """``'high' (str)``; a macro with its value; a reference as written
    (``@LegacyAdam``, with a hint when it stands for an uncalled class or
    function)."""
    resolved = _resolve(value)
    if resolved is value:
        return '%r (%s)' % (value, type(value).__name__)
    if _is_macro(value):
        return '%r = %s' % (value, _value_text(resolved))
    if resolved is UNKNOWN:
        return repr(value)
    return '%r (not called; %r() calls it)' % (value, value)


def _is_macro(value: Any) -> bool:
    import gin
    return (isinstance(value, gin.config.ConfigurableReference) and
            value.configurable.wrapped is gin.config.macro)


def _resolve(value: Any, seen: Tuple[Any, ...] = ()) -> Any:
    """A gin value as the configurable will receive it: a macro's value,
    the callable ``@name`` stands for, ``UNKNOWN`` for ``@name()`` (the
    result of a call) and constants."""
    import gin
    if not isinstance(value, gin.config.ConfigurableReference):
        return value
    if _is_macro(value):
        key = ('/'.join(value.scopes), value.configurable.selector)
        macro = gin.config._CONFIG.get(key, {})
        if 'value' not in macro or key in seen:
            return UNKNOWN
        return _resolve(macro['value'], seen + (key, ))
    if value.evaluate:
        return UNKNOWN
    return value.configurable.wrapper


def _bindings_of(selector: str, scope: str) -> Dict[str, Any]:
    """The parameters bound for ``selector`` in ``scope`` (its own and
    those of the enclosing scopes, as gin applies them)."""
    import gin
    parts = scope.split('/') if scope else []
    bound: Dict[str, Any] = {}
    for i in range(len(parts) + 1):
        bound.update(gin.config._CONFIG.get(('/'.join(parts[:i]), selector),
                                            {}))
    return bound


class _Lookup(NamedTuple):
    """What ``_parameter`` found.

    Attributes:
        annotation: the parameter's annotation; ``Any`` when unknown,
            ``_MISSING`` when no constructor takes the name.
        known: the parameter names seen on the way (for a suggestion).
        note: where ``**kwargs`` were followed to, for the message.
    """
    annotation: Any
    known: List[str]
    note: str = ''


def _parameter(fn: Any, name: str, bound: Dict[str, Any]) -> _Lookup:
    """Looks up ``fn``'s parameter ``name``.

    Follows ``**kwargs`` up a class's base classes and, past the last
    constructor that takes ``**kwargs``, into the callable bound to (or
    defaulted for) the parameter ``fn.kwargs_forwarded_to`` names. A name
    is ``_MISSING`` only where that is sure: an ``alf_rl`` constructor, or
    an external one with declared types (``declare_param_types``).
    """
    declared = EXTERNAL_PARAM_TYPES.get(fn, {})
    if name in declared:
        return _Lookup(declared[name], list(declared))
    known: List[str] = list(declared)
    for init in _constructors(fn):
        params = _signature(init)
        if params is None:
            return _Lookup(Any, known)
        if name in params and params[name].kind not in (
                params[name].VAR_POSITIONAL, params[name].VAR_KEYWORD):
            return _Lookup(_annotation(init, params[name]), known)
        known += [p for p, v in params.items() if p != 'self' and
                  v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD)]
        if not any(v.kind == v.VAR_KEYWORD for v in params.values()):
            break
    else:
        return _Lookup(_MISSING if declared else Any, known)
    forwarded = getattr(fn, 'kwargs_forwarded_to', None)
    if isinstance(forwarded, str):
        ctor = _ctor_of(fn, forwarded, bound)
        if ctor is None:
            return _Lookup(Any, known)
        found = _parameter(ctor, name, {})
        return _Lookup(found.annotation, known + found.known,
                       ' (nor does its %s, %s)' % (
                           forwarded, getattr(ctor, '__name__', ctor)))
    strict = (getattr(fn, '__module__', '') or '').startswith('alf_rl.')
    return _Lookup(_MISSING if strict or declared else Any, known)


def _constructors(fn: Any) -> List[Any]:
    """The function itself, or a class's constructors along its bases:
    each class's own ``__init__`` or else ``__new__`` (gin's rule)."""
    if not inspect.isclass(fn):
        return [fn]
    found = []
    for base in inspect.getmro(fn):
        own = base.__dict__
        if base is not object and ('__init__' in own or '__new__' in own):
            found.append(own['__init__'] if '__init__' in own else
                         own['__new__'])
    return found


def _signature(fn: Any) -> Optional[Any]:
    """``fn``'s parameters, or None when they cannot be read."""
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None


def _annotation(fn: Any, param: Any) -> Any:
    """A parameter's annotation (``Any`` when it has none). Taken from the
    signature, not ``typing.get_type_hints``: one unresolvable forward
    reference (``'tfp.distributions.Distribution'`` inside ``Nest``) makes
    that fail for the whole function, while here it only leaves that
    ``ForwardRef`` unchecked."""
    annotation = param.annotation
    if annotation is param.empty:
        return Any
    if isinstance(annotation, str):  # from __future__ import annotations
        try:
            return typing.get_type_hints(fn, include_extras=True).get(
                param.name, Any)
        except Exception:  # noqa: BLE001 (an unresolvable name)
            return Any
    return annotation


def _ctor_of(fn: Any, param: str, bound: Dict[str, Any]) -> Optional[Any]:
    """The function or class ``fn``'s ``param`` will be: bound or default,
    a ``functools.partial`` unwrapped; None when not known."""
    if param in bound:
        value = _resolve(bound[param])
    else:
        params = _signature(_constructors(fn)[0]) or {}
        value = params[param].default if param in params else None
    while isinstance(value, functools.partial):
        value = value.func
    wrapped = getattr(value, '__wrapped__', value)
    return wrapped if callable(wrapped) and value is not UNKNOWN else None


def explain_configurable_error(message: str) -> str:
    """One line for an error raised inside a gin configurable.

    gin appends ``In call to configurable 'X' (...)`` lines to such an
    error. They become a ``X: `` prefix (when the message does not name
    ``X`` already; of several, the innermost whose bindings the message
    mentions, else the innermost) and the bindings of ``X`` the message
    mentions are added: ``"gamma must be in [0, 1], got 1.5"`` becomes
    ``"PPOLoss: gamma must be in [0, 1], got 1.5 (gin: PPOLoss.gamma =
    1.5)"``.

    Args:
        message: the error's text.

    Returns:
        the message on one line.
    """
    lines = [line.strip() for line in message.split('\n') if line.strip()]
    calls = [m.group('name') for m in map(_IN_CALL.search, lines) if m]
    text = ' '.join(line for line in lines if not _IN_CALL.search(line))
    if not calls:
        return text
    # Innermost first; a base class's gin-wrapped __init__ (PPOLoss ->
    # ActorCriticLoss) adds a line too: name the one whose bindings the
    # message mentions.
    words = set(re.findall(r'\w+', text))
    name, mentioned = calls[0], []
    for call in calls:
        mentioned = ['%s.%s = %r' % (call, p, v)
                     for p, v in _bound_for(call).items() if p in words]
        if mentioned:
            name = call
            break
    if not re.search(r'\b%s\b' % re.escape(name.split('.')[-1]), text):
        text = '%s: %s' % (name, text)
    if mentioned:
        text += ' (gin: %s)' % ', '.join(mentioned)
    return text


def _bound_for(name: str) -> Dict[str, Any]:
    """The unscoped bindings of the configurable gin calls ``name``."""
    try:
        import gin
        configurable = gin.config._REGISTRY.get_match(name)
        return (_bindings_of(configurable.selector, '') if configurable
                else {})
    except Exception:  # noqa: BLE001 (an explanation must not fail)
        return {}


def _parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog='python -m alf_rl.runs.binding_checks',
        description='Checks gin files and bindings against the '
        'configurables (names, value types); exit 1 with one line on '
        'stderr naming the first bad binding.')
    p.add_argument('--gin_file', action='append', default=[])
    p.add_argument('--gin_param', action='append', default=[],
                   help='A binding every run has.')
    p.add_argument('--grid_param', action='append', default=[],
                   help='A binding of one value of a --grid (checked '
                   'alone, after the others).')
    p.add_argument('--module_path', action='append', default=[])
    return p.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Checks the gin files and bindings of ``argv`` (see ``_parse_args``);
    exits 1 with ``binding check: error: <one line>`` on stderr when one
    is wrong, else 0."""
    args = _parse_args(argv)
    from alf_rl.runs.gin_files import (add_module_paths, explain_gin_error,
                                       parse_gin)
    from alf_rl.runs.quiet import import_tensorflow
    import_tensorflow(start_runtime=False)
    try:
        add_module_paths(args.module_path)
        parse_gin(args.gin_file, args.gin_param)
        import gin
        for binding in args.grid_param:
            try:
                gin.parse_config(binding)
            except (ValueError, KeyError, TypeError, ImportError) as e:
                raise ValueError('--grid %s: %s' % (binding, explain_gin_error(
                    e, with_location=False))) from None
            try:
                check_bindings()
            except ValueError as e:
                raise ValueError('--grid %s: %s' % (binding, e)) from None
    except ValueError as e:
        print('binding check: error: %s' % e, file=sys.stderr, flush=True)
        sys.exit(1)
    sys.exit(0)


if __name__ == '__main__':
    main()
