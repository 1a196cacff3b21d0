"""alf_rl: a TensorFlow-2-native reinforcement-learning library."""

__version__ = "0.1.0"
