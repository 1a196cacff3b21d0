"""``PyEnvironment``: the numpy-side environment interface.

A ``PyEnvironment`` returns ``TimeStep``s of numpy arrays. A *batched*
environment returns arrays with a leading batch dimension ``[B, ...]``; an
unbatched one returns arrays without it. Specs never include the batch
dimension.

Conventions (ALF's, shared by every environment in this package):

* ``reward[t]`` and ``discount[t]`` arrive *with* step t (they belong to the
  transition that led to step t); ``reward`` is 0 and ``discount`` 1 at FIRST.
* ``discount`` is 0 only when the episode *terminated*; a LAST step caused by
  a time limit (gymnasium's ``truncated``) keeps discount 1 so that the value
  of the next state is bootstrapped.
* Auto-reset: the ``step()`` after a LAST step ignores its action, resets the
  environment and returns a FIRST step (reward 0, discount 1, ``prev_action``
  zeros).
* ``prev_action`` is the action passed to the ``step()`` that produced the
  step (zeros at FIRST).

This module does not import TensorFlow (subprocess workers use it); the spec
helpers of ``alf_rl.specs`` are imported lazily where specs are built.
"""

import abc
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from alf_rl.data_structures import StepType, TimeStep  # noqa: F401


# --- A TensorFlow-free nest flatten/pack that follows ``tf.nest``'s order ---
# (dict keys sorted, namedtuple fields in order, list/tuple in order). Workers
# and batched environments must not import TensorFlow, and ``tf.nest`` is also
# slower than these for the small nests found on the hot path.


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, '_fields')


def flatten_nest(nest: Any) -> List[Any]:
    """Flattens a nest of dicts/lists/tuples/namedtuples in ``tf.nest`` order.

    Args:
        nest: a nest; anything else is a leaf (``None`` included).

    Returns:
        list of leaves.
    """
    if isinstance(nest, dict):
        result = []
        for k in sorted(nest):
            result.extend(flatten_nest(nest[k]))
        return result
    if isinstance(nest, (list, tuple)):
        result = []
        for v in nest:
            result.extend(flatten_nest(v))
        return result
    return [nest]


def pack_nest_as(structure: Any, flat: Sequence[Any]) -> Any:
    """Inverse of ``flatten_nest``: fills ``structure`` with ``flat`` leaves.

    Args:
        structure: a nest giving the structure.
        flat: sequence of leaves, as many as ``structure`` has.

    Returns:
        A nest shaped like ``structure``.
    """
    it = iter(flat)
    result = _pack(structure, it)
    for _ in it:
        raise ValueError("pack_nest_as: too many leaves for %r" % (structure,))
    return result


def _pack(structure, it):
    if isinstance(structure, dict):
        packed = {k: _pack(structure[k], it) for k in sorted(structure)}
        # Keep the structure's own key order for the returned dict.
        return type(structure)((k, packed[k]) for k in structure)
    if _is_namedtuple(structure):
        return type(structure)(*[_pack(v, it) for v in structure])
    if isinstance(structure, (list, tuple)):
        return type(structure)(_pack(v, it) for v in structure)
    try:
        return next(it)
    except StopIteration:
        raise ValueError(
            "pack_nest_as: too few leaves for the structure") from None


def map_nest(fn: Callable[..., Any], *nests: Any) -> Any:
    """Applies ``fn`` to corresponding leaves of nests with one structure."""
    flats = [flatten_nest(n) for n in nests]
    return pack_nest_as(nests[0], [fn(*xs) for xs in zip(*flats)])


def numpy_dtype(spec: Any) -> np.dtype:
    """The numpy dtype of a ``tf.TensorSpec`` (works without importing TF)."""
    return np.dtype(spec.dtype.as_numpy_dtype)


def spec_shape(spec: Any) -> Tuple[int, ...]:
    """The shape of a spec as a tuple of ints."""
    return tuple(spec.shape.as_list())


