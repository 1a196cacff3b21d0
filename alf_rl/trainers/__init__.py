"""Trainers: the training run around a driver."""

from alf_rl.trainers.trainer import (EnvironmentStepError, NonFiniteLossError,
                                     Trainer, TrainerConfig, TrainingError)
from alf_rl.trainers.on_policy_trainer import OnPolicyTrainer
from alf_rl.trainers.off_policy_trainer import OffPolicyTrainer
