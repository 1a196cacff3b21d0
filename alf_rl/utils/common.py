"""Small helpers shared by algorithms and drivers.

Everything here runs inside ``tf.function``/``tf.while_loop`` as well as
eagerly.
"""

import contextlib
import hashlib
import random
from typing import Any, Callable, Iterable, Iterator, Optional, Tuple, Union

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


def make_stateless_seed(
        generator: Optional[tf.random.Generator] = None) -> tf.Tensor:
    """A [2] int32 seed tensor for stateless sampling.

    Drawn from ``generator`` or else the global ``tf.random.Generator``,
    whose state is a variable: the sequence of seeds is the same eagerly and
    inside a ``tf.function``. A ``tf.function`` captures the generator that
    is global when it is traced (see ``using_global_generator``); restoring
    that generator's state from a checkpoint (it is a trackable, its state a
    variable assigned in place) also resets what such a function draws.

    Args:
        generator: the generator to draw from; ``None`` for the global one.

    Returns:
        [2] int32 tensor, each entry in ``[0, 2**31 - 2]``.
    """
    if generator is None:
        generator = tf.random.get_global_generator()
    seed = generator.make_seeds(1)[:, 0]
    # TFP's stateless samplers take int32 seeds.
    return tf.cast(seed % (2**31 - 1), tf.int32)


@contextlib.contextmanager
def using_global_generator(
        generator: tf.random.Generator) -> Iterator[tf.random.Generator]:
    """Makes ``generator`` the global generator inside a ``with`` block.

    Code that draws from the global generator (``make_stateless_seed()``)
    draws from ``generator`` instead while the block runs, and a
    ``tf.function`` traced inside the block keeps drawing from
    ``generator`` at every later call, inside the block or not (the
    generator is captured at trace time; TensorFlow's
    ``set_global_generator`` caveat). So run a compiled function that should
    use its own random numbers (e.g. evaluation) always inside such a block,
    and trace it there first; the previous global generator is untouched
    and comes back on exit, also after an exception.

    Args:
        generator: a ``tf.random.Generator``.

    Yields:
        ``generator``.

    Raises:
        TypeError: if ``generator`` is not a ``tf.random.Generator``.
    """
    if not isinstance(generator, tf.random.Generator):
        raise TypeError("using_global_generator: expected a "
                        "tf.random.Generator, got %s" %
                        type(generator).__name__)
    previous = tf.random.get_global_generator()
    tf.random.set_global_generator(generator)
    try:
        yield generator
    finally:
        tf.random.set_global_generator(previous)


def derive_seed(salt: int) -> int:
    """An int seed determined by the global generator's state and ``salt``.

    Reads the global generator's state without drawing from it, so creating
    a generator from this seed (e.g. the evaluation driver's own) leaves the
    global sequence, and hence a seeded training run, unchanged; under a
    fixed ``set_random_seed`` the result is fixed too.

    Args:
        salt: int distinguishing the users of derived seeds.

    Returns:
        int in ``[0, 2**63)``.
    """
    state = tf.random.get_global_generator().state.numpy()
    digest = hashlib.sha256(state.tobytes() + b'/%d' % int(salt)).digest()
    return int.from_bytes(digest[:8], 'little') >> 1


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


class NestState(tf.__internal__.tracking.Trackable):
    """Checkpoints a nest of tensors held outside variables.

    For state a Python object keeps in attributes between compiled calls,
    e.g. a driver's last ``TimeStep`` and policy state: writing a checkpoint
    saves ``get_fn()``, restoring one calls ``set_fn`` with the saved nest.
    (Variables are checkpointed directly; this is for the rest.)

    Args:
        spec: nest of ``tf.TensorSpec`` with full shapes (e.g. [B, ...]).
        get_fn: ``() -> nest`` matching ``spec``, or ``None`` when there is
            no state yet: then zeros are saved, marked empty, and restoring
            them does not call ``set_fn``.
        set_fn: ``(nest) -> None``, called eagerly while restoring.
    """

    def __init__(self, spec: Nest, get_fn: Callable[[], Optional[Nest]],
                 set_fn: Callable[[Nest], None]):
        self._spec = spec
        self._get_fn = get_fn
        self._set_fn = set_fn

    def _serialize_to_tensors(self):
        value = self._get_fn()
        with tf.init_scope():
            if value is None:
                flat = [tf.zeros(s.shape, s.dtype)
                        for s in tf.nest.flatten(self._spec)]
            else:
                # Lists and tuples alike (e.g. an LSTM's state).
                tf.nest.assert_same_structure(value, self._spec,
                                              check_types=False)
                flat = [tf.convert_to_tensor(x)
                        for x in tf.nest.flatten(value)]
            tensors = {'%d' % i: x for i, x in enumerate(flat)}
            tensors['has_value'] = tf.constant(value is not None)
        return tensors

    def _restore_from_tensors(self, restored_tensors):
        if not bool(restored_tensors['has_value']):
            return
        flat = [restored_tensors['%d' % i]
                for i in range(len(tf.nest.flatten(self._spec)))]
        self._set_fn(tf.nest.pack_sequence_as(self._spec, flat))
