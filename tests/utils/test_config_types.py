"""utils.config_types: predicates and annotation-driven type checks."""

from typing import Optional

import numpy as np
import pytest

from alf_rl.utils.config_types import check_arg_types, is_int, is_number


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
