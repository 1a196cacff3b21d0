"""``Driver``: the step loop shared by the on-policy and off-policy drivers.

One batched step: reset the policy state of environments at FIRST steps,
``transform_timestep``, ``algorithm.rollout``, step the environment, update
the metrics/observers, and hand an ``Experience`` (raw time step, action,
rollout info as distribution parameters, and the state passed into rollout
when the algorithm uses it) to the experience observers (a replay buffer).

What ``rollout`` returns is checked once per trace (a ``PolicyStep`` whose
action matches ``action_spec``; see ``check_policy_step``). In-graph checks
of algorithms (``tf.debugging.Assert`` whose message starts with
``'alf_rl: '``, e.g. ``ActorCriticAlgorithm.strict_action_bounds``) come
out of the driver's compiled calls as a one-line ``ValueError`` instead of
a TensorFlow ``InvalidArgumentError``.
"""

import functools
import re
from typing import Any, Callable, List, Optional, Sequence, Tuple

import tensorflow as tf

from alf_rl import specs as alf_specs
from alf_rl.algorithms.algorithm import describe_returned
from alf_rl.data_structures import (LossInfo, PolicyStep, TimeStep,
                                    make_experience)
from alf_rl.metrics import default_metrics
from alf_rl.ops import distributions as dist_ops
from alf_rl.utils.common import loop_traced_once, reset_state_if_necessary
from alf_rl.utils.loss_checks import XLA_ITERATION, check_loss_finite
from alf_rl.utils.nest import (Nest, assert_same_structure,
                               check_nest_matches_spec)


def check_env_matches_algorithm(env: Any, algorithm: Any) -> None:
    """Raises ``ValueError`` if the env's specs differ from the algorithm's.

    Args:
        env: a ``TFEnvironment``.
        algorithm: an ``RLAlgorithm``.
    """
    for name, env_spec, alg_spec in (
        ('observation', env.observation_spec(), algorithm.observation_spec),
        ('action', env.action_spec(), algorithm.action_spec)):
        assert_same_structure(env_spec, alg_spec, 'environment %s_spec' % name,
                              'algorithm %s_spec' % name, prefix=name)
        for e, a in zip(tf.nest.flatten(env_spec), tf.nest.flatten(alg_spec)):
            if e.shape != a.shape or e.dtype != a.dtype:
                raise ValueError(
                    "%s_spec mismatch: the environment has %s but the "
                    "algorithm was built for %s" % (name, e, a))


def check_policy_step(policy_step: Any, algorithm: Any,
                      method: str) -> None:
    """Checks (at trace time) what a step function returned.

    Args:
        policy_step: what ``method`` returned; must be a ``PolicyStep``
            whose ``action`` nest matches ``action_spec`` with a leading
            batch dim [B, ...] and whose ``state`` has the structure of the
            method's state spec.
        algorithm: the algorithm (for its specs).
        method: ``'rollout'`` or ``'predict'`` (for the message).

    Raises:
        TypeError: ``policy_step`` is not a ``PolicyStep``.
        ValueError: the action or the state does not match the specs,
            naming the path.
    """
    where = "%s.%s" % (type(algorithm).__name__, method)
    if not isinstance(policy_step, PolicyStep):
        raise TypeError(
            "%s must return a PolicyStep(action, state, info), got %s%s" %
            (where, describe_returned(policy_step),
             " -- wrap the action: PolicyStep(action=..., state=state)"
             if tf.is_tensor(policy_step) else ""))
    hint = ("%s must return actions shaped [B, ...] with the dtype of "
            "action_spec" % where)
    check_nest_matches_spec(policy_step.action, algorithm.action_spec,
                            'action', outer_rank=1, hint=hint)
    state_spec = getattr(algorithm, method + '_state_spec', None)
    if state_spec is not None:
        assert_same_structure(policy_step.state, state_spec,
                              '%s state' % where, '%s_state_spec' % method,
                              prefix='state')


# 'assertion failed: [alf_rl: ...] [3.7] [0]' (graph) or
# "... Summarized data: b'alf_rl: ...'\n3.7\n0" (eager).
_CHECK_IN_GRAPH = re.compile(
    r"assertion failed: \[(alf_rl: .*?)\]((?: \[[^\[\]\n]*\])*) *(?:\n|$)")
