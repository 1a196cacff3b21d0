"""Small helpers shared by algorithms and drivers.

Everything here runs inside ``tf.function``/``tf.while_loop`` as well as
eagerly.
"""

import random
from typing import Any, Callable, Iterable, Optional, Tuple, Union

import numpy as np
import tensorflow as tf

from alf_rl.data_structures import StepType
from alf_rl.utils.nest import Nest


def reset_state_if_necessary(state: Nest, initial_state: Nest,
                             reset_mask: tf.Tensor) -> Nest:
    """Replaces rows of ``state`` by ``initial_state`` where ``reset_mask``.

    Args:
        state: nest of [B, ...] tensors.
        initial_state: nest of [B, ...] tensors, same structure.
        reset_mask: [B] bool, usually ``time_step.is_first()``.
    Returns:
        The nest with rows reset.
    """

    def _reset(s, i):
        mask = tf.reshape(reset_mask, [-1] + [1] * (s.shape.rank - 1))
        return tf.where(mask, i, s)

    return tf.nest.map_structure(_reset, state, initial_state)


def set_random_seed(seed: Optional[int]) -> int:
    """Seeds Python, numpy and TensorFlow (global seed and generator).

    With a fixed seed, compiled and eager runs draw the same random numbers,
    because sampling uses stateless ops seeded from the global
    ``tf.random.Generator`` (see ``make_stateless_seed``).

    Args:
        seed: int, or None to draw a fresh seed.
    Returns:
        The seed used (int).
    """
    if seed is None:
        seed = random.SystemRandom().randint(0, 2**31 - 1)
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed % (2**32))
    tf.random.set_seed(seed)
    tf.random.set_global_generator(tf.random.Generator.from_seed(seed))
    return seed


def make_stateless_seed() -> tf.Tensor:
    """A [2] int32 seed tensor for stateless sampling.

    Drawn from the global ``tf.random.Generator``, whose state is a variable:
    the sequence of seeds is the same eagerly and inside a ``tf.function``.

    Returns:
        [2] int32 tensor, each entry in ``[0, 2**31 - 2]``.
    """
    seed = tf.random.get_global_generator().make_seeds(1)[:, 0]
    # TFP's stateless samplers take int32 seeds.
    return tf.cast(seed % (2**31 - 1), tf.int32)


def valid_step_mask(step_type: tf.Tensor) -> tf.Tensor:
    """A float32 mask that is 0 at LAST steps and 1 elsewhere.

    Nothing is learned from a LAST step: the action chosen there is ignored
    by the environment (it auto-resets).

    Args:
        step_type: [T, B] (or any shape) int32 ``StepType`` values.

    Returns:
        float32 tensor shaped like ``step_type``.
    """
    return tf.cast(tf.not_equal(step_type, StepType.LAST), tf.float32)


def trace_outputs(fn: Callable[..., Nest], *input_specs: Nest) -> Nest:
    """The outputs of ``fn`` traced symbolically, without running any op.

    Finds info specs by tracing instead of dry-running a step on zeros
    (which would mutate normalizers and create variables as a side effect).
    ``fn`` is traced once with ``tf.function.get_concrete_function`` in a
    throw-away graph; read only structure, shapes and dtypes from the result
    (e.g. with ``ops.distributions.extract_spec``).

    Args:
        fn: a Python callable taking nests of tensors.
        *input_specs: nests of ``tf.TensorSpec`` with the batch dim added
            (use ``None`` for it).
    Returns:
        The nest ``fn`` returned, holding symbolic tensors/distributions.
    """
    captured = []

    def _wrapped(*args):
        captured.append(fn(*args))
        return tf.constant(0)

    tf.function(_wrapped, autograph=False).get_concrete_function(*input_specs)
    return captured[0]


def loop_traced_once(
        step_fn: Callable[[tf.Tensor, Nest], Tuple[Nest, Nest]],
        carry: Nest,
        num_steps: Union[int, tf.Tensor],
        keep_going: Optional[Callable[[Nest], tf.Tensor]] = None
) -> Tuple[Nest, Nest, tf.Tensor]:
    """``tf.while_loop`` over ``step_fn`` that traces ``step_fn`` once.

    A loop that must return the last step's result needs the result's
    structure before the loop starts; peeling the first step off the loop
    for it traces ``step_fn`` twice (double tracing and graph-optimization
    time for a large step, e.g. a whole update). Here ``step_fn`` is traced
    once as a ``tf.function`` whose output structure gives the initial
    zeros, and the loop body calls it.

    Args:
        step_fn: ``(i, carry) -> (carry, result)``; ``i`` an int32 scalar
            tensor, ``carry`` and ``result`` nests of tensors with static
            shapes (``carry`` keeps its structure and shapes).
        carry: the initial carry (may be ``()``).
        num_steps: int or int32 scalar tensor, the most steps to run; at
            least one step always runs.
        keep_going: optional ``(result) -> scalar bool tensor``, checked
            after each step; the loop stops once it is false.

    Returns:
        ``(carry, result, steps_done)``: the final carry, the last step's
        result and an int32 scalar. Eagerly, a Python loop.
    """

    def _go(result):
        return tf.constant(True) if keep_going is None else keep_going(result)

    if tf.executing_eagerly():
        i = 0
        while True:
            carry, result = step_fn(tf.constant(i), carry)
            i += 1
            if i >= int(num_steps) or not bool(_go(result)):
                return carry, result, tf.constant(i)

    inner = tf.function(step_fn, autograph=False)
    outputs = inner.get_concrete_function(tf.constant(0),
                                          carry).structured_outputs
    zeros = tf.nest.map_structure(lambda x: tf.zeros(x.shape, x.dtype),
                                  outputs[1])

    def _body(i, carry, result, go):
        carry, result = inner(i, carry)
        return i + 1, carry, result, _go(result)

    i, carry, result, _ = tf.while_loop(
        lambda i, carry, result, go: tf.logical_and(
            tf.logical_or(tf.equal(i, 0), go), i < num_steps),
        _body, (tf.constant(0), carry, zeros, tf.constant(True)))
    return carry, result, i


def check_feed_forward(owner: str, networks: Iterable[Any]) -> None:
    """Raises ``ValueError`` if any of ``networks`` keeps a recurrent state.

    Args:
        owner: name of the algorithm, for the message.
        networks: iterable of networks with a ``state_spec``.
    """
    for net in networks:
        if tf.nest.flatten(net.state_spec):
            raise ValueError(
                "%s: network %s is recurrent (state_spec %s); only "
                "feed-forward networks are supported" %
                (owner, net.name, net.state_spec))


def ou_noise_state_spec(action_spec: Nest) -> Nest:
    """float32 specs shaped like ``action_spec``: one OU process per action.

    Args:
        action_spec: nest of specs of one action.

    Returns:
        Matching nest of float32 ``tf.TensorSpec`` (the OU noise state of
        one environment; [B, ...] at run time).
    """
    return tf.nest.map_structure(lambda s: tf.TensorSpec(s.shape, tf.float32),
                                 action_spec)
