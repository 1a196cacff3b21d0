"""MinAtar's games as pure TensorFlow functions (see ``suite_minatar``)."""
