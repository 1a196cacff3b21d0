"""An on-disk dataset of episodes of ``Experience``, and its reader.

Layout of a dataset directory::

    DATASET/
      dataset.json        the index (below)
      shard-00000.npz     the steps of some whole episodes
      shard-00001.npz     ... one more shard per append

``dataset.json`` holds ``format`` (``'alf_rl.offline.dataset'``),
``version`` (1), ``specs`` (the ``observation`` and ``action`` spec nests,
see ``spec_to_json``), ``metadata`` (free JSON: e.g. the environment, how
the data was collected, ``random_return`` and ``expert_return`` for the
normalized score) and ``shards``: one ``{"file", "episodes", "steps"}``
per shard. A reader reads exactly the shards the index lists.

A shard is a NumPy ``.npz`` whose arrays all have the shard's N steps on
their first axis, episodes back to back in time order, each step as the
replay buffer of an online run stores it (an ``Experience`` row):
``step_type`` [N] int32 (``FIRST`` ... ``LAST``), ``reward`` [N] float32
(received on arriving at the step: 0 at ``FIRST``), ``discount`` [N]
float32 (0 only on termination), ``observation/<i>``, ``prev_action/<i>``
and ``action/<i>`` [N, *spec.shape] (leaf ``i`` of the nest in
``tf.nest.flatten`` order, in the spec's dtype; ``action`` is the action
taken at the step), and ``episode_starts`` [E + 1] int64, the offset of
each episode's first step and N.

Writes are atomic: a shard goes to a temporary file that is synced and
renamed, and only then the index is replaced the same way
(``atomic_write_text``). A crash at any moment leaves the dataset as it
was before the write (a shard renamed but not yet indexed is ignored and
overwritten by the next append).
"""

import json
import os
import tempfile
import zipfile
from typing import Any, Dict, Iterator, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from alf_rl.data_structures import Experience, StepType
from alf_rl.specs import BoundedTensorSpec
from alf_rl.utils.checkpoint import atomic_write_text
from alf_rl.utils.nest import Nest, flatten_with_path

FORMAT = 'alf_rl.offline.dataset'
VERSION = 1
INDEX = 'dataset.json'


class DatasetError(ValueError):
    """A dataset that cannot be read or written: one line naming the file
    (and the record) and what was expected."""


# ------------------------------------------------------------------ specs
def spec_to_json(spec: Any) -> Any:
    """A spec nest as JSON: a leaf is ``{"shape", "dtype"}`` (and
    ``"minimum"``/``"maximum"`` lists for a ``BoundedTensorSpec``); a dict
    is ``{"dict": {key: ...}}``, a tuple/list ``{"tuple"|"list": [...]}``.

    Raises:
        DatasetError: a nest of another kind (e.g. a namedtuple).
    """
    if isinstance(spec, tf.TensorSpec):
        leaf: Dict[str, Any] = {
            'shape': spec.shape.as_list(),
            'dtype': spec.dtype.name,
        }
        if isinstance(spec, BoundedTensorSpec):
            leaf['minimum'] = np.asarray(spec.minimum).tolist()
            leaf['maximum'] = np.asarray(spec.maximum).tolist()
        return leaf
    if isinstance(spec, dict):
        return {'dict': {str(k): spec_to_json(v) for k, v in spec.items()}}
    if type(spec) in (tuple, list):
        return {type(spec).__name__: [spec_to_json(v) for v in spec]}
    raise DatasetError(
        "dataset specs: expected a nest of dicts, tuples and "
        "lists of TensorSpecs, got %s" % type(spec).__name__
    )


def spec_from_json(obj: Any) -> Nest:
    """The spec nest ``spec_to_json`` wrote."""
    if 'dict' in obj:
        return {k: spec_from_json(v) for k, v in obj['dict'].items()}
    if 'tuple' in obj:
        return tuple(spec_from_json(v) for v in obj['tuple'])
    if 'list' in obj:
        return [spec_from_json(v) for v in obj['list']]
    if 'minimum' in obj:
        return BoundedTensorSpec(
            obj['shape'],
            tf.as_dtype(obj['dtype']),
            np.asarray(obj['minimum']),
            np.asarray(obj['maximum']),
        )
    return tf.TensorSpec(obj['shape'], tf.as_dtype(obj['dtype']))


