"""A training run's replay stream as a dataset (e.g. D4RL's
``medium-replay``: everything a run collected while it learned).

``write_replay`` takes every step a replay buffer holds, lane by lane in
time order, and writes its episodes: each lane is cut before every
``FIRST`` step; steps before a lane's first ``FIRST`` (the rest of an
episode whose start the ring buffer overwrote) are dropped, and the last
episode of a lane may end without ``LAST`` (it was still running). With
``replay_buffer_capacity`` at least the run's environment steps, the
buffer holds the run's whole stream.
"""

from typing import Any, Dict, List, Optional

import numpy as np
import tensorflow as tf

from alf_rl.data_structures import Experience, StepType
from alf_rl.offline.dataset import Dataset, DatasetError, DatasetWriter


def lane_episodes(lane: Experience) -> List[Experience]:
    """The episodes of one lane's steps.

    Args:
        lane: ``Experience`` of numpy [S, ...] leaves, one environment's
            steps in time order.

    Returns:
        ``Experience``s of [T, ...] leaves (``step_type``, ``reward``,
        ``discount``, ``observation``, ``prev_action``, ``action``), each
        starting with ``FIRST``.
    """
    firsts = np.flatnonzero(np.asarray(lane.step_type) == StepType.FIRST)
    bounds = list(firsts) + [len(lane.step_type)]
    episodes = []
    for b, e in zip(bounds[:-1], bounds[1:]):
        piece = tf.nest.map_structure(
            lambda x, b=b, e=e: x[b:e],
            (
                lane.step_type,
                lane.reward,
                lane.discount,
                lane.observation,
                lane.prev_action,
                lane.action,
            ),
        )
        episodes.append(Experience(*piece[:5], action=piece[5]))
    return episodes


def write_replay(
    replayer: Any, out: str, metadata: Optional[Dict[str, Any]] = None
) -> Dataset:
    """Writes what ``replayer`` holds as a dataset (one new shard).

    Args:
        replayer: an ``ExperienceReplayer`` of ``Experience`` rows whose
            environments hold the same number of steps (a synchronous
            run's).
        out: the dataset directory (new, or a dataset of the same specs).
        metadata: entries for the dataset's metadata.

    Returns:
        the written ``Dataset``; its metadata's ``behaviour_return`` is the
        mean return of the episodes that end with ``LAST`` (if any).

    Raises:
        DatasetError: the buffer holds no whole episode start.
    """
    stored = tf.nest.map_structure(
        lambda x: np.asarray(x), replayer.buffer.gather_all()
    )
    spec = replayer.buffer.data_spec
    writer = DatasetWriter(out, spec.observation, spec.action, metadata)
    count, returns = 0, []
    for b in range(replayer.batch_size):
        lane = tf.nest.map_structure(lambda x, b=b: x[:, b], stored)
        for episode in lane_episodes(lane):
            writer.add_episode(episode)
            count += 1
            if episode.step_type[-1] == StepType.LAST:
                returns.append(float(np.sum(episode.reward[1:])))
    if returns:
        writer.set_metadata(behaviour_return=float(np.mean(returns)))
    if not count:
        raise DatasetError(
            "%s: the replay buffer holds no episode start (FIRST step); "
            "nothing written" % out
        )
    writer.flush()
    return Dataset(out)
