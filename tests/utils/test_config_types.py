"""utils.config_types: predicates and annotation-driven type checks."""

from typing import (Annotated, Any, Callable, Dict, List, Literal, Optional,
                    Sequence, Tuple, Union)

import numpy as np
import pytest

from alf_rl.utils.config_types import (EXTERNAL_PARAM_TYPES, UNKNOWN,
                                       check_arg_types, declare_param_types,
                                       describe_annotation, is_int,
                                       is_number, value_mismatch)


def test_predicates():
    assert is_int(3) and is_int(np.int64(3))
    assert not is_int(True) and not is_int(2.5) and not is_int('3')
    assert is_number(2.5) and is_number(np.float32(1)) and is_number(4)
    assert not is_number(False) and not is_number('1.0')


def _fn(n: int, lr: float, flag: bool, name: str,
        limit: Optional[int] = None, other=None):
    del n, lr, flag, name, limit, other


def test_check_arg_types_accepts_and_refuses():
    ok = dict(n=3, lr=1, flag=False, name='x', limit=None, other=object())
    check_arg_types('Thing', _fn, ok)
    cases = [
        (dict(ok, n=2.5), r"^Thing.n: expected an int, got 2.5 \(float\)$"),
        (dict(ok, n=True), r"^Thing.n: expected an int, got True \(bool\)$"),
        (dict(ok, lr='fast'), r"^Thing.lr: expected a number, got 'fast'"),
        (dict(ok, flag=1), r"^Thing.flag: expected a bool, got 1 \(int\)$"),
        (dict(ok, name=3), r"^Thing.name: expected a string, got 3"),
        (dict(ok, limit='ten'),
         r"^Thing.limit: expected an int or None, got 'ten' \(str\)$"),
    ]
    for values, message in cases:
        with pytest.raises(TypeError, match=message):
            check_arg_types('Thing', _fn, values)


_LEARNING_RATE = Annotated[Union[float, Callable[[int], float]],
                           'a number or a schedule']


@pytest.mark.parametrize('value, annotation, expected', [
    # Fits: None.
    (0.9, float, None), (1, float, None), (3, int, None),
    (None, Optional[int], None), ((64, 64), Optional[Sequence[int]], None),
    ([64], List[int], None), ((), Sequence[int], None),
    ([(32, 8, 4)], Sequence[Tuple[int, int, int]], None),
    ((1, 'a'), Tuple[int, str], None), ({'a': 1.0}, Dict[str, float], None),
    ('relu', Union[str, Callable], None), (len, Callable[[Any], int], None),
    ('b', Literal['a', 'b'], None), (0.1, _LEARNING_RATE, None),
    (object(), Any, None), ('x', 'SomeForwardRef', None),
    # Misfits: what was expected.
    ('text', np.ndarray, 'a ndarray'),  # a class: isinstance of a literal
    ('high', float, 'a number'), (True, float, 'a number'),
    (2.0, int, 'an int'), (1, bool, 'a bool'), (3, str, 'a string'),
    (64, Optional[Sequence[int]], 'a sequence of ints or None, e.g. (64,)'),
    ('abc', Sequence[str], "a sequence of strings, e.g. ('abc',)"),
    ((1, 'a'), Sequence[int], 'a sequence of ints'),
    ([(32, 8)], Sequence[Tuple[int, int, int]],
     'a sequence whose items are each a tuple (int, int, int)'),
    ((1, 2, 3), Tuple[int, int], 'a tuple (int, int)'),
    ([1], Dict[str, int], 'a dict'), ({1: 'a'}, Dict[str, int], 'a dict'),
    ('squared', Callable[[Any], Any], 'a callable'),
    (3, Optional[Union[str, Callable]], 'a callable or a string or None'),
    ('c', Literal['a', 'b'], "one of 'a', 'b'"),
    ('fast', _LEARNING_RATE, 'a number or a schedule'),
    (None, float, 'a number'),
])
def test_value_mismatch_says_what_was_expected(value, annotation, expected):
    assert value_mismatch(value, annotation) == expected


def test_value_mismatch_resolves_references_and_accepts_unknown():
    # resolve stands for gin: a macro's value, UNKNOWN for a call's result.
    values = {'%X': 'high', '@f()': UNKNOWN}

    def resolve(value):
        return values.get(value, value) if isinstance(value, str) else value

    assert value_mismatch('%X', float, resolve) == 'a number'
    assert value_mismatch('@f()', float, resolve) is None
    assert value_mismatch(('@f()', 3), Sequence[int], resolve) is None
    assert value_mismatch(('%X', 3), Sequence[int], resolve) == (
        'a sequence of ints')


def test_declared_types_are_kept_per_function():
    def external(rate=0.1, **kwargs):
        del rate, kwargs

    declare_param_types(external, rate=float)
    declare_param_types(external, clip=Optional[float])
    assert EXTERNAL_PARAM_TYPES[external] == {'rate': float,
                                              'clip': Optional[float]}
    assert describe_annotation(Optional[float]) == 'a number or None'
    del EXTERNAL_PARAM_TYPES[external]