def spec_difference(expected: Nest, got: Nest, name: str) -> Optional[str]:
    """Where two spec nests differ (structure, shape or dtype), as
    ``'name[0]: expected [3] float32, got [4] float32'``, or None."""
    if tf.nest.map_structure(lambda _: 0, expected) != tf.nest.map_structure(
        lambda _: 0, got
    ):
        return "%s: expected the nest %s, got %s" % (
            name,
            tf.nest.map_structure(lambda s: s.shape.as_list(), expected),
            tf.nest.map_structure(lambda s: s.shape.as_list(), got),
        )
    for (path, e), (_, g) in zip(
        flatten_with_path(expected, name), flatten_with_path(got, name)
    ):
        if e.shape != g.shape or e.dtype != g.dtype:
            return "%s: expected %s %s, got %s %s" % (
                path,
                e.shape.as_list(),
                e.dtype.name,
                g.shape.as_list(),
                g.dtype.name,
            )
    return None


# ------------------------------------------------------------------ files
def _read_index(path: str) -> Dict[str, Any]:
    index_file = os.path.join(path, INDEX)
    try:
        with open(index_file) as f:
            index = json.load(f)
    except FileNotFoundError:
        raise DatasetError(
            "%s not found: is %s a dataset written by "
            "alf-collect?" % (index_file, path)
        ) from None
    except (OSError, ValueError) as e:
        raise DatasetError(
            "%s: unreadable index (%s)"
            % (index_file, ' '.join(str(e).split()))
        ) from None
    if index.get('format') != FORMAT or index.get('version') != VERSION:
        raise DatasetError(
            "%s: expected format %r version %d, got %r "
            "version %r"
            % (
                index_file,
                FORMAT,
                VERSION,
                index.get('format'),
                index.get('version'),
            )
        )
    return index


def _atomic_save_npz(path: str, arrays: Dict[str, np.ndarray]) -> None:
    """Writes ``arrays`` to ``path`` (.npz) through a synced temporary
    file and a rename."""
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(
        prefix='.tmp-%s-' % os.path.basename(path), dir=directory
    )
    try:
        with os.fdopen(fd, 'wb') as f:
            np.savez(f, **arrays)  # type: ignore[arg-type]
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _leaf_keys(field: str, spec: Nest) -> List[str]:
    return ['%s/%d' % (field, i) for i in range(len(tf.nest.flatten(spec)))]


