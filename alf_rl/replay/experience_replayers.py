"""Experience replayers: what an off-policy algorithm observes and replays.

A replayer sits between the driver, which calls ``observe(exp)`` once per
collected step of a batch of environments, and the algorithm's ``train``,
which calls ``replay``/``replay_all``. Both replayers here are thin wrappers
over ``ReplayBuffer`` and are graph compatible: all of their state is in the
buffer's variables, so ``observe`` can run inside the driver's compiled loop
and ``replay_all`` inside the compiled training step, in different
``tf.function`` calls. (ALF's one-time replayer kept the last batch in a
Python attribute and so only worked eagerly.)

Returned experience is time-major, ``[T, B, ...]``, as the buffer reads it
(see ``ReplayBuffer``): nothing downstream transposes it again.
"""

from typing import Any, Optional, Tuple

import tensorflow as tf

from alf_rl.replay.prioritized_replay_buffer import PrioritizedReplayBuffer
from alf_rl.replay.replay_buffer import (BatchInfo, ReplayBuffer, _deps,
                                         runtime_check)
from alf_rl.utils.nest import Nest


def _env_ids(exp):
    """[B] int32 environment ids of a batched step: ``exp.env_id`` if the
    nest has one, else ``0..B-1``."""
    env_id = getattr(exp, 'env_id', ())
    if tf.is_tensor(env_id) or hasattr(env_id, 'shape'):
        return tf.cast(env_id, tf.int32)
    leaf = tf.nest.flatten(exp)[0]
    return tf.range(tf.shape(leaf)[0], dtype=tf.int32)


class ExperienceReplayer(tf.Module):
    """Interface: ``observe``, ``replay``, ``replay_all``, ``clear``.

    Args:
        buffer: the ``ReplayBuffer`` (or ``PrioritizedReplayBuffer``) that
            holds the steps.
        name: module name.
    """

    def __init__(self, buffer: ReplayBuffer, name: str):
        super().__init__(name=name)
        self._buffer = buffer

    @property
    def buffer(self) -> ReplayBuffer:
        """The underlying ``ReplayBuffer``."""
        return self._buffer

    @property
    def batch_size(self) -> int:
        """Number of environments, the batch size of ``replay_all``."""
        return self._buffer.num_environments

    def observe(self, exp: Nest) -> tf.Tensor:
        """Adds one step of every environment of the batch.

        Args:
            exp: nest (e.g. ``Experience``) with [B, ...] leaves matching the
                experience spec; ``exp.env_id`` ([B] int32), if present, says
                which environment each row is, else rows are envs ``0..B-1``.

        Returns:
            [B] int64, the positions the steps were written at.
        """
        return self._buffer.add_batch(exp, _env_ids(exp))

    def replay(self, batch_size: int,
               batch_length: int) -> Tuple[Nest, BatchInfo]:
        """Samples ``batch_size`` sequences of ``batch_length`` steps.

        Args:
            batch_size: number of sequences.
            batch_length: steps per sequence.

        Returns:
            ``(exp, info)``: nest of time-major [batch_length, batch_size,
            ...] and a ``BatchInfo`` of [batch_size] fields (see
            ``ReplayBuffer``).
        """
        return self._buffer.get_batch(batch_size, batch_length)

    def replay_all(self) -> Nest:
        """All stored steps, nest of time-major [T, num_envs, ...]."""
        return self._buffer.gather_all()

    def clear(self) -> Any:
        """Forgets all stored steps.

        Returns:
            The assign op in graph mode (None eagerly).
        """
        return self._buffer.clear()

    def update_priority(self, env_ids: tf.Tensor, positions: tf.Tensor,
                        priorities: tf.Tensor) -> None:
        """Sets sampling priorities; a no-op unless the buffer is prioritized.

        Args:
            env_ids: [K] int32, ``BatchInfo.env_ids``.
            positions: [K] int64, ``BatchInfo.positions``.
            priorities: [K] float, non-negative.
        """
        if isinstance(self._buffer, PrioritizedReplayBuffer):
            self._buffer.update_priority(env_ids, positions, priorities)


