"""In-graph training metrics, updated on every batched time step.

A metric is a ``tf.Module`` whose state lives in ``tf.Variable``s created in
its constructor, so it can be updated eagerly, inside ``tf.function`` and
inside a ``tf.while_loop`` body, and a ``tf.train.Checkpoint`` that tracks it
restores it exactly.

The driver calls every metric on every batched ``TimeStep`` the environment
returns ([B] fields), including the first reset step. Counting rules:

- a *transition* is every step that is not FIRST (FIRST steps are reached by
  reset, not by an action; their reward is 0);
- an *episode* ends on every LAST step;
- an episode's return is the sum of the rewards of its non-FIRST steps, its
  length the number of its non-FIRST steps (so a FIRST, MID, LAST episode has
  length 2: two actions were taken).
"""

from typing import List, Optional

import tensorflow as tf

from alf_rl.data_structures import StepType, TimeStep


class StepMetric(tf.Module):
    """Base class: a metric updated by ``metric(time_step)``.

    Subclasses create their variables in the constructor (inside
    ``self.name_scope``) and implement ``_update``, ``result`` and ``reset``.
    """

    def __init__(self, name: str):
        super().__init__(name=name)

    @property
    def tag(self) -> str:
        """The TensorBoard tag, ``'Metrics/<name>'``."""
        return 'Metrics/' + self.name

    def __call__(self, time_step: TimeStep,
                 env_ids: Optional[tf.Tensor] = None
                 ) -> Optional[tf.Operation]:
        """Updates the metric with one batched step.

        Args:
            time_step: ``TimeStep`` with [B] ``step_type`` and ``reward``.
            env_ids: None when ``time_step`` holds every environment in
                order; else [b] int32: which of the metric's B environments
                the b rows of ``time_step`` are (an asynchronous learner
                folds in one actor's environments at a time).

        Returns:
            The update op in graph mode, ``None`` when executing eagerly.
            Inside ``tf.function`` automatic control dependencies run the
            update even if the return value is dropped.
        """
        if env_ids is None:
            return self._update(time_step)
        return self._update_rows(time_step, env_ids)

    update = __call__

    def _update(self, time_step):
        raise NotImplementedError

    def _update_rows(self, time_step, env_ids):
        # Counters do not care which environments the rows are.
        return self._update(time_step)

    def result(self) -> tf.Tensor:
        """The current value, a scalar tensor."""
        raise NotImplementedError

    def reset(self) -> None:
        """Returns the metric to its freshly constructed state."""
        for v in self.variables:
            v.assign(tf.zeros_like(v))


class EnvironmentSteps(StepMetric):
    """The number of transitions (non-FIRST steps) over all environments."""

    def __init__(self, name: str = 'EnvironmentSteps'):
        super().__init__(name=name)
        with self.name_scope:
            self._count = tf.Variable(tf.constant(0, tf.int64),
                                      trainable=False,
                                      name='count')

    def _update(self, time_step):
        not_first = tf.logical_not(_is(time_step.step_type, StepType.FIRST))
        return _group(
            self._count.assign_add(
                tf.reduce_sum(tf.cast(not_first, tf.int64))))

    def result(self) -> tf.Tensor:
        """[] int64."""
        return self._count.read_value()


class NumberOfEpisodes(StepMetric):
    """The number of completed episodes (LAST steps) over all environments."""

    def __init__(self, name: str = 'NumberOfEpisodes'):
        super().__init__(name=name)
        with self.name_scope:
            self._count = tf.Variable(tf.constant(0, tf.int64),
                                      trainable=False,
                                      name='count')

    def _update(self, time_step):
        is_last = _is(time_step.step_type, StepType.LAST)
        return _group(
            self._count.assign_add(tf.reduce_sum(tf.cast(is_last,
                                                         tf.int64))))

    def result(self) -> tf.Tensor:
        """[] int64."""
        return self._count.read_value()


