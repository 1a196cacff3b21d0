"""Drivers: run algorithms in environments inside TensorFlow graphs."""

from alf_rl.drivers.driver import Driver
from alf_rl.drivers.on_policy_driver import OnPolicyDriver
from alf_rl.drivers.off_policy_driver import SyncOffPolicyDriver
from alf_rl.drivers.evaluation_driver import EvaluationDriver
from alf_rl.drivers.rollout_worker import ActorMessage, RolloutWorker
from alf_rl.drivers.async_off_policy_driver import (AsyncOffPolicyDriver,
                                                    ThreadActorPool)
