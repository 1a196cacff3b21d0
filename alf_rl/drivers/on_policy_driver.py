"""``OnPolicyDriver``: rollout and training of one iteration in one graph.

One call of ``run()`` executes a compiled ``tf.function`` that
1. opens a ``tf.GradientTape`` watching the algorithm's trainable variables,
2. runs a ``tf.while_loop`` of ``train_interval`` steps; each step resets
   the policy state of environments at FIRST steps, calls
   ``algorithm.rollout``, steps the environment (one ``tf.numpy_function``
   per batched step for Python environments, none for TF-native ones),
   updates the metrics and writes a ``TrainingInfo`` row into
   ``TensorArray``s (``alf_rl.algorithms.unroll``, which holds
   distributions as their parameters there),
3. stacks the arrays into [T, B, ...] ``TrainingInfo`` (distributions
   rebuilt), makes a step followed by FIRST a LAST step (a worker that
   restarted its environment leaves a MID one: ``cut_seams``) and calls
   ``algorithm.train_complete``.

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

from typing import Callable, List, Optional, Sequence, Tuple, Union

import tensorflow as tf

from alf_rl.algorithms.unroll import training_info_spec, unroll
from alf_rl.algorithms.on_policy_algorithm import OnPolicyAlgorithm
from alf_rl.data_structures import LossInfo, TimeStep, TrainingInfo
from alf_rl.drivers.driver import Driver, check_policy_step
from alf_rl.environments.tf_environment import TFEnvironment
from alf_rl.ops import distributions as dist_ops
from alf_rl.ops.masks import cut_seams, mask_last_row
from alf_rl.specs import add_outer_dims
from alf_rl.utils.common import trace_outputs, valid_step_mask
from alf_rl.utils.nest import assert_same_structure

FINAL_STEP_MODES = ('redo', 'skip', 'none')


class OnPolicyDriver(Driver):
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
        jit_compile: XLA-compile the whole iteration (rollout and update)
            when ``env.in_graph`` (see ``Driver``).
    """

    def __init__(self,
                 env: TFEnvironment,
                 algorithm: OnPolicyAlgorithm,
                 train_interval: int = 8,
                 final_step_mode: str = 'redo',
                 metrics: Optional[List] = None,
                 observers: Sequence[Callable[[TimeStep], None]] = (),
                 use_tf_functions: bool = True,
                 jit_compile: bool = False):
        if final_step_mode not in FINAL_STEP_MODES:
            raise ValueError("final_step_mode must be one of %s, got %r" %
                             (FINAL_STEP_MODES, final_step_mode))
        if int(train_interval) < 1:
            raise ValueError("train_interval must be >= 1, got %s" %
                             train_interval)
        if final_step_mode == 'none' and train_interval < 2:
            raise ValueError("final_step_mode='none' needs train_interval >= "
                             "2 (the last step only bootstraps)")
        super().__init__(env, algorithm, metrics, observers,
                         use_tf_functions=use_tf_functions,
                         jit_compile=jit_compile)
        self._train_interval = int(train_interval)
        self._final_step_mode = final_step_mode
        self._num_traces = 0
        self._info_spec = self._trace_info_spec()
        self._variables = algorithm.trainable_variables
        algorithm.build_optimizers()
        self._persistent_tape = len(
            algorithm.get_optimizer_and_variable_sets()) > 1
        self._run_fn = None

    # ------------------------------------------------------------ public
    @property
    def num_traces(self) -> int:
        """How many times the iteration function was traced (1 expected)."""
        return self._num_traces

    @property
    def env_steps_per_iteration(self) -> int:
        """Environment steps (over all envs) taken by one ``run()``."""
        extra = 1 if self._final_step_mode == 'skip' else 0
        return (self._train_interval + extra) * self._batch_size

    def run(self) -> LossInfo:
        """Runs one training iteration.

        Returns:
            ``LossInfo`` with scalar leaves (the reduced losses).
        """
        return self.run_iterations(1)[0]

    def run_iterations(
            self, num_iterations: Union[int, tf.Tensor],
            stop_fn: Optional[Callable[[], tf.Tensor]] = None
    ) -> Tuple[LossInfo, tf.Tensor]:
        """Runs up to ``num_iterations`` training iterations in one call.

        Args:
            num_iterations: the most iterations to run (>= 1).
            stop_fn: ``() -> scalar bool tensor`` checked in the graph after
                each iteration (e.g. a score reached); fixed at the first
                call. A non-finite loss also stops the loop.
        Returns:
            ``(loss_info, iterations_done)``: the last iteration's reduced
            ``LossInfo`` and the number of iterations run (int32 scalar).
        """
        if self._run_fn is None:
            self._run_fn = self._compile(
                self._repeat(self._run_iteration, stop_fn))
        return self._call_repeated(self._run_fn, num_iterations)

    # ------------------------------------------------------------ internals
    def _trace_info_spec(self):
        """The spec of rollout's info, found by tracing rollout."""
        alg = self._algorithm
        ts_spec = add_outer_dims(alg.time_step_spec, [self._batch_size])
        state_spec = add_outer_dims(alg.rollout_state_spec,
                                    [self._batch_size])

        def _rollout(time_step, state):
            policy_step = alg.rollout(alg.transform_timestep(time_step),
                                      state)
            check_policy_step(policy_step, alg, 'rollout')
            assert_same_structure(policy_step.state, alg.rollout_state_spec,
                                  'rollout state', 'rollout_state_spec',
                                  prefix='state')
            return policy_step.info

        info = trace_outputs(_rollout, ts_spec, state_spec)
        return dist_ops.extract_spec(info, from_dim=1)

    def _training_step(self, time_step, policy_state,
                       update_normalizers=True):
        transformed, policy_step, _ = self._policy_step(
            time_step, policy_state, update_normalizers=update_normalizers)
        info = TrainingInfo(action=policy_step.action,
                            step_type=transformed.step_type,
                            reward=transformed.reward,
                            discount=transformed.discount,
                            info=policy_step.info,
                            env_id=transformed.env_id)
        return policy_step, info

    def _run_iteration(self, time_step, policy_state):
        self._num_traces += 1  # Python side effect: counts traces only

        def _row(t, carry):
            time_step, policy_state = carry
            policy_step, info = self._training_step(time_step, policy_state)
            return (self._env_step(policy_step.action),
                    policy_step.state), info

        def _final_row(carry):
            # In 'redo' mode this step starts the next iteration again;
            # only 'skip' executes it, so only then it is counted now.
            time_step, policy_state = carry
            skip = self._final_step_mode == 'skip'
            policy_step, info = self._training_step(
                time_step, policy_state, update_normalizers=skip)
            if skip:
                return (self._env_step(policy_step.action),
                        policy_step.state), info
            return carry, info

        with tf.GradientTape(watch_accessed_variables=False,
                             persistent=self._persistent_tape) as tape:
            tape.watch(self._variables)
            (time_step, policy_state), training_info = unroll(
                _row, (time_step, policy_state),
                num_rows=self._train_interval,
                row_spec=training_info_spec(self._algorithm.action_spec,
                                            self._info_spec),
                batch_size=self._batch_size,
                final_row_fn=(None if self._final_step_mode == 'none' else
                              _final_row))
        # A step followed by FIRST is an episode's end (a restarted worker
        # leaves a MID step there: ``cut_seams``). The last row only
        # bootstraps the returns of the rows before it.
        training_info = training_info._replace(
            step_type=cut_seams(training_info.step_type))
        valid = valid_step_mask(training_info.step_type)
        valid = mask_last_row(valid)
        loss_info, _ = self._algorithm.train_complete(tape, training_info,
                                                      valid_masks=valid)
        del tape
        return time_step, policy_state, loss_info
