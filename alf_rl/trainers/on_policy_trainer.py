"""``OnPolicyTrainer``: trains an on-policy algorithm with ``OnPolicyDriver``."""

from typing import Any, Tuple

import gin
import tensorflow as tf

from alf_rl.algorithms.training_kind import check_trainer_pairing
from alf_rl.distributed.strategy import learner_scope, run_on_replica
from alf_rl.drivers.on_policy_driver import OnPolicyDriver
from alf_rl.trainers.trainer import Trainer


@gin.configurable
class OnPolicyTrainer(Trainer):
    """One iteration = one ``OnPolicyDriver.run()``: ``unroll_length`` steps
    of every environment under a tape, then one update.

    With ``TrainerConfig.strategy='multi_worker_mirrored'`` (one device
    per worker) every worker runs each iteration inside ``strategy.run``:
    it steps its own environments (its own seeds,
    ``alf_rl.distributed.strategy``), losses are reduced and gradients
    summed over all workers' steps, and every worker applies the same
    update; N workers train on N times the steps of one per update.
    ``'mirrored'`` over several local devices is refused (one process's
    environments cannot be split over its replicas under one tape; use
    ``OffPolicyTrainer`` with ``clear_replay_buffer=True``).

    Args:
        config: a ``TrainerConfig``.
        env: the training environment or a ``(seed) -> TFEnvironment``
            factory (``None``: the gin-configured ``create_environment``).
        eval_env: the evaluation environment or factory (see ``Trainer``).
    """

    def _create_driver(self) -> OnPolicyDriver:
        c, e = self._config, self._config.execution
        check_trainer_pairing(self._algorithm, type(self).__name__,
                              from_unroll=True)
        if self._strategy is not None:
            _check_one_replica(self._strategy, e.strategy)
            with learner_scope(self._strategy):
                self._algorithm.build_optimizers()
            return _ReplicaOnPolicyDriver(
                self._strategy, self._env, self._algorithm,
                train_interval=c.unroll_length,
                final_step_mode=c.final_step_mode,
                metrics=self._metrics.step_metrics,
                use_tf_functions=e.use_tf_functions)
        return OnPolicyDriver(self._env,
                              self._algorithm,
                              train_interval=c.unroll_length,
                              final_step_mode=c.final_step_mode,
                              metrics=self._metrics.step_metrics,
                              use_tf_functions=e.use_tf_functions,
                              jit_compile=e.jit_compile)

    def _train_iterations(self, num_iterations: int) -> Tuple[Any, tf.Tensor]:
        return self._driver.run_iterations(num_iterations,
                                           stop_fn=self._stop_condition)


def _check_one_replica(strategy: tf.distribute.Strategy, name: str) -> None:
    """Refuses, in one line, a strategy of several replicas in this
    process: its environments cannot be split over them under one tape."""
    devices = strategy.extended.worker_devices
    if len(devices) != 1:
        raise ValueError(
            "OnPolicyTrainer: TrainerConfig.strategy=%r has %d replicas in "
            "this process (%s); an on-policy iteration runs on one: use "
            "'multi_worker_mirrored' with one device per worker, or "
            "TrainerConfig.trainer=@OffPolicyTrainer with "
            "TrainerConfig.clear_replay_buffer=True" %
            (name, len(devices), ', '.join(devices)))


class _ReplicaOnPolicyDriver(OnPolicyDriver):
    """An ``OnPolicyDriver`` whose iterations run on this worker's one
    replica of ``strategy`` (``run_on_replica``); no XLA (the config
    refuses ``jit_compile`` with a strategy)."""

    def __init__(self, strategy: tf.distribute.Strategy, *args: Any,
                 **kwargs: Any):
        self._replica_iteration = run_on_replica(strategy,
                                                 super()._run_iteration)
        super().__init__(*args, **kwargs)

    def _run_iteration(self, time_step: Any, policy_state: Any) -> Any:
        return self._replica_iteration(time_step, policy_state)
