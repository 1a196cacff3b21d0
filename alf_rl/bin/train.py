r"""Trains an algorithm from gin files.

Usage::

    alf-train --gin_file examples/ac_cart_pole.gin --root_dir DIR \
        [--gin_param 'TrainerConfig.num_iterations=200'] \
        [--module_path DIR_OF_MY_MODULES] [--fresh_start | --from_checkpoint N]
        [--without_replay] [--init_from OTHER_RUN_DIR]
    alf-train --example ppo_cart_pole --root_dir DIR

``--example NAME`` is a gin file shipped with alf_rl (``examples/NAME.gin``
of the source tree), usable from any directory; so is a ``--gin_file
examples/NAME.gin`` not found under the current directory.

Rerunning the same command on the same ``DIR`` resumes from the newest
checkpoint that reads back completely (counters continue; a corrupt newer
one is reported and moved aside as ``ckpt-<step>.corrupt``). When
checkpoints are on disk but none is usable, the run refuses to start.
Rescues (see the flags; said in one line, nothing deleted; rerun without
them to resume): ``--from_checkpoint N``, ``--fresh_start``,
``--without_replay`` (resume with the replay buffer refilled, when only
its chunk files are damaged). Outputs:
``DIR/train``, ``DIR/eval``
(TensorBoard), ``DIR/ckpt``, ``DIR/config.gin``. ``--init_from`` starts a
new run from another run's weights (``OfflineToOnlineTrainer``, e.g. an
offline run continued online).

One run at a time per ``DIR``: a second ``alf-train`` on it stops at once,
naming the pid and host of the first (``DIR/.alf_rl.lock``, an ``flock``
the kernel releases when the process ends). ``alf-play`` needs no lock.

Before TensorFlow is imported (seconds, not tens of seconds) the command
checks its flags, that the gin files exist and parse as gin syntax, that
``DIR`` can be created and written, and the lock. Then every gin binding's
value is checked against its parameter's type (one line naming the
binding). A start that fails later, up to its first iteration (an unknown
environment, a value out of range, an error while tracing) leaves ``DIR``
as it found it: no lock file, event file or ``config.gin``.

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

import sys
from typing import Any, Dict, List, NoReturn, Optional, Sequence

from absl import app, flags

from alf_rl.runs.examples import gin_files_with_examples
from alf_rl.runs.gin_files import (add_module_paths, check_gin_syntax,  # noqa: F401
                                   parse_gin)
from alf_rl.runs.quiet import import_tensorflow, run_app
from alf_rl.runs.stop_signals import (STOP_SIGNAL, TRAINERS, exit_stopped,
                                      stop_on_first_signal)
# Importable from here too (benchmarks, tests).
from alf_rl.runs.training import start_training_runtime  # noqa: F401
from alf_rl.utils.checkpoint import (CheckpointError, RunDirError,
                                     RunDirLock, describe_os_error,
                                     rerun_advice)

FLAGS = flags.FLAGS


def _define_flags():
    """Defines the command-line flags (only when run as a script)."""
    flags.DEFINE_multi_string('gin_file', None, 'Paths to gin config files.')
    flags.DEFINE_multi_string(
        'example', None, "A shipped example by name, e.g. 'ppo_cart_pole' "
        '(before the --gin_file files); repeatable.')
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
        'Start over from iteration 0: the earlier run in root_dir (ckpt, '
        'train, eval, config.gin) is first moved to root_dir/set_aside-K '
        '(nothing is deleted). Rerun without it to resume.')
    flags.DEFINE_integer(
        'from_checkpoint', None,
        'Resume from the kept checkpoint ckpt-N of iteration N (e.g. when '
        'the newer ones hold bad state); the newer ones are renamed '
        'ckpt-K.set_aside (nothing is deleted). Rerun without it to resume.')
    flags.DEFINE_boolean(
        'without_replay', False,
        'Resume without the replay buffer\'s contents (e.g. when its chunk '
        'files are damaged: the refusal to start says so); it is refilled '
        'with initial_collect_steps of the current policy. Binds '
        'TrainerConfig.restore_replay=False. Rerun without it to resume.')
    flags.DEFINE_integer(
        'stop_at_env_steps', None,
        'Stop (with a checkpoint, exit 0) after this many environment steps, '
        'keeping the configured budget and schedules: binds '
        'TrainerConfig.stop_at_env_steps. Rerun without it to continue.')
    flags.DEFINE_string(
        'xla_cache', None,
        'Directory of the persistent cache of XLA executables, or off '
        '(default: $ALF_RL_XLA_CACHE, else ~/.cache/alf_rl/xla).')
    flags.DEFINE_string(
        'init_from', None,
        'Start this (online, off-policy) run from the weights of the newest '
        'checkpoint of another run, e.g. an offline one: binds '
        'TrainerConfig.trainer=@OfflineToOnlineTrainer (docs/offline.md).')


def train(root_dir: str, gin_files: Sequence[str] = (),
          gin_params: Sequence[str] = (),
          module_paths: Sequence[str] = (),
          fresh_start: bool = False,
          from_checkpoint: Optional[int] = None,
          callbacks: Sequence[Any] = ()) -> Dict[str, Any]:
    """Builds the configured trainer and trains.

    Args:
        root_dir: the run's directory (bound to ``TrainerConfig.root_dir``).
        gin_files: gin file paths.
        gin_params: gin binding strings.
        module_paths: directories searched first for modules named by gin
            ``import`` lines (see ``add_module_paths``; the current
            directory is searched too).
        fresh_start: bind ``TrainerConfig.fresh_start=True`` (the earlier
            run moved aside, start from iteration 0).
        from_checkpoint: bind ``TrainerConfig.from_checkpoint`` (resume
            from that kept checkpoint, the newer ones set aside).
        callbacks: ``TrainingCallback`` objects (see
            ``alf_rl.trainers.callbacks``; gin's come after them).

    Returns:
        ``Trainer.train``'s result dict.

    The run has a gin configuration of its own (``own_gin_config``): the
    caller's bindings are not used and are back when it returns, so two
    calls in one process train as two processes would.
    """
    import_tensorflow(start_runtime=False)
    from alf_rl.runs.training import build_gin_trainer
    from alf_rl.trainers.gin_scope import own_gin_config
    from alf_rl.runs.binding_checks import explain_configurable_error
    with own_gin_config():
        try:
            trainer = build_gin_trainer(root_dir, gin_files, gin_params,
                                        module_paths, fresh_start,
                                        from_checkpoint)
        except (ValueError, TypeError) as e:
            # alf-train's line names the bindings: read while still bound.
            e.explained = explain_configurable_error(  # type: ignore
                str(e))
            raise
    TRAINERS.append(trainer)  # a stop signal from now on stops it
    if STOP_SIGNAL:
        trainer.request_stop()
    try:
        return trainer.train(callbacks) if callbacks else trainer.train()
    finally:
        TRAINERS.remove(trainer)
        trainer.close()


def _gin_params() -> List[str]:
    """The ``--gin_param`` bindings and those ``--without_replay``,
    ``--init_from`` and ``--stop_at_env_steps`` stand for."""
    params = list(FLAGS.gin_param or [])
    if FLAGS.without_replay:
        params.append('TrainerConfig.restore_replay=False')
    if FLAGS.stop_at_env_steps is not None:
        params.append('TrainerConfig.stop_at_env_steps=%d' %
                      FLAGS.stop_at_env_steps)
    if FLAGS.init_from:
        params += ['TrainerConfig.trainer=@OfflineToOnlineTrainer',
                   'OfflineToOnlineTrainer.init_from=%r' % FLAGS.init_from]
    return params


def _rerun() -> str:
    """How to resume: without a rescue flag (it would act again)."""
    return rerun_advice(FLAGS.fresh_start, FLAGS.from_checkpoint is not None,
                        FLAGS.without_replay)


def _fail(message: str, lock: Optional[RunDirLock] = None) -> NoReturn:
    """Prints ``alf-train: error: MESSAGE`` (on one line, naming the gin
    configurable it was raised in) and exits 1, first releasing ``lock``
    (removing the lock file this start created, and the ``root_dir`` it
    created when that is empty then)."""
    if lock is not None:
        lock.release(remove_if_unused=True)
    # gin appends "In call to configurable 'X' (...)" lines to errors raised
    # inside a configurable: they name X (and its bindings) in the line.
    from alf_rl.runs.binding_checks import explain_configurable_error
    print('alf-train: error: %s' % explain_configurable_error(message),
          file=sys.stderr, flush=True)
    sys.exit(1)


def _check_before_tensorflow():
    """Everything that can be checked without TensorFlow, before it: the
    gin files (``--example`` by name) and their syntax, ``--module_path``
    and the run directory's lock (one line and exit 1 on a failure).

    Returns:
        ``(gin_files, lock)``: the gin file paths and the held lock.
    """
    try:
        gin_files = gin_files_with_examples(FLAGS.gin_file or (),
                                            FLAGS.example or ())
        check_gin_syntax(gin_files, _gin_params())
        add_module_paths(FLAGS.module_path or ())
        return gin_files, RunDirLock(FLAGS.root_dir).acquire()
    except (ValueError, RunDirError) as e:
        _fail(str(e))


def _main(argv):
    if len(argv) > 1:
        raise app.UsageError('unexpected arguments: %s' % argv[1:])
    if not FLAGS.root_dir:
        raise app.UsageError('--root_dir is required')
    if not FLAGS.gin_file and not FLAGS.example:
        raise app.UsageError('--gin_file or --example is required')
    gin_files, lock = _check_before_tensorflow()
    # train() starts the runtime; the XLA cache is set before the import.
    tf = import_tensorflow(start_runtime=False, xla_cache=FLAGS.xla_cache)
    from alf_rl.trainers.errors import TrainingError
    stop_on_first_signal(_rerun)
    try:
        result = train(FLAGS.root_dir, gin_files, _gin_params(),
                       FLAGS.module_path or (), FLAGS.fresh_start,
                       FLAGS.from_checkpoint)
    except TrainingError as e:
        if STOP_SIGNAL:  # a wait the stop request cut short
            exit_stopped(': %s' % e, lock)
        _fail(str(e), lock)
    except (ValueError, TypeError, CheckpointError, RunDirError) as e:
        _fail(getattr(e, 'explained', str(e)), lock)
    except OSError as e:
        _fail(describe_os_error(e.filename or FLAGS.root_dir, e), lock)
    except tf.errors.OpError as e:
        if 'No space left on device' not in str(e):
            raise
        _fail(describe_os_error(FLAGS.root_dir, e), lock)
    except KeyboardInterrupt:
        # Checkpoints are written atomically: the newest complete one is
        # intact, and rerunning the same command resumes from it.
        print('alf-train: interrupted; %s to resume from the last '
              'checkpoint in %s' % (_rerun(), FLAGS.root_dir),
              file=sys.stderr)
        sys.exit(130)
    if result.pop('stopped_early', False):
        exit_stopped('; a checkpoint was written at iteration %d: %s to '
                      'resume from it (in %s)' % (result['iterations'],
                                                  _rerun(), FLAGS.root_dir),
                      lock)
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
