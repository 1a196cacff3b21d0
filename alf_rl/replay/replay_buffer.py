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

Differences from ALF's buffer: ``capacity`` is the total over environments
(ALF's ``max_length`` was per environment); sampling is uniform over all
valid (environment, start) pairs instead of round-robin over environments;
``gather_all`` returns time order after wrap-around (ALF returned the raw
ring).
"""

from typing import Any, Optional, Tuple

import numpy as np
import tensorflow as tf

from alf_rl.data_structures import namedtuple
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


def _deps(*ops):
    return [op for op in ops if op is not None]


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
        name: module name.

    Raises:
        ValueError: if ``capacity < num_environments`` or either is not a
            positive int, or ``data_spec`` holds something other than
            ``tf.TensorSpec``s with fully defined shapes.
    """

    def __init__(self,
                 data_spec: Nest,
                 num_environments: int,
                 capacity: int,
                 data_name: str = 'experience',
                 seed: Optional[int] = None,
                 device: Optional[str] = 'CPU:0',
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
        for path, spec in nest_utils.flatten_with_path(data_spec, data_name):
            if not isinstance(spec, tf.TensorSpec):
                raise ValueError("%s: expected a tf.TensorSpec in data_spec, "
                                 "got %r" % (path, spec))
            if not spec.shape.is_fully_defined():
                raise ValueError("%s: the spec's shape %s must be fully "
                                 "defined to allocate the buffer" %
                                 (path, spec.shape))
        # Bypass tf.Module's attribute tracking, which would wrap the spec's
        # (named)tuples into _TupleWrapper and break structure checks.
        object.__setattr__(self, '_data_spec', data_spec)
        self._data_name = data_name
        self._num_envs = num_environments
        self._max_length = capacity // num_environments
        self._device = device
        with tf.device(device), tf.name_scope(name):
            # Stored flat, slot env * max_length + (position % max_length):
            # gathers and scatters along axis 0 of a variable are
            # ResourceGather/ResourceScatterNdUpdate, which XLA compiles
            # (a 2-D ResourceGatherNd it does not).
            self._flat_data = [
                tf.Variable(tf.zeros([self._num_envs * self._max_length] +
                                     spec.shape.as_list(), spec.dtype),
                            trainable=False,
                            name='data_%d' % i)
                for i, spec in enumerate(tf.nest.flatten(data_spec))
            ]
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
    def bytes_per_item(self) -> int:
        """Bytes one step of one environment takes, from ``data_spec``."""
        return sum(
            int(np.prod(s.shape.as_list(), dtype=np.int64)) * s.dtype.size
            for s in tf.nest.flatten(self._data_spec))

    @property
    def nbytes(self) -> int:
        """Bytes held by all of the buffer's variables (data + bookkeeping).

        Equals ``capacity * bytes_per_item`` plus a few bytes per environment
        for the counters and the sampler's state.
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
            indices = self._slots(env_ids, positions)[:, None]
            for var, value in zip(self._flat_data, tf.nest.flatten(batch)):
                var.scatter_nd_update(indices, value)
            new_end = positions + 1
            self._end.scatter_nd_update(env_ids[:, None], new_end)
            self._start.scatter_nd_update(
                env_ids[:, None],
                tf.maximum(tf.gather(self._start, env_ids),
                           new_end - self._max_length))
            self._after_add(env_ids, positions)
        return positions

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
            [b, L, ...] leaves (batch-major; transpose for time-major use),
            and ``info`` a ``BatchInfo`` with [b] fields.

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
            nest of [b, L, ...] tensors.
        """
        steps = positions[:, None] + tf.range(length, dtype=tf.int64)[None, :]
        envs = tf.broadcast_to(env_ids[:, None], tf.shape(steps))
        slots = self._slots(envs, steps)
        flat = [tf.gather(var, slots) for var in self._flat_data]
        return tf.nest.pack_sequence_as(self._data_spec, flat)

    def gather_all(self) -> Nest:
        """All stored steps in time order, correct across wrap-around.

        Returns:
            nest matching ``data_spec`` with [num_environments, S, ...]
            leaves, S the (common) number of stored steps per environment;
            ``[e, t]`` holds position ``start[e] + t``.

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

        A whole-variable read with static shapes (no gather), so it also
        compiles with XLA (which drops the run-time check).

        Returns:
            nest matching ``data_spec`` with [num_environments, max_length,
            ...] leaves, in time order.

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
                    tf.reshape(var.value(),
                               [self._num_envs, self._max_length] +
                               var.shape[1:].as_list())
                    for var in self._flat_data
                ]
            return tf.nest.pack_sequence_as(self._data_spec, flat)

    def clear(self) -> Any:
        """Forgets all stored steps (positions keep counting).

        Returns:
            The assign op (useful in TF1-style graphs; ignorable otherwise).
        """
        with tf.device(self._device), tf.name_scope(self.name):
            return self._start.assign(self._end)
