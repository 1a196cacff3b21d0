"""What a trainer is built around: the run's strategy, seed, environments,
algorithm and evaluator, made in the order TensorFlow needs them.

``build_run`` is what every ``Trainer`` does first; ``create_trainer``
(``alf_rl.trainers.choice``) calls it before choosing the trainer, to read
the built algorithm's ``training_kind``, and hands the result to the
trainer it chose (``Trainer(..., built=run)``), so that a run is built
once, in the same order either way.
"""

from typing import Any, NamedTuple, Optional

from alf_rl.distributed.strategy import (
    create_strategy,
    learner_scope,
    seed_worker,
    worker_index,
    worker_seed,
)
from alf_rl.environments.tf_environment import TFEnvironment
from alf_rl.environments.utils import create_environment
from alf_rl.trainers.config import TrainerConfig
from alf_rl.trainers.env_sources import EnvSource, build_env
from alf_rl.trainers.evaluation import (
    Evaluator,
    check_eval_env_given,
    create_eval_env,
)
from alf_rl.utils.common import set_random_seed


class BuiltRun(NamedTuple):
    """The pieces of a run, built by ``build_run``."""

    strategy: Any  # the tf.distribute strategy, or None
    seed: int  # the seed this process collects with (seed_worker)
    env: TFEnvironment  # the training environment
    algorithm: Any  # the RLAlgorithm, built on env's specs
    evaluator: Optional[Evaluator]  # None unless evaluating


def build_run(
    config: TrainerConfig,
    env: Optional[EnvSource] = None,
    eval_env: Optional[EnvSource] = None,
) -> BuiltRun:
    """The run's strategy, seed, training environment, algorithm and
    evaluator (see ``Trainer`` for ``env`` and ``eval_env``).

    Args:
        config: the ``TrainerConfig``.
        env: the training environment or ``(seed) -> TFEnvironment``
            factory; None: the gin-configured ``create_environment``.
        eval_env: the evaluation environment or factory (built only when
            ``config.evaluation.evaluate``).
    Returns:
        The ``BuiltRun``.
    Raises:
        ValueError: ``env`` given without ``eval_env`` while evaluating.
        TypeError: an environment source that is neither a
            ``TFEnvironment`` nor a factory returning one.
    """
    evaluation, execution = config.evaluation, config.execution
    check_eval_env_given(evaluation, env, eval_env)
    # Before any TensorFlow op (set_random_seed runs some): logical devices
    # and collective ops are configured at start-up only.
    strategy = create_strategy(
        execution.strategy, execution.num_logical_cpu_devices
    )
    # Under a strategy the global generator is mirrored: each replica draws
    # its own stream, the state advancing alike on all of them.
    with learner_scope(strategy):
        seed = set_random_seed(config.random_seed)
    # A MultiWorkerMirroredStrategy worker i > 0 collects with its own seed
    # (the run's seed without one): its environments, then its generator.
    own = worker_seed(seed, worker_index(strategy))
    train_env = (
        create_environment(seed=own)
        if env is None
        else build_env(env, own, 'env')
    )
    algorithm_ctor = config.algorithm_ctor
    assert algorithm_ctor is not None  # TrainerConfig refuses None
    with learner_scope(strategy):
        algorithm = algorithm_ctor(
            observation_spec=train_env.observation_spec(),
            action_spec=train_env.action_spec(),
        )
    seed = seed_worker(strategy, seed)
    evaluator = None
    if evaluation.evaluate:
        evaluator = Evaluator(
            create_eval_env(eval_env, evaluation, seed),
            algorithm,
            use_tf_functions=execution.use_tf_functions,
        )
    return BuiltRun(strategy, seed, train_env, algorithm, evaluator)
