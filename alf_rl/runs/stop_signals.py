"""How ``alf-train`` answers Ctrl-C and SIGTERM: the first asks the trainers
to stop (after the current call, with a checkpoint; hung waits give up soon,
see ``alf_rl.utils.stop_request``), a second aborts at once.

No TensorFlow at import time.
"""

import os
import sys
from typing import Any, Callable, List, Optional

# The signal that asked the run to stop (for the exit message and status).
STOP_SIGNAL: List[int] = []
# The trainer a stop signal stops (once built).
TRAINERS: List[Any] = []


def stop_on_first_signal(rerun: Callable[[], str]) -> None:
    """First Ctrl-C or SIGTERM: stop after the current compiled call,
    checkpoint and exit 130 (143 for SIGTERM); a second one aborts at once
    with one line (exit 130/143), whatever the main thread is doing.

    Python runs a signal handler only on the main thread between bytecodes,
    and the main thread may sit for ever in a compiled step whose
    ``tf.numpy_function`` calls a hung environment. So the handlers do
    nothing themselves: the C-level handler writes each signal's number to
    a wakeup fd, and a daemon thread reading it asks for the stop or
    aborts (``os._exit``: checkpoints are written atomically, so those on
    disk stay intact; subprocess workers end with their parent).

    Args:
        rerun: ``() -> str``, how to resume (for the abort line), e.g.
            ``'rerun the same command'``.
    """
    import signal
    import threading

    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: None)

    def _on_signal(signum):
        name = 'SIGTERM' if signum == signal.SIGTERM else 'Ctrl-C'
        if STOP_SIGNAL:
            print(
                'alf-train: %s again: aborting at once; the checkpoints '
                'already written are intact: %s to resume from the last '
                'one' % (name, rerun()),
                file=sys.stderr,
                flush=True,
            )
            sys.stdout.flush()
            os._exit(143 if STOP_SIGNAL[0] == signal.SIGTERM else 130)
        STOP_SIGNAL.append(signum)
        print(
            'alf-train: %s: stopping after the current iteration(s) and '
            'writing a checkpoint (%s again to abort at once)' % (name, name),
            file=sys.stderr,
            flush=True,
        )
        for trainer in list(TRAINERS):
            trainer.request_stop()

    def _watch():
        while True:
            for signum in os.read(read_fd, 64):
                if signum in (signal.SIGINT, signal.SIGTERM):
                    _on_signal(signum)

    threading.Thread(target=_watch, name='alf_rl-signals', daemon=True).start()


def exit_stopped(message: str, lock: Optional[Any]) -> None:
    """Prints ``alf-train: interrupted`` (``terminated (SIGTERM)``) and
    ``message``, and exits 130 (143): a stop signal ended the run.

    Args:
        message: the rest of the line, e.g. ``'; a checkpoint was written
            at iteration 12: ...'``.
        lock: the run's ``RunDirLock`` (released first), or None.
    """
    import signal

    term = bool(STOP_SIGNAL) and STOP_SIGNAL[0] == signal.SIGTERM
    if lock is not None:
        lock.release()
    print(
        'alf-train: %s%s'
        % ('terminated (SIGTERM)' if term else 'interrupted', message),
        file=sys.stderr,
        flush=True,
    )
    sys.exit(143 if term else 130)
