"""How a method is trained, and which trainer may train it.

Every RL method declares its ``training_kind`` (a class attribute, set by
its base; a composite such as ``Agent`` takes its RL algorithm's):

- ``UNROLL``: one update per driver unroll, under the driver's tape
  (A2C). Base ``OnPolicyAlgorithm``; trained by ``OnPolicyTrainer``, also
  from replay.
- ``EPOCHS``: epochs of mini-batches over what one iteration collected
  (PPO). Base ``EpochTraining`` mixed into an ``OnPolicyAlgorithm``;
  trained by ``OffPolicyTrainer``/``AsyncOffPolicyTrainer`` with
  ``clear_replay_buffer=True``.
- ``REPLAY``: mini-batches sampled from a replay buffer (SAC, DQN, DDPG,
  TD3, SARSA). Base ``OffPolicyAlgorithm``; trained by
  ``OffPolicyTrainer``/``AsyncOffPolicyTrainer``.

``check_trainer_pairing`` is the rule, called by the trainers before
anything is collected; it also refuses prioritized replay for a method
that gives no priorities (``gives_priorities``).
"""

import enum
from typing import Any, Optional, Protocol, runtime_checkable


class TrainingKind(enum.Enum):
    """How a method is trained (see the module docstring)."""
    UNROLL = 'unroll'
    EPOCHS = 'epochs'
    REPLAY = 'replay'


@runtime_checkable
class Trained(Protocol):
    """What declares how it is trained: every replay-trainable
    ``RLAlgorithm`` (``training_kind`` None where no trainer trains it)."""
    training_kind: Optional[TrainingKind]
    gives_priorities: bool


_HOW = {
    TrainingKind.UNROLL: "on the driver's unroll",
    TrainingKind.EPOCHS: "in epochs over what one iteration collected",
    TrainingKind.REPLAY: "from a replay buffer",
}


def check_trainer_pairing(algorithm: Any, trainer_name: str,
                          from_unroll: bool,
                          clear_replay_buffer: bool = False,
                          prioritized_replay: bool = False) -> None:
    """Refuses a trainer that cannot train ``algorithm``, in one line.

    Args:
        algorithm: the algorithm the trainer built.
        trainer_name: the trainer's class name (for the message).
        from_unroll: whether the trainer trains on the driver's unroll
            (``OnPolicyTrainer``) rather than from replay.
        clear_replay_buffer: ``TrainerConfig.clear_replay_buffer`` (replay
            trainers: train only on what each iteration collected).
        prioritized_replay: ``TrainerConfig.prioritized_replay``.
    Raises:
        TypeError: ``algorithm`` declares no ``TrainingKind``.
        ValueError: the kind and the trainer do not pair; prioritized
            replay for an algorithm whose ``gives_priorities`` is False.
    """
    kind = algorithm.training_kind if isinstance(algorithm, Trained) else None
    name = type(algorithm).__name__
    if not isinstance(kind, TrainingKind):
        raise TypeError(
            "%s cannot train %s: it declares no training_kind (derive it from"
            " OnPolicyAlgorithm or OffPolicyAlgorithm)" % (trainer_name, name))
    if from_unroll and kind is not TrainingKind.UNROLL:
        raise ValueError(
            "TrainerConfig.trainer=@%s trains on the driver's unroll, but %s "
            "is trained %s (training_kind %r): use TrainerConfig.trainer="
            "@OffPolicyTrainer%s" %
            (trainer_name, name, _HOW[kind], kind.value,
             ' with TrainerConfig.clear_replay_buffer=True'
             if kind is TrainingKind.EPOCHS else ''))
    if prioritized_replay and not algorithm.gives_priorities:
        raise ValueError(
            "TrainerConfig.prioritized_replay needs an algorithm that gives "
            "priorities (e.g. mixes in TDErrorPriority); %s.gives_priorities"
            " is False" % name)
    if (not from_unroll and kind is TrainingKind.EPOCHS
            and not clear_replay_buffer):
        raise ValueError(
            "%s is trained %s (training_kind 'epochs'), but %s keeps a "
            "replay buffer: set TrainerConfig.clear_replay_buffer=True" %
            (name, _HOW[kind], trainer_name))