class EpisodeAverageMetric(StepMetric):
    """Mean of a per-episode sum over the last ``buffer_size`` episodes.

    A base for metrics of whole episodes: a subclass says what each step
    adds (``_step_value``). It reads 0 until an episode has ended, which is
    not a score, so the trainer leaves such metrics out of its summaries
    and progress line until then.

    Each environment accumulates ``_step_value(time_step)`` over the
    non-FIRST steps of its current episode (reset to 0 at FIRST). When an
    environment reaches LAST, its total is written into a ring buffer of the
    last ``buffer_size`` completed episodes. Several environments may finish
    on the same step: they take consecutive slots from the head, in batch
    order (``head + exclusive_cumsum(is_last) mod buffer_size``); if more than
    ``buffer_size`` finish at once, only the last ``buffer_size`` of them (in
    batch order) are kept, so no slot is written twice.
    """

    def __init__(self,
                 batch_size: int,
                 buffer_size: int = 10,
                 name: str = None,
                 dtype: tf.DType = tf.float32):
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError("%s: batch_size must be a positive int (the "
                             "number of environments), got %r" %
                             (name, batch_size))
        if not isinstance(buffer_size, int) or buffer_size < 1:
            raise ValueError("%s: buffer_size must be a positive int, got %r" %
                             (name, buffer_size))
        super().__init__(name=name)
        self._batch_size = batch_size
        self._buffer_size = buffer_size
        self._dtype = tf.as_dtype(dtype)
        with self.name_scope:
            # [B] running total of the current episode of each environment.
            self._accumulator = tf.Variable(tf.zeros([batch_size],
                                                     self._dtype),
                                            trainable=False,
                                            name='accumulator')
            # [buffer_size] totals of the last completed episodes.
            self._buffer = tf.Variable(tf.zeros([buffer_size], self._dtype),
                                       trainable=False,
                                       name='buffer')
            # [] int64 next slot to write.
            self._head = tf.Variable(tf.constant(0, tf.int64),
                                     trainable=False,
                                     name='head')
            # [] int64 episodes completed since construction / reset.
            self._num_episodes = tf.Variable(tf.constant(0, tf.int64),
                                             trainable=False,
                                             name='num_episodes')

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def buffer_size(self) -> int:
        return self._buffer_size

    def _step_value(self, time_step):
        """[B] value added to the accumulator at each non-FIRST step."""
        raise NotImplementedError

    def _update(self, time_step):
        return self._update_rows(time_step, None)

    def _update_rows(self, time_step, env_ids):
        step_type = tf.convert_to_tensor(time_step.step_type)
        # A trace-time check: a wrong batch would silently broadcast.
        rows = ([self._batch_size] if env_ids is None else
                tf.convert_to_tensor(env_ids).shape)
        if (step_type.shape.rank is not None and
                not step_type.shape.is_compatible_with(rows)):
            raise ValueError(
                "%s: time_step.step_type: expected %s (%s), got %s" %
                (self.name, list(rows), 'batch_size' if env_ids is None
                 else 'env_ids', step_type.shape))
        is_first = _is(step_type, StepType.FIRST)
        is_last = _is(step_type, StepType.LAST)
        value = tf.cast(self._step_value(time_step), self._dtype)
        before = (self._accumulator if env_ids is None else tf.gather(
            self._accumulator, env_ids))
        accumulator = tf.where(is_first, tf.zeros_like(value), before + value)

        size = tf.constant(self._buffer_size, tf.int64)
        last_int = tf.cast(is_last, tf.int64)
        num_done = tf.reduce_sum(last_int)
        accumulate_op = (self._accumulator.assign(accumulator)
                         if env_ids is None else
                         self._accumulator.scatter_nd_update(
                             tf.expand_dims(env_ids, -1), accumulator))

        def _push():
            # k-th finishing environment (in batch order) -> slot head + k.
            k = tf.cumsum(last_int, exclusive=True)
            # Keep only the last `size` finishers so that no slot is written
            # twice (scatter with duplicate indices has no defined order).
            keep = tf.logical_and(is_last, k >= num_done - size)
            # Static shapes (XLA-compilable): rows not kept go to a spare
            # slot `size` that is cut off again.
            slots = tf.where(keep, tf.math.floormod(self._head + k, size),
                             size)
            padded = tf.concat(
                [self._buffer, tf.zeros([1], self._buffer.dtype)], axis=0)
            updated = tf.tensor_scatter_nd_update(padded,
                                                  tf.expand_dims(slots, -1),
                                                  accumulator)
            with tf.control_dependencies(
                    [self._buffer.assign(updated[:self._buffer_size])]):
                return tf.group(
                    self._head.assign(
                        tf.math.floormod(self._head + num_done, size)),
                    self._num_episodes.assign_add(num_done))

        # Episodes end on few steps: keep the ring-buffer update out of the
        # per-step path (it is ~20 ops of a rollout step's graph otherwise).
        push_op = tf.cond(num_done > 0, _push, tf.no_op)
        return _group(accumulate_op, push_op)

    def result(self) -> tf.Tensor:
        """[] mean over the filled buffer slots; 0 before any episode ends."""
        # Slots are filled in order from 0, so the filled ones are a prefix.
        # A mask, not a slice: a slice of data-dependent size would make XLA
        # recompile the cluster for every episode count (e.g. the in-graph
        # stop_at_average_return check of a jit-compiled iteration).
        filled = tf.minimum(self._num_episodes, self._buffer_size)
        mask = tf.range(self._buffer_size, dtype=filled.dtype) < filled
        total = tf.reduce_sum(
            tf.where(mask, self._buffer, tf.zeros_like(self._buffer)))
        return tf.math.divide_no_nan(total, tf.cast(filled, self._dtype))


