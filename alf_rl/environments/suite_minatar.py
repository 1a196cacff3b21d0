"""MinAtar (Young & Tian 2019) in TensorFlow ops: batched, XLA-compilable.

``load('MinAtar/Breakout-v1', batch_size)`` returns a ``TFEnvironment``
whose whole ``reset``/``step`` is TensorFlow ops on ``tf.Variable`` state,
like ``suite_tf``'s, so thousands of games run inside one
``tf.while_loop``, also under ``tf.function(jit_compile=True)``.

Games: Breakout, Freeway, Asterix, SpaceInvaders and Seaquest (MinAtar
1.0.15's rules). Ids follow MinAtar's gymnasium registration:
``MinAtar/<Game>-v0`` has the full action set of 6 (no-op, left, up, right,
down, fire), ``MinAtar/<Game>-v1`` the game's minimal set. Observations are
[10, 10, C] bool, MinAtar's channels. As MinAtar's ``Environment``: with
probability ``sticky_action_prob`` (0.1) the previous frame's action is
repeated instead of the agent's (the previous action carries over a reset,
as in MinAtar), and difficulty ramps up in Asterix, SpaceInvaders and
Seaquest.
Rewards are float32; MinAtar has no time limit (Freeway ends itself after
2500 frames).

Randomness: every step draws uniform numbers from Philox (see
``suite_tf.stateless_uniform``) where MinAtar draws from numpy's
``RandomState``, with the same distributions, so a seed does not give
MinAtar's games; fed the same numbers, each game equals MinAtar's step for
step (``MinAtarDynamics``; tested against the ``minatar`` package).
"""

import random
import re
from typing import Dict, Optional, Tuple, Type

import gin
import numpy as np
import tensorflow as tf

from alf_rl.data_structures import StepType, TimeStep
from alf_rl.environments.minatar.asterix import Asterix
from alf_rl.environments.minatar.breakout import Breakout
from alf_rl.environments.minatar.freeway import Freeway
from alf_rl.environments.minatar.game import SIZE, MinAtarGame, State
from alf_rl.environments.minatar.seaquest import Seaquest
from alf_rl.environments.minatar.space_invaders import SpaceInvaders
from alf_rl.environments.suite_tf import stateless_uniform
from alf_rl.environments.tf_environment import TFEnvironment
from alf_rl.specs import BoundedTensorSpec, time_step_spec
from alf_rl.utils.config_types import is_number

#: Game classes by their gymnasium title (``MinAtar/<title>-v0``).
GAMES: Dict[str, Type[MinAtarGame]] = {
    'Breakout': Breakout,
    'Freeway': Freeway,
    'Asterix': Asterix,
    'SpaceInvaders': SpaceInvaders,
    'Seaquest': Seaquest,
}

#: The ids ``load`` accepts.
SUPPORTED_ENVIRONMENTS = tuple(
    'MinAtar/%s-v%d' % (title, version)
    for title in GAMES
    for version in (0, 1)
)


