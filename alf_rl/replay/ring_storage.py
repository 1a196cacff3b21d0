"""``RingStorage``: the per-environment rings of steps under
``ReplayBuffer``, stored flat in variables.

Positions count each environment's added steps; environment ``e`` holds
positions ``[start[e], end[e])`` at slots ``e * max_length + position %
max_length`` of one variable per leaf (the ``frame_stack`` leaf: one frame
per slot of a ring ``N - 1`` slots longer, see ``alf_rl.replay.frame_stacks``).
This class writes steps at positions and gathers them back; ``ReplayBuffer``
decides which (sampling, whole reads, clearing).
"""

from typing import Any, Optional

import numpy as np
import tensorflow as tf

from alf_rl.data_structures import StepType
from alf_rl.replay.buffer_checks import (check_capacity, check_data_spec,
                                         check_fits_in_memory)
from alf_rl.replay.frame_stacks import (find_frame_stack, frame_slots,
                                        rebuild_stacks)
from alf_rl.utils.chunked_state import ChunkedVariables
from alf_rl.utils.nest import Nest


def runtime_check(condition: tf.Tensor, message: str,
                  values: Any) -> Optional[tf.Operation]:
    """Fails with ``message`` followed by ``values`` unless ``condition``.

    Eagerly raises at once with a plain message; in a graph returns a
    ``tf.debugging.Assert`` op (use it as a control dependency).

    Args:
        condition: [] bool tensor.
        message: what went wrong and what was expected.
        values: tensor shown after the message (e.g. stored counts).

    Returns:
        The assert op in a graph, else ``None``.

    Raises:
        tf.errors.InvalidArgumentError: eagerly, if ``condition`` is False.
    """
    if tf.executing_eagerly():
        if not bool(condition):
            raise tf.errors.InvalidArgumentError(
                None, None, '%s %s' % (message, np.array2string(
                    np.asarray(values), threshold=64)))
        return None
    return tf.debugging.Assert(condition, [message, values], summarize=64)


def _deps(*ops):
    return [op for op in ops if op is not None]



