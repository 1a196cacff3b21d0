"""Minari datasets in and out: ``import_minari`` converts a local Minari
dataset into an ``alf_rl.offline`` dataset, ``export_minari`` the other
way. Needs the ``[offline]`` extra (``minari``, imported only here, when
called); Minari finds its datasets under ``MINARI_DATASETS_PATH``
(default ``~/.minari/datasets``). Nothing is downloaded: a dataset id that
is not local is refused.

A Minari episode of N transitions holds ``observations`` [N + 1],
``actions``, ``rewards``, ``terminations``, ``truncations`` [N]; the same
episode here is T = N + 1 ``Experience`` rows: ``step_type`` FIRST, MID
..., and LAST when the episode terminated or was truncated (else it ends
on MID), ``reward`` [0, r_0 ... r_{N-1}], ``discount`` 1 but 0 at a
terminal LAST, ``action`` [a_0 ... a_{N-1}, a_{N-1}] (the action of the
last row is never executed: it repeats the one before, and Minari does
not keep it), ``prev_action`` [0, a_0 ... a_{N-1}]. The reference returns
of the normalized score are Minari's ``ref_min_score`` and
``ref_max_score``.
"""

from typing import Any, Dict, List, Optional

import numpy as np
import tensorflow as tf

from alf_rl.data_structures import Experience, StepType
from alf_rl.offline.dataset import Dataset, DatasetError, DatasetWriter
from alf_rl.specs import spec_from_gym_space
from alf_rl.utils.nest import Nest


def _minari() -> Any:
    try:
        import minari
    except ImportError:
        raise ImportError(
            "Minari import/export needs the minari package: pip install "
            "'alf_rl[offline]'"
        ) from None
    return minari


def space_from_spec(spec: Any) -> Any:
    """The gymnasium space of a spec nest (the inverse of
    ``alf_rl.specs.spec_from_gym_space``): a scalar bounded integer spec
    is ``Discrete``, an integer one with a shape ``MultiDiscrete``, the
    rest ``Box`` (unbounded specs with infinite bounds); dicts and tuples
    are ``Dict`` and ``Tuple``."""
    from gymnasium import spaces

    if isinstance(spec, dict):
        return spaces.Dict({k: space_from_spec(v) for k, v in spec.items()})
    if isinstance(spec, (tuple, list)):
        return spaces.Tuple([space_from_spec(v) for v in spec])
    shape = tuple(spec.shape.as_list())
    dtype = spec.dtype.as_numpy_dtype
    low = np.asarray(getattr(spec, 'minimum', -np.inf))
    high = np.asarray(getattr(spec, 'maximum', np.inf))
    if spec.dtype.is_integer and hasattr(spec, 'minimum'):
        low, high = np.broadcast_to(low, shape), np.broadcast_to(high, shape)
        if not shape:
            return spaces.Discrete(int(high - low + 1), start=int(low))
        return spaces.MultiDiscrete(high - low + 1, dtype=dtype, start=low)
    return spaces.Box(
        np.broadcast_to(low, shape).astype(dtype),
        np.broadcast_to(high, shape).astype(dtype),
        shape,
        dtype,
    )


def _episode_from_minari(
    episode: Any, observation_spec: Nest, action_spec: Nest
) -> Experience:
    """One Minari ``EpisodeData`` as T = N + 1 ``Experience`` rows."""
    n = len(episode.rewards)
    ended = n > 0 and (episode.terminations[-1] or episode.truncations[-1])
    step_type = np.full([n + 1], StepType.MID, np.int32)
    step_type[0] = StepType.FIRST
    if ended:
        step_type[-1] = StepType.LAST
    discount = np.ones([n + 1], np.float32)
    if n and episode.terminations[-1]:
        discount[-1] = 0.0

    def cast(value, spec):
        return np.asarray(value, spec.dtype.as_numpy_dtype)

    actions = tf.nest.map_structure(
        cast, _as_nest(episode.actions, action_spec), action_spec
    )
    first = tf.nest.map_structure(
        lambda s: np.zeros([1] + s.shape.as_list(), s.dtype.as_numpy_dtype),
        action_spec,
    )
    last = tf.nest.map_structure(
        lambda a, z: a[-1:] if n else z, actions, first
    )
    return Experience(
        step_type=step_type,
        reward=np.concatenate([[0.0], episode.rewards]).astype(np.float32),
        discount=discount,
        observation=tf.nest.map_structure(
            cast,
            _as_nest(episode.observations, observation_spec),
            observation_spec,
        ),
        prev_action=tf.nest.map_structure(
            lambda z, a: np.concatenate([z, a]), first, actions
        ),
        action=tf.nest.map_structure(
            lambda a, z: np.concatenate([a, z]), actions, last
        ),
    )


def _as_nest(value: Any, spec: Nest) -> Nest:
    """Minari's dict/tuple/array episode data in the nest types of
    ``spec`` (Minari gives lists for tuples)."""
    if isinstance(spec, dict):
        return {k: _as_nest(value[k], s) for k, s in spec.items()}
    if isinstance(spec, (tuple, list)):
        return type(spec)(_as_nest(v, s) for v, s in zip(value, spec))
    return np.asarray(value)


