"""gymnasium wrappers for ``suite_gym.load(..., gym_env_wrappers=[...])``.

``SelectObservationIndices`` keeps some components of a Box observation
(a partially observable view, e.g. CartPole without its velocities).

Configs reach the wrappers through two gin factories that return plain
``functools.partial`` objects, so that everything they configure is baked
into picklable values (``ParallelPyEnvironment`` workers are spawned and
see no gin bindings)::

    create_environment.env_load_fn = @gym_load_fn()
    gym_load_fn.gym_env_wrappers = [@select_observation_indices()]
    select_observation_indices.indices = (0, 2)

This module imports gymnasium and gin but not TensorFlow (worker processes
unpickle ``functools.partial(SelectObservationIndices, ...)``).
"""

import functools

import gin
import gymnasium
import numpy as np

from alf_rl.environments import suite_gym


class SelectObservationIndices(gymnasium.ObservationWrapper):
    """Keeps only ``indices`` of one axis of a Box observation.

    The observation space becomes the Box of the kept components (their
    bounds, the same dtype). For CartPole-v1 (observation [4]: cart
    position, cart velocity, pole angle, pole angular velocity),
    ``indices=(0, 2)`` hides both velocities: observation [2], a partially
    observable task that needs memory (or frame stacking) to solve.

    Args:
        env: a ``gymnasium.Env`` with a ``Box`` observation space of shape
            [..., N] (``axis`` indexes it; the last one by default).
        indices: non-empty sequence of distinct ints in ``[-N, N)``, kept in
            the given order: observation [..., N] -> [..., len(indices)].
        axis: the axis the indices select along.

    Raises:
        TypeError: the observation space is not a ``Box``.
        ValueError: empty, repeated or out-of-range indices, or a bad axis.
    """

    def __init__(self, env, indices, axis=-1):
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, gymnasium.spaces.Box):
            raise TypeError(
                "SelectObservationIndices: expected a Box observation space, "
                "got %r; select leaves of Dict/Tuple observations with a "
                "custom wrapper instead" % (space, ))
        rank = len(space.shape)
        if not -rank <= int(axis) < rank:
            raise ValueError(
                "SelectObservationIndices: axis %r is out of range for an "
                "observation of shape %s" % (axis, space.shape))
        axis = int(axis) % rank
        size = space.shape[axis]
        try:
            indices = tuple(int(i) for i in indices)
        except (TypeError, ValueError):
            raise ValueError("SelectObservationIndices: indices must be a "
                             "sequence of ints, got %r" % (indices, )) from None
        if not indices:
            raise ValueError("SelectObservationIndices: indices must not be "
                             "empty")
        bad = [i for i in indices if not -size <= i < size]
        if bad:
            raise ValueError(
                "SelectObservationIndices: indices %s are out of range for "
                "axis %d of size %d (observation shape %s)" %
                (bad, axis, size, space.shape))
        normalized = tuple(i % size for i in indices)
        if len(set(normalized)) != len(normalized):
            raise ValueError("SelectObservationIndices: indices %s repeat a "
                             "component" % (indices, ))
        self._indices = np.asarray(normalized, np.int64)
        self._axis = axis
        self.observation_space = gymnasium.spaces.Box(
            low=np.take(space.low, self._indices, axis=axis),
            high=np.take(space.high, self._indices, axis=axis),
            dtype=space.dtype)

    @property
    def indices(self):
        """tuple of the kept (non-negative) indices."""
        return tuple(int(i) for i in self._indices)

    def observation(self, observation):
        """[..., N] observation -> [..., len(indices)], same dtype."""
        return np.take(np.asarray(observation), self._indices,
                       axis=self._axis)


@gin.configurable
def select_observation_indices(indices, axis=-1):
    """A picklable ``gym_env -> SelectObservationIndices(gym_env, ...)``.

    Args:
        indices: the kept indices (see ``SelectObservationIndices``).
        axis: the axis they index.

    Returns:
        ``functools.partial(SelectObservationIndices, indices=..., axis=...)``.
    """
    return functools.partial(SelectObservationIndices,
                             indices=tuple(int(i) for i in indices),
                             axis=int(axis))


@gin.configurable
def gym_load_fn(gym_env_wrappers=(), **load_kwargs):
    """A picklable ``env_load_fn`` of ``create_environment`` with wrappers.

    Args:
        gym_env_wrappers: callables ``gym_env -> gym_env`` applied in order
            (e.g. from ``select_observation_indices``); picklable when
            environments run in subprocesses.
        **load_kwargs: more default keyword arguments of ``suite_gym.load``
            (e.g. ``discount``); those ``create_environment`` passes win.

    Returns:
        ``functools.partial(suite_gym.load, gym_env_wrappers=...,
        **load_kwargs)``.
    """
    for w in gym_env_wrappers:
        if not callable(w):
            raise TypeError("gym_load_fn: gym_env_wrappers must be callables "
                            "gym_env -> gym_env, got %r" % (w, ))
    return functools.partial(suite_gym.load,
                             gym_env_wrappers=tuple(gym_env_wrappers),
                             **load_kwargs)


@gin.configurable
def atari_load_fn(**load_kwargs):
    """A picklable ``env_load_fn`` of ``create_environment`` for Atari.

    ``create_environment.env_load_fn = @atari_load_fn()``; settings of
    ``suite_atari.load`` as its bindings (e.g. ``atari_load_fn.frame_stack
    = 4``), baked into the ``functools.partial`` so that subprocess
    workers, which see no gin bindings, get them too.

    Args:
        **load_kwargs: default keyword arguments of ``suite_atari.load``
            (those ``create_environment`` passes win).

    Returns:
        ``functools.partial(suite_atari.load, **load_kwargs)``.
    """
    from alf_rl.environments import suite_atari
    return functools.partial(suite_atari.load, **load_kwargs)
