"""``Evaluator``: periodic greedy evaluation of the algorithm being trained.

Plays one greedy (``algorithm.predict``) episode in each of the
``num_eval_episodes`` evaluation environments and reports the mean return
and length; its own random generator is checkpointed with the run.
"""

from typing import Any, Dict, Optional

import numpy as np
import tensorflow as tf

from alf_rl.drivers.evaluation_driver import EvaluationDriver
from alf_rl.environments.tf_environment import TFEnvironment
from alf_rl.environments.utils import create_environment
from alf_rl.trainers.config import EvaluationConfig
from alf_rl.trainers.env_sources import EnvSource, build_env

# The evaluation environment's seed is the run's seed plus this.
EVAL_SEED_OFFSET = 7919


def check_eval_env_given(config: EvaluationConfig, env: Optional[EnvSource],
                         eval_env: Optional[EnvSource]) -> None:
    """Refuses a training ``env`` given without ``eval_env`` while
    evaluating (the gin-configured one would not match it).

    Raises:
        ValueError: one line saying what to pass.
    """
    if config.evaluate and env is not None and eval_env is None:
        raise ValueError(
            "TrainerConfig.evaluate=True and env was given: also pass "
            "eval_env (a factory (seed) -> TFEnvironment with "
            "num_eval_episodes=%d environments), or set evaluate=False" %
            config.num_eval_episodes)


def create_eval_env(source: Optional[EnvSource], config: EvaluationConfig,
                    run_seed: int) -> TFEnvironment:
    """The evaluation environment, seeded ``run_seed + 7919``.

    Args:
        source: an environment or ``(seed)`` factory with
            ``num_eval_episodes`` environments; None: the gin-configured
            ``create_environment`` (in this process, ``evaluation=True``).
        config: the ``EvaluationConfig``.
        run_seed: the run's seed.

    Raises:
        TypeError: ``source`` is neither a ``TFEnvironment`` nor a factory
            returning one.
        ValueError: its batch size is not ``num_eval_episodes``.
    """
    seed = run_seed + EVAL_SEED_OFFSET
    if source is None:
        return create_environment(
            num_parallel_environments=config.num_eval_episodes, seed=seed,
            use_subprocess=False, evaluation=True)
    env = build_env(source, seed, 'eval_env')
    if env.batch_size != config.num_eval_episodes:
        env.close()
        raise ValueError(
            "eval_env: batch size %d, expected "
            "TrainerConfig.num_eval_episodes=%d (one episode per "
            "environment)" % (env.batch_size, config.num_eval_episodes))
    return env


class Evaluator(object):
    """Greedy evaluation on its own environment.

    Args:
        env: the evaluation environment (B episodes per evaluation).
        algorithm: the algorithm whose ``predict`` plays.
        use_tf_functions: compile the episode loop.
    """

    def __init__(self, env: TFEnvironment, algorithm: Any,
                 use_tf_functions: bool = True):
        self.env = env
        self._driver = EvaluationDriver(env, algorithm,
                                        use_tf_functions=use_tf_functions)

    @property
    def generator(self) -> tf.random.Generator:
        """The evaluation's random generator (checkpointed as
        ``eval_rng``)."""
        return self._driver.generator

    def evaluate(self) -> Dict[str, float]:
        """Plays one greedy episode in each evaluation environment.

        Returns:
            ``{'Metrics/AverageReturn': mean episode return,
            'Metrics/AverageEpisodeLength': mean transitions per episode}``
            over the B episodes.
        """
        returns, lengths = self._driver.run()
        return {
            'Metrics/AverageReturn': float(np.mean(returns.numpy())),
            'Metrics/AverageEpisodeLength': float(np.mean(lengths.numpy())),
        }

    def close(self) -> None:
        """Closes the evaluation environment."""
        self.env.close()
