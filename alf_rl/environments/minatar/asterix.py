"""MinAtar Asterix in TensorFlow ops.

The player moves in 4 directions on rows 1 to 8; enemies and gold enter
from the sides, one per free row (slot), and cross the screen; +1 for
touching gold, the episode ends on touching an enemy. With difficulty
ramping the spawn interval (10 frames at first) and the move interval (5)
shrink every 100 frames. Channels: player, enemy, trail, gold. As
MinAtar's ``asterix.py``.
"""

from typing import Tuple

import numpy as np
import tensorflow as tf

from alf_rl.environments.minatar.game import (
    NOOP,
    DOWN,
    LEFT,
    RIGHT,
    UP,
    MinAtarGame,
    State,
    cells,
    paint,
    randint,
    stack_channels,
)

_RAMP_INTERVAL = 100
_SPAWN_SPEED = 10
_MOVE_SPEED = 5
_SLOTS = 8
_ROWS = np.arange(1, _SLOTS + 1, dtype=np.int32)


def _move_player(
    x: tf.Tensor, y: tf.Tensor, action: tf.Tensor
) -> Tuple[tf.Tensor, tf.Tensor]:
    """The player's (x, y) [B] int32 after ``action`` [B]."""
    x = tf.where(
        tf.equal(action, LEFT),
        tf.maximum(x - 1, 0),
        tf.where(tf.equal(action, RIGHT), tf.minimum(x + 1, 9), x),
    )
    y = tf.where(
        tf.equal(action, UP),
        tf.maximum(y - 1, 1),
        tf.where(tf.equal(action, DOWN), tf.minimum(y + 1, 8), y),
    )
    return x, y


