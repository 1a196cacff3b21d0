"""The on-disk dataset: round trip, append, atomicity, refusals, and
streaming into a replay buffer."""

import json
import os
from typing import Any, List

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.data_structures import Experience, StepType
from alf_rl.offline import (
    Dataset,
    DatasetError,
    DatasetWriter,
    fill_replayer,
    lane_assignment,
    lane_capacity,
)
from alf_rl.offline import dataset as dataset_module
from alf_rl.replay import SyncUniformExperienceReplayer
from alf_rl.specs import BoundedTensorSpec

OBS_SPEC = {
    'pos': tf.TensorSpec([3], tf.float32),
    'img': tf.TensorSpec([2, 2], tf.uint8),
}
ACTION_SPEC = (
    BoundedTensorSpec((), tf.int64, 0, 3),
    BoundedTensorSpec([2], tf.float32, -1.0, 1.0),
)


def _episode(length: int, seed: int) -> Experience:
    rng = np.random.default_rng(seed)
    step_type = np.full([length], StepType.MID, np.int32)
    step_type[0], step_type[-1] = StepType.FIRST, StepType.LAST
    action = (
        rng.integers(0, 4, [length]),
        rng.uniform(-1, 1, [length, 2]).astype(np.float32),
    )
    prev = tf.nest.map_structure(
        lambda a: np.concatenate([np.zeros_like(a[:1]), a[:-1]]), action
    )
    discount = np.ones([length], np.float32)
    discount[-1] = 0.0
    return Experience(
        step_type=step_type,
        reward=np.concatenate([[0.0], rng.normal(size=length - 1)]).astype(
            np.float32
        ),
        discount=discount,
        observation={
            'pos': rng.normal(size=[length, 3]).astype(np.float32),
            'img': rng.integers(0, 255, [length, 2, 2], dtype=np.uint8),
        },
        prev_action=prev,
        action=action,
    )


def _write(path: str, episodes: List[Experience], **metadata: Any) -> None:
    writer = DatasetWriter(path, OBS_SPEC, ACTION_SPEC, metadata)
    for e in episodes:
        writer.add_episode(e)
    writer.flush()


def _assert_same(a: Experience, b: Experience) -> None:
    for x, y in zip(tf.nest.flatten(a), tf.nest.flatten(b)):
        np.testing.assert_array_equal(x, y)
        assert np.asarray(x).dtype == np.asarray(y).dtype


def test_round_trip_of_nested_observations_and_actions(tmp_path):
    episodes = [_episode(5, 0), _episode(3, 1)]
    _write(str(tmp_path / 'd'), episodes, env='Toy-v0', random_return=-1.0)
    ds = Dataset(str(tmp_path / 'd'))
    assert ds.num_episodes == 2 and ds.num_steps == 8
    assert ds.metadata == {'env': 'Toy-v0', 'random_return': -1.0}
    assert ds.action_spec[0].maximum == 3
    assert ds.action_spec[1].minimum.tolist() == [-1.0, -1.0]
    assert ds.observation_spec['img'].dtype == tf.uint8
    read = list(ds.episodes())
    for a, b in zip(read, episodes):
        _assert_same(a, b)
    np.testing.assert_allclose(
        ds.episode_returns(),
        [np.sum(e.reward[1:]) for e in episodes],
        rtol=1e-6,
    )


def test_append_adds_a_shard_and_keeps_the_old_ones(tmp_path):
    path = str(tmp_path / 'd')
    _write(path, [_episode(4, 0)], collected_by='first')
    _write(path, [_episode(6, 1), _episode(2, 2)], appended=True)
    ds = Dataset(path)
    assert [s['file'] for s in ds.shards] == [
        'shard-00000.npz',
        'shard-00001.npz',
    ]
    assert [len(e.step_type) for e in ds.episodes()] == [4, 6, 2]
    assert ds.metadata == {'collected_by': 'first', 'appended': True}


