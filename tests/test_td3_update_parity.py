"""benchmarks/td3_update_parity.py: alf_rl's side (SB3's needs torch)."""

import os
import subprocess
import sys

import numpy as np
import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SCRIPT = os.path.join(_ROOT, 'benchmarks', 'td3_update_parity.py')


@pytest.mark.parametrize('optimizer', [['--epsilon', '1e-10'], ['--sgd']])
def test_ours_saves_the_weights_of_each_update(tmp_path, optimizer):
    out = str(tmp_path / 'td3.npz')
    done = subprocess.run(
        [sys.executable, _SCRIPT, 'ours', '--out', out, '--updates', '2']
        + optimizer,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == 'wrote %s (2 updates)' % out
    assert 'oneDNN' not in done.stderr, done.stderr
    data = np.load(out)
    assert int(data['updates']) == 2
    assert bool(data['sgd']) == (optimizer == ['--sgd'])
    if not data['sgd']:
        assert float(data['epsilon']) == 1e-10
    # The numbers SB3's side takes, read from td3_hopper.gin.
    assert float(data['settings/lr']) == 1e-3
    assert int(data['settings/batch']) == 256
    assert float(data['settings/gamma']) == 0.99
    assert float(data['settings/tau']) == 0.005
    assert list(data['settings/actor_layers']) == [400, 300]
    assert list(data['settings/critic_layers']) == [400, 300]
    # Hopper-v5's sizes, td3_hopper.gin's (400, 300) networks.
    assert data['init/actor/0'].shape == (11, 400)
    assert data['init/critic0/0'].shape == (14, 400)
    assert data['init/actor/4'].shape == (300, 3)

    def moved(prefix, name):
        return [
            not np.array_equal(
                data['%s/%s/%d' % (prefix, name, i)],
                data['init/%s/%d' % (name, i)],
            )
            for i in range(6)
        ]

    # Update 1 moves the critics alone; update 2 the actor and the targets
    # (by tau 0.005 towards their sources).
    assert all(moved('update0', 'critic0')) and all(
        moved('update0', 'critic1')
    )
    assert not any(moved('update0', 'actor'))
    assert not any(moved('update0', 'target_critic0'))
    assert all(moved('update1', 'actor'))
    for name in ('actor', 'critic0', 'critic1'):
        for i in range(6):
            np.testing.assert_allclose(
                data['update1/target_%s/%d' % (name, i)],
                0.995 * data['init/%s/%d' % (name, i)]
                + 0.005 * data['update1/%s/%d' % (name, i)],
                rtol=1e-5,
                atol=1e-7,
            )


def test_ours_builds_the_networks_of_the_gin_file_given(tmp_path):
    """The networks come from --gin_file's bindings, not from constants."""
    gin_file = tmp_path / 'small_td3.gin'
    with open(os.path.join(_ROOT, 'examples', 'td3_hopper.gin')) as f:
        text = f.read()
    gin_file.write_text(
        text.replace(
            'ActorNetwork.fc_layer_params = (400, 300)',
            'ActorNetwork.fc_layer_params = (32, 16)',
        )
    )
    out = str(tmp_path / 'td3.npz')
    subprocess.run(
        [
            sys.executable,
            _SCRIPT,
            'ours',
            '--out',
            out,
            '--updates',
            '1',
            '--gin_file',
            str(gin_file),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    data = np.load(out)
    assert list(data['settings/actor_layers']) == [32, 16]
    assert data['init/actor/0'].shape == (11, 32)
    assert data['init/critic0/0'].shape == (14, 400)
