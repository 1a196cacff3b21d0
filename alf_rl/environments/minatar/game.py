"""The functional core every MinAtar game in TensorFlow ops shares.

A ``MinAtarGame`` is stateless: ``initial_state(draws)``,
``step(state, action, draws)`` and ``observation(state)`` map batched
tensors to batched tensors. ``state`` is a dict of [B, ...] tensors (int32
or bool); ``draws`` are uniform float32 numbers in [0, 1) that stand for
the game's ``numpy.random.RandomState`` calls: column k is the k-th number
MinAtar's Python code would draw in that call (``rand()`` as is,
``randint(n)`` as ``floor(u * n)``), so a test can feed both the same
numbers (``tests/environments/test_minatar.py``).
"""

from typing import Dict, Sequence, Tuple, Union

import tensorflow as tf

#: A game state: named [B, ...] int32 or bool tensors.
State = Dict[str, tf.Tensor]

# MinAtar's full action set, in its order ('n', 'l', 'u', 'r', 'd', 'f'):
# no-op, left, up, right, down, fire. Games see actions as indices into it.
NOOP, LEFT, UP, RIGHT, DOWN, FIRE = range(6)

#: The grid is 10 x 10 cells.
SIZE = 10


class MinAtarGame(object):
    """One MinAtar game as pure TensorFlow functions of batched tensors.

    Attributes:
        name: MinAtar's module name, e.g. ``'breakout'``.
        channels: the names of the observation channels, in order.
        minimal_actions: indices (into the full action set) of MinAtar's minimal
            action set for the game.
        num_step_draws: uniform numbers ``step`` consumes per environment.
        num_reset_draws: uniform numbers ``initial_state`` consumes.

    Args:
        ramping: MinAtar's ``difficulty_ramping`` (games without a ramp
            ignore it).
    """

    name = ''
    channels: Tuple[str, ...] = ()
    minimal_actions: Tuple[int, ...] = ()
    num_step_draws = 0
    num_reset_draws = 0

    def __init__(self, ramping: bool = True):
        self.ramping = bool(ramping)

    def initial_state(self, draws: tf.Tensor) -> State:
        """A batch of start states, as MinAtar's ``Env.reset``.

        Args:
            draws: [B, num_reset_draws] float32 in [0, 1) (B is read from
                its shape even when ``num_reset_draws`` is 0).

        Returns:
            The state dict, [B, ...] tensors.
        """
        raise NotImplementedError()

    def step(
        self, state: State, action: tf.Tensor, draws: tf.Tensor
    ) -> Tuple[State, tf.Tensor, tf.Tensor]:
        """One frame of MinAtar's ``Env.act`` (after sticky actions).

        Args:
            state: the state dict, [B, ...] tensors.
            action: [B] int32 indices into MinAtar's full action set.
            draws: [B, num_step_draws] float32 in [0, 1).

        Returns:
            ``(next_state, reward, terminal)``: the state dict, [B] float32
            and [B] bool.
        """
        raise NotImplementedError()

    def observation(self, state: State) -> tf.Tensor:
        """MinAtar's ``Env.state()`` for a batch.

        Args:
            state: the state dict, [B, ...] tensors.

        Returns:
            [B, 10, 10, C] bool, C = ``len(channels)``.
        """
        raise NotImplementedError()


def randint(u: tf.Tensor, n: Union[int, tf.Tensor]) -> tf.Tensor:
    """``floor(u * n)`` in float32, as int32: ``randint(n)`` from a
    uniform ``u``.

    Args:
        u: [...] float32 in [0, 1).
        n: the number of outcomes, an int or a [...] int32 tensor.

    Returns:
        [...] int32 in [0, n).
    """
    return tf.cast(tf.floor(u * tf.cast(n, tf.float32)), tf.int32)


def cells(row: tf.Tensor, col: tf.Tensor) -> tf.Tensor:
    """One-hot [..., 100] bool of the cells ``(row, col)`` on the grid.

    Args:
        row: [...] int32 in [0, 10).
        col: [...] int32 in [0, 10).

    Returns:
        [..., 100] bool, True at ``row * 10 + col``.
    """
    # A comparison with a constant range: one fused XLA op (tf.one_hot
    # lowers to more).
    index = (row * SIZE + col)[..., None]
    return tf.equal(index, tf.range(SIZE * SIZE))


def paint(row: tf.Tensor, col: tf.Tensor, valid: tf.Tensor) -> tf.Tensor:
    """[B, 100] bool: the cells of the valid objects among N.

    Args:
        row: [B, N] int32.
        col: [B, N] int32.
        valid: [B, N] bool; invalid objects (and their possibly out of
            grid coordinates) paint nothing.

    Returns:
        [B, 100] bool.
    """
    hot = cells(tf.where(valid, row, 0), tf.where(valid, col, 0))
    return tf.reduce_any(tf.logical_and(hot, valid[:, :, None]), axis=1)


def stack_channels(planes: Sequence[tf.Tensor]) -> tf.Tensor:
    """[B, 10, 10, C] bool from C planes of [B, 100] (or [B, 10, 10]).

    Args:
        planes: C bool tensors, each [B, 100] or [B, 10, 10].

    Returns:
        [B, 10, 10, C] bool.
    """
    flat = [tf.reshape(p, [-1, SIZE * SIZE]) for p in planes]
    return tf.reshape(tf.stack(flat, axis=-1), [-1, SIZE, SIZE, len(flat)])


def pick(table: Sequence[int], index: tf.Tensor) -> tf.Tensor:
    """``table[index]`` for a small constant Python table.

    Args:
        table: ints.
        index: [...] int32 in [0, len(table)).

    Returns:
        [...] int32.
    """
    return tf.gather(tf.constant(table, tf.int32), index)


def move_horizontally(x: tf.Tensor, action: tf.Tensor) -> tf.Tensor:
    """Column ``x`` [B] int32 after ``action`` [B]: one left or right,
    within the grid (other actions leave it)."""
    left = tf.maximum(x - 1, 0)
    right = tf.minimum(x + 1, SIZE - 1)
    return tf.where(
        tf.equal(action, LEFT),
        left,
        tf.where(tf.equal(action, RIGHT), right, x),
    )