def _contact(
    alive: tf.Tensor, gold: tf.Tensor, at: tf.Tensor
) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Entities [B, 8] ``alive`` that are ``at`` the player: gold is picked
    up (removed, +1), an enemy ends the episode. Returns ``alive``, the
    picked gold and the touching enemies, each [B, 8] bool."""
    touch = tf.logical_and(alive, at)
    picked = tf.logical_and(touch, gold)
    enemy = tf.logical_and(touch, tf.logical_not(gold))
    return tf.logical_and(alive, tf.logical_not(picked)), picked, enemy


def _spawn(state: State, draws: tf.Tensor) -> State:
    """Entities after MinAtar's ``_spawn_entity`` where ``spawn_timer`` is
    0: draws 0 and 1 give its side and kind, draw 2 its free slot."""
    alive = state['alive']
    now = tf.equal(state['spawn_timer'], 0)
    lr = draws[:, 0] < 0.5
    gold = draws[:, 1] < 1.0 / 3.0
    free = tf.logical_not(alive)
    num_free = tf.reduce_sum(tf.cast(free, tf.int32), axis=1)
    k = randint(draws[:, 2], num_free)
    rank = tf.cumsum(tf.cast(free, tf.int32), axis=1) - 1
    new = tf.logical_and(
        tf.logical_and(free, tf.equal(rank, k[:, None])), now[:, None]
    )
    return dict(
        state,
        alive=tf.logical_or(alive, new),
        x=tf.where(new, tf.where(lr, 0, 9)[:, None], state['x']),
        lr=tf.where(new, lr[:, None], state['lr']),
        gold=tf.where(new, gold[:, None], state['gold']),
        spawn_timer=tf.where(now, state['spawn_speed'], state['spawn_timer']),
    )


def _ramp(state: State) -> State:
    """MinAtar's difficulty ramp: every 101 frames the spawn interval, and
    every other time the move interval, shrink by one (down to 1)."""
    spawn_speed, move_speed = state['spawn_speed'], state['move_speed']
    timer, index = state['ramp_timer'], state['ramp_index']
    active = tf.logical_or(spawn_speed > 1, move_speed > 1)
    wait = timer >= 0
    ramp = tf.logical_and(active, tf.logical_not(wait))
    slower_move = tf.logical_and(
        ramp, tf.logical_and(move_speed > 1, tf.equal(index % 2, 1))
    )
    return dict(
        state,
        move_speed=move_speed - tf.cast(slower_move, tf.int32),
        spawn_speed=spawn_speed
        - tf.cast(tf.logical_and(ramp, spawn_speed > 1), tf.int32),
        ramp_index=index + tf.cast(ramp, tf.int32),
        ramp_timer=tf.where(
            ramp,
            _RAMP_INTERVAL,
            tf.where(tf.logical_and(active, wait), timer - 1, timer),
        ),
    )


class Asterix(MinAtarGame):
    """MinAtar's Asterix (3 draws per step, used when an entity spawns).

    State: ``player_x, player_y, spawn_speed, spawn_timer, move_speed,
    move_timer, ramp_timer, ramp_index`` [B] int32; per slot (row slot+1)
    ``x`` [B, 8] int32, ``lr`` (moving right), ``gold``, ``alive`` [B, 8]
    bool.
    """

    name = 'asterix'
    channels = ('player', 'enemy', 'trail', 'gold')
    minimal_actions = (NOOP, LEFT, UP, RIGHT, DOWN)
    num_step_draws = 3
    num_reset_draws = 0

    def initial_state(self, draws: tf.Tensor) -> State:
        """The player at (5, 5), no entities (no randomness)."""
        zeros = tf.zeros([tf.shape(draws)[0]], tf.int32)
        no = tf.zeros([tf.shape(draws)[0], _SLOTS], tf.bool)
        return dict(
            player_x=zeros + 5,
            player_y=zeros + 5,
            spawn_speed=zeros + _SPAWN_SPEED,
            spawn_timer=zeros + _SPAWN_SPEED,
            move_speed=zeros + _MOVE_SPEED,
            move_timer=zeros + _MOVE_SPEED,
            ramp_timer=zeros + _RAMP_INTERVAL,
            ramp_index=zeros,
            x=tf.zeros_like(no, tf.int32),
            lr=no,
            gold=no,
            alive=no,
        )

    def step(
        self, state: State, action: tf.Tensor, draws: tf.Tensor
    ) -> Tuple[State, tf.Tensor, tf.Tensor]:
        """One frame: spawn, player, collisions, entity moves, ramp."""
        state = _spawn(state, draws)
        px, py = _move_player(state['player_x'], state['player_y'], action)
        x, gold = state['x'], state['gold']
        lane = tf.equal(_ROWS[None], py[:, None])
        at = tf.logical_and(lane, tf.equal(x, px[:, None]))
        alive, reward, enemy = _contact(state['alive'], gold, at)
        move = tf.equal(state['move_timer'], 0)
        moving = tf.logical_and(move[:, None], alive)
        x = tf.where(moving, x + tf.where(state['lr'], 1, -1), x)
        gone = tf.logical_and(moving, tf.logical_or(x < 0, x > 9))
        alive = tf.logical_and(alive, tf.logical_not(gone))
        at = tf.logical_and(
            moving, tf.logical_and(lane, tf.equal(x, px[:, None]))
        )
        alive, reward_2, enemy_2 = _contact(alive, gold, at)
        state = dict(
            state,
            player_x=px,
            player_y=py,
            x=x,
            alive=alive,
            spawn_timer=state['spawn_timer'] - 1,
            move_timer=tf.where(move, state['move_speed'], state['move_timer'])
            - 1,
        )
        if self.ramping:
            state = _ramp(state)
        reward = tf.cast(reward, tf.float32) + tf.cast(reward_2, tf.float32)
        return (
            state,
            tf.reduce_sum(reward, axis=1),
            tf.reduce_any(tf.logical_or(enemy, enemy_2), axis=1),
        )

    def observation(self, state: State) -> tf.Tensor:
        """[B, 10, 10, 4] bool: player, enemy, trail, gold."""
        x, lr, gold, alive = (
            state['x'],
            state['lr'],
            state['gold'],
            state['alive'],
        )
        rows = tf.broadcast_to(_ROWS[None], tf.shape(x))
        back = x - tf.where(lr, 1, -1)
        on_grid = tf.logical_and(alive, tf.logical_and(back >= 0, back <= 9))
        return stack_channels(
            [
                cells(state['player_y'], state['player_x']),
                paint(rows, x, tf.logical_and(alive, tf.logical_not(gold))),
                paint(rows, back, on_grid),
                paint(rows, x, tf.logical_and(alive, gold)),
            ]
        )
