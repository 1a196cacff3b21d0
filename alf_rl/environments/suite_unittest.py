"""Tiny deterministic batched environments for tests (as ALF had).

All B environments run in lockstep. Every episode has exactly
``episode_length`` steps: FIRST, ``episode_length - 2`` MIDs, then LAST with
discount 0; the step after LAST is the FIRST of the next episode (its action
is ignored). Actions: discrete ``BoundedTensorSpec((), int64, 0, 1)`` or
continuous ``BoundedTensorSpec((1,), float32, 0, 1)``; observations float32
``(obs_dim,)``.

* ``ValueUnittestEnv``: reward 1 on every non-FIRST step (value estimation).
* ``PolicyUnittestEnv``: random 0/1 observation every step; the reward
  arriving with step t is ``1 - |obs[t-1][0] - a[t-1]|`` (0 at FIRST): copy
  the observation to earn 1. Learnable in seconds.
* ``RNNPolicyUnittestEnv``: a +/-1 target shown only at FIRST (zeros after,
  or random distractors with ``distractor_scale > 0``); from step ``gap``
  of the episode onward the reward is ``1 - 0.5 * |2a - 1 - obs0|`` for
  the previous action a: needs memory. With ``gap`` 50-100 and
  distractors it is a long-delay memory task.
* ``ChainUnittestEnv``: walk right along a chain of N positions; reward 1
  only on reaching the far end: undirected exploration fails.

``load(env_name, seed, ...)`` builds one of them unbatched for
``create_environment`` (``create_environment.env_load_fn =
@unittest_load_fn()`` in gin), so that ``alf-train`` can train on it.

``get_state``/``set_state`` give and restore an environment's whole state
(episode step, random generator), so a checkpointed run continues them
exactly (``TFPyEnvironment.checkpoint_state``).
"""

import functools
from typing import Any, Callable, Optional

import gin
import numpy as np

from alf_rl.data_structures import StepType, TimeStep
from alf_rl.environments.py_environment import PyEnvironment
from alf_rl.specs import BoundedTensorSpec

_DISCRETE = 'discrete'
_CONTINUOUS = 'continuous'


def _array_to_json(x):
    """float32 array -> [shape, values] (exact via float64), or None."""
    if x is None:
        return None
    x = np.asarray(x, np.float32)
    return [list(x.shape), x.ravel().tolist()]


def _array_from_json(value):
    """Inverse of ``_array_to_json``."""
    if value is None:
        return None
    shape, values = value
    return np.asarray(values, np.float32).reshape(shape)