class OnetimeExperienceReplayer(ExperienceReplayer):
    """Hands back exactly the steps observed since the last ``replay_all``.

    For on-policy-style training through the off-policy path (PPO, off-policy
    A2C): each iteration the driver observes T steps of B environments and
    the algorithm calls ``replay_all()``, which returns them as [T, B, ...]
    and clears. Implemented on a ``ReplayBuffer`` with ``max_length`` slots
    per environment rather than TensorArrays, because TensorArrays cannot
    outlive one ``tf.function`` call and the driver's steps and the training
    step run in different calls. Observing more than ``max_length`` steps of
    an environment between two ``replay_all`` calls would lose data, so it is
    an error.

    Args:
        experience_spec: nest of ``tf.TensorSpec`` of one step.
        num_envs: number of environments B.
        max_length: most steps per environment per iteration (the unroll
            length T; capacity is ``num_envs * max_length``).
        seed: optional sampler seed (for ``replay``).
        name: module name.
    """

    def __init__(self,
                 experience_spec: Nest,
                 num_envs: int,
                 max_length: int,
                 seed: Optional[int] = None,
                 name: str = 'OnetimeExperienceReplayer'):
        super().__init__(
            ReplayBuffer(experience_spec,
                         num_envs,
                         num_envs * max_length,
                         seed=seed,
                         name=name + '_buffer'), name)

    def observe(self, exp: Nest) -> tf.Tensor:
        """Adds one step of every environment of the batch.

        Args:
            exp: nest with [B, ...] leaves matching the experience spec.

        Returns:
            [B] int64 positions written.

        Raises:
            tf.errors.InvalidArgumentError: if an environment already holds
                ``max_length`` steps of this iteration.
        """
        env_ids = _env_ids(exp)
        sizes = tf.gather(self._buffer.current_size, env_ids)
        check = runtime_check(
            tf.reduce_all(sizes < self._buffer.max_length),
            '%s.observe: more than max_length=%d steps observed since the '
            'last replay_all(); steps stored per observed env:' %
            (self.name, self._buffer.max_length), sizes)
        with tf.control_dependencies(_deps(check)):
            env_ids = tf.identity(env_ids)
        return self._buffer.add_batch(exp, env_ids)

    def replay_all(self, full: bool = False) -> Nest:
        """This iteration's steps, then clears.

        Args:
            full: promise that every environment was observed exactly
                ``max_length`` times: then the steps are read whole, with
                static shapes [max_length, B, ...] and no gather (XLA can
                compile it), and the promise is checked at run time.

        Returns:
            nest of time-major [T, B, ...], T the steps observed per
            environment.

        Raises:
            tf.errors.InvalidArgumentError: if environments were observed a
                different number of times (or, with ``full``, not
                ``max_length`` times).
        """
        exp = (self._buffer.read_full() if full else
               self._buffer.gather_all())
        # Read before clearing. Eagerly this is program order; in a graph
        # tf.function's automatic control dependencies already order the
        # gather before the assign, and the explicit dependency documents it.
        with tf.control_dependencies(tf.nest.flatten(exp)):
            self._buffer.clear()
        return exp


class SyncUniformExperienceReplayer(ExperienceReplayer):
    """Replayer over a (uniform or prioritized) ring buffer per environment.

    Args:
        experience_spec: nest of ``tf.TensorSpec`` of one step, distributions
            already as parameters (see ``ops.distributions.to_params_spec``).
        num_envs: number of environments.
        capacity: total steps over all environments.
        prioritized: use a ``PrioritizedReplayBuffer``; ``update_priority``
            is a no-op otherwise.
        seed: optional sampler seed.
        frame_stack: nest path (e.g. ``'experience.observation'``) of a
            leaf stacking the last N frames on its last axis, to store each
            frame once (see ``ReplayBuffer``); ``None`` stores it whole.
        name: module name.
        **prioritized_kwargs: ``alpha``, ``beta``, ``epsilon`` for the
            prioritized buffer.
    """

    def __init__(self,
                 experience_spec: Nest,
                 num_envs: int,
                 capacity: int,
                 prioritized: bool = False,
                 seed: Optional[int] = None,
                 frame_stack: Optional[str] = None,
                 name: str = 'SyncUniformExperienceReplayer',
                 **prioritized_kwargs: float):
        if prioritized:
            buffer = PrioritizedReplayBuffer(experience_spec,
                                             num_envs,
                                             capacity,
                                             seed=seed,
                                             frame_stack=frame_stack,
                                             name=name + '_buffer',
                                             **prioritized_kwargs)
        else:
            if prioritized_kwargs:
                raise ValueError(
                    "%s: %s only apply with prioritized=True" %
                    (name, sorted(prioritized_kwargs)))
            buffer = ReplayBuffer(experience_spec,
                                  num_envs,
                                  capacity,
                                  seed=seed,
                                  frame_stack=frame_stack,
                                  name=name + '_buffer')
        super().__init__(buffer, name)
