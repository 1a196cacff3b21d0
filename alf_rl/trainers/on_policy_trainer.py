"""``OnPolicyTrainer``: trains an on-policy algorithm with ``OnPolicyDriver``."""

import gin

from alf_rl.drivers.on_policy_driver import OnPolicyDriver
from alf_rl.trainers.trainer import Trainer


@gin.configurable
class OnPolicyTrainer(Trainer):
    """One iteration = one ``OnPolicyDriver.run()``: ``unroll_length`` steps
    of every environment under a tape, then one update.

    Args:
        config: a ``TrainerConfig``.
    """

    def _create_driver(self):
        c = self._config
        return OnPolicyDriver(self._env,
                              self._algorithm,
                              train_interval=c.unroll_length,
                              final_step_mode=c.final_step_mode,
                              use_tf_functions=c.use_tf_functions,
                              jit_compile=c.jit_compile)

    def _train_iterations(self, num_iterations):
        return self._driver.run_iterations(num_iterations,
                                           stop_fn=self._stop_condition)
