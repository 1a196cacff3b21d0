"""What the console scripts that act on a finished run share: running
the command with its bad input reported in one line."""

import sys
from typing import Any, Callable, NoReturn


def run_command(prog: str, command: Callable[[], Any]) -> Any:
    """Imports TensorFlow quietly and runs ``command()``; a ``ValueError``
    or a ``CheckpointError`` (a bad flag value, a run directory without a
    usable checkpoint) ends the process with ``PROG: error: MESSAGE`` on
    stderr and exit status 1.

    Args:
        prog: the tool's name, e.g. ``'alf-play'``.
        command: the tool's work.
    Returns:
        What ``command`` returns.
    """
    from alf_rl.runs.quiet import import_tensorflow
    from alf_rl.utils.checkpoint import CheckpointError

    import_tensorflow()
    try:
        return command()
    except (ValueError, CheckpointError) as e:
        _fail(prog, str(e))


def _fail(prog: str, message: str) -> NoReturn:
    """Prints ``PROG: error: MESSAGE`` on stderr and exits 1."""
    print('%s: error: %s' % (prog, message), file=sys.stderr)
    sys.exit(1)
