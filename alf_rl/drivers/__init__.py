"""Drivers: run algorithms in environments inside TensorFlow graphs."""

from alf_rl.drivers.driver import Driver
from alf_rl.drivers.on_policy_driver import OnPolicyDriver
from alf_rl.drivers.off_policy_driver import SyncOffPolicyDriver
from alf_rl.drivers.evaluation_driver import EvaluationDriver
