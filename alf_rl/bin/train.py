r"""Trains an algorithm from gin files.

Usage::

    alf-train --gin_file examples/ac_cart_pole.gin --root_dir DIR \
        [--gin_param 'TrainerConfig.num_iterations=200'] \
        [--module_path DIR_OF_MY_MODULES] [--fresh_start]

Rerunning the same command on the same ``DIR`` resumes from the newest
checkpoint that reads back completely (counters continue; a corrupt newer
one is reported and moved aside as ``ckpt-<step>.corrupt``). When
checkpoints are on disk but none is usable, the run refuses to start unless
``--fresh_start`` is given. Outputs: ``DIR/train``, ``DIR/eval``
(TensorBoard), ``DIR/ckpt``, ``DIR/config.gin``.

One run at a time per ``DIR``: a second ``alf-train`` on it stops at once,
naming the pid and host of the first (``DIR/.alf_rl.lock``, an ``flock``
the kernel releases when the process ends). ``alf-play`` needs no lock.

Before TensorFlow is imported (seconds, not tens of seconds) the command
checks its flags, that the gin files exist and parse as gin syntax, that
``DIR`` can be created and written, and the lock. A start that fails later
(an unknown environment, a bad gin value) leaves no empty ``DIR`` behind.

Ctrl-C or SIGTERM: the run stops after the current compiled call, writes a
checkpoint and exits (130 or 143); a second signal aborts at once. A run
stopped by a dead environment or a non-finite loss writes a checkpoint
first when the model is still good, and says so.

A distributed learner (``alf_rl.distributed.strategy``):
``--gin_param "TrainerConfig.strategy='mirrored'"`` (with
``TrainerConfig.num_logical_cpu_devices=2`` to try it on CPUs); the strategy
is created right after the gin files are parsed.

Your own code (a network, an environment loader, an algorithm) reaches
``alf-train`` through gin: decorate it with ``@gin.configurable`` in a
module, import the module from the gin file with an ``import my_module``
line, and bind it (``create_environment.env_load_fn = @my_load``). The
module is found without ``PYTHONPATH`` when it is in the current directory
(searched after the installed packages, so it cannot shadow them) or in a
directory given with ``--module_path`` (searched first, like
``PYTHONPATH``; repeatable).
"""

import difflib
import inspect
import logging
import os
import re
import sys
import tokenize
from typing import Any, Dict, List, Optional, Sequence

from absl import app, flags

from alf_rl.bin.quiet import import_tensorflow, run_app, start_runtime
from alf_rl.utils.checkpoint import (CheckpointError, RunDirError,
                                     RunDirLock, describe_os_error)

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
    flags.DEFINE_boolean(
        'fresh_start', False,
        'Start from iteration 0 when root_dir holds checkpoints of which '
        'none is usable (they are kept, moved aside as ckpt-N.corrupt); '
        'without it such a run refuses to start. No effect when a usable '
        'checkpoint exists.')


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


class _DropMessages(logging.Filter):
    """Drops log records whose message starts with ``prefix``."""

    def __init__(self, prefix: str):
        super().__init__()
        self._prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        """False (drop) for the records starting with the prefix."""
        return not str(record.msg).startswith(self._prefix)


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


def check_gin_syntax(gin_files: Optional[Sequence[str]],
                     gin_params: Optional[Sequence[str]]) -> None:
    """Checks that gin files exist and that they and the bindings parse as
    gin syntax, without importing TensorFlow or any configurable.

    Names are not checked here (that needs the configurables registered;
    ``parse_gin`` does it). ``include`` lines are followed when the
    included file is found next to the including one or in the current
    directory (where ``parse_gin`` looks).

    Args:
        gin_files: gin file paths.
        gin_params: binding strings (``--gin_param``).

    Raises:
        ValueError: one line naming the file and line, or the
            ``--gin_param``, and what is wrong.
    """
    from gin import config_parser
    seen = set()

    def _check_file(path):
        real = os.path.realpath(path)
        if real in seen:
            return
        seen.add(real)
        if not os.path.isfile(path):
            raise ValueError("gin file not found: %s" % path)
        try:
            with open(path) as f:
                statements = list(_parse(f))
        except OSError as e:
            raise ValueError("gin file %s: %s" %
                             (path, e.strerror or e)) from None
        except (SyntaxError, tokenize.TokenError, ValueError) as e:
            raise ValueError("gin file %s: %s" % (path, _syntax(e))) from None
        for statement in statements:
            if isinstance(statement, config_parser.IncludeStatement):
                for base in (os.path.dirname(path), os.getcwd()):
                    candidate = os.path.join(base, statement.filename)
                    if os.path.isfile(candidate):
                        _check_file(candidate)
                        break

    for path in gin_files or ():
        _check_file(path)
    for binding in gin_params or ():
        try:
            list(_parse(binding))
        except (SyntaxError, tokenize.TokenError, ValueError) as e:
            raise ValueError("--gin_param %r: %s" %
                             (binding, _syntax(e, with_line=False))) from None


