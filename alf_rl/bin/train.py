r"""Trains an algorithm from gin files.

Usage::

    alf-train --gin_file examples/ac_cart_pole.gin --root_dir DIR \
        [--gin_param 'TrainerConfig.num_iterations=200'] \
        [--module_path DIR_OF_MY_MODULES]

Rerunning the same command on the same ``DIR`` resumes from the newest
checkpoint (counters continue). Outputs: ``DIR/train``, ``DIR/eval``
(TensorBoard), ``DIR/ckpt``, ``DIR/config.gin``.

Your own code (a network, an environment loader, an algorithm) reaches
``alf-train`` through gin: decorate it with ``@gin.configurable`` in a
module, import the module from the gin file with an ``import my_module``
line, and bind it (``create_environment.env_load_fn = @my_load``). The
module is found without ``PYTHONPATH`` when it is in the current directory
(searched after the installed packages, so it cannot shadow them) or in a
directory given with ``--module_path`` (searched first, like
``PYTHONPATH``; repeatable).
"""

import os
import sys
from typing import Any, Dict, Optional, Sequence

from absl import app, flags

from alf_rl.bin.quiet import import_tensorflow, run_app

FLAGS = flags.FLAGS


def _define_flags():
    """Defines the command-line flags (only when run as a script)."""
    flags.DEFINE_multi_string('gin_file', None, 'Paths to gin config files.')
    flags.DEFINE_multi_string('gin_param', None,
                              "Gin bindings, e.g. 'TrainerConfig.num_iterations=10'.")
    flags.DEFINE_string('root_dir', None, 'Directory of the run (resumable).')
    flags.DEFINE_multi_string(
        'module_path', None,
        'Directory searched first for the Python modules that gin '
        "'import' lines name (your @gin.configurable code); repeatable. "
        'The current directory is always searched, after the installed '
        'packages.')


def add_module_paths(module_paths: Sequence[str] = (),
                     include_cwd: bool = True) -> None:
    """Makes user modules importable for gin ``import`` lines.

    Args:
        module_paths: directories put at the front of ``sys.path`` (in
            this order), like ``PYTHONPATH``.
        include_cwd: also append the current directory to ``sys.path``
            (after the installed packages, so a local file cannot shadow
            one of them). A console script such as ``alf-train`` does not
            have it on ``sys.path`` otherwise.

    Raises:
        ValueError: naming a ``module_paths`` entry that is not a directory.
    """
    paths = [os.path.abspath(p) for p in module_paths or ()]
    for given, path in zip(module_paths or (), paths):
        if not os.path.isdir(path):
            raise ValueError("--module_path %s: not a directory" % given)
    for path in reversed(paths):
        if path in sys.path:
            sys.path.remove(path)
        sys.path.insert(0, path)
    cwd = os.getcwd()
    if include_cwd and cwd not in sys.path and '' not in sys.path:
        sys.path.append(cwd)


def _add_gin_search_path(directory):
    """Lets ``include 'other.gin'`` resolve next to the including file.

    Searched before gin's default (the working directory): otherwise gin's
    package-resource lookup logs a spurious 'Path not found' error first.
    """
    import gin
    prefixes = getattr(gin.config, '_LOCATION_PREFIXES', None)
    if isinstance(prefixes, list):
        if directory not in prefixes:
            prefixes.insert(0, directory)
    else:
        gin.add_config_file_search_path(directory)


