"""Streams a dataset's episodes into a replay buffer.

The episodes are laid out over ``num_lanes`` replay environments ("lanes"),
each episode whole in one lane, episodes back to back as an online run's
environment would have written them (its ``LAST`` step followed by the next
episode's ``FIRST``), so sampled sequences and their episode boundaries
look exactly like online replay. Episodes go to the lane holding the
fewest steps so far, in dataset order: the lanes' lengths differ by at
most one episode.
"""

from typing import Any, List

import numpy as np
import tensorflow as tf

from alf_rl.data_structures import Experience
from alf_rl.offline.dataset import Dataset, DatasetError
from alf_rl.replay.experience_replayers import ExperienceReplayer
from alf_rl.specs import zeros_from_spec


def lane_assignment(lengths: List[int], num_lanes: int) -> List[List[int]]:
    """Which episodes go to which lane.

    Args:
        lengths: the steps of each episode, in dataset order.
        num_lanes: L, the replay buffer's number of environments.

    Returns:
        L lists of episode indices (dataset order within a lane).
    """
    lanes: List[List[int]] = [[] for _ in range(num_lanes)]
    totals = [0] * num_lanes
    for i, n in enumerate(lengths):
        lane = int(np.argmin(totals))
        lanes[lane].append(i)
        totals[lane] += n
    return lanes


def lane_capacity(dataset: Dataset, num_lanes: int) -> int:
    """The replay capacity that holds all of ``dataset`` in ``num_lanes``
    lanes: L times the longest lane's steps."""
    lengths = [len(e.step_type) for e in dataset.episodes()]
    lanes = lane_assignment(lengths, num_lanes)
    return num_lanes * max(sum(lengths[i] for i in lane) for lane in lanes)


def _concat(episodes: List[Experience]) -> Experience:
    return tf.nest.map_structure(lambda *x: np.concatenate(x), *episodes)


def fill_replayer(
    dataset: Dataset, replayer: ExperienceReplayer, experience_spec: Experience
) -> int:
    """Writes every step of ``dataset`` into ``replayer``'s buffer.

    ``rollout_info`` (the collecting policy's, not the learner's) is
    stored as zeros of the learner's spec.

    Args:
        dataset: the dataset (specs already checked against the learner's).
        replayer: a replayer with L = ``replayer.batch_size`` lanes and the
            capacity of ``lane_capacity(dataset, L)`` or more.
        experience_spec: the learner's ``Experience`` spec (no batch dim).

    Returns:
        the number of steps written.

    Raises:
        DatasetError: the learner keeps a rollout state in its experience
            (a recurrent policy), which a dataset does not hold; or the
            buffer is too small.
    """
    if tf.nest.flatten(experience_spec.state):
        raise DatasetError(
            "dataset %s holds no policy state: train a "
            "non-recurrent algorithm (use_rollout_state="
            "False)" % dataset.path
        )
    num_lanes = replayer.batch_size
    episodes = list(dataset.episodes())
    lanes = [
        _concat([episodes[i] for i in lane])
        for lane in lane_assignment(
            [len(e.step_type) for e in episodes], num_lanes
        )
        if lane
    ]
    capacity = replayer.buffer.capacity
    needed = num_lanes * max(len(lane.step_type) for lane in lanes)
    if needed > capacity:
        raise DatasetError(
            "dataset %s needs a replay capacity of %d in %d "
            "lanes, got %d" % (dataset.path, needed, num_lanes, capacity)
        )
    # Longest lanes first: the lanes still writing at step t are a prefix.
    order = sorted(range(len(lanes)), key=lambda i: -len(lanes[i].step_type))
    lanes = [lanes[i] for i in order]
    add = _add_function(replayer, experience_spec)
    longest = len(lanes[0].step_type)
    for t in range(longest):
        active = [lane for lane in lanes if len(lane.step_type) > t]
        rows = tf.nest.map_structure(
            lambda *x: np.stack(x), *[_row(lane, t) for lane in active]
        )
        add(rows, np.arange(len(active), dtype=np.int32))
    return sum(len(lane.step_type) for lane in lanes)


def _row(lane: Experience, t: int) -> Any:
    """Step t of a lane: (step_type, reward, discount, observation,
    prev_action, action) leaves."""
    return (
        lane.step_type[t],
        lane.reward[t],
        lane.discount[t],
        tf.nest.map_structure(lambda x: x[t], lane.observation),
        tf.nest.map_structure(lambda x: x[t], lane.prev_action),
        tf.nest.map_structure(lambda x: x[t], lane.action),
    )


def _add_function(
    replayer: ExperienceReplayer, experience_spec: Experience
) -> Any:
    """A compiled ``(rows, env_ids)`` -> observe, traced once for any
    number of rows."""

    def add(rows, env_ids):
        step_type, reward, discount, observation, prev_action, action = rows
        batch = tf.shape(env_ids)[0]
        exp = experience_spec._replace(
            step_type=step_type,
            reward=reward,
            discount=discount,
            observation=observation,
            prev_action=prev_action,
            action=action,
            env_id=env_ids,
            rollout_info=tf.nest.map_structure(
                lambda s: tf.zeros(tf.concat([[batch], s.shape], 0), s.dtype),
                experience_spec.rollout_info,
            ),
            state=zeros_from_spec(experience_spec.state),
        )
        return replayer.observe(exp)

    return tf.function(add, reduce_retracing=True)
