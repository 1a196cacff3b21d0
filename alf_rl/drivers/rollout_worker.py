"""``RolloutWorker``: one actor of asynchronous training.

A worker owns a batch of B environments and a copy of the learner's
algorithm (built by the same ``algorithm_ctor``). It steps them with the
copy's ``rollout`` in a compiled loop and hands back what it collected as
an ``ActorMessage``: ``Experience`` of B environments over K steps,
time-major ``[K, B, ...]`` as the replay buffer reads it, with the version
of the weights it used. The loop is ``alf_rl.algorithms.unroll``'s, as in
the on-policy driver and replay training. It
never trains and never updates statistics: the learner owns the weights,
the normalizers' statistics and the metrics (it folds each message into
them), and publishes its variables to the workers (``set_weights``).

The same class runs in a thread of the learner's process
(``ThreadActorPool``) and inside a Ray actor process on any machine
(``alf_rl.distributed.ray_actors``): its inputs and outputs are plain
tensors or numpy arrays.

What is published: every variable of the algorithm except its optimizers'
(``publishable_variables``) and the variables its ``rollout`` itself
advances (``Algorithm.rollout_owned_variables``, e.g. DQN's exploration
schedule counter). Those flow the other way: each message carries the
worker's values, and the learner keeps the latest (so a checkpoint holds
them and a resumed run's workers continue from them).
"""

from typing import Any, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from alf_rl.algorithms.unroll import unroll
from alf_rl.data_structures import namedtuple
from alf_rl.drivers.driver import Driver
from alf_rl.specs import add_outer_dims
from alf_rl.utils.common import using_global_generator
from alf_rl.utils.nest import Nest

ActorMessage = namedtuple(
    'ActorMessage',
    [
        # Experience nest of [K, B, ...] (tensors or numpy arrays); env_id
        # holds global ids: actor_index * B + the local id.
        'experience',
        # int: the learner version of the weights that collected it.
        'policy_version',
        # int: which actor sent it.
        'actor_index',
        # list of the rollout-owned variables' values after the unroll.
        'rollout_owned',
    ],
    default_value=())


def _optimizer_variables(optimizer: Any) -> List[tf.Variable]:
    variables = getattr(optimizer, 'variables', [])
    return list(variables() if callable(variables) else variables)


def publishable_variables(algorithm: Any) -> List[tf.Variable]:
    """The variables a learner sends to its workers, in a fixed order.

    All of ``algorithm.variables`` (networks, target networks, normalizer
    statistics, temperature...) except its optimizers' slots and counters
    and except ``algorithm.rollout_owned_variables()``.

    Args:
        algorithm: an ``RLAlgorithm``.
    Returns:
        list of ``tf.Variable``; the learner and a worker built by the same
        constructor (and traced the same way) list corresponding variables
        in the same order.
    """
    excluded = set()
    for optimizer, _ in algorithm.get_optimizer_and_variable_sets():
        excluded.update(v.ref() for v in _optimizer_variables(optimizer))
    excluded.update(v.ref() for v in algorithm.rollout_owned_variables())
    return [v for v in algorithm.variables if v.ref() not in excluded]


def check_same_variables(learner: Sequence[Any], worker: Sequence[Any],
                         where: str) -> None:
    """Raises ``ValueError`` unless two variable lists match pairwise.

    Args:
        learner: ``(name, shape, dtype)`` triples (or variables) of the
            learner's published variables.
        worker: the same of a worker's.
        where: who is checked (for the message), e.g. ``'actor 3'``.
    """
    def _describe(v):
        if isinstance(v, tf.Variable):
            return (v.name, tuple(v.shape), v.dtype.name)
        return tuple(v)

    a, b = [_describe(v) for v in learner], [_describe(v) for v in worker]
    if len(a) != len(b):
        raise ValueError(
            "%s: its algorithm has %d published variables, the learner's "
            "%d: build both with the same algorithm_ctor and gin config" %
            (where, len(b), len(a)))
    for x, y in zip(a, b):
        if x[1:] != y[1:]:
            raise ValueError(
                "%s: variable %s is %s %s, the learner's %s is %s %s" %
                (where, y[0], y[2], list(y[1]), x[0], x[2], list(x[1])))


