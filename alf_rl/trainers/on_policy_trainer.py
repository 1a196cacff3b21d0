"""``OnPolicyTrainer``: trains an on-policy algorithm with ``OnPolicyDriver``."""

from typing import Any, Tuple

import gin
import tensorflow as tf

from alf_rl.algorithms.training_kind import check_trainer_pairing
from alf_rl.drivers.on_policy_driver import OnPolicyDriver
from alf_rl.trainers.trainer import Trainer


@gin.configurable
class OnPolicyTrainer(Trainer):
    """One iteration = one ``OnPolicyDriver.run()``: ``unroll_length`` steps
    of every environment under a tape, then one update.

    Not distributed: the rollout runs under the update's tape in one graph,
    so ``TrainerConfig.strategy`` must be None (train from replay with
    ``OffPolicyTrainer`` and ``clear_replay_buffer=True`` to distribute an
    on-policy method's update).

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
        if e.strategy is not None:
            raise ValueError(
                "OnPolicyTrainer cannot distribute its update "
                "(TrainerConfig.strategy=%r): the rollout runs under the "
                "update's tape; use TrainerConfig.trainer=@OffPolicyTrainer "
                "with TrainerConfig.clear_replay_buffer=True" % e.strategy)
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