class UnittestEnv(PyEnvironment):
    """Base of the unittest environments (a batched ``PyEnvironment``).

    Args:
        batch_size: B.
        episode_length: steps per episode, FIRST and LAST included (>= 2).
        obs_dim: size of the observation vector.
        action_type: 'discrete' or 'continuous'.
        seed: seed of the environment's random numbers.
    """

    def __init__(self, batch_size: int, episode_length: int,
                 obs_dim: int = 1, action_type: str = _DISCRETE,
                 seed: int = 0):
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1, got %r" % batch_size)
        if episode_length < 2:
            raise ValueError("episode_length must be >= 2 (FIRST and LAST), "
                             "got %r" % episode_length)
        if obs_dim < 1:
            raise ValueError("obs_dim must be >= 1, got %r" % obs_dim)
        if action_type == _DISCRETE:
            self._action_spec = BoundedTensorSpec((), 'int64', 0, 1,
                                                  name='action')
        elif action_type == _CONTINUOUS:
            self._action_spec = BoundedTensorSpec((1, ), 'float32', 0, 1,
                                                  name='action')
        else:
            raise ValueError("action_type must be 'discrete' or "
                             "'continuous', got %r" % (action_type, ))
        self._batch_size = int(batch_size)
        self._episode_length = int(episode_length)
        self._obs_dim = int(obs_dim)
        self._action_type = action_type
        self._observation_spec = BoundedTensorSpec(
            (obs_dim, ), 'float32', -1, 1, name='observation')
        self._action_shape = (self._batch_size, ) + tuple(
            self._action_spec.shape.as_list())
        self._action_dtype = np.dtype(self._action_spec.dtype.as_numpy_dtype)
        self._env_id = np.arange(self._batch_size, dtype=np.int32)
        self._seed = seed
        self._rng = np.random.RandomState(seed)
        self._steps = None  # index of the current step in its episode

    @property
    def batched(self) -> bool:
        """Always True."""
        return True

    @property
    def batch_size(self) -> int:
        """int B."""
        return self._batch_size

    def observation_spec(self) -> BoundedTensorSpec:
        """``BoundedTensorSpec((obs_dim,), float32, -1, 1)``."""
        return self._observation_spec

    def action_spec(self) -> BoundedTensorSpec:
        """Discrete ``((), int64, 0, 1)`` or continuous ``((1,), float32,
        0, 1)``."""
        return self._action_spec

    def seed(self, seed: int) -> None:
        """Restarts the random numbers from ``seed``."""
        self._seed = seed
        self._rng = np.random.RandomState(seed)

    def get_state(self) -> dict:
        """Everything a step depends on, as JSON-serializable values.

        ``TFPyEnvironment`` checkpoints it (see
        ``TFEnvironment.checkpoint_state``), so a resumed run continues
        these environments exactly.

        Returns:
            dict: the episode step, the numpy generator's state and the
            observations kept for the next reward.
        """
        name, keys, pos, has_gauss, cached = self._rng.get_state()
        return {
            'steps': self._steps,
            'rng': [name, keys.tolist(), int(pos), int(has_gauss),
                    float(cached)],
            'prev_observation': _array_to_json(
                getattr(self, '_prev_observation', None)),
            'observation0': _array_to_json(
                getattr(self, '_observation0', None)),
        }

    def set_state(self, state: dict) -> None:
        """Restores what ``get_state`` returned.

        Args:
            state: a dict from ``get_state`` (of an environment with the
                same batch size and observation size).

        Raises:
            ValueError: if ``state`` does not fit this environment.
        """
        prev = _array_from_json(state['prev_observation'])
        shape = (self._batch_size, self._obs_dim)
        if prev is not None and prev.shape != shape:
            raise ValueError(
                "%s.set_state: saved observations have shape %s, this "
                "environment's %s (different batch_size or obs_dim?)" %
                (type(self).__name__, list(prev.shape), list(shape)))
        name, keys, pos, has_gauss, cached = state['rng']
        self._rng.set_state((name, np.asarray(keys, np.uint32), pos,
                             has_gauss, cached))
        self._steps = state['steps']
        self._prev_observation = prev
        if hasattr(self, '_observation0'):
            self._observation0 = _array_from_json(state['observation0'])

    def _action_values(self, action):
        """[B] float64 action values."""
        return np.asarray(action, np.float64).reshape(self._batch_size)

    def _observation(self, step):
        """[B, obs_dim] float32 observation at episode step ``step``."""
        raise NotImplementedError()

    def _reward(self, step, action):
        """[B] reward arriving with episode step ``step`` (> 0)."""
        raise NotImplementedError()

    def _time_step(self, step, action):
        b = self._batch_size
        if step == 0:
            step_type = np.full(b, StepType.FIRST, np.int32)
            reward = np.zeros(b, np.float32)
            prev_action = np.zeros(self._action_shape, self._action_dtype)
        else:
            step_type = np.full(
                b, StepType.LAST if step == self._episode_length - 1 else
                StepType.MID, np.int32)
            reward = self._reward(step, action).astype(np.float32)
            prev_action = np.array(action, self._action_dtype).reshape(
                self._action_shape)
        discount = np.full(b, 0. if step == self._episode_length - 1 else 1.,
                           np.float32)
        observation = self._observation(step)
        self._prev_observation = observation
        return TimeStep(step_type=step_type,
                        reward=reward,
                        discount=discount,
                        observation=observation,
                        prev_action=prev_action,
                        env_id=self._env_id.copy())

    def _reset(self):
        self._steps = 0
        return self._time_step(0, None)

    def _step(self, action):
        if self._steps is None:
            return self._reset()
        self._steps = (self._steps + 1) % self._episode_length
        return self._time_step(self._steps,
                               None if self._steps == 0 else action)


class ValueUnittestEnv(UnittestEnv):
    """Reward 1 on every non-FIRST step; observation all ones.

    Args: see ``UnittestEnv``.
    """

    def _observation(self, step):
        return np.ones((self._batch_size, self._obs_dim), np.float32)

    def _reward(self, step, action):
        return np.ones(self._batch_size)


class PolicyUnittestEnv(UnittestEnv):
    """Random 0/1 observations; reward for copying the last one.

    The reward arriving with step t > 0 is ``1 - |obs[t-1][:, 0] - a[t-1]|``
    (so 1 for the optimal policy ``a = obs[0]``), 0 at FIRST.

    Args: see ``UnittestEnv``.
    """

    def _observation(self, step):
        return self._rng.randint(0, 2, size=(self._batch_size,
                                             self._obs_dim)).astype(
                                                 np.float32)

    def _reward(self, step, action):
        return 1.0 - np.abs(self._prev_observation[:, 0] -
                            self._action_values(action))


