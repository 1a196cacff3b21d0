"""Which trainer trains an algorithm: chosen from its ``training_kind``
unless ``TrainerConfig.trainer`` names one.

- ``UNROLL`` (A2C): ``OnPolicyTrainer``.
- ``EPOCHS`` (PPO): ``OffPolicyTrainer`` (with
  ``TrainerConfig.clear_replay_buffer=True``, which the pairing rule asks
  for in one line when it is missing).
- ``REPLAY`` (SAC, DQN, ...): ``OffPolicyTrainer``.

``AsyncOffPolicyTrainer`` is never chosen: name it. A trainer that is
named is built as named, and a wrong pairing is refused in one line before
anything is collected (``check_trainer_pairing``).
"""

from typing import Dict, Optional, Type

from alf_rl.algorithms.training_kind import Trained, TrainingKind
from alf_rl.trainers.config import TrainerConfig
from alf_rl.trainers.env_sources import EnvSource
from alf_rl.trainers.off_policy_trainer import OffPolicyTrainer
from alf_rl.trainers.on_policy_trainer import OnPolicyTrainer
from alf_rl.trainers.run_setup import build_run
from alf_rl.trainers.trainer import Trainer

#: The trainer of each training kind when none is named.
TRAINER_OF_KIND: Dict[TrainingKind, Type[Trainer]] = {
    TrainingKind.UNROLL: OnPolicyTrainer,
    TrainingKind.EPOCHS: OffPolicyTrainer,
    TrainingKind.REPLAY: OffPolicyTrainer,
}


def create_trainer(
    config: TrainerConfig,
    env: Optional[EnvSource] = None,
    eval_env: Optional[EnvSource] = None,
) -> Trainer:
    """The trainer of ``config``: ``config.trainer`` when it names one,
    else the one of the algorithm's ``training_kind`` (``TRAINER_OF_KIND``;
    the run is built first, once, to read it).

    Args:
        config: the ``TrainerConfig``.
        env: the training environment or factory (see ``Trainer``).
        eval_env: the evaluation environment or factory (see ``Trainer``).
    Returns:
        The built trainer (call ``train()``, then ``close()``).
    Raises:
        TypeError: the algorithm declares no ``training_kind``.
        ValueError: a named trainer that cannot train the algorithm, or
            settings its kind cannot train with (``check_trainer_pairing``).
    """
    if config.trainer is not None:
        # A trainer without an environment (OfflineTrainer) takes no env.
        named = {} if env is None else {'env': env}
        return config.trainer(config, eval_env=eval_env, **named)
    run = build_run(config, env, eval_env)
    algorithm = run.algorithm
    kind = algorithm.training_kind if isinstance(algorithm, Trained) else None
    if not isinstance(kind, TrainingKind):
        raise TypeError(
            "create_trainer cannot choose a trainer for %s: it declares no "
            "training_kind (derive it from OnPolicyAlgorithm or "
            "OffPolicyAlgorithm, or name TrainerConfig.trainer)"
            % type(algorithm).__name__
        )
    return TRAINER_OF_KIND[kind](config, env, eval_env, built=run)
