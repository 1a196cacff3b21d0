"""MinAtar SpaceInvaders in TensorFlow ops.

A cannon on the bottom row shoots at a block of aliens (rows 0-3, columns
2-7) that moves sideways, one row down at each wall, and speeds up as it
thins out; the alien nearest the cannon (by column) shoots back every 10
frames. +1 per alien shot; a cleared wave is replaced by a new one, faster
with difficulty ramping; the episode ends when an alien or its bullet
reaches the cannon. Channels: cannon, alien, alien_left, alien_right,
friendly_bullet, enemy_bullet. No randomness. As MinAtar's
``space_invaders.py``.
"""

from typing import Tuple

import tensorflow as tf

from alf_rl.environments.minatar.game import (
    NOOP,
    FIRE,
    LEFT,
    RIGHT,
    MinAtarGame,
    State,
    move_horizontally,
    stack_channels,
)

_SHOT_COOL_DOWN = 5
_ENEMY_MOVE_INTERVAL = 12
_ENEMY_SHOT_INTERVAL = 10


def _wave(batch_size: tf.Tensor) -> tf.Tensor:
    """[B, 10, 10] bool: aliens in rows 0-3, columns 2-7."""
    wave = tf.constant(
        [[r < 4 and 2 <= c < 8 for c in range(10)] for r in range(10)]
    )
    return tf.tile(wave[None], [batch_size, 1, 1])


def _at(grid: tf.Tensor, row: int, col: tf.Tensor) -> tf.Tensor:
    """[B] bool: ``grid[b, row, col[b]]`` of a [B, 10, 10] grid."""
    return tf.reduce_any(
        tf.logical_and(
            grid[:, row], tf.equal(tf.range(10)[None], col[:, None])
        ),
        axis=1,
    )


def _shift_rows(grid: tf.Tensor, down: bool) -> tf.Tensor:
    """``np.roll(grid, +-1, axis=rows)`` with the row rolled in cleared."""
    empty = tf.zeros_like(grid[:, :1])
    if down:
        return tf.concat([empty, grid[:, :-1]], axis=1)
    return tf.concat([grid[:, 1:], empty], axis=1)


def _move_aliens(state: State, pos: tf.Tensor) -> Tuple[State, tf.Tensor]:
    """Where ``alien_move_timer`` is 0: the block steps (sideways, or down
    and turning at a wall). Returns the state and [B] bool 'reached the
    bottom row'."""
    aliens, direction = state['aliens'], state['alien_dir']
    now = tf.equal(state['alien_move_timer'], 0)
    count = tf.reduce_sum(tf.cast(aliens, tf.int32), axis=[1, 2])
    turn = tf.logical_or(
        tf.logical_and(tf.reduce_any(aliens[:, :, 0], 1), direction < 0),
        tf.logical_and(tf.reduce_any(aliens[:, :, 9], 1), direction > 0),
    )
    turn_now = tf.logical_and(now, turn)
    lost = tf.logical_and(turn_now, tf.reduce_any(aliens[:, 9], axis=1))
    down = tf.roll(aliens, 1, axis=1)
    side = tf.where(
        (direction > 0)[:, None, None],
        tf.roll(aliens, 1, axis=2),
        tf.roll(aliens, -1, axis=2),
    )
    moved = tf.where(turn[:, None, None], down, side)
    aliens = tf.where(now[:, None, None], moved, aliens)
    lost = tf.logical_or(lost, tf.logical_and(now, _at(aliens, 9, pos)))
    return dict(
        state,
        aliens=aliens,
        alien_dir=tf.where(turn_now, -direction, direction),
        alien_move_timer=tf.where(
            now,
            tf.minimum(count, state['enemy_move_interval']),
            state['alien_move_timer'],
        ),
    ), lost


def _alien_shot(state: State, pos: tf.Tensor) -> State:
    """Where ``alien_shot_timer`` is 0: the lowest alien of the occupied
    column nearest the cannon (the left one on a tie) fires."""
    aliens = state['aliens']
    now = tf.equal(state['alien_shot_timer'], 0)
    cols = tf.range(10)
    occupied = tf.reduce_any(aliens, axis=1)  # [B, 10]
    key = tf.abs(cols[None] - pos[:, None]) * 10 + cols[None]
    col = tf.argmin(
        tf.where(occupied, key, 1000), axis=1, output_type=tf.int32
    )
    in_col = tf.logical_and(
        aliens, tf.equal(cols[None, None], col[:, None, None])
    )
    row = tf.reduce_max(
        tf.where(in_col, tf.range(10)[None, :, None], -1), axis=[1, 2]
    )
    shot = tf.logical_and(
        tf.logical_and(
            tf.equal(tf.range(10)[None, :, None], row[:, None, None]), in_col
        ),
        now[:, None, None],
    )
    return dict(
        state,
        e_bullets=tf.logical_or(state['e_bullets'], shot),
        alien_shot_timer=tf.where(
            now, _ENEMY_SHOT_INTERVAL, state['alien_shot_timer']
        ),
    )


