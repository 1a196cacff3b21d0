"""``OnPolicyDriver``: rollout and training of one iteration in one graph.

One call of ``run()`` executes a compiled ``tf.function`` that
1. opens a ``tf.GradientTape`` watching the algorithm's trainable variables,
2. runs a ``tf.while_loop`` of ``train_interval`` steps; each step resets
   the policy state of environments at FIRST steps, calls
   ``algorithm.rollout``, steps the environment (one ``tf.numpy_function``
   per batched step for Python environments, none for TF-native ones),
   updates the metrics and writes a ``TrainingInfo`` row (distributions as
   their parameters) into ``TensorArray``s,
3. stacks the arrays into [T, B, ...] ``TrainingInfo`` (distributions
   rebuilt) and calls ``algorithm.train_complete``.

Final-step modes (ALF's), deciding how the value after the last step is
obtained for bootstrapping:
- ``'redo'`` (default): after T env steps, rollout runs once more on the
  final time step inside the tape; that row only bootstraps, its action is
  not executed, and the next iteration redoes it. Every env step is trained.
- ``'skip'``: that extra action *is* executed (T + 1 env steps); the final
  step is never trained.
- ``'none'``: no extra step; the T-th row only bootstraps (T - 1 steps
  trained per iteration).
"""

import tensorflow as tf

from alf_rl.data_structures import TrainingInfo
from alf_rl.metrics import default_metrics
from alf_rl.ops import distributions as dist_ops
from alf_rl.specs import add_outer_dims
from alf_rl.utils.common import (reset_state_if_necessary, trace_outputs,
                                 valid_step_mask)
from alf_rl.utils.nest import assert_same_structure, check_nest_matches_spec

FINAL_STEP_MODES = ('redo', 'skip', 'none')


def check_env_matches_algorithm(env, algorithm):
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


def check_policy_step(policy_step, algorithm, batch_size, method):
    """Checks (at trace time) the action a step function returned."""
    hint = ("%s.%s must return actions shaped [B, ...] with the dtype of "
            "action_spec" % (type(algorithm).__name__, method))
    check_nest_matches_spec(policy_step.action, algorithm.action_spec,
                            'action', outer_rank=1, hint=hint)