class MinAtarDynamics(object):
    """A game with MinAtar's ``Environment`` around it (sticky actions and
    the action set): the functional core of ``MinAtarEnvironment``.

    The state is the game's dict plus ``last_action`` [B] int32 (an index
    into the full action set). ``transition``'s draws: column 0 decides
    the sticky action (MinAtar's first ``rand()`` in ``act``), the rest
    are the game's.

    Args:
        game: a ``MinAtarGame``.
        use_minimal_action_set: actions index the game's minimal set
            (``-v1``) instead of the full 6 (``-v0``).
        sticky_action_prob: probability of repeating the previous action.
    """

    def __init__(
        self,
        game: MinAtarGame,
        use_minimal_action_set: bool,
        sticky_action_prob: float,
    ):
        if not (
            is_number(sticky_action_prob) and 0.0 <= sticky_action_prob <= 1.0
        ):
            raise ValueError(
                "sticky_action_prob must be a number in [0, 1] (MinAtar's "
                "0.1; 0 for none, as gymnax), got %r" % (sticky_action_prob,)
            )
        self.game = game
        self.sticky_action_prob = float(sticky_action_prob)
        actions = (
            game.minimal_actions if use_minimal_action_set else tuple(range(6))
        )
        self._actions = tf.constant(actions, tf.int32)
        self.num_actions = len(actions)
        self.num_step_draws = 1 + game.num_step_draws
        self.num_reset_draws = game.num_reset_draws
        self.observation_spec = BoundedTensorSpec(
            (SIZE, SIZE, len(game.channels)),
            tf.bool,
            False,
            True,
            'observation',
        )
        self.action_spec = BoundedTensorSpec(
            (), tf.int64, 0, self.num_actions - 1, 'action'
        )

    # Plain TensorFlow ops without tensor-dependent Python control flow:
    # autograph is kept out (in one test process that traced every game,
    # its conversion cache called Seaquest's initial_state for its step).
    @tf.autograph.experimental.do_not_convert
    def initial_state(self, draws: tf.Tensor, last_action: tf.Tensor) -> State:
        """The game's ``initial_state(draws)`` with ``last_action`` [B]
        int32 (kept over resets, as MinAtar's ``Environment`` does)."""
        state = dict(self.game.initial_state(draws))
        state['last_action'] = last_action
        return state

    @tf.autograph.experimental.do_not_convert
    def transition(
        self, state: State, action: tf.Tensor, draws: tf.Tensor
    ) -> Tuple[State, tf.Tensor, tf.Tensor]:
        """MinAtar's ``Environment.act``: sticky action, then the game.

        Args:
            state: the state dict (with ``last_action``).
            action: [B] int (int32 or int64) agent actions, indices into
                the action set.
            draws: [B, num_step_draws] float32 in [0, 1).

        Returns:
            ``(next_state, reward, terminal)``: the state dict, [B] float32,
            [B] bool.
        """
        action = tf.gather(self._actions, tf.cast(action, tf.int32))
        sticky = draws[:, 0] < self.sticky_action_prob
        action = tf.where(sticky, state['last_action'], action)
        game_state = {k: v for k, v in state.items() if k != 'last_action'}
        game_state, reward, terminal = self.game.step(
            game_state, action, draws[:, 1:]
        )
        game_state['last_action'] = action
        return game_state, reward, terminal

    @tf.autograph.experimental.do_not_convert
    def observation(self, state: State) -> tf.Tensor:
        """[B, 10, 10, C] bool observations."""
        return self.game.observation(
            {k: v for k, v in state.items() if k != 'last_action'}
        )


