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
(what ``suite_atari``'s frame stack does at a reset); an environment's
first added step (in a new or cleared buffer) may come from the middle of an
episode: its N - 1 older frames are taken from its stack. That is N times less
memory for the observations; ``add_batch`` checks that each added stack is
exactly what the buffer will rebuild, so data that is not such a stack fails
at once instead of being replayed wrong.

Differences from ALF's buffer: ``capacity`` is the total over environments
(ALF's ``max_length`` was per environment); sampling is uniform over all
valid (environment, start) pairs instead of round-robin over environments;
``gather_all`` returns time order after wrap-around (ALF returned the raw
ring).
"""

from typing import Any, Optional, Tuple

import tensorflow as tf

from alf_rl.data_structures import namedtuple
from alf_rl.replay.buffer_checks import check_add_args, check_positive_int
from alf_rl.replay.ring_storage import RingStorage, _deps, runtime_check
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


def _time_major(x):
    """[E, M, ...] -> [M, E, ...]."""
    return tf.transpose(x, [1, 0] + list(range(2, x.shape.rank)))


class ReplayBuffer(RingStorage):
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
        super().__init__(data_spec, num_environments, capacity, data_name,
                         device, frame_stack, step_type_path, name)
        with tf.device(device), tf.name_scope(name):
            if seed is None:
                gen = tf.random.Generator.from_non_deterministic_state()
            else:
                gen = tf.random.Generator.from_seed(seed)
            self._generator = gen

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
        env_ids = check_add_args(batch, env_ids, self._data_spec,
                                 self._data_name)
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
        batch_size = check_positive_int(batch_size, 'batch_size')
        batch_length = check_positive_int(batch_length, 'batch_length')
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
