"""Replay: ring buffers in ``tf.Variable``s and experience replayers.

- ``ReplayBuffer``: per-environment rings, uniform sequence sampling,
  ``gather_all`` in time order, checkpointable.
- ``PrioritizedReplayBuffer``: sum-tree prioritized sampling of sequence
  starts with importance weights.
- ``OnetimeExperienceReplayer``, ``SyncUniformExperienceReplayer``: what
  drivers ``observe`` into and algorithms ``replay`` from.
"""

from alf_rl.replay.experience_replayers import (ExperienceReplayer,
                                                OnetimeExperienceReplayer,
                                                SyncUniformExperienceReplayer)
from alf_rl.replay.prioritized_replay_buffer import PrioritizedReplayBuffer
from alf_rl.replay.replay_buffer import BatchInfo, ReplayBuffer

__all__ = [
    'BatchInfo', 'ReplayBuffer', 'PrioritizedReplayBuffer',
    'ExperienceReplayer', 'OnetimeExperienceReplayer',
    'SyncUniformExperienceReplayer'
]