class RNNPolicyUnittestEnv(UnittestEnv):
    """A +/-1 target shown at FIRST only; rewards later need memory.

    The observation is ``obs0`` (all entries +1 or -1, random per env) at
    FIRST and, afterwards, zeros or (``distractor_scale`` s > 0)
    distractors drawn uniformly from ``[-s, s]^obs_dim`` at every step,
    independently per env and entry: the latest observation says nothing
    about the target, and with s < 1 a distractor never looks like the
    cue (whose entries all have magnitude 1). The reward arriving with
    episode step ``t >= gap`` is ``1 - 0.5 * |2 a[t-1] - 1 - obs0|`` (1
    for ``a = 1`` when obs0 = 1 and ``a = 0`` when obs0 = -1, 0 for the
    other discrete action); earlier rewards are 0. The optimal return is
    ``episode_length - gap``, half of it without memory.

    Args:
        batch_size: see ``UnittestEnv``.
        episode_length: see ``UnittestEnv``.
        obs_dim: see ``UnittestEnv``.
        action_type: see ``UnittestEnv``.
        seed: see ``UnittestEnv``.
        gap: first episode step with a reward (``1 <= gap <
            episode_length``): the delay between the cue and the first
            answer.
        distractor_scale: s in [0, 1]; 0 (the default) shows zeros after
            FIRST and draws no random numbers for them.
    """

    def __init__(self, batch_size: int, episode_length: int,
                 obs_dim: int = 1, action_type: str = _DISCRETE,
                 seed: int = 0, gap: int = 3,
                 distractor_scale: float = 0.0):
        super().__init__(batch_size, episode_length, obs_dim, action_type,
                         seed)
        if not 1 <= gap < episode_length:
            raise ValueError("gap must be in [1, episode_length) = [1, %d), "
                             "got %r" % (episode_length, gap))
        if not 0.0 <= distractor_scale <= 1.0:
            raise ValueError("distractor_scale must be in [0, 1], got %r" %
                             (distractor_scale, ))
        self._gap = int(gap)
        self._distractor_scale = float(distractor_scale)
        self._observation0 = None

    @property
    def optimal_return(self) -> float:
        """The return of an episode answered right at every rewarded step:
        ``episode_length - gap``."""
        return float(self._episode_length - self._gap)

    def _observation(self, step):
        if step == 0:
            sign = 2. * self._rng.randint(0, 2, size=(self._batch_size, 1)) - 1.
            self._observation0 = np.broadcast_to(
                sign, (self._batch_size, self._obs_dim)).astype(np.float32)
            return self._observation0.copy()
        if self._distractor_scale > 0:
            return self._rng.uniform(
                -self._distractor_scale, self._distractor_scale,
                size=(self._batch_size, self._obs_dim)).astype(np.float32)
        return np.zeros((self._batch_size, self._obs_dim), np.float32)

    def _reward(self, step, action):
        if step < self._gap:
            return np.zeros(self._batch_size)
        return 1.0 - 0.5 * np.abs(2. * self._action_values(action) - 1. -
                                  self._observation0[:, 0])


class ChainUnittestEnv(UnittestEnv):
    """A long chain with one reward at its far end (hard exploration).

    Positions ``0 .. length - 1``; every episode starts at 0. Action 1
    moves right, action 0 left (position 0 stays at 0); the far end
    ``length - 1`` is absorbing. The reward arriving with a step is 1 on
    the one step that reaches the far end and 0 otherwise, so an
    episode's return is 1 if it got there and 0 if not. The observation
    is the one-hot position ``(length,)`` float32. An episode has
    ``episode_length`` steps (FIRST and LAST included, default ``length +
    4``): ``episode_length - 1`` actions, of which ``length - 1`` must be
    right moves, so a uniformly random policy reaches the end with
    probability about ``length^2 / 2^(length + 4)``. Dynamics are
    deterministic (``seed`` is unused but kept for the common signature).

    Args:
        batch_size: B.
        length: N >= 2, the number of positions.
        seed: seed of the (unused) random numbers.
        episode_length: steps per episode; >= ``length`` so the end is
            reachable; None: ``length + 4``.

    Raises:
        ValueError: ``length < 2`` or ``episode_length < length``.
    """

    def __init__(self, batch_size: int, length: int, seed: int = 0,
                 episode_length: Optional[int] = None):
        if length < 2:
            raise ValueError("ChainUnittestEnv: length must be >= 2, got %r"
                             % (length, ))
        if episode_length is None:
            episode_length = length + 4
        if episode_length < length:
            raise ValueError(
                "ChainUnittestEnv: episode_length must be >= length = %d "
                "(length - 1 right moves after FIRST), got %r" %
                (length, episode_length))
        super().__init__(batch_size, episode_length, obs_dim=length,
                         action_type=_DISCRETE, seed=seed)
        self._length = int(length)
        self._position = np.zeros(self._batch_size, np.int64)

    @property
    def length(self) -> int:
        """int N, the number of positions."""
        return self._length

    @property
    def position(self) -> np.ndarray:
        """[B] int64 current positions (a copy)."""
        return self._position.copy()

    def get_state(self) -> dict:
        """``UnittestEnv.get_state`` plus the positions."""
        state = super().get_state()
        state['position'] = self._position.tolist()
        return state

    def set_state(self, state: dict) -> None:
        """Restores what ``get_state`` returned.

        Args:
            state: a dict from ``get_state`` of a chain environment with
                the same batch size and length.
        """
        super().set_state(state)
        self._position = np.asarray(state['position'], np.int64)

    def _observation(self, step: int) -> np.ndarray:
        if step == 0:
            self._position = np.zeros(self._batch_size, np.int64)
        observation = np.zeros((self._batch_size, self._length), np.float32)
        observation[np.arange(self._batch_size), self._position] = 1.0
        return observation

    def _reward(self, step: int, action: np.ndarray) -> np.ndarray:
        end = self._length - 1
        at_end = self._position == end
        move = np.where(self._action_values(action) > 0.5, 1, -1)
        position = np.clip(self._position + move, 0, end)
        self._position = np.where(at_end, end, position)
        return ((self._position == end) & ~at_end).astype(np.float64)


