"""Policy export: a trained algorithm's policy as a SavedModel, a TFLite
model or an ONNX model, which run without alf_rl (see docs/export.md)."""

from alf_rl.export.loading import LoadedPolicy, OnnxRunner, tflite_interpreter
from alf_rl.export.onnx_conversion import convert_to_onnx, initial_state_path
from alf_rl.export.noise import noise_kinds, noise_shapes, sample_with_noise
from alf_rl.export.policy_module import ExportedPolicy, action_distribution
from alf_rl.export.saving import (FORMATS, convert_to_tflite, export_policy,
                                  output_paths, save_policy)
