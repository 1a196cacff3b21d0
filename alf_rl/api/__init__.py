"""Model objects: train, predict, save and load in a few lines of Python.

``alf_rl.PPO('CartPole-v1', root_dir=...)`` and its siblings (``A2C``,
``SAC``, ``DDPG``, ``TD3``, ``DQN``, ``MBRL``) build on the trainer: a
model's ``learn`` writes the same ``config.gin``, events and checkpoints
as ``alf-train`` and resumes the same way; ``alf_rl.load`` restores any
run directory (``alf-train``'s too). See ``alf_rl.api.models``.
"""

from alf_rl.api.models import A2C, DDPG, DQN, MBRL, PPO, SAC, TD3, Model, load

__all__ = ['A2C', 'DDPG', 'DQN', 'MBRL', 'PPO', 'SAC', 'TD3', 'Model', 'load']
