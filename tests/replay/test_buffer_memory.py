"""A replay buffer larger than the machine's free memory and swap is
refused in one line before anything is allocated (the kernel would kill
the allocation without a message); one that fits only with swap warns."""

import logging
import os

import pytest
import tensorflow as tf

from alf_rl.data_structures import Experience
from alf_rl.replay import ReplayBuffer, buffer_checks
from alf_rl.replay.buffer_checks import available_memory, check_fits_in_memory

_GIB = 1024**3
_EXAMPLES = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(__file__))), 'examples'
)


def _meminfo(tmp_path, available_kb, swap_kb=0):
    path = tmp_path / 'meminfo'
    path.write_text(
        'MemTotal:       24000000 kB\n'
        'MemFree:         1000000 kB\n'
        'MemAvailable:   %8d kB\n'
        'SwapTotal:      %8d kB\n'
        'SwapFree:       %8d kB\n'
        'HugePages_Total:       0\n' % (available_kb, swap_kb, swap_kb)
    )
    return str(path)


def test_available_memory_reads_mem_available_and_swap_free(tmp_path):
    path = _meminfo(tmp_path, 19_000_000, 2_000_000)
    assert available_memory(path) == (19_000_000 * 1024, 2_000_000 * 1024)
    assert available_memory(str(tmp_path / 'missing')) is None
    old_kernel = tmp_path / 'old'
    old_kernel.write_text('MemTotal: 1000 kB\nMemFree: 10 kB\n')
    assert available_memory(str(old_kernel)) is None


def test_check_refuses_warns_or_passes(tmp_path, caplog):
    path = _meminfo(tmp_path, 4 * 1024**2, 1024**2)  # 4 GiB + 1 GiB swap
    with pytest.raises(ValueError) as raised:
        check_fits_in_memory(6 * _GIB, 'buf: capacity 9', 'lower it', path)
    assert str(raised.value) == (
        'buf: capacity 9 needs 6.4 GB, more than the 5.4 GB of memory this '
        'machine has available (MemAvailable 4.3 GB + SwapFree 1.1 GB in '
        '/proc/meminfo); lower it'
    )
    with caplog.at_level(logging.WARNING):
        check_fits_in_memory(4.5 * _GIB, 'buf: capacity 9', '', path)
    assert [r.getMessage() for r in caplog.records] == [
        'buf: capacity 9 needs 4.8 GB, more than the 4.3 GB of memory '
        'available without swap: training will swap (slowly)'
    ]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        check_fits_in_memory(3 * _GIB, 'buf', '', path)
        check_fits_in_memory(10**15, 'buf', '', str(tmp_path / 'missing'))
    assert not caplog.records


def _atari_spec():
    return Experience(
        step_type=tf.TensorSpec((), tf.int32),
        observation=tf.TensorSpec((84, 84, 4), tf.uint8),
        reward=tf.TensorSpec((), tf.float32),
        env_id=tf.TensorSpec((), tf.int32),
    )


def test_an_atari_buffer_too_large_for_the_machine(tmp_path, monkeypatch):
    # 1M whole [84, 84, 4] stacks: 28.2 GB; one frame a step: 7.1 GB.
    path = _meminfo(tmp_path, 5 * 1024**2)
    monkeypatch.setattr(
        buffer_checks, 'available_memory', lambda _: available_memory(path)
    )
    with pytest.raises(ValueError) as raised:
        ReplayBuffer(_atari_spec(), 1, 1_000_000)
    message = str(raised.value)
    assert message.startswith(
        'ReplayBuffer: capacity 1000000 needs 28.2 GB, more than the 5.4 GB'
    )
    assert message.endswith(
        '; lower the capacity (TrainerConfig.replay_buffer_capacity in '
        'alf-train), or store each frame of the [84, 84, 4] stacks once '
        '(TrainerConfig.replay_frame_stack = True; '
        'ReplayBuffer(frame_stack=...))'
    )
    with pytest.raises(ValueError) as raised:
        ReplayBuffer(
            _atari_spec(), 1, 1_000_000, frame_stack='experience.observation'
        )
    assert str(raised.value).startswith(
        'ReplayBuffer: capacity 1000000 needs 7.1 GB'
    )
    assert 'frame' not in str(raised.value)  # they are stored once


def test_alf_train_refuses_it_in_one_line_before_training(tmp_path):
    # This machine's real /proc/meminfo: no machine has 10^11 Pendulum
    # transitions' worth (~5 TB) of memory and swap.
    if available_memory() is None:
        pytest.skip('no /proc/meminfo here')
    from alf_rl.bin.train import train

    root = str(tmp_path / 'run')
    with pytest.raises(ValueError) as raised:
        train(
            root,
            [os.path.join(_EXAMPLES, 'sac_pendulum.gin')],
            [
                'TrainerConfig.replay_buffer_capacity=100000000000',
                'TrainerConfig.num_iterations=2',
                'TrainerConfig.num_env_steps=0',
            ],
        )
    first_line = str(raised.value).splitlines()[0]
    assert 'capacity 100000000000 needs' in first_line
    assert 'of memory this machine has available' in first_line
    assert not os.path.isdir(os.path.join(root, 'ckpt')) or not [
        n for n in os.listdir(os.path.join(root, 'ckpt')) if n != 'ckpt-0'
    ]
