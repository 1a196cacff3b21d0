r"""Exports a trained policy as a SavedModel, a TFLite or an ONNX model.

Usage::

    alf-export --root_dir DIR --out PATH [--format saved_model|tflite|both|onnx]
               [--stochastic] [--checkpoint N] [--gin_param ...]

(or ``python -m alf_rl.bin.export ...`` without installing the console
script). Loads ``DIR/config.gin`` and the newest checkpoint in ``DIR/ckpt``
(``--checkpoint N``: the one written at iteration N; as ``alf-play`` does)
and writes the policy: the SavedModel directory at
``PATH`` and the TFLite file at ``PATH.tflite`` (with ``--format both``,
the default; ``--format onnx`` writes ``PATH.onnx`` with the ``[onnx]``
extra; see ``alf_rl.export.output_paths``). The exported ``action``
signature takes the observation (named inputs ``observation`` or
``observation_<path>``) and, for recurrent policies, the state; the run's
observation normalizer is folded in. Greedy (``predict``) by default;
``--stochastic`` exports sampling with the noise as an input (``gumbel*``
for categorical actions, ``eps*`` for continuous ones). See docs/export.md
for a plain-TensorFlow program that plays the exported policy.
"""

from typing import List, Optional, Sequence

from absl import app, flags

from alf_rl.runs.commands import run_command
from alf_rl.runs.quiet import import_tensorflow, run_app

FLAGS = flags.FLAGS


def _define_flags():
    """Defines the command-line flags (only when run as a script)."""
    flags.DEFINE_string('root_dir', None, 'Directory of a training run.')
    flags.DEFINE_string('out', None,
                        'Output path: the SavedModel directory; the TFLite '
                        'file is PATH.tflite.')
    flags.DEFINE_enum('format', 'both', ['saved_model', 'tflite', 'both',
                                         'onnx'],
                      'What to write (onnx: PATH.onnx, needs the [onnx] '
                      'extra).')
    flags.DEFINE_boolean('stochastic', False,
                         'Export sampling with noise inputs instead of the '
                         'greedy predict.')
    flags.DEFINE_multi_string('gin_param', None, 'Extra gin bindings.')
    flags.DEFINE_multi_string(
        'module_path', None,
        'Directory searched first for the user modules the run imported '
        '(recorded in root_dir/modules.json); repeatable.')
    flags.DEFINE_integer('checkpoint', None,
                         'Export the checkpoint written at this training '
                         'iteration (root_dir/ckpt/ckpt-N) instead of the '
                         'newest.')


def export(root_dir: str, out: str, export_format: str = 'both',
           stochastic: bool = False, gin_params: Sequence[str] = (),
           module_paths: Sequence[str] = (),
           checkpoint: Optional[int] = None) -> List[str]:
    """Restores a run's newest checkpoint (or ``checkpoint``) and exports
    its policy.

    Args:
        root_dir: a run directory written by ``alf-train``.
        out: output path (see ``alf_rl.export.output_paths``).
        export_format: ``'saved_model'``, ``'tflite'``, ``'both'`` or
            ``'onnx'``.
        stochastic: export sampling with noise inputs.
        gin_params: extra gin bindings, applied after ``config.gin``.
        module_paths: directories searched first for the user modules the
            run imported.
        checkpoint: export ``ckpt/ckpt-<checkpoint>`` (written at that
            training iteration) instead of the newest checkpoint.

    Returns:
        The paths written.

    Raises:
        ValueError: no ``config.gin``, a bad format, ``stochastic`` for a
            deterministic policy, or a policy TFLite's builtins cannot run.
        CheckpointError: no checkpoint (or not ``checkpoint``), or one
            that does not match.
    """
    import_tensorflow()
    from alf_rl.runs.restore import restore_run
    from alf_rl.export import export_policy, output_paths
    output_paths(out, export_format)  # checks the format before restoring
    env, algorithm = restore_run(root_dir, gin_params=gin_params,
                                 prog='alf-export',
                                 module_paths=module_paths,
                                 checkpoint=checkpoint)
    env.close()
    paths = export_policy(algorithm, out, export_format, stochastic)
    for path in paths:
        print('alf-export: wrote %s' % path)
    return paths


def _main(argv):
    if len(argv) > 1:
        raise app.UsageError('unexpected arguments: %s' % argv[1:])
    if not FLAGS.root_dir or not FLAGS.out:
        raise app.UsageError('--root_dir and --out are required')
    run_command('alf-export', lambda: export(
        FLAGS.root_dir, FLAGS.out, FLAGS.format, FLAGS.stochastic,
        FLAGS.gin_param or (), FLAGS.module_path or (), FLAGS.checkpoint))


def main() -> None:
    """Console entry point of ``alf-export``."""
    _define_flags()
    run_app(_main)


if __name__ == '__main__':
    main()
