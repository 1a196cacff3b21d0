"""``GymWrapper``: an unbatched ``PyEnvironment`` over one gymnasium env.

Uses the gymnasium 1.x API (``reset(seed=) -> (obs, info)``, ``step ->
(obs, reward, terminated, truncated, info)``) and ALF's conventions (see
``py_environment``): ``discount`` is 0 only on ``terminated``; ``truncated``
ends the episode with discount kept; the ``step()`` after LAST resets.

This module must not import TensorFlow at import time: subprocess workers of
``ParallelPyEnvironment`` unpickle ``functools.partial(suite_gym.load, ...)``
and should stay light. ``alf_rl.specs`` (which imports TensorFlow) is only
imported inside the spec methods.
"""

from typing import Any, List, Optional

import numpy as np

from alf_rl.data_structures import StepType, TimeStep
from alf_rl.environments.py_environment import (PyEnvironment, flatten_nest,
                                                pack_nest_as)

_FIRST = int(StepType.FIRST)
_MID = int(StepType.MID)
_LAST = int(StepType.LAST)


def _flat_spaces(space, path=''):
    """[(path, leaf space)] of a gymnasium space in ``tf.nest`` order."""
    from gymnasium import spaces
    if isinstance(space, spaces.Dict):
        result = []
        for k in sorted(space.spaces):
            result.extend(_flat_spaces(space.spaces[k], '%s[%r]' % (path, k)))
        return result
    if isinstance(space, spaces.Tuple):
        result = []
        for i, s in enumerate(space.spaces):
            result.extend(_flat_spaces(s, '%s[%d]' % (path, i)))
        return result
    return [(path, space)]


