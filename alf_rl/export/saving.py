"""Writing an ``ExportedPolicy`` as a SavedModel and as a TFLite model.

TFLite models are converted with TFLite's builtin ops only
(``OpsSet.TFLITE_BUILTINS``): Flex (select TensorFlow) ops cannot be run by
``tf.lite.Interpreter`` or ``ai-edge-litert`` from Python, so a policy that
needs one fails to convert here, in one line naming the ops TFLite cannot
run (the converter's own diagnostics are kept off the terminal), rather
than later on the device. Stochastic exports take their noise as an input, so
they convert with builtins too.
"""

import os
import re
import shutil
import tempfile
from typing import Any, List

import tensorflow as tf

from alf_rl.export.policy_module import (ACTION_SIGNATURE,
                                         INITIAL_STATE_SIGNATURE,
                                         ExportedPolicy)
from alf_rl.export.onnx_conversion import ONNX_SUFFIX, convert_to_onnx
from alf_rl.utils.quiet_stderr import stderr_captured, write_back

FORMATS = ('saved_model', 'tflite', 'both', 'onnx')
_UNSUPPORTED_OP = re.compile(
    r"'(tf\.\w+)' op is neither a custom op nor a flex op")
_OP_LOCATION = re.compile(r'fused\["\w+:", "([^"@]+)@')


def _conversion_error_message(text: str) -> str:
    """One line for a failed TFLite conversion.

    Args:
        text: the converter's exception message and diagnostics.
    Returns:
        ``"the policy does not convert to TFLite with builtin ops only
        (...): ..."`` naming the ops the builtins cannot run and where the
        first one is (a node of the policy's graph), or the start of the
        converter's message when it names none.
    """
    ops = sorted(set(_UNSUPPORTED_OP.findall(text)))
    if ops:
        where = _OP_LOCATION.search(text)
        detail = 'TFLite\'s builtins cannot run %s%s' % (
            ', '.join(ops), ' (in %s)' % where.group(1) if where else '')
    else:
        detail = ' '.join(text.split())[:400]
    return ("the policy does not convert to TFLite with builtin ops only "
            "(--format saved_model exports it without TFLite): %s" % detail)


def save_policy(policy: ExportedPolicy, path: str) -> str:
    """Writes ``policy`` as a SavedModel directory.

    Args:
        policy: the exported policy module.
        path: directory to write (created; replaced when it exists).
    Returns:
        ``path``.
    """
    if os.path.isdir(path):
        shutil.rmtree(path)
    tf.saved_model.save(policy, path, signatures=policy.signatures)
    return path


def convert_to_tflite(saved_model_dir: str, path: str) -> str:
    """Converts a SavedModel written by ``save_policy`` to a ``.tflite``
    file with builtin ops only.

    Args:
        saved_model_dir: the SavedModel directory.
        path: the ``.tflite`` file to write.
    Returns:
        ``path``.
    Raises:
        ValueError: the policy needs an op outside TFLite's builtins (the
            converter's message says which).
    """
    loaded = tf.saved_model.load(saved_model_dir)
    keys = [k for k in (ACTION_SIGNATURE, INITIAL_STATE_SIGNATURE)
            if k in loaded.signatures]
    del loaded
    converter = tf.lite.TFLiteConverter.from_saved_model(saved_model_dir,
                                                         signature_keys=keys)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    # The converter prints its diagnostics (one MLIR line per failing op)
    # straight to file descriptor 2: kept out of the terminal on failure,
    # where the error names them in one line.
    try:
        with stderr_captured() as diagnostics:
            content = converter.convert()
    except Exception as e:  # the converter raises ConverterError et al.
        raise ValueError(_conversion_error_message(
            str(e) + '\n' + '\n'.join(diagnostics))) from None
    write_back(diagnostics)
    with open(path, 'wb') as f:
        f.write(content)
    return path


def output_paths(out: str, export_format: str) -> List[str]:
    """Where ``export_policy`` writes for ``--out`` and ``--format``.

    ``out`` without a ``.tflite`` suffix names the SavedModel directory;
    the TFLite file is ``out + '.tflite'`` (``out`` itself when it already
    ends in ``.tflite``, the SavedModel then being ``out`` without it).
    ``onnx`` writes ``out + '.onnx'`` (``out`` itself when it ends in
    ``.onnx``); a recurrent policy adds its ``initial_state`` model (see
    ``alf_rl.export.onnx_conversion``), which this list does not name.

    Args:
        out: the ``--out`` path.
        export_format: one of ``FORMATS``.
    Returns:
        The paths written, SavedModel first.
    Raises:
        ValueError: an unknown format.
    """
    if export_format not in FORMATS:
        raise ValueError("--format must be one of %s, got %r" %
                         ('|'.join(FORMATS), export_format))
    base = out
    for suffix in ('.tflite', ONNX_SUFFIX):
        if base.endswith(suffix):
            base = base[:-len(suffix)]
    if export_format == 'onnx':
        return [base + ONNX_SUFFIX]
    paths = []
    if export_format in ('saved_model', 'both'):
        paths.append(base)
    if export_format in ('tflite', 'both'):
        paths.append(base + '.tflite')
    return paths


def export_policy(algorithm: Any, out: str, export_format: str = 'both',
                  stochastic: bool = False) -> List[str]:
    """Exports the policy of a (restored) algorithm.

    Args:
        algorithm: a built ``RLAlgorithm`` with its trained values.
        out: output path (see ``output_paths``).
        export_format: ``'saved_model'``, ``'tflite'``, ``'both'`` or
            ``'onnx'``.
        stochastic: export sampling with noise inputs instead of the greedy
            ``predict`` (see ``ExportedPolicy``).
    Returns:
        The paths written (for ``onnx`` and a recurrent policy, with its
        ``initial_state`` model).
    Raises:
        ValueError: an unknown format, ``stochastic`` for a policy without
            an action distribution, a policy that needs non-builtin
            TFLite ops, or (``onnx``) a missing ``[onnx]`` extra or a model
            onnxruntime cannot run.
    """
    paths = output_paths(out, export_format)
    policy = ExportedPolicy(algorithm, stochastic=stochastic)
    if export_format == 'onnx':
        return convert_to_onnx(policy, paths[0])
    if export_format != 'tflite':
        save_policy(policy, paths[0])
        saved_model_dir, tmp = paths[0], None
    else:
        tmp = tempfile.mkdtemp(prefix='alf_export_')
        saved_model_dir = save_policy(policy, os.path.join(tmp, 'policy'))
    try:
        if export_format != 'saved_model':
            convert_to_tflite(saved_model_dir, paths[-1])
    except ValueError as e:
        if tmp is None:  # 'both': the SavedModel stays
            raise ValueError('wrote the SavedModel %s, but %s' %
                             (paths[0], e)) from None
        raise
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return paths
