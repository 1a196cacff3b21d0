"""benchmarks/qrdqn_update_parity.py: alf_rl's side and the layout
conversion (sb3-contrib's side needs torch)."""

import os
import subprocess
import sys

import numpy as np

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SCRIPT = os.path.join(_ROOT, 'benchmarks', 'qrdqn_update_parity.py')
sys.path.insert(0, os.path.join(_ROOT, 'benchmarks'))

import qrdqn_update_parity as parity  # noqa: E402

_N = 200  # quantiles


def _run_ours(out, *extra):
    return subprocess.run(
        [sys.executable, _SCRIPT, 'ours', '--out', out, '--updates', '2']
        + list(extra),
        capture_output=True,
        text=True,
    )


def test_ours_saves_the_weights_of_each_update(tmp_path):
    out = str(tmp_path / 'qrdqn.npz')
    # A binding after the file reaches the settings sb3-contrib takes.
    done = _run_ours(out, '--gin_param', 'DqnAlgorithm.gradient_clipping=1.0')
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == 'wrote %s (2 updates)' % out
    assert 'oneDNN' not in done.stderr, done.stderr
    data = np.load(out)
    # The numbers sb3-contrib's side takes, read from the gin file.
    assert float(data['settings/lr']) == 1e-4
    assert float(data['settings/epsilon']) == 3.125e-4
    assert int(data['settings/batch']) == 32
    assert float(data['settings/gamma']) == 0.99
    assert int(data['settings/num_quantiles']) == _N
    assert float(data['settings/max_grad_norm']) == 1.0
    # The encoder's variables first, then the head's (sb3-contrib's order).
    shapes = [data['init/q/%d' % i].shape for i in range(10)]
    assert shapes == [
        (8, 8, 4, 32),
        (32,),
        (4, 4, 32, 64),
        (64,),
        (3, 3, 64, 64),
        (64,),
        (3136, 512),
        (512,),
        (512, 6 * _N),
        (6 * _N,),
    ]
    for i in range(10):
        # The target starts as a copy, and is not copied again within 250
        # updates; every online variable moves.
        np.testing.assert_array_equal(
            data['init/target/%d' % i], data['init/q/%d' % i]
        )
        np.testing.assert_array_equal(
            data['update1/target/%d' % i], data['init/target/%d' % i]
        )
        assert not np.array_equal(
            data['update0/q/%d' % i], data['init/q/%d' % i]
        )


def test_a_gin_file_sb3_contrib_cannot_match_is_refused(tmp_path):
    gin_file = tmp_path / 'double.gin'
    gin_file.write_text(
        "include '%s'\nDqnAlgorithm.use_double_q = True\n" % parity.GIN_FILE
    )
    done = _run_ours(str(tmp_path / 'x.npz'), '--gin_file', str(gin_file))
    assert done.returncode != 0
    assert 'double Q-learning targets' in done.stderr
    assert 'Traceback' not in done.stderr


def test_layouts_convert_both_ways():
    rng = np.random.default_rng(0)
    for index, shape in [
        (0, (8, 8, 4, 32)),
        (1, (32,)),
        (6, (3136, 512)),
        (7, (512,)),
        (8, (512, 6 * _N)),
        (9, (6 * _N,)),
    ]:
        x = rng.normal(size=shape).astype(np.float32)
        np.testing.assert_array_equal(
            parity._from_torch(index, parity._to_torch(index, x, _N), _N), x
        )


def test_converted_layers_compute_what_ours_compute():
    """The fc layer on NCHW-flattened features and the quantile layer's
    [quantile, action] outputs give alf_rl's NHWC / [action, quantile]
    results."""
    rng = np.random.default_rng(1)
    features = rng.normal(size=(7, 7, 64))  # NHWC, one frame
    kernel = rng.normal(size=(3136, 512))
    weight = parity._to_torch(6, kernel, _N)  # torch: [out, in]
    nchw = features.transpose(2, 0, 1).reshape(-1)
    np.testing.assert_allclose(
        weight @ nchw, features.reshape(-1) @ kernel, rtol=1e-10
    )
    h = rng.normal(size=512)
    out_kernel = rng.normal(size=(512, 6 * _N))
    out_bias = rng.normal(size=6 * _N)
    ours = (h @ out_kernel + out_bias).reshape(6, _N)  # [action, quantile]
    theirs = (
        parity._to_torch(8, out_kernel, _N) @ h
        + parity._to_torch(9, out_bias, _N)
    ).reshape(_N, 6)  # sb3-contrib's view: [quantile, action]
    np.testing.assert_allclose(theirs.T, ours, rtol=1e-10)


def test_conv_kernels_go_to_torchs_out_in_h_w_order():
    kernel = np.arange(8 * 8 * 4 * 32).reshape(8, 8, 4, 32)
    torch_kernel = parity._to_torch(0, kernel, _N)
    assert torch_kernel.shape == (32, 4, 8, 8)
    assert torch_kernel[5, 2, 1, 3] == kernel[1, 3, 2, 5]
