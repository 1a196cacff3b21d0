"""Prioritized replay (Schaul et al. 2016, "Prioritized Experience Replay").

A ``ReplayBuffer`` whose starting positions are sampled with probability
``P(i) = p_i^alpha / sum_k p_k^alpha`` from a sum-tree kept in one float64
``tf.Variable`` (float64 so that sums over a million leaves keep the
resolution of the smallest priorities). Leaf ``env * max_length + slot``
holds ``p^alpha`` of the step stored in that slot (0 for an empty slot);
internal node ``n`` holds the sum of its children ``2n`` and ``2n + 1``; the
root is node 1. Updates rewrite the leaves and then recompute every ancestor
from its children, level by level (``log2`` levels, unrolled in the graph),
so duplicate indices in one update are harmless.

Deviations / choices:

- New steps get the largest priority seen so far (``(p + epsilon)`` of any
  update; 1 initially), as in the paper.
- Sequences (``batch_length`` L > 1) are sampled by their *first* step's
  priority. The last L - 1 stored steps of every environment cannot start a
  full sequence without spanning the write head; they are excluded without
  touching the tree: during the descent each node's sum is reduced by the
  priorities of the excluded leaves below it (at most
  ``num_environments * (L - 1)`` of them), so sampling never writes and is
  exact. As a guard against float rounding, a sampled start is finally
  clipped into the valid window.
- Stratified sampling: draw ``i`` falls in ``[i, i + 1) / b`` of the total.
- Importance weights ``w_i = (N * P(i))^-beta`` with N the number of valid
  starting positions, divided by the largest weight *in the batch* (the
  common implementation choice; the paper's "max_i w_i" is ambiguous).
- ``update_priority`` ignores (env, position) pairs that are no longer stored
  (overwritten since they were sampled, or cleared): positions are global
  counters, so stale indices are recognisable.
"""

from typing import Any, Callable, Optional, Union

import numpy as np
import tensorflow as tf

from alf_rl.replay.replay_buffer import ReplayBuffer, _deps, runtime_check
from alf_rl.utils.nest import Nest


