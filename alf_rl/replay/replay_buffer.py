"""A replay buffer held entirely in ``tf.Variable``s, one ring per environment.

Everything the buffer knows (data, heads, the sampler's random state) lives in
variables, so ``add_batch``/``get_batch``/``gather_all`` run inside
``tf.function`` graphs and ``tf.while_loop`` bodies, and
``tf.train.Checkpoint(buffer=buffer)`` saves and restores the whole buffer.

Layout: every leaf of ``data_spec`` gets one variable shaped
``[num_environments, max_length, *spec.shape]`` with the spec's dtype (uint8
images stay uint8), where ``max_length = capacity // num_environments`` is the
per-environment ring size. Each environment ``e`` has two int64 counters:

- ``end[e]``: the *position* the next step of ``e`` will get. Positions are
  global, monotonic step counters per environment (never reset, not even by
  ``clear()``), so callers can tell the order and the age of what they got.
- ``start[e]``: the position of the oldest step of ``e`` still stored.

A step at position ``p`` lives in slot ``p % max_length``; the stored steps of
``e`` are positions ``[start[e], end[e])``, always contiguous and time
ordered, which is what makes wrap-around-correct ``gather_all`` and sequence
sampling that never spans the write head simple.

Everything read comes back time-major, ``[L, b, ...]``: the reads gather
with a time-major matrix of slots (``read_full`` transposes the stored block
once), so a sampled batch is never transposed again downstream.

Frame stacks stored once (``frame_stack``): an image observation that stacks
the last N frames along its last axis ([84, 84, 4] in Atari) repeats each
frame N times over consecutive steps. With ``frame_stack`` naming that leaf,
the buffer stores only the newest frame of each step, in a ring of
``max_length + N - 1`` slots per environment (so the frames the oldest stored
step needs are still there), plus whether the step began an episode, and
rebuilds the stacks when it reads: going back from a step, one frame per
channel, stopping at the episode's first step, whose frame fills the rest
(what ``suite_atari``'s frame stack does at a reset). That is N times less
memory for the observations; ``add_batch`` checks that each added stack is
exactly what the buffer will rebuild, so data that is not such a stack fails
at once instead of being replayed wrong.

Differences from ALF's buffer: ``capacity`` is the total over environments
(ALF's ``max_length`` was per environment); sampling is uniform over all
valid (environment, start) pairs instead of round-robin over environments;
``gather_all`` returns time order after wrap-around (ALF returned the raw
ring).
"""

import sys
from typing import Any, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from alf_rl.data_structures import StepType, namedtuple
from alf_rl.utils import nest as nest_utils
from alf_rl.utils.nest import Nest

BatchInfo = namedtuple('BatchInfo',
                       ['env_ids', 'positions', 'importance_weights'])
BatchInfo.__doc__ = """Where a sampled batch of sequences came from.

Fields (b = batch_size):
    env_ids: [b] int32, the environment each sequence was taken from.
    positions: [b] int64, the position (per-environment step counter) of the
        first step of each sequence; step ``t`` of sequence ``i`` has position
        ``positions[i] + t``.
    importance_weights: [b] float32, 1 for uniform sampling; for prioritized
        sampling ``(N * P(i))^-beta`` divided by the batch maximum.
"""


def _check_positive_int(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, np.integer)) or value < 1:
        raise ValueError("%s must be a positive Python int, got %r" %
                         (name, value))
    return int(value)


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


# Unsigned types as wide as N uint8 frames, to interleave them by packing.
_PACKED_TYPES = {2: tf.uint16, 4: tf.uint32, 8: tf.uint64}


def _interleave(frames: List[tf.Tensor]) -> tf.Tensor:
    """``tf.stack(frames, axis=-1)``, fast for 2, 4 or 8 uint8 frames.

    Stacking uint8 images on a new last axis is a byte-by-byte interleave,
    which ``tf.stack`` does slowly (4 x [32, 2, 84, 84] frames on two busy
    cores: ~15 ms, against ~2 ms to gather them): instead each pixel's N
    bytes are packed into one wide unsigned int and bitcast back to N uint8s
    (~5 ms there).

    Args:
        frames: N tensors of the same shape [...] and dtype, oldest first.

    Returns:
        [..., N], ``frames[k]`` at ``[..., k]``.
    """
    wide = _PACKED_TYPES.get(len(frames))
    if frames[0].dtype != tf.uint8 or wide is None:
        return tf.stack(frames, axis=-1)
    # bitcast puts the least significant byte first on a little-endian
    # machine, the most significant on a big-endian one.
    order = frames if sys.byteorder == 'little' else frames[::-1]
    packed = tf.cast(order[0], wide)
    for k, frame in enumerate(order[1:], 1):
        packed = tf.bitwise.bitwise_or(
            packed,
            tf.bitwise.left_shift(tf.cast(frame, wide), tf.constant(8 * k,
                                                                    wide)))
    return tf.bitcast(packed, tf.uint8)


