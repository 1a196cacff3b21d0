"""Where a trainer's environments come from: an instance or a factory."""

from typing import Callable, Union

from alf_rl.environments.tf_environment import TFEnvironment

# A ``TFEnvironment``, or a factory ``(seed: int) -> TFEnvironment``.
EnvSource = Union[TFEnvironment, Callable[[int], TFEnvironment]]


def build_env(source: EnvSource, seed: int, name: str) -> TFEnvironment:
    """A ``TFEnvironment`` from an instance or a ``(seed) -> env`` factory.

    Args:
        source: the environment, or a factory called with ``seed``.
        seed: the seed a factory gets.
        name: the argument's name, for messages (``'env'``).

    Raises:
        TypeError: naming ``name`` when ``source`` (or what the factory
            returned) is not a ``TFEnvironment``.
    """
    if isinstance(source, TFEnvironment):
        return source
    if not callable(source):
        raise TypeError(
            "%s: expected a TFEnvironment or a factory (seed) -> "
            "TFEnvironment, got %s (wrap a PyEnvironment in "
            "TFPyEnvironment)" % (name, type(source).__name__))
    env = source(seed)
    if not isinstance(env, TFEnvironment):
        raise TypeError(
            "%s: the factory returned %s, expected a TFEnvironment "
            "(wrap a PyEnvironment in TFPyEnvironment)" %
            (name, type(env).__name__))
    return env
