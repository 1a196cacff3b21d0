"""Nest helpers whose errors say *where* two nests differ.

``tf.nest`` reports a mismatch by dumping both nests; these helpers walk the
nests themselves and name the path of the first difference, e.g.
``observation['pos']: expected [B, 3] float32 from observation_spec, got
[B, 1, 3] float64``. Paths follow ``tf.nest``'s flattening order (dict keys
sorted, namedtuple fields in order).
"""

from typing import (TYPE_CHECKING, Any, List, Mapping, Optional, Sequence,
                    Tuple, Union)

import numpy as np
import tensorflow as tf

if TYPE_CHECKING:  # not imported at run time: TFP takes a second to import
    import tensorflow_probability as tfp

#: A leaf of a nest: a tensor, a spec, an array, a distribution or a Python
#: number (``None`` and strings appear in specs and configs). TensorFlow and
#: TFP carry no type information, so a type checker reads their classes as
#: ``Any``: it checks the containers below, not the tensors.
NestLeaf = Union[tf.Tensor, tf.TypeSpec, 'tfp.distributions.Distribution',
                 np.ndarray, np.generic, int, float, bool, str, None]
#: A nest: a leaf, or a dict, list, tuple or namedtuple of nests (what
#: ``tf.nest`` walks).
Nest = Union[NestLeaf, Mapping[Any, 'Nest'], Sequence['Nest']]


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, '_fields')


def _children(x):
    """(key label, child) pairs of a nest node, or None for a leaf."""
    if isinstance(x, dict):
        return [("[%r]" % k, x[k]) for k in sorted(x)]
    if _is_namedtuple(x):
        return [("." + f, getattr(x, f)) for f in x._fields]
    if isinstance(x, (list, tuple)):
        return [("[%d]" % i, v) for i, v in enumerate(x)]
    return None


def flatten_with_path(nest: Nest, prefix: str = '') -> List[Tuple[str, Any]]:
    """Flattens a nest into ``[(path, leaf)]`` in ``tf.nest`` order.

    Args:
        nest: any nest of dicts, lists, tuples and namedtuples.
        prefix: string put in front of every path.

    Returns:
        list of ``(path string, leaf)``; ``()`` and ``[]`` contribute nothing.
    """
    children = _children(nest)
    if children is None:
        return [(prefix, nest)]
    result = []
    for label, child in children:
        result.extend(flatten_with_path(child, prefix + label))
    return result


def _kind(x):
    if isinstance(x, dict):
        return 'dict with keys %s' % sorted(x)
    if _is_namedtuple(x):
        return '%s%s' % (type(x).__name__, x._fields)
    if isinstance(x, (list, tuple)):
        return '%s of length %d' % (type(x).__name__, len(x))
    return 'a leaf (%s)' % type(x).__name__


def find_structure_difference(nest1: Nest, nest2: Nest, path: str = ''
                              ) -> Optional[Tuple[str, str]]:
    """The path and description of the first structural difference, or None.

    Namedtuples and plain tuples of the same length are treated as different
    only when their types differ *and* one of them is a namedtuple.

    Args:
        nest1: a nest to compare (leaves of any kind and shape).
        nest2: the nest to compare it with.
        path: path of ``nest1`` and ``nest2`` inside a bigger nest.

    Returns:
        ``(path, description)`` of the first difference in ``tf.nest``
        order, e.g. ``("['pos']", 'a leaf (Tensor) vs dict with keys [..]')``
        (``'<root>'`` for the top), or None when the structures agree.
    """
    c1, c2 = _children(nest1), _children(nest2)
    if c1 is None and c2 is None:
        return None
    if (c1 is None) != (c2 is None) or (isinstance(nest1, dict) !=
                                        isinstance(nest2, dict)):
        return path or '<root>', "%s vs %s" % (_kind(nest1), _kind(nest2))
    if ((_is_namedtuple(nest1) or _is_namedtuple(nest2))
            and type(nest1) is not type(nest2)):
        return path or '<root>', "%s vs %s" % (_kind(nest1), _kind(nest2))
    if [k for k, _ in c1] != [k for k, _ in c2]:
        return path or '<root>', "%s vs %s" % (_kind(nest1), _kind(nest2))
    for (label, a), (_, b) in zip(c1, c2):
        diff = find_structure_difference(a, b, path + label)
        if diff is not None:
            return diff
    return None


def assert_same_structure(nest1: Nest, nest2: Nest, name1: str = 'first',
                          name2: str = 'second', prefix: str = '') -> None:
    """Raises a ``ValueError`` naming the path where two nests differ.

    Args:
        nest1: a nest to compare.
        nest2: the nest to compare it with.
        name1: what to call ``nest1`` in the message.
        name2: what to call ``nest2`` in the message.
        prefix: path prefix for the message (e.g. ``'observation'``).

    Raises:
        ValueError: ``"<path>: structure of <name1> differs from <name2>:
            <what each side has there>"``.
    """
    diff = find_structure_difference(nest1, nest2, prefix)
    if diff is not None:
        path, what = diff
        raise ValueError("%s: structure of %s differs from %s: %s" %
                         (path, name1, name2, what))


def _shape_str(shape, outer_rank):
    dims = ['B', 'T'][:outer_rank][::-1] if outer_rank <= 2 else ['?'] * outer_rank
    shape = list(shape)
    inner = [str(d) for d in shape[outer_rank:]]
    return '[%s]' % ', '.join(dims + inner)


def check_nest_matches_spec(values: Nest, specs: Nest, name: str = 'value',
                            outer_rank: int = 1, hint: str = '',
                            check_dtype: bool = True) -> None:
    """Checks that a nest of tensors/arrays matches a nest of specs.

    Runs in Python (at trace time for tensors); call it once at a public
    boundary, never inside a loop body.

    Args:
        values: nest of tensors or numpy arrays with ``outer_rank`` leading
            (batch/time) dims.
        specs: matching nest of ``tf.TensorSpec``.
        name: name of the nest for the message, e.g. ``'observation'``.
        outer_rank: number of leading dims not described by the spec.
        hint: appended to the message.
        check_dtype: also require equal dtypes.

    Raises:
        ValueError: naming the path, what was expected and what arrived.
    """
    assert_same_structure(values, specs, name, name + '_spec', prefix=name)
    flat_v = flatten_with_path(values, name)
    flat_s = flatten_with_path(specs, name)
    for (path, v), (_, s) in zip(flat_v, flat_s):
        vshape = tuple(v.shape)
        vdtype = tf.as_dtype(v.dtype)
        sshape = tuple(s.shape.as_list())
        ok_rank = len(vshape) == outer_rank + len(sshape)
        ok_shape = ok_rank and all(
            a is None or b is None or a == b
            for a, b in zip(vshape[outer_rank:], sshape))
        ok_dtype = (not check_dtype) or vdtype == s.dtype
        if not (ok_shape and ok_dtype):
            raise ValueError(
                "%s: expected %s %s from %s_spec, got %s %s%s" %
                (path, _shape_str([None] * outer_rank + list(sshape),
                                  outer_rank), s.dtype.name, name,
                 list(vshape), vdtype.name, (' -- ' + hint) if hint else ''))