_CHECK_EAGER = re.compile(
    r"Summarized data: b?['\"]?(alf_rl: [^\n]*?)['\"]?((?:\n[^\n]*)*)$")


def failed_check_message(error: tf.errors.OpError) -> Optional[str]:
    """The one-line message of an algorithm's failed in-graph check.

    Args:
        error: what a compiled (or eager) call raised.
    Returns:
        ``'<message> <data values, comma-separated>'`` for a
        ``tf.debugging.Assert`` whose message starts with ``'alf_rl: '``
        (the prefix removed), else ``None``.
    """
    text = getattr(error, 'message', str(error))
    match = _CHECK_IN_GRAPH.search(text)
    if match:
        data = re.findall(r"\[([^\]]*)\]", match.group(2))
    else:
        match = _CHECK_EAGER.search(text)
        if not match:
            return None
        data = [d for d in match.group(2).split('\n') if d.strip()]
    # The graph's text escapes quotes ("policy\\'s").
    message = match.group(1)[len('alf_rl: '):].replace("\\'", "'")
    return message + (' ' + ', '.join(d.strip() for d in data)
                      if data else '')


def continue_condition(
        stop_fn: Optional[Callable[[], tf.Tensor]] = None
) -> Callable[[Any], tf.Tensor]:
    """When a loop of training iterations goes on after an iteration.

    Args:
        stop_fn: optional ``() -> scalar bool`` (a step budget or a score
            reached).
    Returns:
        ``(result) -> scalar bool``: the loss of a ``LossInfo`` result is
        finite (a NaN loss stops the loop at the iteration that produced
        it) and ``stop_fn()`` is false.
    """

    def _continue(result):
        ok = tf.constant(True)
        if isinstance(result, LossInfo):
            ok = tf.reduce_all(tf.math.is_finite(result.loss))
        if stop_fn is not None:
            ok = tf.logical_and(ok, tf.logical_not(stop_fn()))
        return ok

    return _continue