class SpaceInvaders(MinAtarGame):
    """MinAtar's SpaceInvaders (no draws).

    State: ``pos, alien_dir, enemy_move_interval, alien_move_timer,
    alien_shot_timer, ramp_index, shot_timer`` [B] int32; ``aliens,
    f_bullets, e_bullets`` [B, 10, 10] bool.
    """

    name = 'space_invaders'
    channels = (
        'cannon',
        'alien',
        'alien_left',
        'alien_right',
        'friendly_bullet',
        'enemy_bullet',
    )
    minimal_actions = (NOOP, LEFT, RIGHT, FIRE)
    num_step_draws = 0
    num_reset_draws = 0

    def initial_state(self, draws: tf.Tensor) -> State:
        """The cannon at column 5 and a full wave moving left."""
        b = tf.shape(draws)[0]
        zeros = tf.zeros([b], tf.int32)
        aliens = _wave(b)
        return dict(
            pos=zeros + 5,
            alien_dir=zeros - 1,
            enemy_move_interval=zeros + _ENEMY_MOVE_INTERVAL,
            alien_move_timer=zeros + _ENEMY_MOVE_INTERVAL,
            alien_shot_timer=zeros + _ENEMY_SHOT_INTERVAL,
            ramp_index=zeros,
            shot_timer=zeros,
            aliens=aliens,
            f_bullets=tf.zeros_like(aliens),
            e_bullets=tf.zeros_like(aliens),
        )

    def step(
        self, state: State, action: tf.Tensor, draws: tf.Tensor
    ) -> Tuple[State, tf.Tensor, tf.Tensor]:
        """One frame: cannon, bullets, aliens, hits, timers, new wave."""
        pos, shot_timer = state['pos'], state['shot_timer']
        fire = tf.logical_and(tf.equal(action, FIRE), tf.equal(shot_timer, 0))
        shot_timer = tf.where(fire, _SHOT_COOL_DOWN, shot_timer)
        pos = move_horizontally(pos, action)
        # MinAtar puts the shot at (9, pos), then moves it up one row.
        shot = tf.one_hot(pos + 80, 100, on_value=True, off_value=False)
        f_bullets = tf.logical_or(
            _shift_rows(state['f_bullets'], down=False),
            tf.reshape(tf.logical_and(shot, fire[:, None]), [-1, 10, 10]),
        )
        e_bullets = _shift_rows(state['e_bullets'], down=True)
        lost = tf.logical_or(
            _at(e_bullets, 9, pos), _at(state['aliens'], 9, pos)
        )
        state = dict(state, pos=pos, e_bullets=e_bullets)
        state, reached = _move_aliens(state, pos)
        state = _alien_shot(state, pos)
        aliens = state['aliens']
        kill = tf.logical_and(aliens, f_bullets)
        reward = tf.reduce_sum(tf.cast(kill, tf.float32), axis=[1, 2])
        aliens = tf.logical_and(aliens, tf.logical_not(kill))
        cleared = tf.logical_not(tf.reduce_any(aliens, axis=[1, 2]))
        ramp = tf.logical_and(cleared, state['enemy_move_interval'] > 6)
        if not self.ramping:
            ramp = tf.zeros_like(ramp)
        state = dict(
            state,
            shot_timer=shot_timer - tf.cast(shot_timer > 0, tf.int32),
            f_bullets=tf.logical_and(f_bullets, tf.logical_not(kill)),
            aliens=tf.logical_or(
                aliens,
                tf.logical_and(
                    _wave(tf.shape(pos)[0]), cleared[:, None, None]
                ),
            ),
            alien_move_timer=state['alien_move_timer'] - 1,
            alien_shot_timer=state['alien_shot_timer'] - 1,
            enemy_move_interval=state['enemy_move_interval']
            - tf.cast(ramp, tf.int32),
            ramp_index=state['ramp_index'] + tf.cast(ramp, tf.int32),
        )
        return state, reward, tf.logical_or(lost, reached)

    def observation(self, state: State) -> tf.Tensor:
        """[B, 10, 10, 6] bool: cannon, alien, alien_left, alien_right,
        friendly_bullet, enemy_bullet."""
        aliens = state['aliens']
        left = (state['alien_dir'] < 0)[:, None, None]
        cannon = tf.one_hot(
            state['pos'] + 90, 100, on_value=True, off_value=False
        )
        return stack_channels(
            [
                cannon,
                aliens,
                tf.logical_and(aliens, left),
                tf.logical_and(aliens, tf.logical_not(left)),
                state['f_bullets'],
                state['e_bullets'],
            ]
        )
