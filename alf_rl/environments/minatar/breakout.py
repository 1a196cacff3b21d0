"""MinAtar Breakout in TensorFlow ops.

A paddle on the bottom row bounces a ball, moving along diagonals, into 3
rows of bricks; +1 per brick broken; when the ball reaches the bottom row
with no brick left, 3 new rows appear; the episode ends when the ball
passes the paddle. Channels: paddle, ball, trail (the ball's previous
cell), brick. As MinAtar's ``breakout.py``, including its quirks: a ball
that strikes a brick on two consecutive frames passes into the second one
without breaking it.
"""

from typing import Tuple

import tensorflow as tf

from alf_rl.environments.minatar.game import (
    NOOP,
    LEFT,
    RIGHT,
    SIZE,
    MinAtarGame,
    State,
    cells,
    move_horizontally,
    pick,
    stack_channels,
)

# Direction d in 0..3: (dx, dy) = (-1, -1), (1, -1), (1, 1), (-1, 1).
_DX = (-1, 1, 1, -1)
_DY = (-1, -1, 1, 1)
_FLIP_X = (1, 0, 3, 2)
_FLIP_Y = (3, 2, 1, 0)
_FLIP_BOTH = (2, 3, 0, 1)


def _full_wall(batch_size: tf.Tensor) -> tf.Tensor:
    """[B, 100] bool: bricks in rows 1 to 3."""
    row = tf.constant(
        [r in (1, 2, 3) for r in range(SIZE) for _ in range(SIZE)]
    )
    return tf.broadcast_to(row[None], [batch_size, SIZE * SIZE])


def _strike(
    bricks: tf.Tensor, cell: tf.Tensor, top: tf.Tensor, strike: tf.Tensor
) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """The ball entering ``cell`` [B, 100] (unless ``top``): returns the
    bricks [B, 100] after it, whether a brick is there and whether it
    breaks ([B] bool; not on a second strike in a row)."""
    brick = tf.logical_and(
        tf.logical_not(top),
        tf.reduce_any(tf.logical_and(cell, bricks), axis=1),
    )
    hit = tf.logical_and(brick, tf.logical_not(strike))
    bricks = tf.logical_and(
        bricks, tf.logical_not(tf.logical_and(cell, hit[:, None]))
    )
    return bricks, brick, hit


class Breakout(MinAtarGame):
    """MinAtar's Breakout (no difficulty ramp; one draw per reset: the
    ball starts at (3, 0) moving down-right or at (3, 9) down-left).

    State: ``ball_x, ball_y, ball_dir, last_x, last_y, pos`` [B] int32,
    ``strike`` [B] bool, ``bricks`` [B, 100] bool (row-major cells).
    """

    name = 'breakout'
    channels = ('paddle', 'ball', 'trail', 'brick')
    minimal_actions = (NOOP, LEFT, RIGHT)
    num_step_draws = 0
    num_reset_draws = 1

    def initial_state(self, draws: tf.Tensor) -> State:
        """The ball in row 3 at either wall, the paddle at column 4."""
        right = draws[:, 0] >= 0.5  # randint(2) == 1
        ball_x = tf.where(right, 9, 0)
        zeros = tf.zeros_like(ball_x)
        return dict(
            ball_x=ball_x,
            ball_y=zeros + 3,
            ball_dir=tf.where(right, 3, 2),
            last_x=ball_x,
            last_y=zeros + 3,
            pos=zeros + 4,
            strike=tf.zeros_like(right),
            bricks=_full_wall(tf.shape(draws)[0]),
        )

    def step(
        self, state: State, action: tf.Tensor, draws: tf.Tensor
    ) -> Tuple[State, tf.Tensor, tf.Tensor]:
        """One frame: paddle, then ball (walls, bricks, paddle)."""
        pos = move_horizontally(state['pos'], action)
        x, y, d = state['ball_x'], state['ball_y'], state['ball_dir']
        new_x, new_y = x + pick(_DX, d), y + pick(_DY, d)
        side = tf.logical_or(new_x < 0, new_x > SIZE - 1)
        new_x = tf.clip_by_value(new_x, 0, SIZE - 1)
        d = tf.where(side, pick(_FLIP_X, d), d)
        top = new_y < 0
        cell = cells(tf.maximum(new_y, 0), new_x)
        bricks, brick, hit = _strike(
            state['bricks'], cell, top, state['strike']
        )
        bottom = tf.logical_and(
            tf.logical_not(tf.logical_or(top, brick)),
            tf.equal(new_y, SIZE - 1),
        )
        refill = tf.logical_and(
            bottom, tf.logical_not(tf.reduce_any(bricks, axis=1))
        )
        bricks = tf.logical_or(
            bricks,
            tf.logical_and(_full_wall(tf.shape(pos)[0]), refill[:, None]),
        )
        straight = tf.logical_and(bottom, tf.equal(x, pos))
        corner = tf.logical_and(
            tf.logical_and(bottom, tf.logical_not(straight)),
            tf.equal(new_x, pos),
        )
        terminal = tf.logical_and(
            bottom, tf.logical_not(tf.logical_or(straight, corner))
        )
        flip_y = tf.logical_or(top, tf.logical_or(hit, straight))
        d = tf.where(
            flip_y, pick(_FLIP_Y, d), tf.where(corner, pick(_FLIP_BOTH, d), d)
        )
        back = tf.logical_or(hit, tf.logical_or(straight, corner))
        new_y = tf.where(back, y, tf.maximum(new_y, 0))
        next_state = dict(
            ball_x=new_x,
            ball_y=new_y,
            ball_dir=d,
            last_x=x,
            last_y=y,
            pos=pos,
            strike=brick,
            bricks=bricks,
        )
        return next_state, tf.cast(hit, tf.float32), terminal

    def observation(self, state: State) -> tf.Tensor:
        """[B, 10, 10, 4] bool: paddle, ball, trail, brick."""
        pos = state['pos']
        return stack_channels(
            [
                cells(tf.fill(tf.shape(pos), SIZE - 1), pos),
                cells(state['ball_y'], state['ball_x']),
                cells(state['last_y'], state['last_x']),
                state['bricks'],
            ]
        )