class _UnrollDriver(Driver):
    """A ``Driver`` whose steps leave the normalizers' statistics alone
    (the learner updates them from the messages)."""

    def _policy_step(self, time_step, policy_state, update_normalizers=True):
        return super()._policy_step(time_step, policy_state,
                                    update_normalizers=False)

    def unroll(self, time_step: Any, policy_state: Nest, num_steps: int,
               exp_spec: Nest) -> tuple:
        """``num_steps`` batched steps from ``(time_step, policy_state)``;
        graph-compatible.

        Args:
            time_step, policy_state: where the steps start ([B, ...]).
            num_steps: K, a Python int.
            exp_spec: the ``Experience`` spec without batch dim
                (``prepare_off_policy_specs``).
        Returns:
            ``(next time_step, next policy_state, experience [K, B, ...])``.
        """

        def _row(t, carry):
            time_step, policy_state = carry
            _, policy_step, state = self._policy_step(time_step, policy_state)
            exp = self._experience(time_step, policy_step, state)
            return (self._env_step(policy_step.action),
                    policy_step.state), exp

        (time_step, policy_state), exp = unroll(
            _row, (time_step, policy_state), num_rows=num_steps,
            row_spec=exp_spec, batch_size=self.batch_size)
        return time_step, policy_state, exp