def _check_int(name: str, value: object, minimum: int) -> int:
    """``value`` as an int >= ``minimum``, else a one-line ValueError."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or value < minimum
    ):
        raise ValueError(
            "%s must be an int >= %d, got %r" % (name, minimum, value)
        )
    return int(value)


class MinAtarEnvironment(TFEnvironment):
    """A batch of B MinAtar games stepped in TF ops, with auto-reset.

    As ``suite_tf.TFDynamicsEnvironment``: the state lives in
    ``tf.Variable``s (the game's, the steps of the current episode, whether
    the last step was LAST, a call counter for the stateless seeds); every
    ``step`` computes the next state and a fresh start state of every game
    and keeps the latter (``tf.where``) where the previous step was LAST,
    returning FIRST (reward 0, discount 1, ``prev_action`` 0) and ignoring
    that row's action; a ``step`` before any ``reset`` resets all;
    ``discount`` is 0 on termination, 1 on a time-limit truncation. The same
    seed and calls give the same ``TimeStep``s, eagerly and under XLA.

    Args:
        dynamics: a ``MinAtarDynamics``.
        batch_size: B >= 1.
        seed: int seed; ``None`` draws one from Python's ``random``.
        max_episode_steps: a time limit in steps after a reset; ``None`` or
            0 for none (MinAtar's default).
    """

    def __init__(
        self,
        dynamics: MinAtarDynamics,
        batch_size: int,
        seed: Optional[int] = None,
        max_episode_steps: Optional[int] = None,
    ):
        b = _check_int('batch_size', batch_size, 1)
        seed = (
            random.getrandbits(63)
            if seed is None
            else _check_int('seed', seed, -(2**63))
        )
        limit = _check_int('max_episode_steps', max_episode_steps or 0, 0)
        super().__init__(
            time_step_spec(dynamics.observation_spec, dynamics.action_spec),
            dynamics.action_spec,
            b,
        )
        self._dynamics = dynamics
        self._seed = int(seed) % 2**63
        self._max_episode_steps = limit or None
        start = dynamics.initial_state(
            tf.zeros([b, dynamics.num_reset_draws]), tf.zeros([b], tf.int32)
        )
        self._state = {
            k: tf.Variable(v, trainable=False, name=k)
            for k, v in start.items()
        }
        self._steps = tf.Variable(
            tf.zeros([b], tf.int32), trainable=False, name='episode_steps'
        )
        self._done = tf.Variable(
            tf.ones([b], tf.bool), trainable=False, name='done'
        )
        self._counter = tf.Variable(
            tf.zeros([], tf.int64), trainable=False, name='rng_counter'
        )
        self._env_id = tf.range(b, dtype=tf.int32)
        self._checkpoint_state = tf.Module(name='environment_state')
        self._checkpoint_state.game = dict(self._state)
        self._checkpoint_state.episode_steps = self._steps
        self._checkpoint_state.done = self._done
        self._checkpoint_state.rng_counter = self._counter

    @property
    def dynamics(self) -> MinAtarDynamics:
        """The ``MinAtarDynamics`` (functional core) of this environment."""
        return self._dynamics

    @property
    def seed(self) -> int:
        """int, the seed of the random numbers."""
        return self._seed

    @property
    def max_episode_steps(self) -> Optional[int]:
        """int time limit, or ``None`` for none."""
        return self._max_episode_steps

    def game_state(self) -> State:
        """A snapshot of the state dict ([B, ...] tensors)."""
        return {k: v.value() for k, v in self._state.items()}

    def checkpoint_state(self) -> tf.Module:
        """The state variables as one ``tf.Module`` for checkpoints (see
        ``suite_tf.TFDynamicsEnvironment.checkpoint_state``)."""
        return self._checkpoint_state

    def _draws(self, n: int) -> tf.Tensor:
        """[B, n] uniform float32 from a fresh stateless seed."""
        counter = self._counter.assign_add(1)
        seed = tf.stack([tf.constant(self._seed, tf.int64), counter])
        return stateless_uniform([self._batch_size, n], seed, 0.0, 1.0)

    def _assign(self, state: State) -> None:
        for k, v in state.items():
            self._state[k].assign(v)

    def _reset(self) -> TimeStep:
        b = self._batch_size
        state = self._dynamics.initial_state(
            self._draws(self._dynamics.num_reset_draws),
            self._state['last_action'].value(),
        )
        self._assign(state)
        self._steps.assign(tf.zeros([b], tf.int32))
        self._done.assign(tf.zeros([b], tf.bool))
        return TimeStep(
            step_type=tf.fill([b], StepType.FIRST),
            reward=tf.zeros([b], tf.float32),
            discount=tf.ones([b], tf.float32),
            observation=self._dynamics.observation(state),
            prev_action=tf.zeros([b], tf.int64),
            env_id=self._env_id,
        )

    def _step(self, action: tf.Tensor) -> TimeStep:
        if tf.executing_eagerly():
            _check_actions(action, self._dynamics.num_actions)
        dynamics = self._dynamics
        done = self._done.value()
        draws = self._draws(dynamics.num_step_draws + dynamics.num_reset_draws)
        state = self.game_state()
        next_state, reward, terminated = dynamics.transition(
            state, action, draws[:, : dynamics.num_step_draws]
        )
        fresh = dynamics.initial_state(
            draws[:, dynamics.num_step_draws :], state['last_action']
        )
        next_state = {
            k: tf.where(
                tf.reshape(done, [-1] + [1] * (v.shape.rank - 1)), fresh[k], v
            )
            for k, v in next_state.items()
        }
        return self._finish(next_state, reward, terminated, done, action)

    def _finish(
        self,
        next_state: State,
        reward: tf.Tensor,
        terminated: tf.Tensor,
        done: tf.Tensor,
        action: tf.Tensor,
    ) -> TimeStep:
        """Time limit, step types and variable updates of ``_step``."""
        steps = tf.where(done, 0, self._steps + 1)
        running = tf.logical_not(done)
        terminated = tf.logical_and(running, terminated)
        last = terminated
        if self._max_episode_steps is not None:
            last = tf.logical_or(
                last, tf.logical_and(running, steps >= self._max_episode_steps)
            )
        self._assign(next_state)
        self._steps.assign(steps)
        self._done.assign(last)
        return TimeStep(
            step_type=tf.where(
                done, StepType.FIRST, StepType.MID + tf.cast(last, tf.int32)
            ),
            reward=tf.where(done, 0.0, reward),
            discount=tf.where(terminated, 0.0, 1.0),
            observation=self._dynamics.observation(next_state),
            prev_action=tf.where(done, tf.zeros_like(action), action),
            env_id=self._env_id,
        )


def _check_actions(action: tf.Tensor, num_actions: int) -> None:
    """Eager only: ValueError naming the first action outside
    [0, num_actions)."""
    a = action.numpy()
    bad = np.argwhere((a < 0) | (a >= num_actions))
    if bad.size:
        i = int(bad[0][0])
        raise ValueError(
            "action: value %r at env %d outside action_spec bounds [0, %d] "
            "-- check the policy's output or clip it with "
            "specs.cast_and_clip_to_spec" % (a[i].item(), i, num_actions - 1)
        )


@gin.configurable(module='suite_minatar')
def load(
    name: str,
    batch_size: int,
    seed: Optional[int] = None,
    max_episode_steps: Optional[int] = None,
    sticky_action_prob: float = 0.1,
    difficulty_ramping: bool = True,
) -> MinAtarEnvironment:
    """A batch of MinAtar games in TF ops.

    gin-configurable as ``suite_minatar.load``, so that a run through
    ``create_environment(backend='tf')`` sets MinAtar's options from its
    gin file, e.g. ``suite_minatar.load.sticky_action_prob = 0.0`` (no
    sticky actions, as gymnax's MinAtar) or
    ``suite_minatar.load.difficulty_ramping = False``.

    Args:
        name: ``'MinAtar/<Game>-v0'`` (all 6 actions) or ``-v1`` (the
            minimal action set); see ``SUPPORTED_ENVIRONMENTS``.
        batch_size: B, the number of games.
        seed: int seed of the random numbers; ``None`` for a random one.
        max_episode_steps: time limit; ``None`` or 0 for none (MinAtar's).
        sticky_action_prob: MinAtar's probability of repeating the
            previous action (0.1), a number in [0, 1].
        difficulty_ramping: MinAtar's difficulty ramp (Asterix,
            SpaceInvaders, Seaquest).

    Returns:
        A ``MinAtarEnvironment``: observations [B, 10, 10, C] bool, actions
        [B] int64.

    Raises:
        ValueError: for an unsupported ``name`` or a bad argument.
    """
    match = re.fullmatch(r'MinAtar/(\w+)-v([01])', str(name))
    if not match or match.group(1) not in GAMES:
        raise ValueError(
            "suite_minatar has no environment %r; supported "
            "are %s" % (name, ', '.join(SUPPORTED_ENVIRONMENTS))
        )
    game = GAMES[match.group(1)](ramping=difficulty_ramping)
    dynamics = MinAtarDynamics(game, match.group(2) == '1', sticky_action_prob)
    return MinAtarEnvironment(
        dynamics, batch_size, seed=seed, max_episode_steps=max_episode_steps
    )
