"""A process-wide stop request that cuts long waits short.

The first Ctrl-C (or ``Trainer.request_stop()``) asks training to stop after
its current call. That call may be waiting for something that will not come:
an environment stuck in its step (in this process or in a worker process),
or actors that send no experience. Such waits have their own timeouts
(``create_environment.step_timeout``, the learner's ``message_timeout``),
often a minute or more; once a stop was asked for, they give up
``STOP_GRACE_SECONDS`` after the request (or after the wait began, if that
was later) instead, raising their usual error with the reason, or
``WaitCancelled`` where nothing was left half done.

Pure Python (no TensorFlow): environment workers and actors import it.
"""

import threading
import time
from typing import List, Optional

# Seconds a wait may still take once a stop was asked for.
STOP_GRACE_SECONDS = 3.0

_LOCK = threading.Lock()
_REQUESTED_AT: List[float] = []  # time.monotonic() of the pending request


class WaitCancelled(RuntimeError):
    """A wait between training calls was given up because training was
    asked to stop (nothing was half done: the trainer saves a checkpoint
    and returns as after any stop request)."""


def announce_stop() -> None:
    """Records that training was asked to stop (the first request counts).

    Safe from any thread or a signal handler's helper thread.
    """
    with _LOCK:
        if not _REQUESTED_AT:
            _REQUESTED_AT.append(time.monotonic())


def clear_stop() -> None:
    """Forgets the request (the stop was handled; later waits are normal)."""
    with _LOCK:
        _REQUESTED_AT.clear()


def stop_requested() -> bool:
    """Whether a stop was announced and not yet cleared."""
    return bool(_REQUESTED_AT)


def cut_short(started: float, now: Optional[float] = None) -> bool:
    """Whether a wait that began at ``started`` should give up now.

    Args:
        started: ``time.monotonic()`` at which the wait began.
        now: ``time.monotonic()`` now (``None``: read it).
    Returns:
        True once a stop was announced and ``STOP_GRACE_SECONDS`` have
        passed since the later of the announcement and ``started``.
    """
    requested = _REQUESTED_AT[:1]
    if not requested:
        return False
    now = time.monotonic() if now is None else now
    return now >= max(requested[0], started) + STOP_GRACE_SECONDS


# What ``wait_outcome`` says when a wait should end.
TIMED_OUT = 'timed out'
STOPPED = 'stopped'
# How an error names a wait ended by ``STOPPED``.
STOPPED_PHRASE = "within %g s of the request to stop" % STOP_GRACE_SECONDS


def wait_outcome(
    started: float,
    timeout: Optional[float],
    now: Optional[float] = None,
    clock: Optional['AwakeClock'] = None,
) -> Optional[str]:
    """Whether a wait that began at ``started`` should end now, and why.

    The one rule for every stop-aware wait: its own timeout first, then
    ``cut_short``.

    Args:
        started: ``time.monotonic()`` at which the wait began.
        timeout: the wait's own limit in seconds (``None``: none).
        now: ``time.monotonic()`` now (``None``: read it).
        clock: the wait's ``AwakeClock`` (begun at ``started``): the
            timeout then counts only the time this process ran; the grace
            after a stop request is real time either way.
    Returns:
        ``TIMED_OUT`` once ``timeout`` seconds have passed, else
        ``STOPPED`` once ``cut_short(started, now)``, else ``None`` (go on
        waiting).
    """
    now = time.monotonic() if now is None else now
    waited = now - started if clock is None else clock.now() - clock.started
    if timeout is not None and waited >= timeout:
        return TIMED_OUT
    if cut_short(started, now):
        return STOPPED
    return None


class AwakeClock(object):
    """A wait's clock that does not run while this process is suspended.

    ``time.monotonic()`` goes on while a process is stopped (SIGSTOP,
    Ctrl-Z, a machine's sleep); a wait measured by it would time out on
    waking although nothing it waits for was slow (the environment's thread
    or worker was stopped too). A waiting loop reads ``now()`` at least
    every few tenths of a second; a gap between two reads longer than
    ``max_gap`` is taken for a suspension and counts as ``max_gap`` only.

    Args:
        max_gap: seconds > 0 between two reads beyond which the rest of the
            gap is not counted (the loop's slice plus a margin for a
            loaded machine).
    """

    def __init__(self, max_gap: float = 2.0) -> None:
        self.max_gap = float(max_gap)
        self.started = self._last = time.monotonic()
        self._skipped = 0.0

    def now(self) -> float:
        """``time.monotonic()`` less the suspended time since ``started``
        (comparable with ``started``)."""
        t = time.monotonic()
        gap = t - self._last
        if gap > self.max_gap:
            self._skipped += gap - self.max_gap
        self._last = t
        return t - self._skipped
