r"""Trains an algorithm from gin files.

Usage::

    alf-train --gin_file examples/ac_cart_pole.gin --root_dir DIR \
        [--gin_param 'TrainerConfig.num_iterations=200']

Rerunning the same command on the same ``DIR`` resumes from the newest
checkpoint (counters continue). Outputs: ``DIR/train``, ``DIR/eval``
(TensorBoard), ``DIR/ckpt``, ``DIR/config.gin``.
"""

import os
import sys

from absl import app, flags

from alf_rl.bin.quiet import import_tensorflow, run_app

FLAGS = flags.FLAGS


def _define_flags():
    """Defines the command-line flags (only when run as a script)."""
    flags.DEFINE_multi_string('gin_file', None, 'Paths to gin config files.')
    flags.DEFINE_multi_string('gin_param', None,
                              "Gin bindings, e.g. 'TrainerConfig.num_iterations=10'.")
    flags.DEFINE_string('root_dir', None, 'Directory of the run (resumable).')


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


def parse_gin(gin_files, gin_params, root_dir=None):
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


def train(root_dir, gin_files=(), gin_params=()):
    """Builds the configured trainer and trains; returns its result dict."""
    import_tensorflow()
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
    from alf_rl.trainers.trainer import TrainingError
    from alf_rl.utils.checkpoint import CheckpointError
    _stop_on_first_interrupt()
    try:
        result = train(FLAGS.root_dir, FLAGS.gin_file, FLAGS.gin_param)
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


def main():
    """Console entry point of ``alf-train``."""
    _define_flags()
    run_app(_main)


if __name__ == '__main__':
    main()
