"""Trainers: the training run around a driver."""

from alf_rl.trainers.errors import (EnvironmentStepError, NonFiniteLossError,
                                    TrainingError)
from alf_rl.trainers.config import (CheckpointConfig, EvaluationConfig,
                                    ExecutionConfig, ReplayConfig,
                                    ReportConfig, TrainerConfig)
from alf_rl.trainers.checkpoints import RunCheckpoints
from alf_rl.trainers.evaluation import Evaluator
from alf_rl.trainers.progress import ProgressReporter, RunClock
from alf_rl.trainers.summaries import RunSummaries
from alf_rl.trainers.trainer import Trainer
from alf_rl.trainers.on_policy_trainer import OnPolicyTrainer
from alf_rl.trainers.off_policy_trainer import OffPolicyTrainer
from alf_rl.trainers.async_trainer import AsyncOffPolicyTrainer
from alf_rl.trainers.choice import TRAINER_OF_KIND, create_trainer
from alf_rl.trainers.offline_trainer import OfflineTrainer
from alf_rl.trainers.offline_to_online import OfflineToOnlineTrainer