class AverageReturn(EpisodeAverageMetric):
    """Average undiscounted return of the last ``buffer_size`` episodes."""

    def __init__(self,
                 batch_size: int,
                 buffer_size: int = 10,
                 name: str = 'AverageReturn',
                 dtype: tf.DType = tf.float32):
        """
        Args:
            batch_size: B, the number of environments in a batched step.
            buffer_size: how many completed episodes the average covers.
            name: metric name (the tag is ``'Metrics/' + name``).
            dtype: float dtype of the accumulated returns.
        """
        super().__init__(batch_size, buffer_size, name, dtype)

    def _step_value(self, time_step):
        return time_step.reward


class AverageEpisodeLength(EpisodeAverageMetric):
    """Average length (non-FIRST steps) of the last ``buffer_size`` episodes.
    """

    def __init__(self,
                 batch_size: int,
                 buffer_size: int = 10,
                 name: str = 'AverageEpisodeLength',
                 dtype: tf.DType = tf.float32):
        """
        Args:
            batch_size: B, the number of environments in a batched step.
            buffer_size: how many completed episodes the average covers.
            name: metric name (the tag is ``'Metrics/' + name``).
            dtype: float dtype of the accumulated lengths.
        """
        super().__init__(batch_size, buffer_size, name, dtype)

    def _step_value(self, time_step):
        return tf.ones(tf.shape(time_step.step_type), self._dtype)


class GameScore(tf.Module):
    """Average score of the last ``buffer_size`` finished games, fed from
    Python (``add``) with what ``TFEnvironment.pop_game_scores()`` returns.

    Not a ``StepMetric``: a game (e.g. all lives of an Atari game, with
    unclipped rewards) is not what a training episode is, so it cannot be
    counted from ``TimeStep``s. Its variables make it checkpointable like
    the other metrics.

    Args:
        buffer_size: how many finished games the average covers.
        name: metric name (the tag is ``'Metrics/' + name``).
    """

    def __init__(self, buffer_size: int = 10, name: str = 'GameScore'):
        if not isinstance(buffer_size, int) or buffer_size < 1:
            raise ValueError("%s: buffer_size must be a positive int, got %r"
                             % (name, buffer_size))
        super().__init__(name=name)
        self._buffer_size = buffer_size
        with self.name_scope:
            # [buffer_size] scores of the last games; slot = game % size.
            self._buffer = tf.Variable(tf.zeros([buffer_size], tf.float64),
                                       trainable=False, name='buffer')
            self._num_games = tf.Variable(tf.constant(0, tf.int64),
                                          trainable=False, name='num_games')

    @property
    def tag(self) -> str:
        """The TensorBoard tag, ``'Metrics/<name>'``."""
        return 'Metrics/' + self.name

    def add(self, scores: List[float]) -> None:
        """Folds in the scores of finished games (eagerly).

        Args:
            scores: the games' scores, oldest first (any length).
        """
        if not len(scores):
            return
        buffer = self._buffer.numpy()
        # Games older than the last buffer_size of them are only counted.
        count = int(self._num_games.numpy()) + max(
            0, len(scores) - self._buffer_size)
        for score in list(scores)[-self._buffer_size:]:
            buffer[count % self._buffer_size] = float(score)
            count += 1
        self._buffer.assign(buffer)
        self._num_games.assign(count)

    @property
    def num_games(self) -> int:
        """Games folded in since construction."""
        return int(self._num_games.numpy())

    def result(self) -> tf.Tensor:
        """[] float64 mean of the last ``buffer_size`` games' scores; 0
        before any game ended."""
        filled = int(min(self.num_games, self._buffer_size))
        if not filled:
            return tf.constant(0.0, tf.float64)
        return tf.reduce_mean(self._buffer[:filled])


def default_metrics(batch_size: int,
                    buffer_size: int = 10) -> List[StepMetric]:
    """The four standard metrics, in TensorBoard-tag order.

    Args:
        batch_size: B, the number of environments in a batched step.
        buffer_size: episodes averaged by the two averaging metrics.

    Returns:
        ``[NumberOfEpisodes, EnvironmentSteps, AverageReturn,
        AverageEpisodeLength]`` instances.
    """
    return [
        NumberOfEpisodes(),
        EnvironmentSteps(),
        AverageReturn(batch_size, buffer_size),
        AverageEpisodeLength(batch_size, buffer_size),
    ]


def _is(step_type, value):
    """[B] bool: ``step_type == value`` for any integer step_type dtype."""
    step_type = tf.convert_to_tensor(step_type)
    return tf.equal(step_type, tf.cast(value, step_type.dtype))


def _group(*ops):
    """``tf.group`` in graph mode; ``None`` eagerly (nothing to return)."""
    if tf.executing_eagerly():
        return None
    return tf.group(*ops)
