"""Offline RL data: the on-disk dataset of episodes (``Dataset``,
``DatasetWriter``), streaming it into a replay buffer (``fill_replayer``),
collecting a policy's episodes (``collect_episodes``, behind
``alf-collect``), the normalized score, and Minari datasets in and out
(``import_minari``, ``export_minari``: the ``[offline]`` extra)."""

from alf_rl.offline.dataset import (
    Dataset,
    DatasetError,
    DatasetWriter,
    spec_from_json,
    spec_to_json,
)
from alf_rl.offline.minari_io import export_minari, import_minari
from alf_rl.offline.replay_feed import (
    fill_replayer,
    lane_assignment,
    lane_capacity,
)

__all__ = [
    'Dataset',
    'DatasetError',
    'DatasetWriter',
    'export_minari',
    'fill_replayer',
    'import_minari',
    'lane_assignment',
    'lane_capacity',
    'spec_from_json',
    'spec_to_json',
]
