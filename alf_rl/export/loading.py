"""Loading an exported policy (SavedModel directory, ``.tflite`` or
``.onnx`` file) behind one interface, for ``alf-play --policy`` and
benchmarks.

A ``.tflite`` file is run with ``ai-edge-litert`` (the ``[export]``
extra) when it is installed, else with ``tf.lite.Interpreter`` (which warns
that it is deprecated); a ``.onnx`` file with ``onnxruntime`` (the
``[onnx]`` extra).
"""

import os
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from alf_rl.export.noise import gumbel_from_uniform
from alf_rl.export.onnx_conversion import (NEXT_PREFIX, ONNX_SUFFIX,
                                          initial_state_path)
from alf_rl.export.policy_module import (ACTION_SIGNATURE,
                                         INITIAL_STATE_SIGNATURE)


def tflite_interpreter(path: str) -> Any:
    """An interpreter for a ``.tflite`` file, tensors allocated.

    Args:
        path: the ``.tflite`` file.
    Returns:
        ``ai_edge_litert.interpreter.Interpreter`` when installed, else
        ``tf.lite.Interpreter``.
    """
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        Interpreter = tf.lite.Interpreter
    interpreter = Interpreter(model_path=path)
    interpreter.allocate_tensors()
    return interpreter


_ONNX_TYPES = {'tensor(float)': np.float32, 'tensor(double)': np.float64,
               'tensor(int64)': np.int64, 'tensor(int32)': np.int32,
               'tensor(uint8)': np.uint8, 'tensor(bool)': np.bool_}


class OnnxRunner(object):
    """An ONNX model behind the interface of a TFLite signature runner:
    called with named numpy inputs, returns ``{output name: array}``, the
    next state under its input's name (the model's ``next_state_<path>``
    outputs, see ``alf_rl.export.onnx_conversion``).

    Args:
        path: a ``.onnx`` file.

    Raises:
        ValueError: onnxruntime is not installed (the ``[onnx]`` extra).
    """

    def __init__(self, path: str):
        try:
            import onnxruntime
        except ImportError:
            raise ValueError("--policy %s: running ONNX models needs "
                             "onnxruntime: pip install 'alf_rl[onnx]'" %
                             path) from None
        self._session = onnxruntime.InferenceSession(
            path, providers=['CPUExecutionProvider'])
        self.inputs = {i.name: self._shape_and_dtype(i)
                       for i in self._session.get_inputs()}
        self._output_names = [o.name for o in self._session.get_outputs()]
        self._names = [self._signature_name(n) for n in self._output_names]
        self.outputs = {self._signature_name(o.name): self._shape_and_dtype(o)
                        for o in self._session.get_outputs()}

    def _signature_name(self, name: str) -> str:
        """The signature's name of an ONNX output."""
        if name.startswith(NEXT_PREFIX) and name[len(NEXT_PREFIX):] in (
                self.inputs):
            return name[len(NEXT_PREFIX):]
        return name

    @staticmethod
    def _shape_and_dtype(arg: Any) -> Tuple[List[Optional[int]], Any]:
        """``(shape without the batch dim, numpy dtype)``; symbolic
        dimensions are None."""
        shape = [d if isinstance(d, int) else None for d in arg.shape[1:]]
        return shape, _ONNX_TYPES[arg.type]

    def __call__(self, **inputs: Any) -> Dict[str, np.ndarray]:
        """Runs the model.

        Args:
            **inputs: ``{input name: [B, ...] array}``.
        Returns:
            ``{output name: [B, ...] array}``.
        """
        feed = {n: np.asarray(v, self.inputs[n][1]) for n, v in inputs.items()
                if n in self.inputs}
        values = self._session.run(self._output_names, feed)
        return dict(zip(self._names, values))