def import_minari(dataset_id: str, out: str) -> Dataset:
    """Writes a local Minari dataset as an ``alf_rl.offline`` dataset.

    Args:
        dataset_id: the Minari dataset id (e.g. ``'cartpole/expert-v0'``),
            found under ``MINARI_DATASETS_PATH``.
        out: the new dataset directory (appended to if it is a dataset of
            the same specs).

    Returns:
        the written ``Dataset``; its metadata has ``env_name`` (Minari's
        environment id, if any), ``source`` (``'minari:<id>'``) and, when
        Minari has them, ``random_return`` and ``expert_return``.

    Raises:
        ImportError: minari is not installed.
        ValueError: ``dataset_id`` is not a local Minari dataset.
    """
    minari = _minari()
    if dataset_id not in minari.list_local_datasets():
        raise ValueError(
            "Minari dataset %r is not local (under MINARI_DATASETS_PATH): "
            "expected one of %s; nothing is downloaded"
            % (dataset_id, sorted(minari.list_local_datasets()))
        )
    source = minari.load_dataset(dataset_id)
    observation_spec = spec_from_gym_space(source.observation_space)
    action_spec = spec_from_gym_space(source.action_space)
    writer = DatasetWriter(
        out, observation_spec, action_spec, _metadata_from(source, dataset_id)
    )
    for episode in source.iterate_episodes():
        writer.add_episode(
            _episode_from_minari(episode, observation_spec, action_spec)
        )
    writer.flush()
    return Dataset(out)


def _metadata_from(source: Any, dataset_id: str) -> Dict[str, Any]:
    metadata = source.storage.metadata
    found: Dict[str, Any] = {'source': 'minari:%s' % dataset_id}
    env_spec = getattr(source, 'env_spec', None)
    if env_spec is not None:
        found['env_name'] = env_spec.id
    for ours, theirs in (
        ('random_return', 'ref_min_score'),
        ('expert_return', 'ref_max_score'),
    ):
        if metadata.get(theirs) is not None:
            found[ours] = float(metadata[theirs])
    return found


def _buffer_from_episode(index: int, episode: Experience) -> Any:
    """One dataset episode as a Minari ``EpisodeBuffer`` (N = T - 1)."""
    from minari.data_collector import EpisodeBuffer

    n = len(episode.step_type) - 1
    ended = n > 0 and episode.step_type[-1] == StepType.LAST
    terminated = ended and episode.discount[-1] == 0.0
    done = np.zeros([n], bool)
    terminations, truncations = done.copy(), done.copy()
    if n:
        terminations[-1] = terminated
        truncations[-1] = ended and not terminated

    def minari_nest(nest):
        # Minari stores tuples as tuples and dicts as dicts.
        return tf.nest.map_structure(np.asarray, nest)

    return EpisodeBuffer(
        id=index,
        observations=minari_nest(episode.observation),
        actions=minari_nest(
            tf.nest.map_structure(lambda a: a[:n], episode.action)
        ),
        rewards=np.asarray(episode.reward[1:], np.float64),
        terminations=terminations,
        truncations=truncations,
        infos={},
    )


def export_minari(
    path: str, dataset_id: str, env_name: Optional[str] = None
) -> Any:
    """Writes an ``alf_rl.offline`` dataset as a new local Minari dataset.

    Args:
        path: the dataset directory.
        dataset_id: the new Minari id (``[namespace/]name-v<N>``), created
            under ``MINARI_DATASETS_PATH``.
        env_name: the gymnasium id Minari records (default: the dataset's
            ``env_name`` metadata, if it is a registered id).

    Returns:
        the ``minari.MinariDataset``.

    Raises:
        ImportError: minari is not installed.
        DatasetError: an episode of a single row (Minari needs one
            transition), or an unreadable dataset.
    """
    minari = _minari()
    dataset = Dataset(path)
    buffers: List[Any] = []
    for i, episode in enumerate(dataset.episodes()):
        if len(episode.step_type) < 2:
            raise DatasetError(
                "%s: episode %d has one step; a Minari episode needs a "
                "transition" % (path, i)
            )
        buffers.append(_buffer_from_episode(i, episode))
    m = dataset.metadata
    result = minari.create_dataset_from_buffers(
        dataset_id,
        buffers,
        env=_registered(env_name or m.get('env_name')),
        observation_space=space_from_spec(dataset.observation_spec),
        action_space=space_from_spec(dataset.action_spec),
        algorithm_name=m.get('policy'),
    )
    if 'random_return' in m and 'expert_return' in m:
        # Minari takes them as arguments only with an environment.
        result.storage.update_metadata(
            {
                'ref_min_score': float(m['random_return']),
                'ref_max_score': float(m['expert_return']),
            }
        )
    return result


def _registered(env_name: Optional[str]) -> Optional[str]:
    """``env_name`` if gymnasium knows it, else None."""
    import gymnasium

    return env_name if env_name in gymnasium.registry else None