def _check_data_spec(data_spec, data_name):
    """Every leaf a ``tf.TensorSpec`` of a fully defined shape, or a
    ``ValueError`` naming its path."""
    for path, spec in nest_utils.flatten_with_path(data_spec, data_name):
        if not isinstance(spec, tf.TensorSpec):
            raise ValueError("%s: expected a tf.TensorSpec in data_spec, "
                             "got %r" % (path, spec))
        if not spec.shape.is_fully_defined():
            raise ValueError("%s: the spec's shape %s must be fully "
                             "defined to allocate the buffer" %
                             (path, spec.shape))


def _deps(*ops):
    return [op for op in ops if op is not None]


def _time_major(x):
    """[E, M, ...] -> [M, E, ...]."""
    return tf.transpose(x, [1, 0] + list(range(2, x.shape.rank)))


class ReplayBuffer(tf.Module):
    """Uniform replay over per-environment ring buffers stored in variables.

    Args:
        data_spec: nest of ``tf.TensorSpec`` describing one step of one
            environment (no batch dimension), e.g. an ``Experience`` spec.
        num_environments: number of environments (rings).
        capacity: total number of steps over all environments. Each
            environment gets ``max_length = capacity // num_environments``
            slots; a remainder is not allocated.
        data_name: what to call the data in error messages (the root of the
            reported nest path), e.g. ``'experience.observation: ...'``.
        seed: optional int seed of the sampler's ``tf.random.Generator``
            (its state is a variable, so it is checkpointed too).
        device: device for the variables and the buffer's ops. The default
            keeps (possibly large) buffers in host memory, as ALF did; ``None``
            uses TensorFlow's default placement.
        frame_stack: nest path (as in error messages, e.g.
            ``'experience.observation'``) of a leaf [..., N] whose last axis
            stacks the last N frames, oldest first, with an episode's first
            step stacked from N copies of its frame: each frame is then
            stored once instead of N times (see the module docstring).
            ``None`` stores every leaf whole.
        step_type_path: nest path of the [] int32 ``StepType`` leaf that
            marks episode starts for ``frame_stack``; default
            ``data_name + '.step_type'`` (an ``Experience``).
        name: module name.

    Raises:
        ValueError: if ``capacity < num_environments`` or either is not a
            positive int, ``data_spec`` holds something other than
            ``tf.TensorSpec``s with fully defined shapes, or ``frame_stack``
            / ``step_type_path`` name no leaf of ``data_spec`` or a leaf of
            the wrong shape.
    """

    def __init__(self,
                 data_spec: Nest,
                 num_environments: int,
                 capacity: int,
                 data_name: str = 'experience',
                 seed: Optional[int] = None,
                 device: Optional[str] = 'CPU:0',
                 frame_stack: Optional[str] = None,
                 step_type_path: Optional[str] = None,
                 name: str = 'ReplayBuffer'):
        super().__init__(name=name)
        num_environments = _check_positive_int(num_environments,
                                               'num_environments')
        capacity = _check_positive_int(capacity, 'capacity')
        if capacity < num_environments:
            raise ValueError(
                "capacity (%d) must be at least num_environments (%d): "
                "capacity is the total over environments, split evenly "
                "(capacity // num_environments steps each)" %
                (capacity, num_environments))
        _check_data_spec(data_spec, data_name)
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
            self._check_frame_stack(frame_stack, step_type_path)
        # Frames of ``frame_stack`` live in a longer ring: the N - 1 steps
        # before the oldest stored one are kept for its stack.
        self._frame_length = self._max_length + self._num_frames - 1
        with tf.device(device), tf.name_scope(name):
            self._create_data_variables()
            self._start = tf.Variable(tf.zeros([self._num_envs], tf.int64),
                                      trainable=False,
                                      name='start')
            self._end = tf.Variable(tf.zeros([self._num_envs], tf.int64),
                                    trainable=False,
                                    name='end')
            if seed is None:
                gen = tf.random.Generator.from_non_deterministic_state()
            else:
                gen = tf.random.Generator.from_seed(seed)
            self._generator = gen

    def _create_data_variables(self):
        """One variable per leaf of ``data_spec``, stored flat: slot
        ``env * max_length + position % max_length`` (gathers and scatters
        along axis 0 of a variable are ResourceGather/ResourceScatterNdUpdate,
        which XLA compiles; a 2-D ResourceGatherNd it does not). The
        ``frame_stack`` leaf keeps one frame per slot of its longer ring,
        with a flag for the steps that began an episode."""
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

    def _check_frame_stack(self, frame_stack, step_type_path):
        """Finds and checks the ``frame_stack`` and step-type leaves; sets
        ``_stack_index``, ``_step_type_index`` and ``_num_frames``."""
        if step_type_path is None:
            step_type_path = self._data_name + '.step_type'
        flat_paths = [
            path for path, _ in nest_utils.flatten_with_path(
                self._data_spec, self._data_name)
        ]
        specs = tf.nest.flatten(self._data_spec)
        for path in (frame_stack, step_type_path):
            if path not in flat_paths:
                raise ValueError(
                    "%s: frame_stack/step_type_path %r is not a leaf of the "
                    "data spec; its leaves are %s" %
                    (self.name, path, ', '.join(flat_paths)))
        stack = flat_paths.index(frame_stack)
        step_type = flat_paths.index(step_type_path)
        shape = specs[stack].shape
        if shape.rank < 1 or shape[-1] < 2:
            raise ValueError(
                "%s: frame_stack %r must be a stack of at least 2 frames "
                "along its last axis ([..., N], N >= 2), got shape %s" %
                (self.name, frame_stack, shape))
        if specs[step_type].shape.rank != 0 or \
                not specs[step_type].dtype.is_integer:
            raise ValueError(
                "%s: step_type_path %r must be a [] integer StepType leaf, "
                "got %s %s" % (self.name, step_type_path,
                               specs[step_type].shape,
                               specs[step_type].dtype.name))
        self._stack_index = stack
        self._step_type_index = step_type
        self._num_frames = shape[-1]

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

    # ------------------------------------------------------------------- add
    def add_batch(self, batch: Nest, env_ids: tf.Tensor) -> tf.Tensor:
        """Writes one step for each environment in ``env_ids`` at its head.

        When an environment's ring is full, its oldest step is overwritten.

        Args:
            batch: nest matching ``data_spec`` with [B, ...] leaves.
            env_ids: [B] int32 (or int64), distinct environment ids in
                ``[0, num_environments)``; row ``i`` of ``batch`` goes to
                environment ``env_ids[i]``. Any subset of the environments
                may be given.

        Returns:
            [B] int64, the positions the steps were written at.

        Raises:
            ValueError: (at trace time) if ``batch`` does not match
                ``data_spec`` -- the message names the nest path -- or if
                ``env_ids`` is not a vector of B ints.
            tf.errors.InvalidArgumentError: (at run time) if ``env_ids`` has
                duplicates or values out of range.
        """
        env_ids = self._check_add_args(batch, env_ids)
        with tf.device(self._device), tf.name_scope(self.name):
            env_ids = tf.cast(env_ids, tf.int64)
            checks = _deps(
                runtime_check(
                    tf.reduce_all((env_ids >= 0)
                                  & (env_ids < self._num_envs)),
                    '%s.add_batch: env_ids must lie in [0, %d); got' %
                    (self.name, self._num_envs), env_ids),
                runtime_check(
                    tf.equal(tf.size(tf.unique(env_ids).y), tf.size(env_ids)),
                    '%s.add_batch: each environment may appear at most once '
                    'per call; got env_ids' % self.name, env_ids))
            with tf.control_dependencies(checks):
                positions = tf.gather(self._end, env_ids)
            checks = self._write(env_ids, positions, tf.nest.flatten(batch))
            with tf.control_dependencies(checks):
                new_end = positions + 1
            self._end.scatter_nd_update(env_ids[:, None], new_end)
            self._start.scatter_nd_update(
                env_ids[:, None],
                tf.maximum(tf.gather(self._start, env_ids),
                           new_end - self._max_length))
            self._after_add(env_ids, positions)
        return positions

    def _check_add_args(self, batch, env_ids):
        """``add_batch``'s trace-time checks; returns ``env_ids`` as a
        tensor."""
        nest_utils.check_nest_matches_spec(
            batch,
            self._data_spec,
            name=self._data_name,
            outer_rank=1,
            hint='add_batch takes one step of B environments, [B, ...] with '
            'B = len(env_ids)')
        env_ids = tf.convert_to_tensor(env_ids)
        if not env_ids.dtype.is_integer or env_ids.shape.rank != 1:
            raise ValueError("env_ids: expected a [B] int32 vector, got %s %s"
                             % (env_ids.shape, env_ids.dtype.name))
        for path, leaf in nest_utils.flatten_with_path(batch, self._data_name):
            b = tf.compat.dimension_value(leaf.shape[0])
            n = tf.compat.dimension_value(env_ids.shape[0])
            if b is not None and n is not None and b != n:
                raise ValueError(
                    "%s: has batch size %d but env_ids has %d entries; "
                    "add_batch writes row i to environment env_ids[i]" %
                    (path, b, n))
        return env_ids

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
        frame_slots = self._frame_slots(env_ids, positions)[:, None]
        self._flat_data[self._stack_index].scatter_nd_update(
            frame_slots, flat[self._stack_index][..., -1])
        self._frame_first.scatter_nd_update(
            frame_slots,
            tf.equal(step_type, tf.cast(StepType.FIRST, step_type.dtype)))
        return self._check_stacks(env_ids, positions,
                                  flat[self._stack_index])

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
                'copies of the first frame at an episode start, each '
                'environment\'s first added step an episode\'s first); '
                'env_ids:' % (self.name, self._num_frames),
                tf.boolean_mask(env_ids, tf.logical_not(same))))

    def _frame_slots(self, env_ids, positions):
        """Slots of ``positions`` (any shape, int64) of ``env_ids`` (same
        shape) in the ``frame_stack`` leaf's longer ring."""
        return (env_ids * self._frame_length +
                positions % self._frame_length)

    def _rebuild_stacks(self, env_ids, positions):
        """The ``frame_stack`` leaf of ``positions`` of ``env_ids``.

        Args:
            env_ids: [L, b] int64 (any shape, the same as ``positions``).
            positions: [L, b] int64, all stored (or at most N - 1 before the
                oldest stored step).

        Returns:
            [L, b, ..., N] stacks, oldest frame first.
        """
        frames_var = self._flat_data[self._stack_index]
        source = positions
        slots = self._frame_slots(env_ids, source)
        frames = [tf.gather(frames_var, slots)]
        for _ in range(self._num_frames - 1):
            # Step back unless the source step began an episode (or is the
            # first step ever added): then its frame pads the stack.
            first = tf.gather(self._frame_first, slots)
            source = tf.where(first | (source <= 0), source, source - 1)
            slots = self._frame_slots(env_ids, source)
            frames.append(tf.gather(frames_var, slots))
        return _interleave(frames[::-1])

    def _after_add(self, env_ids, positions):
        """Hook for subclasses: ``positions`` [B] int64 were just written."""
        # A body besides the docstring: AutoGraph cannot convert an empty one.
        del env_ids, positions

    # ---------------------------------------------------------------- sample
    def get_batch(self, batch_size: int,
                  batch_length: int) -> Tuple[Nest, BatchInfo]:
        """Samples sequences of consecutive steps, each from one environment.

        A sequence never spans an environment's write head: it lies within
        the stored, time-ordered window ``[start, end)`` of its environment.
        Sequences may cross episode boundaries (``step_type`` tells).

        Args:
            batch_size: Python int b, the number of sequences.
            batch_length: Python int L, the steps per sequence.

        Returns:
            ``(data, info)``: ``data`` a nest matching ``data_spec`` with
            time-major [L, b, ...] leaves (step ``t`` of sequence ``i`` at
            ``[t, i]``), and ``info`` a ``BatchInfo`` with [b] fields.

        Raises:
            ValueError: if ``batch_length > max_length`` (never samplable).
            tf.errors.InvalidArgumentError: if no environment stores
                ``batch_length`` steps (e.g. an empty buffer); the message
                names ``batch_length`` and the stored counts.
        """
        batch_size = _check_positive_int(batch_size, 'batch_size')
        batch_length = _check_positive_int(batch_length, 'batch_length')
        if batch_length > self._max_length:
            raise ValueError(
                "%s.get_batch: batch_length=%d exceeds the %d steps each "
                "environment can store (capacity %d over %d environments)" %
                (self.name, batch_length, self._max_length, self.capacity,
                 self._num_envs))
        with tf.device(self._device), tf.name_scope(self.name):
            sizes = self.current_size
            # Number of valid starting positions of every environment.
            num_starts = tf.maximum(sizes - (batch_length - 1), 0)
            total = tf.reduce_sum(num_starts)
            check = runtime_check(
                total > 0,
                '%s.get_batch: cannot sample sequences of batch_length=%d: '
                'no environment stores that many steps; stored counts per '
                'environment:' % (self.name, batch_length), sizes)
            with tf.control_dependencies(_deps(check)):
                env_ids, positions, weights = self._sample_starts(
                    batch_size, batch_length, num_starts, total)
            data = self._gather(env_ids, positions, batch_length)
            info = BatchInfo(env_ids=tf.cast(env_ids, tf.int32),
                             positions=positions,
                             importance_weights=weights)
        return data, info

    def _sample_starts(self, batch_size, batch_length, num_starts, total):
        """Picks starting (env, position) pairs.

        Args:
            batch_size: Python int b.
            batch_length: Python int L.
            num_starts: [E] int64, valid starting positions per environment.
            total: [] int64, their sum (> 0).

        Returns:
            env_ids [b] int64, positions [b] int64, importance weights [b]
            float32.
        """
        u = self._generator.uniform([batch_size],
                                    minval=0,
                                    maxval=tf.maximum(total, 1),
                                    dtype=tf.int64)
        cum = tf.cumsum(num_starts)
        # Environment e owns the draws [cum[e] - num_starts[e], cum[e]).
        env_ids = tf.searchsorted(cum, u, side='right', out_type=tf.int64)
        offsets = u - (tf.gather(cum, env_ids) -
                       tf.gather(num_starts, env_ids))
        positions = tf.gather(self._start, env_ids) + offsets
        return env_ids, positions, tf.ones([batch_size], tf.float32)

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

    def gather_all(self) -> Nest:
        """All stored steps in time order, correct across wrap-around.

        Returns:
            nest matching ``data_spec`` with time-major [S,
            num_environments, ...] leaves, S the (common) number of stored
            steps per environment; ``[t, e]`` holds position
            ``start[e] + t``.

        Raises:
            tf.errors.InvalidArgumentError: if environments hold different
                numbers of steps (the message lists them).
        """
        with tf.device(self._device), tf.name_scope(self.name):
            sizes = self.current_size
            check = runtime_check(
                tf.reduce_all(tf.equal(sizes, sizes[0])),
                '%s.gather_all needs every environment to hold the same '
                'number of steps; stored counts per environment:' % self.name,
                sizes)
            with tf.control_dependencies(_deps(check)):
                length = sizes[0]
            return self._gather(tf.range(self._num_envs, dtype=tf.int64),
                                tf.identity(self._start), length)

    def read_full(self) -> Nest:
        """Every slot of every environment, when each holds exactly
        ``max_length`` steps stored from slot 0 on (as after ``clear()``
        and ``max_length`` ``add_batch`` calls, starting from a multiple of
        ``max_length`` steps added).

        A whole-variable read with static shapes (no gather), transposed
        once to time-major, so it also compiles with XLA (which drops the
        run-time check); the ``frame_stack`` leaf is rebuilt with gathers.

        Returns:
            nest matching ``data_spec`` with time-major [max_length,
            num_environments, ...] leaves.

        Raises:
            tf.errors.InvalidArgumentError: if any environment's stored
                steps are not exactly slots 0 .. max_length - 1.
        """
        with tf.device(self._device), tf.name_scope(self.name):
            check = runtime_check(
                tf.reduce_all(tf.equal(self._start % self._max_length, 0))
                & tf.reduce_all(
                    tf.equal(self._end - self._start, self._max_length)),
                '%s.read_full needs every environment to hold exactly '
                'max_length=%d steps from slot 0; stored counts per '
                'environment:' % (self.name, self._max_length),
                self.current_size)
            with tf.control_dependencies(_deps(check)):
                flat = [
                    None if i == self._stack_index else _time_major(
                        tf.reshape(var.value(),
                                   [self._num_envs, self._max_length] +
                                   var.shape[1:].as_list()))
                    for i, var in enumerate(self._flat_data)
                ]
            if self._stack_index is not None:
                steps = (self._start[None, :] +
                         tf.range(self._max_length, dtype=tf.int64)[:, None])
                envs = tf.broadcast_to(
                    tf.range(self._num_envs, dtype=tf.int64)[None, :],
                    tf.shape(steps))
                flat[self._stack_index] = self._rebuild_stacks(envs, steps)
            return tf.nest.pack_sequence_as(self._data_spec, flat)

    def clear(self) -> Any:
        """Forgets all stored steps (positions keep counting).

        Returns:
            The assign op (useful in TF1-style graphs; ignorable otherwise).
        """
        with tf.device(self._device), tf.name_scope(self.name):
            return self._start.assign(self._end)
