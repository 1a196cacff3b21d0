"""``alf_rl.bin.quiet``: quiet, lean TensorFlow import for the commands."""

import json
import os
import subprocess
import sys
import sysconfig
import textwrap

import pytest

from alf_rl.utils.quiet_stderr import is_noise, stderr_captured, write_back

SCRIPT = textwrap.dedent('''
    import json, sys
    from alf_rl.bin.quiet import import_tensorflow
    tf = import_tensorflow()
    import tensorflow_probability as tfp
    d = tfp.distributions.Categorical(logits=tf.zeros([2, 3]))
    print(json.dumps({
        'sample_shape': d.sample().shape.as_list(),
        'experimental': sorted(
            m for m in sys.modules
            if m.startswith('tensorflow_probability.python.experimental')),
        'distutils': sys.modules['distutils'].__file__,
        'setuptools': 'setuptools' in sys.modules,
    }))
''')


def test_import_tensorflow_is_quiet_and_lean():
    env = dict(os.environ)
    env.pop('TF_CPP_MIN_LOG_LEVEL', None)
    proc = subprocess.run([sys.executable, '-c', SCRIPT], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out['sample_shape'] == [2]
    # TFP imported before TensorFlow keeps its unused `experimental` lazy.
    assert out['experimental'] == []
    stdlib_distutils = os.path.join(sysconfig.get_paths()['stdlib'],
                                    'distutils')
    if os.path.isdir(stdlib_distutils):
        # The standard library's distutils, not setuptools' (~0.25 s).
        assert out['distutils'].startswith(stdlib_distutils)
        assert not out['setuptools']
    # No start-up notices reach the terminal.
    assert not [l for l in proc.stderr.splitlines() if is_noise(l)]


def test_is_noise_keeps_real_errors():
    assert is_noise('I0000 00:00:1700000000.000000   123 cpu_feature_guard'
                    '.cc:182] This TensorFlow binary is optimized')
    assert is_noise('E0000 00:00:1 1 cuda_executor.cc:1] failed call to '
                    'cuInit: UNKNOWN ERROR (303)')
    assert not is_noise('E0000 00:00:1 1 some_kernel.cc:9] real failure')
    assert not is_noise('Traceback (most recent call last):')


def test_stderr_captured_takes_file_descriptor_2_and_write_back_filters(
        capfd):
    capfd.readouterr()
    with pytest.raises(RuntimeError):
        with stderr_captured() as lines:
            os.write(2, b'from C++\nI0000 00:00:1.0 1 x.cc:1] notice\n')
            raise RuntimeError('the block failed')
    # Filled although the block raised; nothing reached the real stderr.
    assert lines == ['from C++', 'I0000 00:00:1.0 1 x.cc:1] notice']
    assert capfd.readouterr().err == ''
    write_back(lines + [''])
    assert capfd.readouterr().err == 'from C++\n'
