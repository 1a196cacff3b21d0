"""Environments: numpy ``PyEnvironment``s and batched ``TFEnvironment``s.

Names are exported lazily: ``suite_gym``, ``suite_atari``,
``gym_wrapper``, ``py_environment``, ``batched_environment`` and
``parallel_environment`` do not import TensorFlow, and importing this
package must not either (worker processes import
``alf_rl.environments.suite_gym``).
"""

import importlib

_EXPORTS = {
    'PyEnvironment': 'py_environment',
    'GymWrapper': 'gym_wrapper',
    'BatchedPyEnvironment': 'batched_environment',
    'ParallelPyEnvironment': 'parallel_environment',
    'TFEnvironment': 'tf_environment',
    'TFPyEnvironment': 'tf_environment',
    'ValueUnittestEnv': 'suite_unittest',
    'PolicyUnittestEnv': 'suite_unittest',
    'RNNPolicyUnittestEnv': 'suite_unittest',
    'create_environment': 'utils',
}
_SUBMODULES = ('py_environment', 'gym_wrapper', 'suite_gym', 'suite_atari',
               'batched_environment', 'parallel_environment',
               'tf_environment', 'suite_unittest', 'suite_tf', 'utils')

__all__ = sorted(list(_EXPORTS) + list(_SUBMODULES))


def __getattr__(name):
    if name in _EXPORTS:
        module = importlib.import_module('.' + _EXPORTS[name], __name__)
        return getattr(module, name)
    if name in _SUBMODULES:
        return importlib.import_module('.' + name, __name__)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def __dir__():
    return __all__