class OnPolicyDriver(object):
    """Runs on-policy training iterations of ``algorithm`` in ``env``.

    Args:
        env: a batched ``TFEnvironment`` (B = ``env.batch_size``).
        algorithm: an ``OnPolicyAlgorithm`` whose specs match ``env``.
        train_interval: T, environment steps per iteration.
        final_step_mode: ``'redo'``, ``'skip'`` or ``'none'`` (module doc).
        metrics: list of in-graph metrics updated with every time step;
            defaults to ``default_metrics(B)``.
        observers: extra callables ``observer(time_step)`` run in the graph
            on every time step.
        use_tf_functions: compile the iteration; False runs it eagerly (for
            debugging; same numbers under a fixed seed).
    """

    def __init__(self,
                 env,
                 algorithm,
                 train_interval=8,
                 final_step_mode='redo',
                 metrics=None,
                 observers=(),
                 use_tf_functions=True):
        if final_step_mode not in FINAL_STEP_MODES:
            raise ValueError("final_step_mode must be one of %s, got %r" %
                             (FINAL_STEP_MODES, final_step_mode))
        if int(train_interval) < 1:
            raise ValueError("train_interval must be >= 1, got %s" %
                             train_interval)
        if final_step_mode == 'none' and train_interval < 2:
            raise ValueError("final_step_mode='none' needs train_interval >= "
                             "2 (the last step only bootstraps)")
        check_env_matches_algorithm(env, algorithm)
        self._env = env
        self._algorithm = algorithm
        self._train_interval = int(train_interval)
        self._final_step_mode = final_step_mode
        self._batch_size = env.batch_size
        self._metrics = (default_metrics(self._batch_size)
                         if metrics is None else list(metrics))
        self._observers = list(self._metrics) + list(observers)
        self._use_tf_functions = use_tf_functions
        self._num_traces = 0
        self._time_step = None
        self._policy_state = None
        self._info_spec = self._trace_info_spec()
        self._param_info_spec = dist_ops.to_params_spec(self._info_spec)
        self._variables = algorithm.trainable_variables
        algorithm.build_optimizers()
        self._persistent_tape = len(
            algorithm.get_optimizer_and_variable_sets()) > 1
        self._rollout_fn = None
        self._run_fn = (tf.function(self._run_iteration, autograph=False)
                        if use_tf_functions else self._run_iteration)

    # ------------------------------------------------------------ public
    @property
    def metrics(self):
        """The in-graph metrics this driver updates."""
        return self._metrics

    @property
    def num_traces(self):
        """How many times the iteration function was traced (1 expected)."""
        return self._num_traces

    @property
    def env_steps_per_iteration(self):
        """Environment steps (over all envs) taken by one ``run()``."""
        extra = 1 if self._final_step_mode == 'skip' else 0
        return (self._train_interval + extra) * self._batch_size

    def reset(self):
        """Resets the environment and the policy state (eagerly)."""
        self._time_step = self._env.reset()
        for observer in self._observers:
            observer(self._time_step)
        self._policy_state = self._algorithm.get_initial_rollout_state(
            self._batch_size)

    def run(self):
        """Runs one training iteration.

        Returns:
            ``LossInfo`` with scalar leaves (the reduced losses).
        """
        if self._time_step is None:
            self.reset()
        self._time_step, self._policy_state, loss_info = self._run_fn(
            self._time_step, self._policy_state)
        return loss_info

    def rollout(self, num_steps):
        """Steps the environments ``num_steps`` times without training.

        Same step code as ``run()`` (state reset, ``rollout``, env step,
        metrics) but no tape, no TensorArrays and no update: for warm-up,
        collecting statistics and measuring rollout throughput.

        Args:
            num_steps: batched steps to take (each steps all B envs).
        """
        if self._time_step is None:
            self.reset()
        if self._rollout_fn is None:
            self._rollout_fn = (tf.function(self._rollout_loop,
                                            autograph=False)
                                if self._use_tf_functions else
                                self._rollout_loop)
        self._time_step, self._policy_state = self._rollout_fn(
            self._time_step, self._policy_state,
            tf.constant(num_steps, tf.int32))

    # ------------------------------------------------------------ internals
    def _rollout_loop(self, time_step, policy_state, num_steps):

        def _body(t, time_step, policy_state):
            policy_step, _ = self._policy_step(time_step, policy_state)
            return t + 1, self._env_step(policy_step.action), policy_step.state

        _, time_step, policy_state = tf.while_loop(
            lambda t, *_: t < num_steps, _body,
            (tf.constant(0), time_step, policy_state))
        return time_step, policy_state

    def _trace_info_spec(self):
        """The spec of rollout's info, found by tracing rollout."""
        alg = self._algorithm
        ts_spec = add_outer_dims(alg.time_step_spec, [self._batch_size])
        state_spec = add_outer_dims(alg.rollout_state_spec,
                                    [self._batch_size])

        def _rollout(time_step, state):
            policy_step = alg.rollout(alg.transform_timestep(time_step),
                                      state)
            check_policy_step(policy_step, alg, self._batch_size, 'rollout')
            assert_same_structure(policy_step.state, alg.rollout_state_spec,
                                  'rollout state', 'rollout_state_spec',
                                  prefix='state')
            return policy_step.info

        info = trace_outputs(_rollout, ts_spec, state_spec)
        return dist_ops.extract_spec(info, from_dim=1)

    def _policy_step(self, time_step, policy_state):
        alg = self._algorithm
        initial = alg.get_initial_rollout_state(self._batch_size)
        policy_state = reset_state_if_necessary(policy_state, initial,
                                                time_step.is_first())
        transformed = alg.transform_timestep(time_step)
        policy_step = alg.rollout(transformed, policy_state)
        action = tf.nest.map_structure(tf.stop_gradient, policy_step.action)
        info = TrainingInfo(action=action,
                            step_type=transformed.step_type,
                            reward=transformed.reward,
                            discount=transformed.discount,
                            info=dist_ops.distributions_to_params(
                                policy_step.info),
                            env_id=transformed.env_id)
        return policy_step._replace(action=action), info

    def _env_step(self, action):
        next_time_step = self._env.step(action)
        for observer in self._observers:
            observer(next_time_step)
        return next_time_step

    def _run_iteration(self, time_step, policy_state):
        self._num_traces += 1  # Python side effect: counts traces only
        num_rows = self._train_interval + (0 if self._final_step_mode == 'none'
                                           else 1)
        spec = TrainingInfo(action=self._algorithm.action_spec,
                            step_type=tf.TensorSpec((), tf.int32),
                            reward=tf.TensorSpec((), tf.float32),
                            discount=tf.TensorSpec((), tf.float32),
                            info=self._param_info_spec,
                            env_id=tf.TensorSpec((), tf.int32))
        tensor_arrays = tf.nest.map_structure(
            lambda s: tf.TensorArray(s.dtype,
                                     size=num_rows,
                                     element_shape=[self._batch_size] +
                                     s.shape.as_list()), spec)

        def _body(t, time_step, policy_state, tensor_arrays):
            policy_step, info = self._policy_step(time_step, policy_state)
            next_time_step = self._env_step(policy_step.action)
            tensor_arrays = tf.nest.map_structure(lambda ta, x: ta.write(t, x),
                                                  tensor_arrays, info)
            return t + 1, next_time_step, policy_step.state, tensor_arrays

        with tf.GradientTape(watch_accessed_variables=False,
                             persistent=self._persistent_tape) as tape:
            tape.watch(self._variables)
            _, time_step, policy_state, tensor_arrays = tf.while_loop(
                lambda t, *_: t < self._train_interval,
                _body, (tf.constant(0), time_step, policy_state,
                        tensor_arrays),
                maximum_iterations=self._train_interval)
            if self._final_step_mode != 'none':
                policy_step, info = self._policy_step(time_step, policy_state)
                tensor_arrays = tf.nest.map_structure(
                    lambda ta, x: ta.write(self._train_interval, x),
                    tensor_arrays, info)
                if self._final_step_mode == 'skip':
                    time_step = self._env_step(policy_step.action)
                    policy_state = policy_step.state
            stacked = tf.nest.map_structure(lambda ta: ta.stack(),
                                            tensor_arrays)
            training_info = stacked._replace(
                info=dist_ops.params_to_distributions(stacked.info,
                                                      self._info_spec))
        # The last row only bootstraps the returns of the rows before it.
        valid = valid_step_mask(training_info.step_type)
        valid = tf.concat([valid[:-1], tf.zeros_like(valid[-1:])], axis=0)
        loss_info, _ = self._algorithm.train_complete(tape, training_info,
                                                      valid_masks=valid)
        del tape
        return time_step, policy_state, loss_info
