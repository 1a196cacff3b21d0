"""Silences TensorFlow's start-up noise without hiding real errors.

TensorFlow 2.21 prints INFO lines (oneDNN, missing CUDA drivers) through
absl before ``TF_CPP_MIN_LOG_LEVEL`` takes effect. ``import_tensorflow``
imports it inside ``alf_rl.utils.quiet_stderr.notices_dropped``, which
writes back every stderr line that is not one of those known notices, so
genuine errors and warnings still reach the terminal.
"""

import os
import sys
import types
import warnings
from typing import Any, Callable, List, Optional

from alf_rl.utils.quiet_stderr import notices_dropped


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


def import_tensorflow(start_runtime: bool = True,
                      xla_cache: Optional[str] = 'off') -> types.ModuleType:
    """Imports TensorFlow (and TFP) quietly; returns the ``tensorflow`` module.

    Args:
        start_runtime: also start TensorFlow's runtime (its first op prints
            more notices). False leaves it for ``start_runtime``: settings
            that must come before any op (logical devices, a
            ``tf.distribute`` strategy's collective ops) can still be made.
        xla_cache: the persistent XLA cache's root
            (``alf_rl.utils.xla_cache.enable``; ``None``: the default),
            enabled when TensorFlow is not imported yet; ``'off'`` (the
            default here): none.
    """
    if xla_cache != 'off':
        from alf_rl.utils.xla_cache import enable
        enable(xla_cache)
    # Level 3 also hides oneDNN's run-time notices logged at ERROR level (e.g.
    # "oneDNN supports DT_INT64 only on platforms with AVX-512"); genuine
    # failures still surface as Python exceptions.
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
    # In-graph rollouts are long chains of tiny ops; TensorFlow's inter-op
    # thread pool costs more in scheduling than it gains there (measured:
    # 18.9k -> 29.7k env steps/s for the CartPole rollout on 2 cores). Must
    # be set before TensorFlow starts; export the variable to override.
    os.environ.setdefault('TF_NUM_INTEROP_THREADS', '1')
    with notices_dropped():
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
    with notices_dropped():
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

    ``--help`` (``-h``) prints the tool's own help (``cli_help.help_text``:
    its usage and flags, from ``main_fn``'s module) and exits 0.

    Args:
        main_fn: ``main(argv)`` for ``absl.app.run``.
    """
    import atexit
    import logging
    from absl import app
    from alf_rl.runs.cli_help import help_text, wants_help
    if wants_help(sys.argv[1:]):
        prog = os.path.basename(sys.argv[0])
        spec = getattr(sys.modules['__main__'], '__spec__', None)
        if main_fn.__module__ == '__main__' and spec is not None:
            prog = 'python -m %s' % spec.name  # run with python -m
        print(help_text(main_fn.__module__, prog))
        sys.stdout.flush()
        os._exit(0)
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