class UnbatchedUnittestEnv(PyEnvironment):
    """One environment of a unittest environment built with
    ``batch_size=1``, without the batch dimension: what
    ``create_environment`` batches (``BatchedPyEnvironment``), so that
    ``alf-train`` can train on it (see ``load``).

    Args:
        env: a ``UnittestEnv`` with ``batch_size`` 1.

    Raises:
        ValueError: ``env`` has another batch size.
    """

    def __init__(self, env: UnittestEnv):
        if env.batch_size != 1:
            raise ValueError(
                "UnbatchedUnittestEnv: expected a unittest environment with "
                "batch_size=1, got batch_size=%d" % env.batch_size)
        self._env = env

    def observation_spec(self) -> BoundedTensorSpec:
        """The wrapped environment's observation spec."""
        return self._env.observation_spec()

    def action_spec(self) -> BoundedTensorSpec:
        """The wrapped environment's action spec."""
        return self._env.action_spec()

    def seed(self, seed: int) -> None:
        """Restarts the wrapped environment's random numbers."""
        self._env.seed(seed)

    @staticmethod
    def _unbatch(time_step: TimeStep) -> TimeStep:
        return TimeStep(*[np.asarray(x)[0] for x in time_step])

    def _reset(self):
        return self._unbatch(self._env.reset())

    def _step(self, action):
        return self._unbatch(self._env.step(np.asarray(action)[None]))


#: ``load``'s names of the unittest environments.
_LOADABLE = {
    'ValueUnittest': ValueUnittestEnv,
    'PolicyUnittest': PolicyUnittestEnv,
    'RNNPolicyUnittest': RNNPolicyUnittestEnv,
}


def load(env_name: str, seed: int = 0, env_id: int = 0,
         episode_length: int = 15, **kwargs: Any) -> UnbatchedUnittestEnv:
    """An unbatched unittest environment for ``create_environment``:
    ``create_environment.env_load_fn = @suite_unittest.load`` with
    ``create_environment.env_name = 'RNNPolicyUnittest'`` trains on
    ``RNNPolicyUnittestEnv`` from a gin file.

    Args:
        env_name: 'ValueUnittest', 'PolicyUnittest' or 'RNNPolicyUnittest'.
        seed: seed of this environment's random numbers.
        env_id: index of the environment (unused: each gets its own seed).
        episode_length: steps per episode.
        **kwargs: further arguments of the environment (``obs_dim``,
            ``action_type``, ``gap``, ``distractor_scale``); bind them with
            ``suite_unittest.load.gap = 10``.
    Returns:
        The ``UnbatchedUnittestEnv``.
    Raises:
        ValueError: an unknown ``env_name``.
    """
    del env_id
    if env_name not in _LOADABLE:
        raise ValueError("suite_unittest.load: env_name must be one of %s, "
                         "got %r" % (sorted(_LOADABLE), env_name))
    return UnbatchedUnittestEnv(_LOADABLE[env_name](
        1, episode_length, seed=seed, **kwargs))


@gin.configurable
def unittest_load_fn(**load_kwargs: Any) -> Callable[..., UnbatchedUnittestEnv]:
    """A picklable ``env_load_fn`` of ``create_environment`` for the
    unittest environments: ``create_environment.env_load_fn =
    @unittest_load_fn()``, with ``load``'s settings as its bindings (e.g.
    ``unittest_load_fn.gap = 10``).

    Args:
        **load_kwargs: keyword arguments of ``load`` (``episode_length``,
            ``obs_dim``, ``gap``, ...).
    Returns:
        ``functools.partial(load, **load_kwargs)``.
    """
    return functools.partial(load, **load_kwargs)
