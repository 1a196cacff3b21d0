"""Minari import/export: a Minari dataset made here (nothing downloaded)
to alf_rl's format and back, field by field."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.data_structures import Experience, StepType
from alf_rl.offline import Dataset, DatasetWriter
from alf_rl.offline.minari_io import (
    export_minari,
    import_minari,
    space_from_spec,
)
from alf_rl.specs import BoundedTensorSpec, spec_from_gym_space

minari = pytest.importorskip('minari')
from gymnasium import spaces  # noqa: E402
from minari.data_collector import EpisodeBuffer  # noqa: E402

OBS = spaces.Box(-1.0, 1.0, (3,), np.float32)
ACT = spaces.Discrete(3, start=1)


@pytest.fixture(autouse=True)
def _local_minari(tmp_path, monkeypatch):
    monkeypatch.setenv('MINARI_DATASETS_PATH', str(tmp_path / 'minari'))


def _minari_episodes():
    """3 episodes of N = 4, 2, 3 transitions: terminated, truncated, and
    cut (neither)."""
    rng = np.random.default_rng(0)
    ends = [(True, False), (False, True), (False, False)]
    episodes = []
    for i, (n, (term, trunc)) in enumerate(zip([4, 2, 3], ends)):
        done = np.zeros(n, bool)
        terminations, truncations = done.copy(), done.copy()
        terminations[-1], truncations[-1] = term, trunc
        episodes.append(
            EpisodeBuffer(
                id=i,
                observations=rng.uniform(-1, 1, [n + 1, 3]).astype(np.float32),
                actions=rng.integers(1, 4, [n]),
                rewards=rng.normal(size=[n]),
                terminations=terminations,
                truncations=truncations,
                infos={},
            )
        )
    return episodes


def test_minari_to_alf_rl_and_back(tmp_path):
    source = _minari_episodes()
    created = minari.create_dataset_from_buffers(
        'test/source-v0', source, observation_space=OBS, action_space=ACT
    )
    created.storage.update_metadata(
        {'ref_min_score': 1.0, 'ref_max_score': 11.0}
    )
    ds = import_minari('test/source-v0', str(tmp_path / 'alf'))
    assert ds.num_episodes == 3 and ds.num_steps == 5 + 3 + 4
    assert ds.metadata['random_return'] == 1.0
    assert ds.metadata['expert_return'] == 11.0
    assert ds.action_spec.minimum == 1 and ds.action_spec.maximum == 3
    for ep, src in zip(ds.episodes(), source):
        n = len(src.rewards)
        np.testing.assert_array_equal(
            ep.step_type,
            [StepType.FIRST]
            + [StepType.MID] * (n - 1)
            + [
                StepType.LAST
                if src.terminations[-1] or src.truncations[-1]
                else StepType.MID
            ],
        )
        np.testing.assert_allclose(ep.reward, np.r_[0.0, src.rewards])
        np.testing.assert_array_equal(
            ep.discount, [1.0] * n + [0.0 if src.terminations[-1] else 1.0]
        )
        np.testing.assert_array_equal(ep.observation, src.observations)
        np.testing.assert_array_equal(ep.action[:n], src.actions)
        np.testing.assert_array_equal(ep.action[n], src.actions[-1])
        np.testing.assert_array_equal(ep.prev_action, np.r_[0, src.actions])
    back = export_minari(str(tmp_path / 'alf'), 'test/back-v0')
    assert back.storage.metadata['ref_min_score'] == 1.0
    assert back.storage.metadata['ref_max_score'] == 11.0
    for ep, src in zip(back.iterate_episodes(), source):
        np.testing.assert_array_equal(ep.observations, src.observations)
        np.testing.assert_array_equal(ep.actions, src.actions)
        np.testing.assert_allclose(ep.rewards, src.rewards, rtol=1e-6)
        np.testing.assert_array_equal(ep.terminations, src.terminations)
        np.testing.assert_array_equal(ep.truncations, src.truncations)


def test_nested_alf_rl_dataset_to_minari_and_back(tmp_path):
    obs_spec = {
        'pos': BoundedTensorSpec([2], tf.float32, -2.0, 2.0),
        'cell': BoundedTensorSpec([], tf.int64, 0, 4),
    }
    act_spec = BoundedTensorSpec([2], tf.float32, -1.0, 1.0)
    rng = np.random.default_rng(1)
    writer = DatasetWriter(str(tmp_path / 'a'), obs_spec, act_spec)
    for t in (3, 5):
        step_type = np.full([t], StepType.MID, np.int32)
        step_type[0], step_type[-1] = StepType.FIRST, StepType.LAST
        action = rng.uniform(-1, 1, [t, 2]).astype(np.float32)
        writer.add_episode(
            Experience(
                step_type=step_type,
                reward=np.r_[0.0, rng.normal(size=t - 1)].astype(np.float32),
                discount=np.r_[np.ones(t - 1), 0.0].astype(np.float32),
                observation={
                    'pos': rng.uniform(-2, 2, [t, 2]).astype(np.float32),
                    'cell': rng.integers(0, 5, [t]),
                },
                prev_action=np.r_[np.zeros([1, 2]), action[:-1]].astype(
                    np.float32
                ),
                action=np.r_[action[:-1], action[-2:-1]],
            )
        )
    writer.flush()
    export_minari(str(tmp_path / 'a'), 'test/nested-v0')
    ds = import_minari('test/nested-v0', str(tmp_path / 'b'))
    assert ds.observation_spec['cell'].maximum == 4
    for got, want in zip(
        ds.episodes(), Dataset(str(tmp_path / 'a')).episodes()
    ):
        for a, b in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_space_from_spec_inverts_spec_from_gym_space():
    for space in (
        OBS,
        ACT,
        spaces.MultiDiscrete([3, 4]),
        spaces.Dict({'a': OBS, 'b': spaces.Tuple([ACT, OBS])}),
    ):
        assert space_from_spec(spec_from_gym_space(space)) == space


def test_a_dataset_that_is_not_local_is_refused(tmp_path):
    with pytest.raises(ValueError, match="'D4RL/door/human-v2' is not local"):
        import_minari('D4RL/door/human-v2', str(tmp_path / 'x'))
