"""``import alf_rl`` keeps TensorFlow's start-up notices off stderr, writes
back real errors, leaves the runtime unstarted, and can be turned off."""

import os
import subprocess
import sys
import types

from alf_rl.utils import quiet_import

_PROGRAM = '''
import sys
import alf_rl.algorithms  # imports TensorFlow through the hook
import tensorflow as tf
# The runtime is not started: logical devices can still be configured.
cpu = tf.config.list_physical_devices('CPU')[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
print(len(tf.config.list_logical_devices('CPU')), tf.__spec__.name,
      float(tf.reduce_sum(tf.ones([3]))))
'''


def _run(**env):
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in ('TF_CPP_MIN_LOG_LEVEL', quiet_import.OPT_OUT)
    }
    environ.update(env)
    return subprocess.run(
        [sys.executable, '-c', _PROGRAM],
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_importing_alf_rl_is_quiet_and_leaves_the_runtime_configurable():
    quiet = _run()
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.split() == ['2', 'tensorflow', '3.0']
    assert quiet.stderr == ''
    loud = _run(**{quiet_import.OPT_OUT: '1'})
    assert loud.returncode == 0, loud.stderr
    # With the opt-out TensorFlow prints its notices again (on this machine
    # class: oneDNN and the missing CUDA drivers).
    assert 'I0000' in loud.stderr or 'oneDNN' in loud.stderr, loud.stderr


class _FakeLoader(object):
    def create_module(self, spec):
        return None

    def exec_module(self, module):
        os.write(
            2,
            b'I0000 00:00:1.0 port.cc:153] oneDNN custom operations are on.\n',
        )
        os.write(2, b'a real error from the module\n')
        module.config = types.SimpleNamespace(list_physical_devices=lambda: [])
        module.get_logger = lambda: types.SimpleNamespace(
            setLevel=lambda level: None
        )


def test_loader_drops_notices_and_writes_back_the_rest(capfd):
    loader = quiet_import._QuietLoader(_FakeLoader())
    module = types.ModuleType('fake')
    loader.exec_module(module)
    err = capfd.readouterr().err
    assert err == 'a real error from the module\n'
    assert hasattr(module, 'config')


def test_install_is_a_no_op_once_tensorflow_is_imported(monkeypatch):
    import tensorflow  # noqa: F401

    before = list(sys.meta_path)
    assert quiet_import.install() is False
    assert sys.meta_path == before
    finder = quiet_import.QuietTensorFlowFinder()
    assert finder.find_spec('numpy', None) is None
