"""Trace-time argument checks of ``ReplayBuffer``: one clear line naming
the value and what was expected."""

import logging
from typing import Any, Optional, Tuple

import numpy as np
import tensorflow as tf

from alf_rl.utils import nest as nest_utils
from alf_rl.utils.nest import Nest


def check_positive_int(value: Any, name: str) -> int:
    """``value`` as an int, or a ``ValueError`` unless it is a positive
    Python (or numpy) int (bools refused).

    Args:
        value: the argument.
        name: its name for the message.
    Returns:
        ``int(value)``.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, np.integer)) or value < 1:
        raise ValueError("%s must be a positive Python int, got %r" %
                         (name, value))
    return int(value)


def check_data_spec(data_spec: Nest, data_name: str) -> None:
    """Every leaf a ``tf.TensorSpec`` of a fully defined shape, or a
    ``ValueError`` naming its path.

    Args:
        data_spec: nest of specs of one stored step.
        data_name: root of the reported nest path.
    """
    for path, spec in nest_utils.flatten_with_path(data_spec, data_name):
        if not isinstance(spec, tf.TensorSpec):
            raise ValueError("%s: expected a tf.TensorSpec in data_spec, "
                             "got %r" % (path, spec))
        if not spec.shape.is_fully_defined():
            raise ValueError("%s: the spec's shape %s must be fully "
                             "defined to allocate the buffer" %
                             (path, spec.shape))


def check_capacity(num_environments: Any, capacity: Any) -> tuple:
    """Both positive ints, ``capacity >= num_environments``.

    Args:
        num_environments: number of rings.
        capacity: total steps over the rings.
    Returns:
        ``(num_environments, capacity)`` as ints.
    """
    num_environments = check_positive_int(num_environments,
                                          'num_environments')
    capacity = check_positive_int(capacity, 'capacity')
    if capacity < num_environments:
        raise ValueError(
            "capacity (%d) must be at least num_environments (%d): "
            "capacity is the total over environments, split evenly "
            "(capacity // num_environments steps each)" %
            (capacity, num_environments))
    return num_environments, capacity


def check_add_args(batch: Nest, env_ids: Any, data_spec: Nest,
                   data_name: str) -> tf.Tensor:
    """``add_batch``'s trace-time checks: ``batch`` matches ``data_spec``
    with [B, ...] leaves and ``env_ids`` is a [B] int vector.

    Args:
        batch: nest with [B, ...] leaves.
        env_ids: [B] ints.
        data_spec: the buffer's spec of one step.
        data_name: root of the reported nest path.
    Returns:
        ``env_ids`` as a tensor.
    """
    nest_utils.check_nest_matches_spec(
        batch,
        data_spec,
        name=data_name,
        outer_rank=1,
        hint='add_batch takes one step of B environments, [B, ...] with '
        'B = len(env_ids)')
    env_ids = tf.convert_to_tensor(env_ids)
    if not env_ids.dtype.is_integer or env_ids.shape.rank != 1:
        raise ValueError("env_ids: expected a [B] int32 vector, got %s %s"
                         % (env_ids.shape, env_ids.dtype.name))
    for path, leaf in nest_utils.flatten_with_path(batch, data_name):
        b = tf.compat.dimension_value(leaf.shape[0])
        n = tf.compat.dimension_value(env_ids.shape[0])
        if b is not None and n is not None and b != n:
            raise ValueError(
                "%s: has batch size %d but env_ids has %d entries; "
                "add_batch writes row i to environment env_ids[i]" %
                (path, b, n))
    return env_ids


_GB = 1e9


def available_memory(meminfo: str = '/proc/meminfo'
                     ) -> Optional[Tuple[int, int]]:
    """``(MemAvailable, SwapFree)`` in bytes, read from Linux's
    ``/proc/meminfo``; ``None`` where it cannot be read (other systems).

    Args:
        meminfo: the file to read.
    Returns:
        ``(available, swap_free)`` bytes, or ``None``.
    """
    fields = {}
    try:
        with open(meminfo) as f:
            for line in f:
                key, _, rest = line.partition(':')
                parts = rest.split()
                if parts and parts[0].isdigit():
                    fields[key] = int(parts[0]) * (
                        1024 if parts[1:] == ['kB'] else 1)
    except OSError:
        return None
    if 'MemAvailable' not in fields:
        return None
    return fields['MemAvailable'], fields.get('SwapFree', 0)


def check_fits_in_memory(needed: int, what: str, hint: str = '',
                         meminfo: str = '/proc/meminfo') -> None:
    """Refuses, before it is allocated, a buffer that this machine's free
    memory and swap cannot hold (the allocation would be killed by the
    kernel without a message); logs a warning when it fits only with swap.

    Args:
        needed: bytes the buffer's variables will take.
        what: the buffer and the argument that sized it, for the message
            (e.g. ``'ReplayBuffer: capacity 1000000'``).
        hint: what to change, appended to the message.
        meminfo: the memory table to read (``available_memory``); nothing
            is checked where it cannot be read.
    Raises:
        ValueError: ``needed`` > MemAvailable + SwapFree.
    """
    memory = available_memory(meminfo)
    if memory is None:
        return
    available, swap = memory
    if needed > available + swap:
        raise ValueError(
            "%s needs %.1f GB, more than the %.1f GB of memory this machine "
            "has available (MemAvailable %.1f GB + SwapFree %.1f GB in "
            "/proc/meminfo)%s" % (what, needed / _GB,
                                 (available + swap) / _GB, available / _GB,
                                 swap / _GB, '; ' + hint if hint else ''))
    if needed > available:
        logging.warning(
            "%s needs %.1f GB, more than the %.1f GB of memory available "
            "without swap: training will swap (slowly)%s", what,
            needed / _GB, available / _GB, '; ' + hint if hint else '')