def parse_gin(gin_files: Optional[Sequence[str]],
              gin_params: Optional[Sequence[str]],
              root_dir: Optional[str] = None) -> None:
    """Parses gin files and bindings with a clear error on a bad binding.

    A gin file may ``include`` another one by a path relative to its own
    directory (e.g. ``include 'sac_pendulum.gin'`` in ``examples/``).

    Args:
        gin_files: list of gin file paths.
        gin_params: list of binding strings.
        root_dir: bound to ``TrainerConfig.root_dir`` when given.
    Raises:
        ValueError: naming the file or binding that failed and why.
    """
    import gin
    import alf_rl.configurables  # noqa: F401 (registers gin names)
    for path in gin_files or []:
        if not os.path.exists(path):
            raise ValueError("gin file not found: %s" % path)
        _add_gin_search_path(os.path.dirname(os.path.abspath(path)))
    # Absolute paths: gin then opens them directly instead of trying every
    # search path (and logging a spurious error for each miss).
    gin_files = [os.path.abspath(path) for path in gin_files or []]
    bindings = list(gin_params or [])
    if root_dir:
        bindings.append("TrainerConfig.root_dir=%r" % root_dir)
    try:
        gin.parse_config_files_and_bindings(gin_files or [], bindings,
                                            finalize_config=False)
    except (ValueError, KeyError, SyntaxError, ImportError) as e:
        raise ValueError("bad gin configuration (%s): %s" %
                         (', '.join(gin_files or []) or 'bindings', e)) from e


def train(root_dir: str, gin_files: Sequence[str] = (),
          gin_params: Sequence[str] = (),
          module_paths: Sequence[str] = ()) -> Dict[str, Any]:
    """Builds the configured trainer and trains.

    Args:
        root_dir: the run's directory (bound to ``TrainerConfig.root_dir``).
        gin_files: gin file paths.
        gin_params: gin binding strings.
        module_paths: directories searched first for modules named by gin
            ``import`` lines (see ``add_module_paths``; the current
            directory is searched too).

    Returns:
        ``Trainer.train``'s result dict.
    """
    import_tensorflow()
    add_module_paths(module_paths)
    parse_gin(gin_files, gin_params, root_dir)
    from alf_rl.trainers import OnPolicyTrainer, TrainerConfig
    config = TrainerConfig()
    trainer_cls = config.trainer or OnPolicyTrainer
    trainer = trainer_cls(config)
    try:
        return trainer.train()
    finally:
        trainer.close()


def _stop_on_first_interrupt():
    """First Ctrl-C: stop after the current compiled call, checkpoint and
    exit 130; a second one raises ``KeyboardInterrupt`` at once."""
    import signal
    from alf_rl.trainers.trainer import request_stop

    def _handler(signum, frame):
        signal.signal(signal.SIGINT, signal.default_int_handler)
        print('alf-train: stopping after the current iteration(s) and '
              'writing a checkpoint (Ctrl-C again to abort at once)',
              file=sys.stderr, flush=True)
        request_stop()

    signal.signal(signal.SIGINT, _handler)


def _main(argv):
    if len(argv) > 1:
        raise app.UsageError('unexpected arguments: %s' % argv[1:])
    import_tensorflow()
    if not FLAGS.root_dir:
        raise app.UsageError('--root_dir is required')
    if not FLAGS.gin_file:
        raise app.UsageError('--gin_file is required')
    from alf_rl.trainers.errors import TrainingError
    from alf_rl.utils.checkpoint import CheckpointError
    _stop_on_first_interrupt()
    try:
        result = train(FLAGS.root_dir, FLAGS.gin_file, FLAGS.gin_param,
                       FLAGS.module_path or ())
    except (ValueError, TypeError, TrainingError, CheckpointError) as e:
        print('alf-train: error: %s' % e, file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        # Checkpoints are written atomically: the newest complete one is
        # intact, and rerunning the same command resumes from it.
        print('alf-train: interrupted; rerun the same command to resume '
              'from the last checkpoint in %s' % FLAGS.root_dir,
              file=sys.stderr)
        sys.exit(130)
    if result.pop('stopped_early', False):
        print('alf-train: interrupted; a checkpoint was written at iteration '
              '%d: rerun the same command to resume from it (in %s)' %
              (result['iterations'], FLAGS.root_dir), file=sys.stderr)
        sys.exit(130)
    print('alf-train: done: ' + ', '.join(
        '%s=%.4g' % (k, v) for k, v in sorted(result.items())))


def main() -> None:
    """Console entry point of ``alf-train``."""
    _define_flags()
    run_app(_main)


if __name__ == '__main__':
    main()