# ------------------------------------------------------------------ reader
class Dataset(object):
    """A dataset directory (read-only view of what its index lists).

    Args:
        path: the dataset directory.

    Raises:
        DatasetError: no index, or an index of another format.
    """

    def __init__(self, path: str):
        self.path = path
        index = _read_index(path)
        self.observation_spec = spec_from_json(index['specs']['observation'])
        self.action_spec = spec_from_json(index['specs']['action'])
        self.metadata: Dict[str, Any] = dict(index.get('metadata', {}))
        self.shards: List[Dict[str, Any]] = list(index['shards'])

    @property
    def num_episodes(self) -> int:
        """Episodes in the dataset."""
        return sum(int(s['episodes']) for s in self.shards)

    @property
    def num_steps(self) -> int:
        """Steps (``Experience`` rows) in the dataset."""
        return sum(int(s['steps']) for s in self.shards)

    def check_specs(self, observation_spec: Nest, action_spec: Nest) -> None:
        """Refuses, in one line, specs other than the dataset's.

        Raises:
            DatasetError: naming the first leaf that differs.
        """
        for name, ours, theirs in (
            ('observation', self.observation_spec, observation_spec),
            ('action', self.action_spec, action_spec),
        ):
            diff = spec_difference(ours, theirs, name)
            if diff:
                raise DatasetError(
                    "dataset %s has other specs than the "
                    "algorithm's: %s" % (self.path, diff)
                )

    def episodes(self) -> Iterator[Experience]:
        """Yields every episode, in order, as an ``Experience`` of numpy
        [T, ...] leaves (``env_id``, ``rollout_info``, ``state``: ``()``).

        Raises:
            DatasetError: a shard missing, truncated or corrupt, naming the
                file and the record.
        """
        for shard in self.shards:
            arrays = self._read_shard(shard)
            starts = arrays['episode_starts']
            for b, e in zip(starts[:-1], starts[1:]):
                yield self._episode(arrays, int(b), int(e))

    def episode_returns(self) -> np.ndarray:
        """[E] float64, the undiscounted return of each episode."""
        return np.array(
            [float(np.sum(ep.reward[1:])) for ep in self.episodes()]
        )

    def _episode(
        self, arrays: Dict[str, np.ndarray], b: int, e: int
    ) -> Experience:
        def nest(field, spec):
            return tf.nest.pack_sequence_as(
                spec, [arrays[k][b:e] for k in _leaf_keys(field, spec)]
            )

        return Experience(
            step_type=arrays['step_type'][b:e],
            reward=arrays['reward'][b:e],
            discount=arrays['discount'][b:e],
            observation=nest('observation', self.observation_spec),
            prev_action=nest('prev_action', self.action_spec),
            action=nest('action', self.action_spec),
        )

    def _expected_shapes(self, steps: int, episodes: int) -> Dict[str, Any]:
        shapes: Dict[str, Any] = {
            'step_type': ((steps,), np.int32),
            'reward': ((steps,), np.float32),
            'discount': ((steps,), np.float32),
            'episode_starts': ((episodes + 1,), np.int64),
        }
        for field, spec in (
            ('observation', self.observation_spec),
            ('prev_action', self.action_spec),
            ('action', self.action_spec),
        ):
            for key, s in zip(_leaf_keys(field, spec), tf.nest.flatten(spec)):
                shapes[key] = (
                    (steps,) + tuple(s.shape.as_list()),
                    s.dtype.as_numpy_dtype,
                )
        return shapes

    def _read_shard(self, shard: Dict[str, Any]) -> Dict[str, np.ndarray]:
        """The arrays of one shard, each checked against the index.

        Raises:
            DatasetError: one line naming the file and the record.
        """
        file = os.path.join(self.path, shard['file'])
        expected = self._expected_shapes(
            int(shard['steps']), int(shard['episodes'])
        )
        arrays = {}
        key = None
        try:
            with np.load(file, allow_pickle=False) as npz:
                for key, (shape, dtype) in expected.items():
                    a = npz[key]
                    if a.shape != shape or a.dtype != dtype:
                        raise DatasetError(
                            "%s: record %r is %s %s, expected %s %s from "
                            "%s"
                            % (
                                file,
                                key,
                                list(a.shape),
                                a.dtype,
                                list(shape),
                                np.dtype(dtype),
                                INDEX,
                            )
                        )
                    arrays[key] = a
        except (
            OSError,
            EOFError,
            KeyError,
            zipfile.BadZipFile,
            ValueError,
        ) as e:
            if isinstance(e, DatasetError):
                raise
            where = 'record %r' % key if key else 'the file'
            raise DatasetError(
                "%s: %s unreadable (%s): truncated or "
                "corrupt" % (file, where, ' '.join(str(e).split()))
            ) from None
        return arrays