def _space_structure(space):
    """A nest of ``None`` leaves with the structure of a gymnasium space."""
    from gymnasium import spaces
    if isinstance(space, spaces.Dict):
        return {k: _space_structure(s) for k, s in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(_space_structure(s) for s in space.spaces)
    return None


def _leaf_dtype_shape(space):
    """numpy dtype and shape that ``alf_rl.specs.spec_from_gym_space`` gives.

    Kept in sync with ``spec_from_gym_space`` without importing TensorFlow.
    """
    from gymnasium import spaces
    if isinstance(space, spaces.Box):
        return np.dtype(space.dtype), tuple(space.shape)
    if isinstance(space, spaces.Discrete):
        return np.dtype(np.int64), ()
    if isinstance(space, spaces.MultiDiscrete):
        return np.dtype(np.int64), tuple(space.shape)
    if isinstance(space, spaces.MultiBinary):
        return np.dtype(np.int8), tuple(space.shape)
    raise TypeError("cannot convert gymnasium space %r into a tensor spec: "
                    "supported are Box, Discrete, MultiDiscrete, MultiBinary, "
                    "Dict and Tuple" % (space, ))


class GymWrapper(PyEnvironment):
    """Unbatched ``PyEnvironment`` over one gymnasium environment.

    Observations are cast to the dtype of the observation space's spec when
    the numpy kinds agree (e.g. float64 -> float32); a different kind (e.g.
    int64 where float32 was declared) raises ``ValueError`` naming the path.

    Args:
        gym_env: a ``gymnasium.Env`` (usually already wrapped in
            ``TimeLimit`` by ``suite_gym.load``).
        env_id: value of ``TimeStep.env_id`` for this environment.
        discount: discount of non-terminating steps (0 on ``terminated``).
    """

    def __init__(self, gym_env: Any, env_id: int = 0,
                 discount: float = 1.0):
        self._env = gym_env
        self._env_id = np.asarray(env_id, np.int32)
        self._discount = float(discount)
        self._observation_space = gym_env.observation_space
        self._action_space = gym_env.action_space
        self._observation_spec = None
        self._action_spec = None

        from gymnasium import spaces
        flat_obs = _flat_spaces(self._observation_space, 'observation')
        self._obs_paths = [p for p, _ in flat_obs]
        self._obs_dtypes = [_leaf_dtype_shape(s)[0] for _, s in flat_obs]
        self._obs_structure = _space_structure(self._observation_space)
        self._obs_is_leaf = self._obs_structure is None

        flat_act = _flat_spaces(self._action_space, 'action')
        self._action_structure = _space_structure(self._action_space)
        self._action_dtypes = [_leaf_dtype_shape(s)[0] for _, s in flat_act]
        zeros = [np.zeros(_leaf_dtype_shape(s)[1], _leaf_dtype_shape(s)[0])
                 for _, s in flat_act]
        for z in zeros:
            z.setflags(write=False)
        self._zero_action = (zeros[0] if self._action_structure is None else
                             pack_nest_as(self._action_structure, zeros))
        self._action_is_discrete = isinstance(self._action_space,
                                              spaces.Discrete)
        self._action_leaf_is_discrete = [
            isinstance(s, spaces.Discrete) for _, s in flat_act
        ]

        self._pending_seed = None
        self._done = True  # the first step() resets
        self._closed = False

    # --- properties -------------------------------------------------------
    @property
    def gym_env(self) -> Any:
        """The wrapped ``gymnasium.Env``."""
        return self._env

    @property
    def observation_space(self) -> Any:
        """The gymnasium observation space."""
        return self._observation_space

    @property
    def action_space(self) -> Any:
        """The gymnasium action space."""
        return self._action_space

    @property
    def env_id(self) -> int:
        """int: ``TimeStep.env_id`` of this environment."""
        return int(self._env_id)

    def observation_spec(self) -> Any:
        """Spec nest of one observation (from the observation space)."""
        if self._observation_spec is None:
            from alf_rl.specs import spec_from_gym_space
            self._observation_spec = spec_from_gym_space(
                self._observation_space, 'observation')
        return self._observation_spec

    def action_spec(self) -> Any:
        """Spec nest of one action (from the action space)."""
        if self._action_spec is None:
            from alf_rl.specs import spec_from_gym_space
            self._action_spec = spec_from_gym_space(self._action_space,
                                                    'action')
        return self._action_spec

    # --- conversions ------------------------------------------------------
    def _convert_observation(self, observation):
        """Flat list of observation leaves in the spec dtypes."""
        flat = [observation] if self._obs_is_leaf else flatten_nest(
            observation)
        if len(flat) != len(self._obs_dtypes):
            raise ValueError(
                "observation: the gymnasium environment returned %d leaves "
                "but its observation space has %d" %
                (len(flat), len(self._obs_dtypes)))
        for i, (o, dtype) in enumerate(zip(flat, self._obs_dtypes)):
            if type(o) is not np.ndarray or o.dtype != dtype:
                flat[i] = self._cast(o, i)
        return flat

    def _cast(self, value, i):
        dtype = self._obs_dtypes[i]
        value = np.asarray(value)
        if value.dtype == dtype:
            return value
        kind, want = value.dtype.kind, dtype.kind
        # signed/unsigned ints are the same kind here: e.g. a Discrete
        # observation arrives as Python int -> int64, but may be declared
        # narrower by a custom space.
        same_kind = kind == want or (kind in 'iu' and want in 'iu')
        if not same_kind:
            raise ValueError(
                "%s: the gymnasium environment returned %s values but its "
                "observation space declares %s; refusing to cast between "
                "kinds (fix the environment or its observation_space)" %
                (self._obs_paths[i], value.dtype.name, dtype.name))
        return value.astype(dtype)

    def _to_gym_action(self, action):
        if self._action_is_discrete:
            # numpy integer scalars pass through: gymnasium's
            # Discrete.contains is faster on them than on Python ints, and
            # gymnasium's own vector envs hand them over too.
            if isinstance(action, np.integer):
                return action
            return int(action)
        if self._action_structure is None:
            return action
        flat = flatten_nest(action)
        flat = [int(a) if d else a
                for a, d in zip(flat, self._action_leaf_is_discrete)]
        return pack_nest_as(self._action_structure, flat)

    def _to_prev_action(self, action):
        if self._action_structure is None:
            return np.asarray(action, self._action_dtypes[0])
        flat = [np.asarray(a, d) for a, d in
                zip(flatten_nest(action), self._action_dtypes)]
        return pack_nest_as(self._action_structure, flat)

    # --- stepping -----------------------------------------------------------
    def _flat_reset(self):
        if self._pending_seed is not None:
            observation, _ = self._env.reset(seed=self._pending_seed)
            self._pending_seed = None
        else:
            observation, _ = self._env.reset()
        self._done = False
        return _FIRST, 0.0, 1.0, self._convert_observation(observation)

    def _flat_step(self, action):
        if self._done:
            return self._flat_reset()
        observation, reward, terminated, truncated, _ = self._env.step(
            self._to_gym_action(action))
        if terminated:
            step_type, discount = _LAST, 0.0
            self._done = True
        elif truncated:
            step_type, discount = _LAST, self._discount
            self._done = True
        else:
            step_type, discount = _MID, self._discount
        # Fast path for the common single-array observation of the right
        # dtype (this runs once per environment per step).
        if (type(observation) is np.ndarray and self._obs_is_leaf
                and observation.dtype is self._obs_dtypes[0]):
            return step_type, reward, discount, [observation]
        return (step_type, reward, discount,
                self._convert_observation(observation))

    def _make_time_step(self, flat_result, prev_action):
        step_type, reward, discount, flat_obs = flat_result
        observation = (flat_obs[0] if self._obs_is_leaf else pack_nest_as(
            self._obs_structure, flat_obs))
        return TimeStep(step_type=np.asarray(step_type, np.int32),
                        reward=np.asarray(reward, np.float32),
                        discount=np.asarray(discount, np.float32),
                        observation=observation,
                        prev_action=prev_action,
                        env_id=self._env_id)

    def _reset(self):
        return self._make_time_step(self._flat_reset(), self._zero_action)

    def _step(self, action):
        if self._done:
            return self._reset()
        return self._make_time_step(self._flat_step(action),
                                    self._to_prev_action(action))

    @property
    def reports_game_scores(self) -> bool:
        """Whether a wrapper of the gymnasium environment has
        ``pop_game_scores`` (``suite_atari.GameScore``)."""
        has = getattr(self._env, 'has_wrapper_attr', None)
        if has is None:  # an env that is not a gymnasium.Env subclass
            return callable(getattr(self._env, 'pop_game_scores', None))
        return bool(has('pop_game_scores'))

    def pop_game_scores(self) -> List[float]:
        """The scores of the games that ended since the last call (from
        the wrapper with ``pop_game_scores``; ``[]`` without one)."""
        if not self.reports_game_scores:
            return []
        get = getattr(self._env, 'get_wrapper_attr', None)
        pop = (get('pop_game_scores') if get is not None else
               self._env.pop_game_scores)
        return list(pop())

    def render(self) -> Optional[np.ndarray]:
        """The frame of ``gym_env.render()`` or ``None`` without render_mode.

        Returns:
            [H, W, 3] uint8 array for ``render_mode='rgb_array'``, else
            ``None``.
        """
        if getattr(self._env, 'render_mode', None) is None:
            return None
        return self._env.render()

    def seed(self, seed: Optional[int]) -> None:
        """Seeds the next reset (explicit or automatic) with ``seed``."""
        self._pending_seed = None if seed is None else int(seed)
        if seed is not None:
            self._action_space.seed(int(seed))

    def close(self) -> None:
        """Closes the gymnasium environment."""
        if not self._closed:
            self._closed = True
            self._env.close()