def _parse(source):
    """Gin statements of a file object or string, references unresolved."""
    from gin import config_parser

    class _Unresolved(config_parser.ParserDelegate):

        def configurable_reference(self, scoped_configurable_name, evaluate):
            return scoped_configurable_name

        def macro(self, macro_name):
            return macro_name

    return config_parser.ConfigParser(source, _Unresolved())


def _syntax(error, with_line=True):
    """One line for a gin parser error."""
    if isinstance(error, SyntaxError):
        where = ('line %s: ' % error.lineno) if (with_line and
                                                 error.lineno) else ''
        text = (' in %r' % error.text.strip()) if error.text else ''
        return 'gin syntax error, %s%s%s' % (where, error.msg, text)
    message = error.args[0] if error.args else str(error)
    return 'gin syntax error: %s' % ' '.join(str(message).split())


def parse_gin(gin_files: Optional[Sequence[str]],
              gin_params: Optional[Sequence[str]],
              root_dir: Optional[str] = None) -> None:
    """Parses gin files and bindings with a clear error on a bad binding.

    A gin file may ``include`` another one by a path relative to its own
    directory (e.g. ``include 'sac_pendulum.gin'`` in ``examples/``). The
    files are parsed first, then each binding on its own, so an error says
    where it came from; an unknown name gets the nearest known one
    suggested.

    Args:
        gin_files: list of gin file paths.
        gin_params: list of binding strings.
        root_dir: bound to ``TrainerConfig.root_dir`` when given.
    Raises:
        ValueError: naming the file or the ``--gin_param`` that failed and
            why, e.g. ``--gin_param 'TrainerConfig.num_env_step=5':
            Configurable 'TrainerConfig' doesn't have a parameter named
            'num_env_step'; did you mean num_env_steps?``.
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
    errors = (ValueError, KeyError, SyntaxError, ImportError, TypeError,
              OSError)
    # An ``include`` is tried in every search path in turn; gin logs an
    # error for each miss, also when a later path has the file.
    miss_filter = _DropMessages('Path not found: ')
    logging.getLogger().addFilter(miss_filter)
    try:
        gin.parse_config_files_and_bindings(gin_files, [],
                                            finalize_config=False)
    except errors as e:
        raise ValueError("bad gin configuration (%s): %s" %
                         (', '.join(gin_files), explain_gin_error(e))) from e
    finally:
        logging.getLogger().removeFilter(miss_filter)
    for binding in gin_params or []:
        try:
            gin.parse_config(binding)
        except errors as e:
            raise ValueError("--gin_param %r: %s" % (binding, explain_gin_error(
                e, with_location=False))) from e
    if root_dir:
        gin.parse_config("TrainerConfig.root_dir=%r" % root_dir)


_NO_PARAMETER = re.compile(
    r"Configurable '(?P<owner>[^']+)' doesn't have a parameter named "
    r"'(?P<name>[^']+)'")
_NO_CONFIGURABLE = re.compile(
    r"No configurable matching (?:reference )?'@?(?P<name>[^'(]+)")


def explain_gin_error(error: BaseException,
                      with_location: bool = True) -> str:
    """One line for a gin parse error, with the nearest known name
    suggested for an unknown parameter or configurable.

    Args:
        error: what gin raised.
        with_location: keep gin's 'In file ... line N' part.

    Returns:
        e.g. ``"Configurable 'TrainerConfig' doesn't have a parameter named
        'num_env_step'; did you mean num_env_steps?"``.
    """
    lines = [line.strip() for line in str(error).split('\n') if line.strip()]
    text = lines[0] if lines else type(error).__name__
    suggestion = _suggest(text)
    if suggestion:
        text = '%s; did you mean %s?' % (text.rstrip('.'), suggestion)
    if with_location and len(lines) > 1:
        text += ' (%s)' % ' '.join(lines[1:])
    return text


def _suggest(text: str) -> Optional[str]:
    """The known gin name nearest to the unknown one ``text`` names."""
    import gin
    registry = gin.config._REGISTRY  # no public listing of configurables
    match = _NO_PARAMETER.search(text)
    if match:
        configurable = registry.get_match(match.group('owner'))
        if configurable is None:
            return None
        try:
            names = list(inspect.signature(
                configurable.wrapped).parameters)
        except (TypeError, ValueError):
            return None
        return _nearest(match.group('name'), names)
    match = _NO_CONFIGURABLE.search(text)
    if match:
        wanted = match.group('name').strip().split('.')[-1]
        return _nearest(wanted, _registered_names(registry))
    return None


def _registered_names(registry) -> List[str]:
    return sorted({configurable.name for _, configurable in registry.items()})


def _nearest(name: str, candidates: Sequence[str]) -> Optional[str]:
    close = difflib.get_close_matches(name, list(candidates), n=1,
                                      cutoff=0.6)
    return close[0] if close else None


def start_training_runtime(config: Any) -> None:
    """Starts TensorFlow's runtime for a gin-configured ``TrainerConfig``:
    right after parsing gin, before anything runs a TensorFlow op, it
    creates ``config.strategy`` (logical devices and collective ops are
    configured at start-up only) and lets the trainer class set what it
    needs first (``configure_runtime``: the thread actors' inter-op
    threads of ``AsyncOffPolicyTrainer``).

    Args:
        config: the ``TrainerConfig``.
    """
    from alf_rl.distributed.strategy import create_strategy

    def _before_runtime():
        create_strategy(config.strategy, config.num_logical_cpu_devices)
        configure = getattr(config.trainer, 'configure_runtime', None)
        if configure is not None:
            import gin
            configure(gin.get_bindings(config.trainer))

    start_runtime(_before_runtime)


def train(root_dir: str, gin_files: Sequence[str] = (),
          gin_params: Sequence[str] = (),
          module_paths: Sequence[str] = (),
          fresh_start: bool = False) -> Dict[str, Any]:
    """Builds the configured trainer and trains.

    Args:
        root_dir: the run's directory (bound to ``TrainerConfig.root_dir``).
        gin_files: gin file paths.
        gin_params: gin binding strings.
        module_paths: directories searched first for modules named by gin
            ``import`` lines (see ``add_module_paths``; the current
            directory is searched too).
        fresh_start: bind ``TrainerConfig.fresh_start=True`` (start from
            iteration 0 when no checkpoint on disk is usable).

    Returns:
        ``Trainer.train``'s result dict.
    """
    import_tensorflow(start_runtime=False)
    add_module_paths(module_paths)
    parse_gin(gin_files, list(gin_params or []) +
              (['TrainerConfig.fresh_start=True'] if fresh_start else []),
              root_dir)
    from alf_rl.trainers import OnPolicyTrainer, TrainerConfig
    config = TrainerConfig()
    trainer_cls = config.trainer or OnPolicyTrainer
    start_training_runtime(config)
    trainer = trainer_cls(config)
    _TRAINERS.append(trainer)  # a stop signal from now on stops it
    if _STOP_SIGNAL:
        trainer.request_stop()
    try:
        return trainer.train()
    finally:
        _TRAINERS.remove(trainer)
        trainer.close()


# The signal that asked the run to stop (for the exit message and status).
_STOP_SIGNAL = []
# The trainer a stop signal stops (once built).
_TRAINERS = []


def _stop_on_first_signal():
    """First Ctrl-C or SIGTERM: stop after the current compiled call,
    checkpoint and exit 130 (143 for SIGTERM); a second one aborts at once
    (``KeyboardInterrupt``, or the default SIGTERM action)."""
    import signal

    def _handler(signum, frame):
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _STOP_SIGNAL.append(signum)
        name = 'SIGTERM' if signum == signal.SIGTERM else 'Ctrl-C'
        print('alf-train: %s: stopping after the current iteration(s) and '
              'writing a checkpoint (%s again to abort at once)' %
              (name, name), file=sys.stderr, flush=True)
        for trainer in _TRAINERS:
            trainer.request_stop()

    signal.signal(signal.SIGINT, _handler)
    signal.signal(signal.SIGTERM, _handler)


def _fail(message: str, lock: Optional[RunDirLock] = None) -> None:
    """Prints ``alf-train: error: MESSAGE`` and exits 1, first releasing
    ``lock`` (removing a ``root_dir`` that this start created and left
    empty)."""
    if lock is not None:
        lock.release(remove_if_unused=True)
    # gin appends "In call to configurable 'X' (...)" lines to errors raised
    # inside a configurable; the message already names the binding.
    lines = [line.strip() for line in message.split('\n') if line.strip()
             and not line.strip().startswith('In call to configurable')]
    print('alf-train: error: %s' % ' '.join(lines), file=sys.stderr,
          flush=True)
    sys.exit(1)


def _main(argv):
    if len(argv) > 1:
        raise app.UsageError('unexpected arguments: %s' % argv[1:])
    if not FLAGS.root_dir:
        raise app.UsageError('--root_dir is required')
    if not FLAGS.gin_file:
        raise app.UsageError('--gin_file is required')
    # Everything that can be checked without TensorFlow, before it.
    lock = None
    try:
        check_gin_syntax(FLAGS.gin_file, FLAGS.gin_param)
        add_module_paths(FLAGS.module_path or ())
        lock = RunDirLock(FLAGS.root_dir).acquire()
    except (ValueError, RunDirError) as e:
        _fail(str(e))
    tf = import_tensorflow(start_runtime=False)  # train() starts it
    from alf_rl.trainers.errors import TrainingError
    _stop_on_first_signal()
    try:
        result = train(FLAGS.root_dir, FLAGS.gin_file, FLAGS.gin_param,
                       FLAGS.module_path or (), FLAGS.fresh_start)
    except (ValueError, TypeError, TrainingError, CheckpointError,
            RunDirError) as e:
        _fail(str(e), lock)
    except OSError as e:
        _fail(describe_os_error(e.filename or FLAGS.root_dir, e), lock)
    except tf.errors.OpError as e:
        if 'No space left on device' not in str(e):
            raise
        _fail(describe_os_error(FLAGS.root_dir, e), lock)
    except KeyboardInterrupt:
        # Checkpoints are written atomically: the newest complete one is
        # intact, and rerunning the same command resumes from it.
        print('alf-train: interrupted; rerun the same command to resume '
              'from the last checkpoint in %s' % FLAGS.root_dir,
              file=sys.stderr)
        sys.exit(130)
    if result.pop('stopped_early', False):
        import signal
        term = _STOP_SIGNAL and _STOP_SIGNAL[0] == signal.SIGTERM
        print('alf-train: %s; a checkpoint was written at iteration %d: '
              'rerun the same command to resume from it (in %s)' %
              ('terminated (SIGTERM)' if term else 'interrupted',
               result['iterations'], FLAGS.root_dir), file=sys.stderr)
        sys.exit(143 if term else 130)
    from alf_rl.trainers.trainer import EPISODE_AVERAGES
    unscored = (['Metrics/' + name for name in EPISODE_AVERAGES]
                if result.get('Metrics/NumberOfEpisodes', 1) == 0 else [])
    print('alf-train: done: ' + ', '.join(
        '%s=%.4g' % (k, v) for k, v in sorted(result.items())
        if k not in unscored))


def main() -> None:
    """Console entry point of ``alf-train``."""
    _define_flags()
    run_app(_main)


if __name__ == '__main__':
    main()
