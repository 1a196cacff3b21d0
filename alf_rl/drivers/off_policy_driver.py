"""``SyncOffPolicyDriver``: collects experience into a replayer in a graph.

``run(num_steps)`` steps all environments ``num_steps`` times with
``algorithm.rollout`` inside one compiled ``tf.while_loop`` (no tape); each
step's ``Experience`` goes to the replayer through an experience observer.
Training is separate (``OffPolicyAlgorithm.train`` on replayed batches,
driven by ``OffPolicyTrainer``).
"""

from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import tensorflow as tf

from alf_rl.data_structures import LossInfo, TimeStep
from alf_rl.drivers.driver import Driver
from alf_rl.environments.tf_environment import TFEnvironment


class SyncOffPolicyDriver(Driver):
    """Synchronous collection for off-policy training.

    Args:
        env: a batched ``TFEnvironment``.
        algorithm: an algorithm with ``prepare_off_policy_specs`` (an
            ``OffPolicyAlgorithm``, or an ``OnPolicyAlgorithm`` trained from
            replay).
        replayer: an experience replayer (``observe(experience)``), e.g.
            ``SyncUniformExperienceReplayer`` built from
            ``algorithm.prepare_off_policy_specs(B)``.
        metrics: in-graph metrics (default: the standard four).
        observers: extra ``observer(time_step)`` callables.
        use_tf_functions: compile the collection loop.
        jit_compile: XLA-compile ``run_and_train`` (collection and
            training) when ``env.in_graph`` (see ``Driver``).
    """

    def __init__(self,
                 env: TFEnvironment,
                 algorithm: Any,
                 replayer: Any,
                 metrics: Optional[List] = None,
                 observers: Sequence[Callable[[TimeStep], None]] = (),
                 use_tf_functions: bool = True,
                 jit_compile: bool = False):
        super().__init__(env,
                         algorithm,
                         metrics=metrics,
                         observers=observers,
                         exp_observers=[replayer.observe],
                         use_tf_functions=use_tf_functions,
                         jit_compile=jit_compile)
        self._replayer = replayer
        self._run_and_train_fn = None

    @property
    def replayer(self) -> Any:
        """The replayer experience goes to."""
        return self._replayer

    def run_and_train(self, num_steps: int,
                      train_fn: Callable[[], LossInfo]) -> LossInfo:
        """Collects ``num_steps`` batched steps, then calls ``train_fn()``,
        in one compiled call (saves a function call per iteration).

        Args:
            num_steps: steps per environment.
            train_fn: a callable with no arguments returning a nest of
                tensors (e.g. a ``LossInfo``); fixed at the first call.
        Returns:
            What ``train_fn`` returned.
        """
        return self.run_and_train_iterations(num_steps, train_fn, 1)[0]

    def run_and_train_iterations(
            self,
            num_steps: int,
            train_fn: Callable[[], LossInfo],
            num_iterations: Union[int, tf.Tensor],
            stop_fn: Optional[Callable[[], tf.Tensor]] = None
    ) -> Tuple[LossInfo, tf.Tensor]:
        """Up to ``num_iterations`` times: collect ``num_steps`` batched
        steps, then ``train_fn()``; all in one compiled call.

        Args:
            num_steps: steps per environment per iteration.
            train_fn: a callable with no arguments returning a nest of
                tensors of static shapes (e.g. a reduced ``LossInfo``);
                fixed at the first call.
            num_iterations: the most iterations to run (>= 1).
            stop_fn: ``() -> scalar bool tensor`` checked in the graph after
                each iteration (e.g. a score reached); fixed at the first
                call. A ``LossInfo`` with a non-finite loss also stops.
        Returns:
            ``(result, iterations_done)``: what the last ``train_fn()``
            returned, and the number of iterations run (int32 scalar).
        """
        if self._run_and_train_fn is None:

            def _iteration(time_step, policy_state, num_steps):
                time_step, policy_state = self._rollout_loop(
                    time_step, policy_state, num_steps)
                return time_step, policy_state, train_fn()

            self._run_and_train_fn = self._compile(
                self._repeat(_iteration, stop_fn))
        return self._call_repeated(self._run_and_train_fn, num_iterations,
                                   tf.constant(num_steps, tf.int32))

    def run(self, num_steps: int, uniform_actions: bool = False) -> None:
        """Collects ``num_steps`` batched steps (``num_steps * B`` env steps).

        Args:
            num_steps: steps per environment.
            uniform_actions: actions uniformly random within the action
                spec instead of ``rollout``'s (see ``Driver.rollout``).
        """
        self.rollout(num_steps, uniform_actions=uniform_actions)