def test_a_crash_mid_write_leaves_the_old_dataset_readable(
    tmp_path, monkeypatch
):
    path = str(tmp_path / 'd')
    _write(path, [_episode(4, 0)])

    def crash(*args, **kwargs):
        raise KeyboardInterrupt('killed mid-write')

    # Killed while writing the shard: neither shard nor index changes.
    monkeypatch.setattr(np, 'savez', crash)
    with pytest.raises(KeyboardInterrupt):
        _write(path, [_episode(6, 1)])
    monkeypatch.undo()
    # Killed after the shard, before the index: the shard is not listed.
    monkeypatch.setattr(dataset_module, 'atomic_write_text', crash)
    with pytest.raises(KeyboardInterrupt):
        _write(path, [_episode(6, 1)])
    monkeypatch.undo()
    ds = Dataset(path)
    assert [len(e.step_type) for e in ds.episodes()] == [4]
    assert not [f for f in os.listdir(path) if f.startswith('.tmp')]
    _write(path, [_episode(2, 3)])  # the next append overwrites the orphan
    assert [len(e.step_type) for e in Dataset(path).episodes()] == [4, 2]


def test_spec_mismatch_is_refused_in_one_line(tmp_path):
    path = str(tmp_path / 'd')
    _write(path, [_episode(4, 0)])
    other = dict(OBS_SPEC, pos=tf.TensorSpec([4], tf.float32))
    with pytest.raises(DatasetError) as e:
        DatasetWriter(path, other, ACTION_SPEC)
    assert "observation['pos']: expected [3] float32, got [4] float32" in str(
        e.value
    )
    assert '\n' not in str(e.value)
    with pytest.raises(
        DatasetError,
        match=r"action\[0\]: expected \[\] "
        r"int64, got \[\] int32",
    ):
        Dataset(path).check_specs(
            OBS_SPEC, (tf.TensorSpec((), tf.int32), ACTION_SPEC[1])
        )


def test_truncated_or_corrupt_shard_names_the_file_and_record(tmp_path):
    path = str(tmp_path / 'd')
    _write(path, [_episode(40, 0)])
    shard = os.path.join(path, 'shard-00000.npz')
    data = open(shard, 'rb').read()
    with open(shard, 'wb') as f:
        f.write(data[: len(data) // 2])
    with pytest.raises(
        DatasetError,
        match='shard-00000.npz: .*unreadable.*truncated or corrupt',
    ):
        list(Dataset(path).episodes())
    # An index that claims more steps than the shard holds.
    _write(str(tmp_path / 'e'), [_episode(4, 0)])
    index_file = str(tmp_path / 'e' / 'dataset.json')
    index = json.load(open(index_file))
    index['shards'][0]['steps'] = 5
    json.dump(index, open(index_file, 'w'))
    with pytest.raises(
        DatasetError,
        match=r"shard-00000.npz: record "
        r"'step_type' is \[4\] int32, expected \[5\]",
    ):
        list(Dataset(str(tmp_path / 'e')).episodes())
    with pytest.raises(DatasetError, match='not found: is .* a dataset'):
        Dataset(str(tmp_path / 'none'))


def test_lanes_balance_steps():
    assert lane_assignment([5, 3, 2, 4], 2) == [[0, 3], [1, 2]]


def test_fill_replayer_lays_episodes_out_back_to_back(tmp_path):
    path = str(tmp_path / 'd')
    episodes = [_episode(5, 0), _episode(3, 1), _episode(2, 2)]
    _write(path, episodes)
    ds = Dataset(path)
    spec = Experience(
        step_type=tf.TensorSpec((), tf.int32),
        reward=tf.TensorSpec((), tf.float32),
        discount=tf.TensorSpec((), tf.float32),
        observation=OBS_SPEC,
        prev_action=ACTION_SPEC,
        env_id=tf.TensorSpec((), tf.int32),
        action=ACTION_SPEC,
        rollout_info={'x': tf.TensorSpec([2])},
        state=(),
    )
    capacity = lane_capacity(ds, 2)
    assert capacity == 10  # lanes [5] and [3, 2]
    replayer = SyncUniformExperienceReplayer(spec, 2, capacity)
    assert fill_replayer(ds, replayer, spec) == 10
    stored = replayer.replay_all()  # [5, 2, ...]
    np.testing.assert_array_equal(stored.reward[:, 0], episodes[0].reward)
    np.testing.assert_array_equal(
        stored.observation['pos'][:, 1],
        np.concatenate(
            [episodes[1].observation['pos'], episodes[2].observation['pos']]
        ),
    )
    np.testing.assert_array_equal(stored.step_type[:, 1], [0, 1, 2, 0, 2])
    np.testing.assert_array_equal(stored.rollout_info['x'], 0.0)
    small = SyncUniformExperienceReplayer(spec, 2, 8)
    with pytest.raises(
        DatasetError, match='needs a replay capacity of 10 in 2 lanes, got 8'
    ):
        fill_replayer(ds, small, spec)