class RolloutWorker(object):
    """Collects experience with a copy of the policy; never trains.

    Args:
        env: the worker's batched ``TFEnvironment`` (B environments); the
            worker owns it (``close()`` closes it).
        algorithm: a fresh algorithm built by the learner's
            ``algorithm_ctor`` for ``env``'s specs; the worker traces its
            ``rollout`` and ``train_step`` (``prepare_off_policy_specs``) so
            that it has the same variables as the learner.
        actor_index: this worker's index i; its environments' global ids
            are ``i * B .. i * B + B - 1``.
        unroll_length: K, steps per environment per message.
        seed: seed of the worker's own random generator (its actions do
            not draw from the process's global generator, which a learner
            in the same process uses).
        use_tf_functions: compile the unroll (False: eager, for debugging).

    Raises:
        ValueError: ``unroll_length`` < 1, or the environment does not
            match the algorithm's specs.
    """

    def __init__(self,
                 env: Any,
                 algorithm: Any,
                 actor_index: int,
                 unroll_length: int,
                 seed: int,
                 use_tf_functions: bool = True):
        if int(unroll_length) < 1:
            raise ValueError("RolloutWorker: unroll_length must be >= 1, "
                             "got %r" % (unroll_length, ))
        self._env = env
        self._algorithm = algorithm
        self._actor_index = int(actor_index)
        self._length = int(unroll_length)
        self._batch = env.batch_size
        self._generator = tf.random.Generator.from_seed(int(seed))
        self._exp_spec = algorithm.prepare_off_policy_specs(self._batch)
        self._driver = _UnrollDriver(env, algorithm, metrics=[],
                                     use_tf_functions=use_tf_functions)
        self._published = publishable_variables(algorithm)
        self._owned = list(algorithm.rollout_owned_variables())
        self._version = -1
        self._unroll_fn = self._compile(use_tf_functions)

    def _compile(self, use_tf_functions):
        """The unroll as a ``tf.function`` traced now, inside this
        worker's generator (see ``using_global_generator``)."""

        def _unroll(time_step, policy_state):
            return self._driver.unroll(time_step, policy_state, self._length,
                                       self._exp_spec)

        if not use_tf_functions:
            return _unroll
        fn = tf.function(_unroll, autograph=False)
        spec = tf.nest.map_structure(
            lambda s: tf.TensorSpec(s.shape, s.dtype),
            (add_outer_dims(self._env.time_step_spec(), [self._batch]),
             self._algorithm.get_initial_rollout_state(self._batch)))
        with using_global_generator(self._generator):
            fn.get_concrete_function(*spec)
        return fn

    @property
    def actor_index(self) -> int:
        """This worker's index."""
        return self._actor_index

    @property
    def batch_size(self) -> int:
        """B, the worker's number of environments."""
        return self._batch

    @property
    def env(self) -> Any:
        """The worker's ``TFEnvironment``."""
        return self._env

    @property
    def policy_version(self) -> int:
        """The version of the weights set last (-1 before any)."""
        return self._version

    def variable_signature(self) -> List[tuple]:
        """``(name, shape, dtype name)`` of the published variables, in
        order (for ``check_same_variables`` across processes)."""
        return [(v.name, tuple(v.shape), v.dtype.name)
                for v in self._published]

    def set_weights(self, version: int, weights: Sequence[Any],
                    rollout_owned: Optional[Sequence[Any]] = None) -> None:
        """Loads the learner's published variables.

        Args:
            version: the learner's version of ``weights`` (its update count).
            weights: values of ``publishable_variables(learner)`` in order
                (tensors or numpy arrays).
            rollout_owned: values for the rollout-owned variables (given
                once, when the worker starts or restarts), or None.
        Raises:
            ValueError: ``weights`` has the wrong number of entries.
        """
        if len(weights) != len(self._published):
            raise ValueError(
                "actor %d: got %d weights, its algorithm publishes %d" %
                (self._actor_index, len(weights), len(self._published)))
        for variable, value in zip(self._published, weights):
            variable.assign(value)
        if rollout_owned is not None:
            for variable, value in zip(self._owned, rollout_owned):
                variable.assign(value)
        self._version = int(version)

    def unroll(self, as_numpy: bool = False) -> ActorMessage:
        """Steps the environments ``unroll_length`` times.

        Episodes continue across calls (the worker keeps the last time step
        and policy state).

        Args:
            as_numpy: return numpy arrays (for another process) instead of
                tensors.
        Returns:
            ``ActorMessage`` whose experience has time-major
            [unroll_length, B, ...] leaves.
        Raises:
            tf.errors.OpError: the environment failed (its exception is in
                ``self.env.last_error``).
        """
        driver = self._driver
        if driver.loop_state is None:
            driver.reset()
        with using_global_generator(self._generator):
            time_step, state, exp = self._unroll_fn(*driver.loop_state)
        driver.loop_state = (time_step, state)
        offset = self._actor_index * self._batch
        exp = exp._replace(env_id=exp.env_id + offset)
        owned = [v.read_value() for v in self._owned]
        if as_numpy:
            exp = tf.nest.map_structure(lambda x: x.numpy(), exp)
            owned = [x.numpy() for x in owned]
        return ActorMessage(experience=exp,
                            policy_version=self._version,
                            actor_index=self._actor_index,
                            rollout_owned=owned)

    def close(self) -> None:
        """Closes the environment."""
        self._env.close()


def snapshot(variables: Sequence[tf.Variable],
             as_numpy: bool = False) -> List[Any]:
    """The current values of ``variables`` (copies a later update does not
    change).

    Args:
        variables: e.g. ``publishable_variables(algorithm)``.
        as_numpy: numpy arrays instead of tensors.
    Returns:
        list of tensors (or ``np.ndarray``) in the same order.
    """
    values = [tf.identity(v) for v in variables]
    return [np.asarray(x) for x in values] if as_numpy else values


def make_worker_seed(run_seed: int, actor_index: int) -> int:
    """The seed of actor ``actor_index`` of a run seeded ``run_seed``
    (its environments get ``this + local id``, its generator this)."""
    return (int(run_seed) + 1000003 * (int(actor_index) + 1)) % 2**31