# ------------------------------------------------------------------ writer
class DatasetWriter(object):
    """Writes episodes to a new dataset, or appends to an existing one.

    Episodes are kept in memory until ``flush()``, which writes them as one
    new shard (atomically, see the module docstring).

    Args:
        path: the dataset directory (created if missing).
        observation_spec: nest of specs of one observation.
        action_spec: nest of specs of one action.
        metadata: JSON-serializable entries to set (merged into an existing
            dataset's).

    Raises:
        DatasetError: ``path`` holds a dataset with other specs (one line
            naming the leaf), or something else than a dataset.
    """

    def __init__(
        self,
        path: str,
        observation_spec: Nest,
        action_spec: Nest,
        metadata: Optional[Dict[str, Any]] = None,
    ):
        self.path = path
        self._specs = {
            'observation': spec_to_json(observation_spec),
            'action': spec_to_json(action_spec),
        }
        self._observation_spec = observation_spec
        self._action_spec = action_spec
        os.makedirs(path, exist_ok=True)
        if os.path.exists(os.path.join(path, INDEX)):
            existing = Dataset(path)
            existing.check_specs(observation_spec, action_spec)
            self._metadata = existing.metadata
            self._shards = existing.shards
        elif os.listdir(path):
            raise DatasetError(
                "%s: not empty and has no %s; expected a "
                "dataset or a new directory" % (path, INDEX)
            )
        else:
            self._metadata, self._shards = {}, []
        self._metadata.update(metadata or {})
        self._pending: List[Experience] = []

    def add_episode(self, episode: Experience) -> None:
        """Queues one episode for the next ``flush()``.

        Args:
            episode: ``Experience`` of [T, ...] arrays (``step_type``,
                ``reward``, ``discount``, ``observation``, ``prev_action``,
                ``action``; the other fields are not stored), T >= 1,
                starting with ``FIRST``.

        Raises:
            DatasetError: a leaf of the wrong shape, or no ``FIRST`` step
                first.
        """
        step_type = np.asarray(episode.step_type)
        if (
            step_type.ndim != 1
            or not len(step_type)
            or step_type[0] != StepType.FIRST
        ):
            raise DatasetError(
                "%s: an episode's step_type must be [T] "
                "starting with FIRST (0), got %s" % (self.path, step_type[:5])
            )
        for name, spec, value in (
            ('observation', self._observation_spec, episode.observation),
            ('prev_action', self._action_spec, episode.prev_action),
            ('action', self._action_spec, episode.action),
        ):
            for (p, s), v in zip(
                flatten_with_path(spec, name), tf.nest.flatten(value)
            ):
                if tuple(np.shape(v)) != (len(step_type),) + tuple(
                    s.shape.as_list()
                ):
                    raise DatasetError(
                        "%s: episode %s is %s, expected [%d] + %s"
                        % (
                            self.path,
                            p,
                            list(np.shape(v)),
                            len(step_type),
                            s.shape.as_list(),
                        )
                    )
        self._pending.append(episode)

    def set_metadata(self, **entries: Any) -> None:
        """Sets metadata entries (written with the next ``flush()``)."""
        self._metadata.update(entries)

    def flush(self) -> None:
        """Writes the queued episodes as a new shard, then the index (also
        when nothing is queued: the metadata and specs)."""
        if self._pending:
            name = 'shard-%05d.npz' % len(self._shards)
            arrays = self._shard_arrays(self._pending)
            _atomic_save_npz(os.path.join(self.path, name), arrays)
            self._shards.append(
                {
                    'file': name,
                    'episodes': len(self._pending),
                    'steps': int(len(arrays['step_type'])),
                }
            )
            self._pending = []
        index = {
            'format': FORMAT,
            'version': VERSION,
            'specs': self._specs,
            'metadata': self._metadata,
            'shards': self._shards,
        }
        atomic_write_text(
            os.path.join(self.path, INDEX),
            json.dumps(index, indent=1, sort_keys=True),
        )

    def _shard_arrays(
        self, episodes: Sequence[Experience]
    ) -> Dict[str, np.ndarray]:
        def cat(get, dtype):
            return np.concatenate(
                [np.asarray(get(e), dtype) for e in episodes]
            )

        lengths = [len(e.step_type) for e in episodes]
        arrays = {
            'step_type': cat(lambda e: e.step_type, np.int32),
            'reward': cat(lambda e: e.reward, np.float32),
            'discount': cat(lambda e: e.discount, np.float32),
            'episode_starts': np.cumsum([0] + lengths).astype(np.int64),
        }
        for field, spec in (
            ('observation', self._observation_spec),
            ('prev_action', self._action_spec),
            ('action', self._action_spec),
        ):
            leaves = [tf.nest.flatten(getattr(e, field)) for e in episodes]
            for i, (key, s) in enumerate(
                zip(_leaf_keys(field, spec), tf.nest.flatten(spec))
            ):
                arrays[key] = np.concatenate(
                    [np.asarray(x[i], s.dtype.as_numpy_dtype) for x in leaves]
                )
        return arrays