class LoadedPolicy(object):
    """An exported policy, loaded.

    Args:
        path: a SavedModel directory, a ``.tflite`` file or a ``.onnx`` file
            written by ``alf-export`` (a recurrent ONNX policy's
            ``initial_state`` model is found next to it).

    Raises:
        ValueError: ``path`` does not exist or is neither a SavedModel
            directory, a ``.onnx`` file nor a ``.tflite`` file with an
            ``action`` signature; a ``.onnx`` file without onnxruntime.
    """

    def __init__(self, path: str):
        if not os.path.exists(path):
            raise ValueError("--policy %s: no such file or directory" % path)
        # TFLite and ONNX models take and give numpy arrays.
        self._tflite = not os.path.isdir(path)
        self._initial_runner: Optional[Any] = None
        self._runner: Any = None
        self._inputs: Dict[str, Tuple[List[Any], Any]] = {}
        self._outputs: Dict[str, Tuple[List[Any], Any]] = {}
        if path.endswith(ONNX_SUFFIX):
            self._load_onnx(path)
        elif self._tflite:
            self._load_tflite(path)
        else:
            self._load_saved_model(path)

    def _load_onnx(self, path: str) -> None:
        self._runner = OnnxRunner(path)
        self._inputs, self._outputs = self._runner.inputs, self._runner.outputs
        initial = initial_state_path(path)
        if os.path.exists(initial):
            self._initial_runner = OnnxRunner(initial)

    def _load_tflite(self, path: str) -> None:
        interpreter = tflite_interpreter(path)
        signatures = interpreter.get_signature_list()
        if ACTION_SIGNATURE not in signatures:
            raise ValueError("--policy %s: no %r signature (has %s); was "
                             "it written by alf-export?" %
                             (path, ACTION_SIGNATURE, sorted(signatures)))
        self._runner = interpreter.get_signature_runner(ACTION_SIGNATURE)
        inputs = self._runner.get_input_details()
        outputs = self._runner.get_output_details()
        self._inputs = {n: (list(d['shape_signature'][1:]), d['dtype'])
                        for n, d in inputs.items()}
        self._outputs = {n: (list(d['shape_signature'][1:]), d['dtype'])
                         for n, d in outputs.items()}
        if INITIAL_STATE_SIGNATURE in signatures:
            self._initial_runner = interpreter.get_signature_runner(
                INITIAL_STATE_SIGNATURE)

    def _load_saved_model(self, path: str) -> None:
        if not os.path.exists(os.path.join(path, 'saved_model.pb')):
            raise ValueError("--policy %s: a directory without "
                             "saved_model.pb" % path)
        model = tf.saved_model.load(path)
        if ACTION_SIGNATURE not in model.signatures:
            raise ValueError("--policy %s: no %r signature; was it "
                             "written by alf-export?" %
                             (path, ACTION_SIGNATURE))
        self._model = model
        self._runner = model.signatures[ACTION_SIGNATURE]
        specs = self._runner.structured_input_signature[1]
        self._inputs = {n: (s.shape.as_list()[1:], s.dtype.as_numpy_dtype)
                        for n, s in specs.items()}
        self._outputs = {
            n: (s.shape.as_list()[1:], s.dtype.as_numpy_dtype)
            for n, s in self._runner.structured_outputs.items()
        }
        if INITIAL_STATE_SIGNATURE in model.signatures:
            self._initial_runner = model.signatures[INITIAL_STATE_SIGNATURE]

    @property
    def input_names(self) -> List[str]:
        """Names of the ``action`` signature's inputs, sorted."""
        return sorted(self._inputs)

    def input_spec(self, name: str) -> Tuple[List[Optional[int]], Any]:
        """``(shape without the batch dim, numpy dtype)`` of an input.

        Args:
            name: one of ``input_names``.
        """
        shape, dtype = self._inputs[name]
        return [int(d) if d is not None else None for d in shape], np.dtype(
            dtype)

    @property
    def state_names(self) -> List[str]:
        """Names of the state inputs (empty for a feed-forward policy)."""
        return sorted(n for n in self._inputs if n.startswith('state'))

    @property
    def noise_inputs(self) -> List[Tuple[str, List[int]]]:
        """``[(name, shape without batch)]`` of the noise inputs
        (``gumbel*``/``eps*``); empty for a greedy export."""
        return [(n, list(self._inputs[n][0])) for n in sorted(self._inputs)
                if n.startswith(('gumbel', 'eps'))]

    def initial_state(self, batch_size: int) -> Dict[str, np.ndarray]:
        """The zero state for ``batch_size`` rows (``{}`` if feed-forward).

        Args:
            batch_size: B.
        Returns:
            ``{state name: [B, ...] array}``.
        """
        if self._initial_runner is None:
            return {}
        batch = np.array(batch_size, np.int32)
        if self._tflite:
            return dict(self._initial_runner(batch_size=batch))
        out = self._initial_runner(batch_size=tf.constant(batch))
        return {k: v.numpy() for k, v in out.items()}

    def __call__(self, **inputs: Any) -> Dict[str, Any]:
        """One call of the ``action`` signature.

        Args:
            **inputs: the signature's inputs by name, [B, ...] arrays or
                tensors.
        Returns:
            ``{output name: [B, ...]}``: numpy arrays for TFLite, tensors
            for a SavedModel.
        """
        if self._tflite:
            return self._runner(**{
                n: np.asarray(v, self._inputs[n][1])
                for n, v in inputs.items()
            })
        return self._runner(**inputs)

    def graph_call(self, inputs: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """The ``action`` signature from inside a ``tf.function``.

        A SavedModel's signature is called directly; a TFLite model runs in
        a ``tf.numpy_function``.

        Args:
            inputs: ``{name: [B, ...] tensor}``.
        Returns:
            ``{output name: [B, ...] tensor}``.
        """
        if not self._tflite:
            return self._runner(**inputs)
        names = sorted(inputs)
        outputs = sorted(self._outputs)

        def _run(*arrays):
            result = self(**dict(zip(names, arrays)))
            return [np.asarray(result[n], self._outputs[n][1])
                    for n in outputs]

        flat = tf.numpy_function(_run, [inputs[n] for n in names],
                                 [tf.as_dtype(self._outputs[n][1])
                                  for n in outputs], stateful=True)
        batch = inputs[names[0]].shape[0]
        for tensor, n in zip(flat, outputs):
            tensor.set_shape([batch] + list(self._outputs[n][0]))
        return dict(zip(outputs, flat))

    def graph_noise(self, generator: tf.random.Generator,
                    batch_size: int) -> Dict[str, tf.Tensor]:
        """Draws the noise inputs of a stochastic export.

        Args:
            generator: the random generator to draw from.
            batch_size: B.
        Returns:
            ``{name: [B, ...] float32}``: standard Gumbel for ``gumbel*``
            inputs, standard normal for ``eps*`` ones; ``{}`` when greedy.
        """
        noise = {}
        for name, shape in self.noise_inputs:
            shape = [batch_size] + shape
            if name.startswith('gumbel'):
                noise[name] = gumbel_from_uniform(
                    generator.uniform(shape, dtype=tf.float32))
            else:
                noise[name] = generator.normal(shape, dtype=tf.float32)
        return noise
