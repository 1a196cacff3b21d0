"""Writing an ``ExportedPolicy`` as ONNX models (``alf-export --format onnx``).

The ``action`` signature becomes ``PATH.onnx`` with the same input and
output names (``observation``/``observation_<path>``, ``state_<path>``,
``gumbel*``/``eps*`` -> ``action``/``action_<path>``; see
``alf_rl.export.policy_module``), except that the next state, which the
signature returns under its input's name, is output ``next_state_<path>``
(an ONNX graph names each value once); a recurrent policy's
``initial_state`` signature becomes a second model next to it
(``initial_state_path``).
Conversion uses ``tf2onnx`` and every written model is opened once with
``onnxruntime`` (both in the ``[onnx]`` extra), so a policy with an op that
ONNX cannot express fails here, in one line, rather than where it is
deployed.
"""

import logging
import os
from typing import Any, Dict, List, Optional

import tensorflow as tf

from alf_rl.export.policy_module import ExportedPolicy

ONNX_SUFFIX = '.onnx'
NEXT_PREFIX = 'next_'
_INITIAL_STATE_SUFFIX = '.initial_state.onnx'
_EXTRA_HINT = "pip install 'alf_rl[onnx]'"


def initial_state_path(path: str) -> str:
    """Where a recurrent policy's ``initial_state`` model is written.

    Args:
        path: the ``action`` model's path, ending in ``.onnx``.
    Returns:
        ``PATH.initial_state.onnx`` for ``PATH.onnx``.
    """
    return path[: -len(ONNX_SUFFIX)] + _INITIAL_STATE_SUFFIX


def _import_converter() -> Any:
    """``tf2onnx``, quiet, or a one-line error naming the extra."""
    try:
        import tf2onnx
    except ImportError:
        raise ValueError(
            '--format onnx needs tf2onnx and onnxruntime (the [onnx] '
            'extra): %s' % _EXTRA_HINT
        ) from None
    # tf2onnx logs every conversion step at INFO on its own logger.
    logging.getLogger('tf2onnx').setLevel(logging.ERROR)
    return tf2onnx


def check_runs(path: str) -> None:
    """Opens an ONNX model with ``onnxruntime``.

    Args:
        path: the ``.onnx`` file.
    Raises:
        ValueError: onnxruntime is missing, or cannot load the model (an op
            the converter left unconverted); the message names the file and
            the runtime's reason.
    """
    try:
        import onnxruntime
    except ImportError:
        raise ValueError(
            'checking %s needs onnxruntime (the [onnx] extra): %s'
            % (path, _EXTRA_HINT)
        ) from None
    try:
        onnxruntime.InferenceSession(path, providers=['CPUExecutionProvider'])
    except Exception as e:  # onnxruntime raises its own exception types
        os.remove(path)
        first = ' '.join(str(e).split())[:300]
        raise ValueError(
            'the policy does not convert to ONNX (%s was not written; '
            '--format saved_model exports it): onnxruntime cannot run the '
            'converted model: %s' % (path, first)
        ) from None


def _convert(function: Any, path: str, opset: Optional[int]) -> str:
    """Converts one concrete function with named keyword inputs.

    Args:
        function: a ``ConcreteFunction`` of ``ExportedPolicy`` whose inputs
            have named ``TensorSpec``s and whose outputs are a dict of named
            tensors.
        path: the ``.onnx`` file to write.
        opset: the ONNX opset, or None for tf2onnx's default.
    Returns:
        ``path``.
    """
    tf2onnx = _import_converter()
    args, kwargs = function.structured_input_signature
    specs: Dict[str, tf.TensorSpec] = {a.name: a for a in args}
    specs.update(kwargs)
    names = sorted(specs)

    # tf2onnx traces a tf.function with positional inputs; the names of the
    # specs become the ONNX input names, the output dict's keys the outputs.
    # ONNX names each value once, so an output under an input's name (the
    # next state) is renamed NEXT_PREFIX + name.
    def positional(*values: tf.Tensor) -> Dict[str, tf.Tensor]:
        by_name = dict(zip(names, values))
        outputs = function(*[by_name.pop(a.name) for a in args], **by_name)
        return {
            (NEXT_PREFIX + k if k in specs else k): v
            for k, v in outputs.items()
        }

    signature = [
        tf.TensorSpec(specs[n].shape, specs[n].dtype, name=n) for n in names
    ]
    tmp = path + '.tmp'
    tf2onnx.convert.from_function(
        tf.function(positional),
        input_signature=signature,
        opset=opset,
        output_path=tmp,
    )
    os.replace(tmp, path)
    check_runs(path)
    return path


def convert_to_onnx(
    policy: ExportedPolicy, path: str, opset: Optional[int] = None
) -> List[str]:
    """Writes a policy's signatures as ONNX models.

    Args:
        policy: the exported policy module (greedy or stochastic).
        path: the ``action`` model's file, ending in ``.onnx``.
        opset: the ONNX opset, or None for tf2onnx's default.
    Returns:
        The files written: ``path``, then ``initial_state_path(path)`` for a
        recurrent policy.
    Raises:
        ValueError: ``path`` does not end in ``.onnx``, the ``[onnx]`` extra
            is missing, or a converted model does not run in onnxruntime.
    """
    if not path.endswith(ONNX_SUFFIX):
        raise ValueError(
            'an ONNX output path must end in .onnx, got %r' % path
        )
    written = [_convert(policy.action_function, path, opset)]
    if policy.initial_state_function is not None:
        written.append(
            _convert(
                policy.initial_state_function, initial_state_path(path), opset
            )
        )
    return written
