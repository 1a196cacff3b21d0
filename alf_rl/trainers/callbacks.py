"""Callbacks: the user's code at the points of a training run.

A callback is any object with the ``TrainingCallback`` methods; subclass
``Callback`` to override only the ones you need. A ``Trainer`` calls them
on the training's start and end, after each compiled call of training
iterations (with the run's metrics and the last losses), after each
evaluation (with its metrics) and after each checkpoint. A hook that
returns ``True`` asks the run to stop: training ends cleanly after that
call, with its final summaries, evaluation and a checkpoint, as when its
budget is reached (``alf-train`` exits 0; rerunning it resumes).

A hook that raises stops the run with a ``CallbackError`` naming the
callback and its hook, after a checkpoint of the (still good) model.

From Python: ``trainer.train(callbacks=[...])``. From gin::

    import my_callbacks
    training_callbacks.callbacks = [@MyCallback()]
"""

from typing import Any, Dict, List, Optional, Protocol, Sequence
from typing import runtime_checkable

import gin

from alf_rl.trainers.errors import TrainingError


@runtime_checkable
class TrainingCallback(Protocol):
    """What a ``Trainer`` calls on a callback. A hook returning ``True``
    asks the run to stop after the current call (clean, checkpointed);
    ``None`` or ``False`` lets it go on."""

    def on_training_start(self, iteration: int) -> Optional[bool]:
        """Training starts (or resumes) at ``iteration``."""

    def on_iterations_end(
        self, iteration: int, metrics: Dict[str, float]
    ) -> Optional[bool]:
        """A compiled call ended on ``iteration``; ``metrics``: the run's
        ``'Metrics/...'`` values and the last losses (``'loss/...'``)."""

    def on_evaluation_end(
        self, iteration: int, metrics: Dict[str, float]
    ) -> Optional[bool]:
        """An evaluation at ``iteration``: its ``'Metrics/...'`` values."""

    def on_checkpoint(self, iteration: int) -> Optional[bool]:
        """A checkpoint of ``iteration`` was written."""

    def on_training_end(self, result: Dict[str, Any]) -> None:
        """Training ended; ``result`` is what ``Trainer.train`` returns."""


class Callback(object):
    """A ``TrainingCallback`` whose hooks do nothing: subclass it and
    override the ones you need."""

    def on_training_start(self, iteration: int) -> Optional[bool]:
        """Training starts (or resumes) at ``iteration``."""
        return None

    def on_iterations_end(
        self, iteration: int, metrics: Dict[str, float]
    ) -> Optional[bool]:
        """A compiled call ended on ``iteration`` with ``metrics``."""
        return None

    def on_evaluation_end(
        self, iteration: int, metrics: Dict[str, float]
    ) -> Optional[bool]:
        """An evaluation at ``iteration`` gave ``metrics``."""
        return None

    def on_checkpoint(self, iteration: int) -> Optional[bool]:
        """A checkpoint of ``iteration`` was written."""
        return None

    def on_training_end(self, result: Dict[str, Any]) -> None:
        """Training ended with ``result``."""


class CallbackError(TrainingError):
    """A callback raised: the run stopped (after a checkpoint when the
    model was still good). ``callback`` names it, ``__cause__`` is what
    it raised."""

    kind = 'callback'

    def __init__(self, message: str, iteration: int, callback: str):
        super().__init__(message, iteration)
        self.callback = callback


@gin.configurable
class StopAtAverageReturn(Callback):
    """Stops training once the run's average training return reaches
    ``threshold`` (after an episode has ended), as
    ``TrainerConfig.stop_at_average_return`` does; that setting is also
    checked inside a compiled call, this callback after each call.

    Args:
        threshold: the average return to reach.
    """

    def __init__(self, threshold: float):
        self.threshold = float(threshold)

    def on_iterations_end(
        self, iteration: int, metrics: Dict[str, float]
    ) -> Optional[bool]:
        """True once ``Metrics/AverageReturn`` >= ``threshold``."""
        if metrics.get('Metrics/NumberOfEpisodes', 0) < 1:
            return False
        return metrics.get('Metrics/AverageReturn', float('-inf')) >= (
            self.threshold
        )


@gin.configurable
def training_callbacks(
    callbacks: Sequence[TrainingCallback] = (),
) -> List[TrainingCallback]:
    """The callbacks gin configures for every ``Trainer.train`` (e.g.
    ``training_callbacks.callbacks = [@MyCallback()]``), after those
    passed in Python.

    Args:
        callbacks: objects with the ``TrainingCallback`` hooks.
    Returns:
        ``callbacks`` as a list (``CallbackList`` checks them).
    """
    return list(callbacks)


class CallbackList(object):
    """Runs the hooks of several callbacks in order and remembers a stop
    request; a hook that raises becomes a ``CallbackError``.

    Args:
        callbacks: the ``TrainingCallback`` objects.
    """

    def __init__(self, callbacks: Sequence[TrainingCallback] = ()):
        for c in callbacks:
            if not isinstance(c, TrainingCallback):
                raise TypeError(
                    'callbacks: %r lacks the TrainingCallback hooks '
                    '(subclass alf_rl.trainers.callbacks.Callback)' % (c,)
                )
        self.callbacks = list(callbacks)
        self.stop_requested = False

    def call(self, hook: str, iteration: int, *args: Any) -> None:
        """Calls ``hook(*args)`` of every callback (``iteration``: where
        the run is, for the error); a ``True`` result requests the stop.

        Raises:
            CallbackError: a hook raised (naming its class and hook).
        """
        for c in self.callbacks:
            try:
                if getattr(c, hook)(*args) is True:
                    self.stop_requested = True
            except Exception as e:
                name = type(c).__name__
                raise CallbackError(
                    'callback %s.%s raised %s: %s'
                    % (name, hook, type(e).__name__, e),
                    iteration,
                    name,
                ) from e
