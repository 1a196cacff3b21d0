"""Silences TensorFlow's start-up noise without hiding real errors.

TensorFlow 2.21 prints INFO lines (oneDNN, missing CUDA drivers) through
absl before ``TF_CPP_MIN_LOG_LEVEL`` takes effect. ``import_tensorflow``
imports it with file descriptor 2 sent to a temporary file, then writes back
every line that is not one of those known notices, so genuine errors and
warnings still reach the terminal.
"""

import contextlib
import os
import re
import sys
import tempfile
import types
import warnings
from typing import Any, Callable, Iterator, List, Optional

_NOISE = [
    re.compile(r'^WARNING: All log messages before absl::InitializeLog'),
    re.compile(r'^I\d{4} .*'),  # glog-style INFO lines
    re.compile(r'^E\d{4} .*(cuInit|cuda_platform|cuda_executor|cudart)'),
    re.compile(r'^W\d{4} .*(cuda|TensorRT|TF-TRT)'),
    re.compile(r'^To enable the following instructions: .*rebuild '
               r'TensorFlow'),
]


def is_noise(line: str) -> bool:
    """True for a known TensorFlow start-up notice (not an error).

    Args:
        line: one line of stderr, without its newline.
    """
    return any(p.match(line) for p in _NOISE)


def _import_stdlib_distutils():
    """Imports the standard library's ``distutils.version`` (Python 3.11).

    TFP checks TensorFlow's version with ``distutils.version``. In a venv,
    setuptools' ``distutils-precedence.pth`` shim redirects that import to
    ``setuptools._distutils``, which imports setuptools: ~0.25 s of every
    command's start-up on this machine class. The standard library's copy
    (what ``SETUPTOOLS_USE_DISTUTILS=stdlib`` selects) does the same version
    comparison in ~5 ms. Does nothing when ``distutils`` is already imported
    or the standard library has none (Python >= 3.12, where the shim is the
    only ``distutils``).
    """
    if 'distutils' in sys.modules:
        return
    shims = [f for f in sys.meta_path
             if type(f).__module__ == '_distutils_hack']
    for finder in shims:
        sys.meta_path.remove(finder)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', DeprecationWarning)
            import distutils.version  # noqa: F401
    except ImportError:
        pass
    finally:
        sys.meta_path[0:0] = shims


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Sends file descriptor 2 to a temporary file inside the block, then
    writes back every line that is not a known start-up notice."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode='w+b') as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            for line in capture.read().decode('utf-8', 'replace').splitlines():
                if line.strip() and not is_noise(line):
                    print(line, file=sys.stderr)


def import_tensorflow(start_runtime: bool = True) -> types.ModuleType:
    """Imports TensorFlow (and TFP) quietly; returns the ``tensorflow`` module.

    Args:
        start_runtime: also start TensorFlow's runtime (its first op prints
            more notices). False leaves it for ``start_runtime``: settings
            that must come before any op (logical devices, a
            ``tf.distribute`` strategy's collective ops) can still be made.
    """
    # Level 3 also hides oneDNN's run-time notices logged at ERROR level (e.g.
    # "oneDNN supports DT_INT64 only on platforms with AVX-512"); genuine
    # failures still surface as Python exceptions.
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
    # In-graph rollouts are long chains of tiny ops; TensorFlow's inter-op
    # thread pool costs more in scheduling than it gains there (measured:
    # 18.9k -> 29.7k env steps/s for the CartPole rollout on 2 cores). Must
    # be set before TensorFlow starts; export the variable to override.
    os.environ.setdefault('TF_NUM_INTEROP_THREADS', '1')
    with _quiet_stderr():
        _import_stdlib_distutils()
        # TFP first: imported after TensorFlow, it eagerly loads its
        # `experimental` package, which alf_rl never uses; imported
        # first, it stays lazy (with distutils: ~0.3-0.7 s less
        # start-up, measured).
        import tensorflow_probability as tfp
        import tensorflow as tf
        tfp.distributions.Distribution  # noqa: B018 (loads it)
        # Device discovery prints CUDA notices on CPU-only machines.
        tf.config.list_physical_devices()
        if start_runtime:
            tf.constant(0)
    tf.get_logger().setLevel('ERROR')
    from absl import logging as absl_logging
    absl_logging.set_verbosity(absl_logging.WARNING)
    return tf


def start_runtime(before: Optional[Callable[[], Any]] = None) -> None:
    """Starts TensorFlow's runtime quietly (after
    ``import_tensorflow(start_runtime=False)``).

    Args:
        before: called first, inside the same quiet block: what must be
            configured before any op runs (e.g. creating a strategy).
    """
    import tensorflow as tf
    with _quiet_stderr():
        if before is not None:
            before()
        tf.constant(0)


def run_app(main_fn: Callable[[List[str]], None]) -> None:
    """Runs an absl ``main_fn`` and ends the process without TF's teardown.

    After a training run, interpreter finalization spends ~1.5 s on this
    machine class in TensorFlow's C++ destructors. The command's outcome is
    settled by then: stdout, stderr and the ``logging`` handlers are flushed
    (event files and checkpoints were flushed and closed by the trainer),
    then the process exits with the same status ``app.run`` gave
    (``os._exit``; ``atexit`` handlers are run first). An exception other
    than ``SystemExit`` propagates unchanged (normal traceback and exit).

    Args:
        main_fn: ``main(argv)`` for ``absl.app.run``.
    """
    import atexit
    import logging
    from absl import app
    try:
        app.run(main_fn)
        code = 0
    except SystemExit as e:
        code = e.code
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
