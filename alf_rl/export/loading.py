"""Loading an exported policy (SavedModel directory or ``.tflite`` file)
behind one interface, for ``alf-play --policy`` and benchmarks.

A ``.tflite`` file is run with ``ai-edge-litert`` (the ``[export]``
extra) when it is installed, else with ``tf.lite.Interpreter`` (which warns
that it is deprecated).
"""

import os
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from alf_rl.export.noise import gumbel_from_uniform
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


class LoadedPolicy(object):
    """An exported policy, loaded.

    Args:
        path: a SavedModel directory or a ``.tflite`` file written by
            ``alf-export``.

    Raises:
        ValueError: ``path`` does not exist or is neither a SavedModel
            directory nor a ``.tflite`` file with an ``action`` signature.
    """

    def __init__(self, path: str):
        if not os.path.exists(path):
            raise ValueError("--policy %s: no such file or directory" % path)
        self._tflite = not os.path.isdir(path)
        if self._tflite:
            self._model = tflite_interpreter(path)
            signatures = self._model.get_signature_list()
            if ACTION_SIGNATURE not in signatures:
                raise ValueError("--policy %s: no %r signature (has %s); was "
                                 "it written by alf-export?" %
                                 (path, ACTION_SIGNATURE, sorted(signatures)))
            self._runner = self._model.get_signature_runner(ACTION_SIGNATURE)
            inputs = self._runner.get_input_details()
            outputs = self._runner.get_output_details()
            self._inputs = {n: (list(d['shape_signature'][1:]), d['dtype'])
                            for n, d in inputs.items()}
            self._outputs = {n: (list(d['shape_signature'][1:]), d['dtype'])
                             for n, d in outputs.items()}
            self._has_initial = INITIAL_STATE_SIGNATURE in signatures
        else:
            if not os.path.exists(os.path.join(path, 'saved_model.pb')):
                raise ValueError("--policy %s: a directory without "
                                 "saved_model.pb" % path)
            self._model = tf.saved_model.load(path)
            if ACTION_SIGNATURE not in self._model.signatures:
                raise ValueError("--policy %s: no %r signature; was it "
                                 "written by alf-export?" %
                                 (path, ACTION_SIGNATURE))
            self._runner = self._model.signatures[ACTION_SIGNATURE]
            specs = self._runner.structured_input_signature[1]
            self._inputs = {n: (s.shape.as_list()[1:], s.dtype.as_numpy_dtype)
                            for n, s in specs.items()}
            self._outputs = {
                n: (s.shape.as_list()[1:], s.dtype.as_numpy_dtype)
                for n, s in self._runner.structured_outputs.items()
            }
            self._has_initial = (INITIAL_STATE_SIGNATURE in
                                 self._model.signatures)

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
        if not self._has_initial:
            return {}
        batch = np.array(batch_size, np.int32)
        if self._tflite:
            runner = self._model.get_signature_runner(INITIAL_STATE_SIGNATURE)
            return runner(batch_size=batch)
        out = self._model.signatures[INITIAL_STATE_SIGNATURE](
            batch_size=tf.constant(batch))
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
