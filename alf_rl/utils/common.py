"""Small helpers shared by algorithms and drivers.

Everything here runs inside ``tf.function``/``tf.while_loop`` as well as
eagerly.
"""

import random

import numpy as np
import tensorflow as tf

from alf_rl.data_structures import StepType


def reset_state_if_necessary(state, initial_state, reset_mask):
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


def set_random_seed(seed):
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


def make_stateless_seed():
    """A [2] int32 seed tensor for stateless sampling.

    Drawn from the global ``tf.random.Generator``, whose state is a variable:
    the sequence of seeds is the same eagerly and inside a ``tf.function``.
    """
    seed = tf.random.get_global_generator().make_seeds(1)[:, 0]
    # TFP's stateless samplers take int32 seeds.
    return tf.cast(seed % (2**31 - 1), tf.int32)


def valid_step_mask(step_type):
    """[T, B] float32 mask that is 0 at LAST steps and 1 elsewhere.

    Nothing is learned from a LAST step: the action chosen there is ignored
    by the environment (it auto-resets).
    """
    return tf.cast(tf.not_equal(step_type, StepType.LAST), tf.float32)


def trace_outputs(fn, *input_specs):
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


def check_feed_forward(owner, networks):
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


def ou_noise_state_spec(action_spec):
    """float32 specs shaped like ``action_spec``: one OU process per action."""
    return tf.nest.map_structure(lambda s: tf.TensorSpec(s.shape, tf.float32),
                                 action_spec)