class Driver(object):
    """Steps ``algorithm.rollout`` in a batched ``TFEnvironment``.

    Args:
        env: a batched ``TFEnvironment`` (B = ``env.batch_size``).
        algorithm: an ``RLAlgorithm`` whose specs match ``env``.
        metrics: in-graph metrics updated with every time step; defaults to
            ``alf_rl.metrics.default_metrics(B)``.
        observers: extra callables ``observer(time_step)`` run in the graph.
        exp_observers: callables ``observer(experience)`` run in the graph
            with each step's ``Experience`` ([B, ...] leaves).
        use_tf_functions: compile the loops; False runs them eagerly.
        jit_compile: XLA-compile the loops when the environment is
            TensorFlow ops only (``env.in_graph``, e.g. ``suite_tf``);
            ignored for ``TFPyEnvironment``, whose Python callback XLA
            cannot compile. XLA drops ``CheckNumerics``, so the loss a
            compiled loop returns is checked outside it.
    """

    def __init__(self,
                 env: Any,
                 algorithm: Any,
                 metrics: Optional[List[Any]] = None,
                 observers: Sequence[Callable[[Any], Any]] = (),
                 exp_observers: Sequence[Callable[[Any], Any]] = (),
                 use_tf_functions: bool = True,
                 jit_compile: bool = False):
        check_env_matches_algorithm(env, algorithm)
        self._env = env
        self._algorithm = algorithm
        self._batch_size = env.batch_size
        self._metrics = (default_metrics(self._batch_size)
                         if metrics is None else list(metrics))
        self._observers = list(self._metrics) + list(observers)
        self._exp_observers = list(exp_observers)
        self._use_tf_functions = use_tf_functions
        self._jit_compile = bool(jit_compile) and env.in_graph
        self._time_step = None
        self._policy_state = None
        self._rollout_fns = {}
        self._rollout_checked = False

    @property
    def jit_compiled(self) -> bool:
        """Whether the driver's loops are XLA-compiled."""
        return self._jit_compile and self._use_tf_functions

    def _compile(self, fn):
        """``fn`` as a ``tf.function`` (XLA-compiled if ``jit_compiled``).

        ``LossInfo`` outputs of ``fn`` (a tuple) get their ``loss``
        checked for NaN/Inf outside the XLA cluster (XLA drops
        ``CheckNumerics``), eagerly after each call: a ``tf.function``
        around the XLA call would have Grappler rewrite the whole iteration
        before XLA sees it, ~0.4 s more of every run's first call
        (``ppo_tf_cart_pole.gin``, warm XLA cache) for the same numbers.
        """
        if not self._use_tf_functions:
            return fn
        if not self.jit_compiled:
            return tf.function(fn, autograph=False)
        inner = tf.function(fn, autograph=False, jit_compile=True)
        name = self._algorithm.name

        def _check(x):
            if not isinstance(x, LossInfo):
                return x
            return x._replace(loss=check_loss_finite(x.loss, name,
                                                     xla=XLA_ITERATION))

        def _checked(*args):
            return tuple(_check(x) for x in inner(*args))

        # The same call as one graph, to inspect it (not used to run).
        _checked.get_concrete_function = tf.function(  # type: ignore
            _checked, autograph=False).get_concrete_function
        return _checked

    def _repeat(self, iteration_fn, stop_fn=None):
        """Wraps one iteration into a loop of up to N iterations in one graph.

        Running several iterations per (compiled) call removes the per-call
        cost of dispatching a ``tf.function`` and of the trainer's Python
        loop, which dominates when an iteration is a single environment step
        and one small update (SAC, DQN, ...).

        Args:
            iteration_fn: ``(time_step, policy_state, *args) -> (time_step,
                policy_state, result)``; ``result`` is a nest of tensors of
                static shapes (e.g. a reduced ``LossInfo``).
            stop_fn: optional ``() -> scalar bool tensor`` evaluated in the
                graph after every iteration; the loop stops once it is true
                (e.g. a step budget or a score was reached).

        Returns:
            ``fn(time_step, policy_state, num_iterations, *args) ->
            (time_step, policy_state, result, iterations_done)``: runs
            ``iteration_fn`` once, then again while ``iterations_done <
            num_iterations``, ``stop_fn()`` is false and the loss of a
            ``LossInfo`` result is finite (so a NaN loss stops the loop at
            the iteration that produced it). ``result`` is the last
            iteration's; ``iterations_done`` is an int32 scalar. The body is
            traced once.
        """
        _continue = continue_condition(stop_fn)

        def _loop(time_step, policy_state, num_iterations, *args):

            def _step(i, carry):
                time_step, policy_state, result = iteration_fn(*carry, *args)
                return (time_step, policy_state), result

            (time_step, policy_state), result, done = loop_traced_once(
                _step, (time_step, policy_state), num_iterations,
                keep_going=_continue)
            return time_step, policy_state, result, done

        return _loop

    def _call_repeated(self, fn, num_iterations, *args):
        """Calls a compiled ``_repeat`` loop on the driver's state.

        Returns:
            ``(result, iterations_done)`` of the loop.
        """
        if self._time_step is None:
            self.reset()
        (self._time_step, self._policy_state, result,
         done) = self._call_checked(fn, self._time_step, self._policy_state,
                                    tf.constant(num_iterations, tf.int32),
                                    *args)
        return result, done

    @staticmethod
    def _call_checked(fn, *args):
        """``fn(*args)``; an algorithm's failed in-graph check (see the
        module docstring) becomes a one-line ``ValueError``."""
        try:
            return fn(*args)
        except tf.errors.InvalidArgumentError as e:
            message = failed_check_message(e)
            if message is None:
                raise
            raise ValueError(message) from None

    @property
    def metrics(self) -> List[Any]:
        """The in-graph metrics this driver updates."""
        return self._metrics

    @property
    def batch_size(self) -> int:
        """B, the number of environments stepped together."""
        return self._batch_size

    @property
    def loop_state(self) -> Optional[Tuple[TimeStep, Nest]]:
        """``(time_step, policy_state)`` the next compiled call starts from
        ([B, ...] leaves), or None before the first call/``reset``.

        Checkpointed by the trainer for environments whose own state is
        checkpointed (exact resume).
        """
        if self._time_step is None:
            return None
        return self._time_step, self._policy_state

    @loop_state.setter
    def loop_state(self, value: Tuple[TimeStep, Nest]) -> None:
        self._time_step, self._policy_state = value

    def reset(self) -> None:
        """Resets the environment and the policy state (eagerly)."""
        self._time_step = self._env.reset()
        for observer in self._observers:
            observer(self._time_step)
        self._policy_state = self._algorithm.get_initial_rollout_state(
            self._batch_size)

    def rollout(self, num_steps: int, uniform_actions: bool = False) -> None:
        """Steps all environments ``num_steps`` times with ``rollout``.

        No tape and no update; experience goes to the experience observers.

        Args:
            num_steps: batched steps to take (each steps all B envs).
            uniform_actions: take actions drawn uniformly within the action
                spec instead of ``rollout``'s (``rollout`` still runs, so
                its state advances): ``TrainerConfig.initial_collect_policy
                = 'uniform'``.

        Raises:
            ValueError: ``uniform_actions`` for an algorithm whose rollout
                info is not empty (it describes the action it chose).
        """
        if self._time_step is None:
            self.reset()
        uniform_actions = bool(uniform_actions)
        if uniform_actions not in self._rollout_fns:
            self._rollout_fns[uniform_actions] = self._compile(
                functools.partial(self._rollout_loop,
                                  uniform_actions=uniform_actions))
        self._time_step, self._policy_state = self._call_checked(
            self._rollout_fns[uniform_actions], self._time_step,
            self._policy_state, tf.constant(num_steps, tf.int32))

    # ------------------------------------------------------------ internals
    def _policy_step(self, time_step, policy_state, update_normalizers=True):
        """Resets state at FIRST steps and calls ``rollout``.

        ``update_normalizers=False`` for a step that will be seen again
        (the on-policy bootstrap row in 'redo'/'none' mode), so that its
        observation and reward are folded into the statistics once.

        Returns:
            ``(transformed time step, policy step with stop-gradient action,
            the state passed into rollout)``.
        """
        alg = self._algorithm
        initial = alg.get_initial_rollout_state(self._batch_size)
        policy_state = reset_state_if_necessary(policy_state, initial,
                                                time_step.is_first())
        transformed = alg.transform_timestep(
            time_step, update_normalizers=update_normalizers)
        policy_step = alg.rollout(transformed, policy_state)
        # In Python: once per trace (eagerly, once per driver).
        if not (self._rollout_checked and tf.executing_eagerly()):
            check_policy_step(policy_step, alg, 'rollout')
            self._rollout_checked = True
        action = tf.nest.map_structure(tf.stop_gradient, policy_step.action)
        return transformed, policy_step._replace(action=action), policy_state

    def _uniform_action(self, policy_step):
        """``policy_step`` with its action drawn uniformly within the
        action spec (refused where the rollout info describes the action)."""
        alg = self._algorithm
        if tf.nest.flatten(policy_step.info):
            raise ValueError(
                "TrainerConfig.initial_collect_policy='uniform': %s.rollout "
                "returns info (%s) describing the action it chose, which a "
                "uniform action would not match; use 'rollout'" %
                (type(alg).__name__, describe_returned(policy_step.info)))
        action = alf_specs.sample_spec_nest(alg.action_spec,
                                            [self._batch_size])
        return policy_step._replace(action=action)

    def _env_step(self, action):
        """Steps the environment with ``algorithm.env_action(action)`` and
        runs the observers on the next time step."""
        next_time_step = self._env.step(self._algorithm.env_action(action))
        for observer in self._observers:
            observer(next_time_step)
        return next_time_step

    def _experience(self, time_step, policy_step, state):
        """The ``Experience`` of one step as stored: raw time step, action,
        rollout info as distribution parameters, and the state passed into
        rollout when the algorithm uses it."""
        use_state = self._algorithm.use_rollout_state
        return make_experience(
            time_step,
            policy_step._replace(
                info=dist_ops.distributions_to_params(policy_step.info)),
            state if use_state else ())

    def _observe_experience(self, time_step, policy_step, state):
        if not self._exp_observers:
            return
        exp = self._experience(time_step, policy_step, state)
        for observer in self._exp_observers:
            observer(exp)

    def _rollout_loop(self, time_step, policy_state, num_steps,
                      uniform_actions=False):

        def _body(t, time_step, policy_state):
            _, policy_step, state = self._policy_step(time_step, policy_state)
            if uniform_actions:
                policy_step = self._uniform_action(policy_step)
            self._observe_experience(time_step, policy_step, state)
            return t + 1, self._env_step(policy_step.action), policy_step.state

        _, time_step, policy_state = tf.while_loop(
            lambda t, *_: t < num_steps, _body,
            (tf.constant(0), time_step, policy_state))
        return time_step, policy_state
