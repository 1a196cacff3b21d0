"""MinAtar Freeway in TensorFlow ops.

A chicken crosses a road of 8 lanes, moving up or down at most every 3
frames; +1 for reaching the top, after which it returns to the bottom and
the cars' speeds are drawn anew; a car hitting it sends it back to the
bottom. Car i drives in row i + 1, moving one cell every 1 to 5 frames
(its speed) and wrapping around. The episode ends after 2500 frames.
Channels: chicken, car, and speed1 to speed5 (a car's trail, in the
channel of its speed). As MinAtar's ``freeway.py``.
"""

from typing import Tuple

import numpy as np
import tensorflow as tf

from alf_rl.environments.minatar.game import (
    NOOP,
    DOWN,
    UP,
    MinAtarGame,
    State,
    cells,
    paint,
    randint,
    stack_channels,
)

_PLAYER_SPEED = 3
_TIME_LIMIT = 2500
_NUM_CARS = 8
_ROWS = np.arange(1, _NUM_CARS + 1, dtype=np.int32)


def _speeds(draws: tf.Tensor) -> tf.Tensor:
    """[B, 8] int32 signed speeds from 16 draws: ``randint(1, 6, 8)``
    times ``sign(rand(8) - 0.5)``."""
    speed = randint(draws[:, :_NUM_CARS], 5) + 1
    sign = tf.cast(
        tf.sign(draws[:, _NUM_CARS : 2 * _NUM_CARS] - 0.5), tf.int32
    )
    return speed * sign


class Freeway(MinAtarGame):
    """MinAtar's Freeway (no difficulty ramp; 16 draws per reset and per
    step, used only on reaching the top).

    State: ``pos, move_timer, terminate_timer`` [B] int32; ``car_x,
    car_timer, car_speed`` [B, 8] int32 (speed signed: > 0 moves right).
    """

    name = 'freeway'
    channels = (
        'chicken',
        'car',
        'speed1',
        'speed2',
        'speed3',
        'speed4',
        'speed5',
    )
    minimal_actions = (NOOP, UP, DOWN)
    num_step_draws = 2 * _NUM_CARS
    num_reset_draws = 2 * _NUM_CARS

    def initial_state(self, draws: tf.Tensor) -> State:
        """Cars at column 0 with random speeds, the chicken at the bottom."""
        speed = _speeds(draws)
        zeros = tf.zeros_like(speed[:, 0])
        return dict(
            pos=zeros + 9,
            move_timer=zeros + _PLAYER_SPEED,
            terminate_timer=zeros + _TIME_LIMIT,
            car_x=tf.zeros_like(speed),
            car_timer=tf.abs(speed),
            car_speed=speed,
        )

    def step(
        self, state: State, action: tf.Tensor, draws: tf.Tensor
    ) -> Tuple[State, tf.Tensor, tf.Tensor]:
        """One frame: the chicken moves, then the cars."""
        pos, move_timer = state['pos'], state['move_timer']
        ready = tf.equal(move_timer, 0)
        up = tf.logical_and(ready, tf.equal(action, UP))
        down = tf.logical_and(ready, tf.equal(action, DOWN))
        move_timer = tf.where(
            tf.logical_or(up, down), _PLAYER_SPEED, move_timer
        )
        pos = tf.where(
            up,
            tf.maximum(pos - 1, 0),
            tf.where(down, tf.minimum(pos + 1, 9), pos),
        )
        win = tf.equal(pos, 0)
        speed = tf.where(win[:, None], _speeds(draws), state['car_speed'])
        timer = tf.where(win[:, None], tf.abs(speed), state['car_timer'])
        pos = tf.where(win, 9, pos)
        x = state['car_x']
        # Once the chicken is sent back (row 9) no car (rows 1-8) can hit
        # it again, so MinAtar's sequential loop over cars is an any().
        in_lane = tf.equal(_ROWS[None], pos[:, None])
        hit = tf.logical_and(in_lane, tf.equal(x, 4))
        moves = tf.equal(timer, 0)
        moved = tf.math.floormod(x + tf.where(speed > 0, 1, -1), 10)
        x = tf.where(moves, moved, x)
        hit = tf.logical_or(
            hit, tf.logical_and(moves, tf.logical_and(in_lane, tf.equal(x, 4)))
        )
        timer = tf.where(moves, tf.abs(speed), timer - 1)
        pos = tf.where(tf.reduce_any(hit, axis=1), 9, pos)
        move_timer = move_timer - tf.cast(move_timer > 0, tf.int32)
        terminate_timer = state['terminate_timer'] - 1
        next_state = dict(
            pos=pos,
            move_timer=move_timer,
            terminate_timer=terminate_timer,
            car_x=x,
            car_timer=timer,
            car_speed=speed,
        )
        return next_state, tf.cast(win, tf.float32), terminate_timer < 0

    def observation(self, state: State) -> tf.Tensor:
        """[B, 10, 10, 7] bool: chicken, car, speed1..speed5 trails."""
        pos, x, speed = state['pos'], state['car_x'], state['car_speed']
        rows = tf.broadcast_to(_ROWS[None], tf.shape(x))
        everywhere = tf.ones_like(x, tf.bool)
        back = tf.math.floormod(x - tf.where(speed > 0, 1, -1), 10)
        magnitude = tf.abs(speed)
        trails = [
            paint(rows, back, tf.equal(magnitude, k)) for k in range(1, 6)
        ]
        return stack_channels(
            [cells(pos, tf.fill(tf.shape(pos), 4)), paint(rows, x, everywhere)]
            + trails
        )