class RingStorage(ChunkedVariables, tf.Module):
    """Per-environment rings of steps in variables: the storage, positions
    and sizes of ``ReplayBuffer`` (its arguments, less ``seed``, are
    described there).

    Args:
        data_spec: nest of ``tf.TensorSpec`` of one step of one environment.
        num_environments: number of environments (rings).
        capacity: total steps over all environments.
        data_name: root of the nest paths in messages.
        device: device of the variables (None: default placement).
        frame_stack: nest path of a [..., N] leaf stored one frame per step.
        step_type_path: nest path of the [] ``StepType`` leaf.
        name: module name.

    Raises:
        ValueError: a bad spec or capacity, or a buffer larger than the
            machine's available memory and swap (checked before anything
            is allocated; ``buffer_checks.check_fits_in_memory``).
    """

    _chunked_attributes = ('_flat_data', '_frame_first')

    def __init__(self,
                 data_spec: Nest,
                 num_environments: int,
                 capacity: int,
                 data_name: str = 'experience',
                 device: Optional[str] = 'CPU:0',
                 frame_stack: Optional[str] = None,
                 step_type_path: Optional[str] = None,
                 name: str = 'RingStorage'):
        super().__init__(name=name)
        num_environments, capacity = check_capacity(num_environments,
                                                    capacity)
        check_data_spec(data_spec, data_name)
        # Bypass tf.Module's attribute tracking, which would wrap the spec's
        # (named)tuples into _TupleWrapper and break structure checks.
        object.__setattr__(self, '_data_spec', data_spec)
        self._data_name = data_name
        self._num_envs = num_environments
        self._max_length = capacity // num_environments
        self._device = device
        self._stack_index = None
        self._num_frames = 1
        if frame_stack is not None:
            (self._stack_index, self._step_type_index,
             self._num_frames) = find_frame_stack(
                 data_spec, data_name, frame_stack, step_type_path,
                 self.name)
        # Frames of ``frame_stack`` live in a longer ring: the N - 1 steps
        # before the oldest stored one are kept for its stack.
        self._frame_length = self._max_length + self._num_frames - 1
        check_fits_in_memory(self.capacity * self.bytes_per_item,
                             '%s: capacity %d' % (self.name, capacity),
                             self._memory_hint(frame_stack))
        with tf.device(device), tf.name_scope(name):
            self._create_data_variables()
            self._start = tf.Variable(tf.zeros([self._num_envs], tf.int64),
                                      trainable=False,
                                      name='start')
            self._end = tf.Variable(tf.zeros([self._num_envs], tf.int64),
                                    trainable=False,
                                    name='end')

    def _memory_hint(self, frame_stack: Optional[str]) -> str:
        """What to change when the buffer does not fit in memory."""
        hint = ('lower the capacity (TrainerConfig.replay_buffer_capacity '
                'in alf-train)')
        frames = [s for s in tf.nest.flatten(self._data_spec)
                  if s.dtype == tf.uint8 and s.shape.rank >= 3]
        if frame_stack is None and frames:
            hint += (', or store each frame of the %s stacks once '
                     '(TrainerConfig.replay_frame_stack = True; '
                     'ReplayBuffer(frame_stack=...))' %
                     frames[0].shape.as_list())
        return hint

    def _create_data_variables(self):
        """One variable per leaf of ``data_spec``, stored flat: slot
        ``env * max_length + position % max_length`` (gathers and scatters
        along axis 0 of a variable are ResourceGather/ResourceScatterNdUpdate,
        which XLA compiles; a 2-D ResourceGatherNd it does not). The
        ``frame_stack`` leaf keeps one frame per slot of its longer ring,
        with a flag for the steps that began an episode.

        A ``Checkpointer`` saves them chunk by chunk beside TensorFlow's
        bundle (``ChunkedVariables``: restoring needs their size once, not
        twice)."""
        self._flat_data = []
        for i, spec in enumerate(tf.nest.flatten(self._data_spec)):
            shape = [self._num_envs * self._max_length] + spec.shape.as_list()
            if i == self._stack_index:
                shape = [self._num_envs * self._frame_length
                         ] + spec.shape[:-1].as_list()
            self._flat_data.append(
                tf.Variable(tf.zeros(shape, spec.dtype),
                            trainable=False,
                            name='data_%d' % i))
        if self._stack_index is not None:
            self._frame_first = tf.Variable(
                tf.zeros([self._num_envs * self._frame_length], tf.bool),
                trainable=False,
                name='frame_first')

    # ---------------------------------------------------------------- config
    @property
    def data_spec(self) -> Nest:
        """The nest of specs of one stored step."""
        return self._data_spec

    @property
    def num_environments(self) -> int:
        """Number of environments (rings)."""
        return self._num_envs

    @property
    def max_length(self) -> int:
        """Steps stored per environment: ``capacity // num_environments``."""
        return self._max_length

    @property
    def capacity(self) -> int:
        """Steps allocated in total: ``num_environments * max_length``."""
        return self._num_envs * self._max_length

    @property
    def num_frames(self) -> int:
        """N, the frames the ``frame_stack`` leaf stacks (1 without one)."""
        return self._num_frames

    @property
    def bytes_per_item(self) -> int:
        """Bytes one step of one environment takes as stored: from
        ``data_spec``, with one frame (plus a first-step flag) for the
        ``frame_stack`` leaf."""
        total = 0
        for i, s in enumerate(tf.nest.flatten(self._data_spec)):
            size = int(np.prod(s.shape.as_list(), dtype=np.int64))
            if i == self._stack_index:
                size = size // self._num_frames
                total += 1  # the first-step flag
            total += size * s.dtype.size
        return total

    @property
    def nbytes(self) -> int:
        """Bytes held by all of the buffer's variables (data + bookkeeping).

        Equals ``capacity * bytes_per_item`` plus a few bytes per environment
        for the counters and the sampler's state (and, with ``frame_stack``,
        N - 1 extra frames per environment).
        """
        return sum(
            v.shape.num_elements() * v.dtype.size for v in self.variables)

    # ----------------------------------------------------------------- state
    @property
    def current_size(self) -> tf.Tensor:
        """[num_environments] int64: steps stored per environment."""
        return self._end - self._start

    @property
    def total_size(self) -> tf.Tensor:
        """[] int64: steps stored over all environments."""
        return tf.reduce_sum(self.current_size)

    @property
    def num_steps(self) -> tf.Tensor:
        """[] int64: steps ever added over all environments (not reset by
        ``clear()``)."""
        return tf.reduce_sum(self._end)

    @property
    def start_positions(self) -> tf.Tensor:
        """[num_environments] int64: position of the oldest stored step."""
        return tf.identity(self._start)

    @property
    def end_positions(self) -> tf.Tensor:
        """[num_environments] int64: position the next added step will get."""
        return tf.identity(self._end)

    def _write(self, env_ids, positions, flat):
        """Scatters the leaves ``flat`` ([B, ...] each) to ``positions``
        [B] of ``env_ids`` [B]; the ``frame_stack`` leaf as its newest frame.

        Returns:
            The run-time checks of the written stacks (ops, possibly none).
        """
        indices = self._slots(env_ids, positions)[:, None]
        for i, (var, value) in enumerate(zip(self._flat_data, flat)):
            if i != self._stack_index:
                var.scatter_nd_update(indices, value)
        if self._stack_index is None:
            return []
        step_type = flat[self._step_type_index]
        self._write_older_frames(env_ids, positions, flat[self._stack_index])
        slots = frame_slots(env_ids, positions, self._frame_length)[:, None]
        self._flat_data[self._stack_index].scatter_nd_update(
            slots, flat[self._stack_index][..., -1])
        self._frame_first.scatter_nd_update(
            slots,
            tf.equal(step_type, tf.cast(StepType.FIRST, step_type.dtype)))
        return self._check_stacks(env_ids, positions,
                                  flat[self._stack_index])

    def _write_older_frames(self, env_ids, positions, stacks):
        """For environments that hold no step (a new or cleared buffer),
        writes the N - 1 older frames of the added ``stacks`` [B, ..., N]
        to the ring slots before ``positions`` [B], not as episode starts:
        a first step added in the middle of an episode (a run resumed
        without its replay, on an environment whose state was restored)
        then rebuilds to the stack it came with. The other environments'
        slots are written back unchanged (no data-dependent shapes); when
        no environment is empty (every add but the first ones) nothing is
        written at all."""
        assert self._stack_index is not None, 'no frame_stack leaf'
        frames = self._flat_data[self._stack_index]
        empty = tf.equal(tf.gather(self._start, env_ids), positions)
        mask = tf.reshape(empty, [-1] + [1] * (stacks.shape.rank - 2))

        def write():
            for k in range(1, self._num_frames):
                slots = frame_slots(env_ids, positions - k,
                                    self._frame_length)
                frames.scatter_nd_update(
                    slots[:, None],
                    tf.where(mask, stacks[..., self._num_frames - 1 - k],
                             tf.gather(frames, slots)))
                self._frame_first.scatter_nd_update(
                    slots[:, None],
                    tf.logical_and(tf.logical_not(empty),
                                   tf.gather(self._frame_first, slots)))
            return tf.constant(True)

        tf.cond(tf.reduce_any(empty), write, lambda: tf.constant(False))

    def _check_stacks(self, env_ids, positions, stacks):
        """Fails unless the just-written ``stacks`` [B, ..., N] are what the
        buffer rebuilds from its frames (so a stack that is not the last N
        frames, reset-padded, is refused instead of replayed wrong)."""
        rebuilt = self._rebuild_stacks(env_ids[:, None], positions[:, None])
        same = tf.reduce_all(tf.equal(rebuilt[:, 0], stacks),
                             axis=tf.range(1, tf.rank(stacks)))
        return _deps(
            runtime_check(
                tf.reduce_all(same),
                '%s.add_batch: frame_stack: these environments added a '
                'stack that is not their last %d frames (oldest first, '
                'copies of the first frame at an episode start); '
                'env_ids:' % (self.name, self._num_frames),
                tf.boolean_mask(env_ids, tf.logical_not(same))))

    def _rebuild_stacks(self, env_ids, positions):
        """``rebuild_stacks`` of ``positions`` [L, b] of ``env_ids``
        [L, b]: the [L, b, ..., N] ``frame_stack`` leaf."""
        assert self._stack_index is not None, 'no frame_stack leaf'
        return rebuild_stacks(self._flat_data[self._stack_index],
                              self._frame_first, env_ids, positions,
                              self._num_frames, self._frame_length)

    def _slots(self, env_ids, positions):
        """Flat storage slots of ``positions`` (any shape, int64) of
        ``env_ids`` (same shape)."""
        return env_ids * self._max_length + positions % self._max_length

    def _gather(self, env_ids, positions, length):
        """Reads ``length`` steps from ``positions`` of ``env_ids``.

        Args:
            env_ids: [b] int64.
            positions: [b] int64, first positions (all stored).
            length: Python int or [] tensor L.

        Returns:
            nest of time-major [L, b, ...] tensors.
        """
        # Slots laid out time-major: the gather returns [L, b, ...] at once.
        steps = positions[None, :] + tf.range(length, dtype=tf.int64)[:, None]
        envs = tf.broadcast_to(env_ids[None, :], tf.shape(steps))
        slots = self._slots(envs, steps)
        flat = [
            self._rebuild_stacks(envs, steps) if i == self._stack_index else
            tf.gather(var, slots) for i, var in enumerate(self._flat_data)
        ]
        return tf.nest.pack_sequence_as(self._data_spec, flat)
