"""The hand-off between the actors and the learner of asynchronous
training: a bounded queue of messages that also carries an actor's
failure, and the error that names the actor.

Pure Python (no TensorFlow): a Ray actor process imports it before it
imports TensorFlow quietly. Used by ``ThreadActorPool``
(``alf_rl.drivers.async_off_policy_driver``) and ``RayActorPool``
(``alf_rl.distributed.ray_actors``).
"""

import queue
import threading
from typing import Any, Callable, List, Optional

from alf_rl.utils.stop_request import (STOPPED, STOPPED_PHRASE, TIMED_OUT,
                                       AwakeClock, WaitCancelled,
                                       stop_requested, wait_outcome)


class ActorFailedError(RuntimeError):
    """An actor could not go on (its environment failed, its process died
    too often, it sent nothing in time).

    Args:
        message: one line naming the actor and its environments.
        actor_index: the actor (-1: none in particular).
        env_error: the environment's own exception when known, else None.
    """

    def __init__(self, message: str, actor_index: int,
                 env_error: Optional[BaseException] = None):
        super().__init__(message)
        self.actor_index = actor_index
        self.env_error = env_error


def describe_actor(actor_index: int, batch_size: int) -> str:
    """``'actor 2 (environments 4-5)'``: an actor and its global env ids.

    Args:
        actor_index: the actor's index.
        batch_size: B, environments per actor.
    """
    first = actor_index * batch_size
    envs = ('environment %d' % first if batch_size == 1 else
            'environments %d-%d' % (first, first + batch_size - 1))
    return 'actor %d (%s)' % (actor_index, envs)


def one_line_error(error: BaseException) -> str:
    """``'RuntimeError: <the last line of its message>'``.

    Args:
        error: any exception (a TensorFlow error's ``message`` is used).
    """
    text = getattr(error, 'message', None) or str(error)
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    return '%s: %s' % (type(error).__name__, lines[-1] if lines else '')


class MessageQueue(object):
    """A bounded queue of actor messages, and the first actor failure.

    Args:
        maxsize: messages that may wait (>= 1).
        stop: set when the pool closes: a ``put`` waiting for room gives up.
    """

    def __init__(self, maxsize: int, stop: threading.Event):
        self._queue: queue.Queue = queue.Queue(maxsize=int(maxsize))
        self._stop = stop
        self._failures: List[BaseException] = []

    def put(self, message: Any) -> bool:
        """Queues ``message``, waiting while the queue is full.

        Returns:
            False if the pool was closed meanwhile (``message`` dropped).
        """
        while not self._stop.is_set():
            try:
                self._queue.put(message, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def fail(self, error: ActorFailedError) -> None:
        """Records an actor's failure: ``get`` raises it (the first one)."""
        self._failures.append(error)

    def get(self, timeout: float, waiting: Callable[[], str]) -> Any:
        """The next message.

        Args:
            timeout: seconds to wait for one.
            waiting: ``() -> str`` describing the actors (for the error),
                e.g. ``'2 actors running'``.
        Raises:
            ActorFailedError: an actor failed, or no message came within
                ``timeout`` (``'no actor sent experience for 300 s (...);
                an environment may hang'``).
            WaitCancelled: training was asked to stop, and no message came
                within ``STOP_GRACE_SECONDS`` of that or an actor failed.
        """
        clock = AwakeClock()  # a suspension of this process does not count
        while True:
            if self._failures:
                if stop_requested():  # e.g. an actor's wait cut short
                    raise WaitCancelled(str(self._failures[0]))
                raise self._failures[0]
            try:
                return self._queue.get(timeout=0.05)
            except queue.Empty:
                outcome = wait_outcome(clock.started, timeout, clock=clock)
                if outcome == TIMED_OUT:
                    raise ActorFailedError(
                        "no actor sent experience for %.0f s (%s); an "
                        "environment may hang" % (timeout, waiting()),
                        -1) from None
                if outcome == STOPPED:
                    raise WaitCancelled(
                        "no actor sent experience %s (%s)" %
                        (STOPPED_PHRASE, waiting())) from None

    def qsize(self) -> int:
        """Messages waiting now."""
        return self._queue.qsize()