class PrioritizedReplayBuffer(ReplayBuffer):
    """Replay buffer sampling sequence starts proportionally to priority.

    Args:
        data_spec: nest of ``tf.TensorSpec`` of one step (no batch dim).
        num_environments: number of environments (rings).
        capacity: total steps over all environments; ``capacity //
            num_environments`` per environment.
        alpha: priority exponent; 0 gives uniform sampling.
        beta: importance-sampling exponent: a float, or a zero-argument
            callable returning a [] float tensor (e.g. a schedule reading the
            global step variable), called each time ``get_batch`` runs (or is
            traced).
        epsilon: added to every updated priority so that no stored step
            becomes unsamplable.
        data_name: root of nest paths in error messages.
        seed: optional int seed of the sampler.
        device: device for the variables and ops (default host memory).
        frame_stack: nest path of a stacked-frames leaf to store each frame
            of once (see ``ReplayBuffer``).
        step_type_path: nest path of the step-type leaf for
            ``frame_stack`` (see ``ReplayBuffer``).
        name: module name.

    Raises:
        ValueError: for ``alpha < 0``, ``epsilon < 0`` or a float ``beta``
            outside ``[0, 1]``, and as ``ReplayBuffer``.
    """

    def __init__(self,
                 data_spec: Nest,
                 num_environments: int,
                 capacity: int,
                 alpha: float = 0.6,
                 beta: Union[float, Callable[[], tf.Tensor]] = 0.4,
                 epsilon: float = 1e-6,
                 data_name: str = 'experience',
                 seed: Optional[int] = None,
                 device: Optional[str] = 'CPU:0',
                 frame_stack: Optional[str] = None,
                 step_type_path: Optional[str] = None,
                 name: str = 'PrioritizedReplayBuffer'):
        if alpha < 0:
            raise ValueError("alpha must be >= 0, got %r" % (alpha, ))
        if epsilon < 0:
            raise ValueError("epsilon must be >= 0, got %r" % (epsilon, ))
        if not callable(beta) and not 0 <= beta <= 1:
            raise ValueError("beta must be in [0, 1] or a callable returning "
                             "it, got %r" % (beta, ))
        super().__init__(data_spec,
                         num_environments,
                         capacity,
                         data_name=data_name,
                         seed=seed,
                         device=device,
                         frame_stack=frame_stack,
                         step_type_path=step_type_path,
                         name=name)
        self._alpha = float(alpha)
        self._beta = beta
        self._epsilon = float(epsilon)
        num_leaves = self.capacity
        self._depth = max(int(np.ceil(np.log2(num_leaves))), 0)
        self._tree_leaves = 2**self._depth  # leaf i is node tree_leaves + i
        with tf.device(device), tf.name_scope(name):
            self._tree = tf.Variable(tf.zeros([2 * self._tree_leaves],
                                              tf.float64),
                                     trainable=False,
                                     name='sum_tree')
            self._max_priority = tf.Variable(tf.constant(1.0, tf.float64),
                                             trainable=False,
                                             name='max_priority')

    @property
    def alpha(self) -> float:
        """The priority exponent."""
        return self._alpha

    @property
    def max_priority(self) -> tf.Tensor:
        """[] float64: priority given to newly added steps."""
        return tf.identity(self._max_priority)

    def _beta_value(self):
        beta = self._beta() if callable(self._beta) else self._beta
        return tf.cast(beta, tf.float64)

    # ------------------------------------------------------------ sum tree
    def _set_leaves(self, leaves, values):
        """Sets leaves and recomputes their ancestors.

        Args:
            leaves: [K] int64 leaf indices in ``[0, capacity)``.
            values: [K] float64 new leaf values (``p^alpha``).
        """
        nodes = leaves + self._tree_leaves
        self._tree.scatter_nd_update(nodes[:, None], values)
        for _ in range(self._depth):
            nodes = nodes // 2
            sums = (tf.gather(self._tree, 2 * nodes) +
                    tf.gather(self._tree, 2 * nodes + 1))
            self._tree.scatter_nd_update(nodes[:, None], sums)

    def _leaves(self, env_ids, positions):
        """[K] int64 leaf index of (env_ids [K] int64, positions [K] int64)."""
        return env_ids * self._max_length + positions % self._max_length

    def leaf_priorities(self) -> tf.Tensor:
        """[num_environments, max_length] float64: ``p^alpha`` per slot.

        Slot ``s`` of environment ``e`` holds position ``p`` with
        ``p % max_length == s``; empty slots hold 0.
        """
        leaves = self._tree[self._tree_leaves:self._tree_leaves +
                            self.capacity]
        return tf.reshape(leaves, [self._num_envs, self._max_length])

    # ------------------------------------------------------------- add/clear
    def _after_add(self, env_ids, positions):
        values = tf.fill(tf.shape(positions),
                         tf.pow(self._max_priority, self._alpha))
        self._set_leaves(self._leaves(env_ids, positions), values)

    def clear(self) -> Any:
        """Forgets all stored steps and resets the max priority to 1.

        Returns:
            The assign op in graph mode (ignorable).
        """
        with tf.device(self._device), tf.name_scope(self.name):
            super().clear()
            self._tree.assign(tf.zeros_like(self._tree))
            return self._max_priority.assign(tf.constant(1.0, tf.float64))

    # ------------------------------------------------------------ priorities
    def update_priority(self, env_ids: tf.Tensor, positions: tf.Tensor,
                        priorities: tf.Tensor) -> None:
        """Sets the priorities of stored steps.

        Args:
            env_ids: [K] int32/int64, environments (``BatchInfo.env_ids``).
            positions: [K] int64, positions (``BatchInfo.positions``).
                Pairs no longer stored are ignored.
            priorities: [K] float, non-negative (e.g. ``|TD error|``); the
                stored value is ``(priority + epsilon)^alpha``.

        Raises:
            tf.errors.InvalidArgumentError: for env ids out of range or
                negative / non-finite priorities.
        """
        with tf.device(self._device), tf.name_scope(self.name):
            env_ids = tf.cast(env_ids, tf.int64)
            positions = tf.cast(positions, tf.int64)
            priorities = tf.cast(priorities, tf.float64)
            checks = _deps(
                runtime_check(
                    tf.reduce_all((env_ids >= 0)
                                  & (env_ids < self._num_envs)),
                    '%s.update_priority: env_ids must lie in [0, %d); got' %
                    (self.name, self._num_envs), env_ids),
                runtime_check(
                    tf.reduce_all(
                        tf.math.is_finite(priorities) & (priorities >= 0)),
                    '%s.update_priority: priorities must be finite and '
                    'non-negative; got' % self.name, priorities))
            with tf.control_dependencies(checks):
                stored = ((positions >= tf.gather(self._start, env_ids))
                          & (positions < tf.gather(self._end, env_ids)))
            leaves = self._leaves(env_ids, positions)
            priorities = priorities + self._epsilon
            current = tf.gather(self._tree, leaves + self._tree_leaves)
            values = tf.where(stored, tf.pow(priorities, self._alpha), current)
            self._max_priority.assign(
                tf.maximum(
                    self._max_priority,
                    tf.reduce_max(tf.where(stored, priorities,
                                           tf.zeros_like(priorities)))))
            self._set_leaves(leaves, values)

    # -------------------------------------------------------------- sampling
    def _sample_starts(self, batch_size, batch_length, num_starts, total):
        k = batch_length - 1
        start = tf.identity(self._start)
        end = tf.identity(self._end)
        tree_leaves = self._tree_leaves
        root = self._tree[1]
        if k > 0:
            # The last k positions of every environment cannot start a full
            # sequence; take their priorities out of the descent.
            excluded = end[:, None] - 1 - tf.range(k, dtype=tf.int64)[None, :]
            envs = tf.broadcast_to(
                tf.range(self._num_envs, dtype=tf.int64)[:, None],
                tf.shape(excluded))
            is_stored = excluded >= start[:, None]
            excluded_nodes = tf.reshape(
                self._leaves(envs, excluded) + tree_leaves, [-1])
            excluded_values = tf.reshape(
                tf.where(is_stored,
                         tf.reshape(tf.gather(self._tree, excluded_nodes),
                                    tf.shape(excluded)),
                         tf.zeros(tf.shape(excluded), tf.float64)), [-1])
            total_mass = root - tf.reduce_sum(excluded_values)
        else:
            total_mass = root
        # Sums at or below rounding level count as empty subtrees.
        tiny = root * 1e-12
        check = runtime_check(
            total_mass > tiny,
            '%s.get_batch: every step that can start a sequence of '
            'batch_length=%d has priority 0 (use epsilon > 0); valid starts '
            'per environment:' % (self.name, batch_length), num_starts)
        with tf.control_dependencies(_deps(check)):
            total_mass = tf.identity(total_mass)

        def _mass(nodes, level):
            mass = tf.gather(self._tree, nodes)
            if k > 0:
                ancestors = excluded_nodes // (2**(self._depth - level))
                mass -= tf.reduce_sum(
                    tf.where(
                        tf.equal(ancestors[None, :], nodes[:, None]),
                        excluded_values[None, :],
                        tf.zeros([], tf.float64)), 1)
            return mass

        u = ((tf.range(batch_size, dtype=tf.float64) +
              self._generator.uniform([batch_size], dtype=tf.float64)) /
             batch_size * total_mass)
        nodes = tf.ones([batch_size], tf.int64)
        for level in range(1, self._depth + 1):
            left = 2 * nodes
            left_mass = _mass(left, level)
            right_mass = _mass(left + 1, level)
            go_right = (((u >= left_mass) & (right_mass > tiny))
                        | (left_mass <= tiny))
            u = tf.where(go_right, u - left_mass, u)
            nodes = tf.where(go_right, left + 1, left)
        # Padding leaves beyond capacity hold 0 and are never reached unless
        # every mass is at rounding level; keep even that case in range.
        leaves = tf.minimum(nodes - tree_leaves, self.capacity - 1)
        nodes = leaves + tree_leaves
        env_ids = leaves // self._max_length
        slots = leaves % self._max_length
        env_start = tf.gather(start, env_ids)
        positions = env_start + tf.math.floormod(slots - env_start,
                                                 self._max_length)
        # Guard against float rounding: stay inside the valid window.
        positions = tf.clip_by_value(
            positions, env_start,
            tf.maximum(env_start,
                       tf.gather(end, env_ids) - batch_length))
        probs = tf.gather(self._tree, nodes) / total_mass
        weights = tf.pow(tf.cast(total, tf.float64) * probs,
                         -self._beta_value())
        weights = weights / tf.reduce_max(weights)
        return env_ids, positions, tf.cast(weights, tf.float32)
