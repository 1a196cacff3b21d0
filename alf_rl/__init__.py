"""alf_rl: a TensorFlow-2-native reinforcement-learning library."""

from alf_rl.utils import quiet_import as _quiet_import

__version__ = "0.1.0"

# TensorFlow's start-up notices stay off the terminal (ALF_RL_TF_LOGS=1
# shows them); see alf_rl.utils.quiet_import.
_quiet_import.install()