class PyEnvironment(abc.ABC):
    """Abstract base of numpy environments.

    Subclasses implement ``observation_spec``, ``action_spec``, ``_reset`` and
    ``_step`` (and optionally ``batched``/``batch_size``, ``render``,
    ``seed`` and ``close``). The public ``reset``/``step`` add no checks: they
    are on the hot path. ``TFPyEnvironment`` validates actions and
    observations at the numpy/TF boundary.

    A ``PyEnvironment`` is a context manager: ``with env: ...`` closes it.
    """

    @property
    def batched(self) -> bool:
        """bool: whether ``reset``/``step`` use a leading batch dimension."""
        return False

    @property
    def batch_size(self) -> int:
        """int number of environments B if batched, else ``None``."""
        return None

    @abc.abstractmethod
    def observation_spec(self) -> Any:
        """Nest of ``BoundedTensorSpec``/``TensorSpec`` of one observation.

        Returns:
            The spec nest, without the batch dimension.
        """

    @abc.abstractmethod
    def action_spec(self) -> Any:
        """Nest of ``BoundedTensorSpec`` of one action (no batch dimension)."""

    def time_step_spec(self) -> TimeStep:
        """The ``TimeStep`` spec nest (no batch dimension)."""
        from alf_rl import specs
        return specs.time_step_spec(self.observation_spec(),
                                    self.action_spec())

    def reset(self) -> TimeStep:
        """Starts new episodes in every environment.

        Returns:
            A FIRST ``TimeStep`` of numpy arrays: ``step_type`` int32,
            ``reward`` float32 (zeros), ``discount`` float32 (ones),
            ``observation`` nest, ``prev_action`` nest of zeros (action
            dtypes), ``env_id`` int32; each shaped [B, ...] if batched, with
            no batch dimension otherwise.
        """
        return self._reset()

    def step(self, action: Any) -> TimeStep:
        """Applies ``action`` and returns the next ``TimeStep``.

        After a LAST step, the action is ignored and the environment resets
        (the returned step is FIRST).

        Args:
            action: nest matching ``action_spec()``; [B, ...] arrays if
                batched.

        Returns:
            ``TimeStep`` of numpy arrays, as ``reset()``.
        """
        return self._step(action)

    @abc.abstractmethod
    def _reset(self):
        """Implements ``reset``."""

    @abc.abstractmethod
    def _step(self, action):
        """Implements ``step``."""

    def render(self) -> Optional[np.ndarray]:
        """An RGB frame of environment 0, or ``None``.

        Returns:
            [H, W, 3] uint8 array, or ``None`` when the environment was not
            created to render into an array.
        """
        return None

    def seed(self, seed: Optional[int]) -> None:
        """Seeds the environment's randomness for the next ``reset``.

        Batched environments seed environment i with ``seed + i``.

        Args:
            seed: int or ``None``.
        """

    @property
    def reports_game_scores(self) -> bool:
        """Whether ``pop_game_scores`` reports games (e.g. Atari games
        loaded by ``suite_atari``, whose training episodes are lives)."""
        return False

    def pop_game_scores(self) -> List[float]:
        """The scores of the games that ended since the last call, in no
        particular order across environments; ``[]`` for an environment
        that does not report games (``reports_game_scores``).

        A game is what a person would score: for Atari, all lives of one
        game with unclipped rewards, where a training episode is one life
        with clipped rewards.
        """
        return []

    def close(self) -> None:
        """Frees resources (processes, windows). Safe to call twice."""

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
        return False

    # --- Fast path used by ``BatchedPyEnvironment`` -------------------------
    def _flat_step(self, action):
        """One unbatched step returning plain Python values (no TimeStep).

        ``BatchedPyEnvironment`` calls this for each of its environments to
        skip building per-environment ``TimeStep``s and ``prev_action`` (the
        batch computes its own). Override it for speed; the default goes
        through ``step``.

        Args:
            action: the action of this environment (nest, no batch dim).

        Returns:
            ``(step_type, reward, discount, flat_observation)`` where the
            first three are scalars and ``flat_observation`` is the list of
            observation leaves in ``flatten_nest`` order.
        """
        ts = self.step(action)
        return (ts.step_type, ts.reward, ts.discount,
                flatten_nest(ts.observation))

    def _flat_reset(self):
        """Like ``_flat_step`` but for ``reset``."""
        ts = self.reset()
        return (ts.step_type, ts.reward, ts.discount,
                flatten_nest(ts.observation))
