"""alf_rl: a TensorFlow-2-native reinforcement-learning library."""

from alf_rl.utils import quiet_import as _quiet_import

__version__ = "0.1.0"

# TensorFlow's start-up notices stay off the terminal (ALF_RL_TF_LOGS=1
# shows them); see alf_rl.utils.quiet_import.
_quiet_import.install()

#: The model classes and ``load`` of ``alf_rl.api``, imported on first use
#: (``alf_rl.PPO``) so that ``import alf_rl`` stays light.
_API_NAMES = (
    'A2C',
    'DDPG',
    'DQN',
    'MBRL',
    'PPO',
    'SAC',
    'TD3',
    'Model',
    'load',
)


def __getattr__(name: str) -> object:
    """``alf_rl.PPO``, ``alf_rl.load``, ...: from ``alf_rl.api``."""
    if name in _API_NAMES:
        import importlib

        return getattr(importlib.import_module('alf_rl.api'), name)
    raise AttributeError("module 'alf_rl' has no attribute %r" % name)
