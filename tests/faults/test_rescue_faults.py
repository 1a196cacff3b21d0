"""A run can always be rescued, and its event files are safe (issue 26).

Finding 2: checkpoints that hold bad state (e.g. a NaN reward saved in the
replay buffer) lost the run: every rerun resumed from them, and
``--fresh_start`` did nothing while one of them read back. Now
``from_checkpoint`` resumes from an earlier kept checkpoint (the newer ones
renamed ``ckpt-K.set_aside``) and ``fresh_start`` starts over next to
usable checkpoints, moving the whole earlier run to ``set_aside-K``.
Finding 7: ``--fresh_start`` erased the earlier summaries (8,440 -> 78
bytes). Finding 8: one flipped byte in an event file cut it short on
resume, silently. Finding 13: every restart left an empty 78-byte event
file, rewritten event files got mode 0600, and the first progress line
after a resume said ``0 steps/s``.

Runs are tiny (8-unit networks, a few iterations); the environments'
state is checkpointed, so a resumed run equals the uninterrupted one.
"""

import glob
import os
import stat
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_keras
from tensorboard.backend.event_processing.event_accumulator import \
    EventAccumulator

from alf_rl.algorithms import DqnAlgorithm
from alf_rl.environments import suite_tf
from alf_rl.environments.suite_unittest import ValueUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.networks import QNetwork
from alf_rl.trainers import OffPolicyTrainer, OnPolicyTrainer, TrainerConfig
from alf_rl.utils.checkpoint import CheckpointError, NoUsableCheckpointError
from alf_rl.utils.checkpoint_contents import read_back
from small_algorithms import small_actor_critic

REPO = os.path.join(os.path.dirname(__file__), '..', '..')
EXAMPLE = os.path.join(REPO, 'examples', 'ac_cart_pole.gin')


_a2c = small_actor_critic


def _dqn(observation_spec, action_spec):
    return DqnAlgorithm(
        observation_spec, action_spec,
        q_network_ctor=lambda o, a: QNetwork(o, a, fc_layer_params=(8, )),
        epsilon_greedy=0.3, target_update_period=2,
        optimizer=tf_keras.optimizers.Adam(1e-2))


def _train(root, num_iterations, off_policy=False, **config):
    """Trains to ``num_iterations`` on ``root`` (resuming what is there):
    A2C on ``ValueUnittestEnv`` or DQN with replay on ``suite_tf``'s
    CartPole, checkpoints every 3 iterations, summaries every one."""
    settings = dict(root_dir=str(root), num_iterations=num_iterations,
                    unroll_length=4, checkpoint_interval=3,
                    summary_interval=1, iterations_per_call=1,
                    random_seed=0, progress_interval_secs=1000.)
    if off_policy:
        settings.update(algorithm_ctor=_dqn, unroll_length=2,
                        initial_collect_steps=8, mini_batch_size=4,
                        mini_batch_length=2, replay_buffer_capacity=400)
        trainer = OffPolicyTrainer(
            TrainerConfig(**dict(settings, **config)),
            env=lambda seed: suite_tf.load('CartPole-v1', 2, seed=seed,
                                           max_episode_steps=7))
    else:
        trainer = OnPolicyTrainer(
            TrainerConfig(algorithm_ctor=_a2c, **dict(settings, **config)),
            env=lambda seed: TFPyEnvironment(ValueUnittestEnv(
                batch_size=2, episode_length=4)))
    try:
        return trainer.train()
    finally:
        trainer.close()


def _tensors(prefix):
    """{name: value} of every tensor in the checkpoint at ``prefix``."""
    reader = tf.train.load_checkpoint(prefix)
    return {name: reader.get_tensor(name)
            for name in reader.get_variable_to_shape_map()}


def _events(directory):
    return sorted(glob.glob(os.path.join(str(directory), '*tfevents*')))


def _steps(directory, tag='Metrics/EnvironmentSteps'):
    accumulator = EventAccumulator(str(directory),
                                   size_guidance={'tensors': 0})
    accumulator.Reload()
    return [event.step for event in accumulator.Tensors(tag)]


# ------------------------------------------------------------- finding 2
def test_from_checkpoint_rescues_a_run_from_its_newer_checkpoints(
        tmp_path, capsys):
    root = tmp_path / 'run'
    _train(root, 9, off_policy=True)  # ckpt-3, ckpt-6, ckpt-9 (replay too)
    ckpt = root / 'ckpt'
    bad = _tensors(str(ckpt / 'ckpt-9' / 'ckpt'))
    capsys.readouterr()
    # As after a NaN reward saved in the replay buffers of ckpt-6 and -9.
    result = _train(root, 9, off_policy=True, from_checkpoint=3)
    out, err = capsys.readouterr()
    assert result['iterations'] == 9
    assert ('alf_rl: from_checkpoint=3: set the newer checkpoints aside in '
            '%s (kept, nothing deleted): ckpt-6.set_aside, ckpt-9.set_aside'
            % ckpt) in err.splitlines()
    assert 'alf_rl: resumed from %s at iteration 3' % (
        ckpt / 'ckpt-3' / 'ckpt') in out
    assert sorted(os.listdir(ckpt)) == [
        'ckpt-3', 'ckpt-6', 'ckpt-6.set_aside', 'ckpt-9', 'ckpt-9.set_aside',
        'latest']
    # Set aside whole, and the rescued run redid iterations 4-9 exactly
    # (replay buffer included).
    assert _tensors(str(ckpt / 'ckpt-9.set_aside' / 'ckpt')).keys() == \
        bad.keys()
    again = _tensors(str(ckpt / 'ckpt-9' / 'ckpt'))
    assert any('replay' in name.lower() for name in again)
    for name, value in bad.items():
        np.testing.assert_array_equal(again[name], value, err_msg=name)


def _damage_every_chunk_file(ckpt):
    """Appends a byte to every replay chunk file under ``ckpt`` (each
    file once: the checkpoints share unchanged chunks as hard links)."""
    seen = set()
    for path in sorted(glob.glob(str(ckpt / 'ckpt-*' / 'ckpt.chunks' /
                                     '*.bin'))):
        if os.stat(path).st_ino not in seen:
            seen.add(os.stat(path).st_ino)
            with open(path, 'ab') as f:
                f.write(b'x')
    return seen


def test_a_run_whose_replay_chunks_are_damaged_resumes_without_them(
        tmp_path, capsys):
    root = tmp_path / 'run'
    _train(root, 9, off_policy=True)  # ckpt-3, -6, -9 (replay too)
    ckpt = root / 'ckpt'
    damaged = _damage_every_chunk_file(ckpt)
    capsys.readouterr()
    with pytest.raises(NoUsableCheckpointError) as raised:
        _train(root, 12, off_policy=True)
    message = str(raised.value)
    assert message.startswith('no usable checkpoint in %s (corrupt: '
                              'ckpt-9.corrupt (ValueError: ' % ckpt)
    assert message.endswith(
        '. The rest of ckpt-9, ckpt-6, ckpt-3 reads back: only the replay '
        'buffer (its chunk files) is damaged, and they are back in place. '
        'To resume from ckpt-9 with the replay buffer refilled by '
        'initial_collect_steps of the current collect policy, rerun with '
        '--without_replay (TrainerConfig.restore_replay=False)')
    assert sorted(os.listdir(ckpt)) == ['ckpt-3', 'ckpt-6', 'ckpt-9',
                                        'latest']
    assert (ckpt / 'latest').read_text() == 'ckpt-9'
    # Going back to an earlier one names the flag too (nothing moved).
    with pytest.raises(CheckpointError) as raised:
        _train(root, 12, off_policy=True, from_checkpoint=6)
    assert str(raised.value).startswith(
        'from_checkpoint=6: checkpoint %s is corrupt or unreadable' %
        (ckpt / 'ckpt-6' / 'ckpt'))
    assert str(raised.value).endswith(
        '. The rest of ckpt-6 reads back: only the replay buffer (its chunk '
        'files) is damaged. To resume from ckpt-6 with the replay buffer '
        'refilled by initial_collect_steps of the current collect policy, '
        'add --without_replay (TrainerConfig.restore_replay=False)')
    assert sorted(os.listdir(ckpt)) == ['ckpt-3', 'ckpt-6', 'ckpt-9',
                                        'latest']
    capsys.readouterr()
    result = _train(root, 12, off_policy=True, restore_replay=False)
    resumed = capsys.readouterr().out.splitlines()[0]
    assert resumed.startswith('alf_rl: resumed from %s at iteration 9, ' %
                              (ckpt / 'ckpt-9' / 'ckpt'))
    assert resumed.endswith(
        ' env steps, without its replay buffer (restore_replay=False)')
    assert result['iterations'] == 12
    # The new checkpoint reads back whole, its chunk files written anew.
    prefix = str(ckpt / 'ckpt-12' / 'ckpt')
    assert read_back(prefix).problem is None
    written = {os.stat(p).st_ino for p in glob.glob(prefix + '.chunks/*')}
    assert written and not written & damaged
    # Its buffer holds the refill and the 3 iterations: 20 steps.
    ends = _tensors(prefix)['replayer/_buffer/_end/.ATTRIBUTES/VARIABLE_VALUE']
    starts = _tensors(prefix)[
        'replayer/_buffer/_start/.ATTRIBUTES/VARIABLE_VALUE']
    assert int(np.sum(ends - starts)) == 8 + 3 * 4
    # Resumed as usual afterwards, from the new buffer.
    capsys.readouterr()
    assert _train(root, 13, off_policy=True)['iterations'] == 13
    assert 'without its replay buffer' not in capsys.readouterr().out


def test_fresh_start_starts_over_next_to_a_usable_checkpoint(tmp_path,
                                                             capsys):
    root = tmp_path / 'run'
    _train(root, 6, off_policy=True)  # ckpt-3, ckpt-6: usable
    earlier = sorted(os.listdir(root))
    capsys.readouterr()
    result = _train(root, 2, off_policy=True, fresh_start=True)
    out, err = capsys.readouterr()
    # It was 'resumed from ckpt-6 ... (fresh_start has no effect)'.
    assert result['iterations'] == 2 and 'resumed' not in out
    # As a first run: nothing restored (replay buffer included).
    first = _train(tmp_path / 'first', 2, off_policy=True)
    assert result == dict(first, train_secs=result['train_secs'],
                          first_iteration_secs=result[
                              'first_iteration_secs'])
    for name, value in _tensors(str(tmp_path / 'first' / 'ckpt' / 'ckpt-2'
                                     / 'ckpt')).items():
        np.testing.assert_array_equal(
            _tensors(str(root / 'ckpt' / 'ckpt-2' / 'ckpt'))[name], value,
            err_msg=name)
    aside = root / 'set_aside-1'
    assert ('alf_rl: fresh_start: moved the earlier run aside to %s (kept, '
            'nothing deleted): ckpt, train, config.gin; starting from '
            'iteration 0' % aside) in err.splitlines()
    assert sorted(os.listdir(aside)) == ['ckpt', 'config.gin', 'train']
    assert sorted(os.listdir(aside / 'ckpt')) == ['ckpt-3', 'ckpt-6',
                                                  'latest']
    assert sorted(os.listdir(root)) == sorted(earlier + ['set_aside-1'])
    assert sorted(os.listdir(root / 'ckpt')) == ['ckpt-2', 'latest']


# ------------------------------------------------------------- finding 7
def test_fresh_start_keeps_the_earlier_summaries(tmp_path, capsys):
    root = tmp_path / 'run'
    _train(root, 6)
    events, = _events(root / 'train')
    before = open(events, 'rb').read()
    for data in glob.glob(str(root / 'ckpt' / 'ckpt-*' / 'ckpt.data*')):
        with open(data, 'r+b') as f:
            f.truncate(3)  # no checkpoint is usable
    capsys.readouterr()
    assert _train(root, 2, fresh_start=True)['iterations'] == 2
    assert 'TensorBoard: removed' not in capsys.readouterr().err
    # The earlier summaries, byte for byte (they were cut to 78 bytes).
    kept = root / 'set_aside-1' / 'train' / os.path.basename(events)
    assert len(before) > 1000 and open(kept, 'rb').read() == before
    assert _steps(root / 'set_aside-1' / 'train') == [1, 2, 3, 4, 5, 6]
    assert _steps(root / 'train') == [1, 2]


# ------------------------------------------------------------- finding 8
def test_a_flipped_byte_in_an_event_file_is_set_aside_not_cut(tmp_path,
                                                               capsys):
    root = tmp_path / 'run'
    _train(root, 5)  # summaries of 1-5, checkpoints 3 and 5
    # As if killed after iteration 5's summaries, before its checkpoint.
    os.rename(root / 'ckpt' / 'ckpt-5', tmp_path / 'ckpt-5')
    events, = _events(root / 'train')
    damaged = bytearray(open(events, 'rb').read())
    damaged[len(damaged) // 4] ^= 0x10  # in iteration 1's or 2's records
    open(events, 'wb').write(bytes(damaged))
    capsys.readouterr()
    assert _train(root, 7)['iterations'] == 7
    err = capsys.readouterr().err
    aside = events.replace('tfevents', 'tf-events') + '.corrupt'
    line, = [x for x in err.splitlines() if 'is corrupt' in x]
    assert line.startswith('alf_rl: TensorBoard: event file %s is corrupt '
                           '(corrupted record at ' % events)
    assert ('); moved aside whole to %s (kept; TensorBoard skips it); '
            % aside) in line
    assert open(aside, 'rb').read() == bytes(damaged)  # not cut short
    # TensorBoard: what read before the damage, then the resumed run's
    # iterations 4-7, one value per step.
    steps = _steps(root / 'train', 'Metrics/NumberOfEpisodes')
    assert steps == sorted(set(steps)) and steps[-4:] == [4, 5, 6, 7]
    assert steps[:-4] in ([1], [1, 2])


# ------------------------------------------------------------ finding 13
def test_restarts_leave_no_empty_event_file_and_keep_modes(tmp_path,
                                                           capsys):
    root = tmp_path / 'run'
    _train(root, 5)
    os.rename(root / 'ckpt' / 'ckpt-5', tmp_path / 'ckpt-5')
    events, = _events(root / 'train')
    os.chmod(events, 0o644)
    _train(root, 5)  # rewrites the first file: 4 and 5 run again
    assert stat.S_IMODE(os.stat(events).st_mode) == 0o644  # was 0600
    files = _events(root / 'train')
    for _ in range(2):  # restarts of a finished run write no summary
        capsys.readouterr()
        assert _train(root, 5, progress_interval_secs=0.)[
            'iterations'] == 5
        assert _events(root / 'train') == files
        # Its progress line has no rate to show (it said '0 steps/s').
        assert capsys.readouterr().out.splitlines()[-1] == (
            'iter 5 | env steps 30 | AverageReturn 3.00')
    assert min(os.path.getsize(f) for f in files) > 78


def test_the_first_progress_line_after_a_resume_has_no_tracing_rate(
        tmp_path, capsys):
    root = tmp_path / 'run'
    _train(root, 3)
    capsys.readouterr()
    _train(root, 6, progress_interval_secs=0.)
    lines = [x for x in capsys.readouterr().out.splitlines()
             if x.startswith('iter ')]
    # The first call (one iteration with tracing) gives no rate: one step
    # over the tracing time showed '0 steps/s' for SAC on Pendulum.
    assert lines[0] == 'iter 4 | env steps 24 | AverageReturn 3.00'
    rates = [float(x.split(' | ')[2].split()[0]) for x in lines[1:]]
    assert len(rates) == 3 and min(rates) > 0
    assert all(' steps/s | ' in x for x in lines[1:])


# ------------------------------------------------------------ alf-train
def _cli(root, *args):
    cmd = [sys.executable, '-m', 'alf_rl.bin.train', '--gin_file', EXAMPLE,
           '--root_dir', str(root),
           '--gin_param', 'TrainerConfig.checkpoint_interval=2',
           '--gin_param', 'TrainerConfig.evaluate=False',
           '--gin_param', 'create_environment.num_parallel_environments=2',
           '--gin_param', 'ActorDistributionNetwork.fc_layer_params=(8,)',
           '--gin_param', 'ValueNetwork.fc_layer_params=(8,)'] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          cwd=REPO)


def test_alf_train_rescue_flags(tmp_path):
    root = tmp_path / 'run'
    done = _cli(root, '--gin_param', 'TrainerConfig.num_iterations=4')
    assert done.returncode == 0, done.stderr
    done = _cli(root, '--gin_param', 'TrainerConfig.num_iterations=3',
                '--from_checkpoint', '2')
    assert done.returncode == 0, done.stderr
    assert ('alf_rl: from_checkpoint=2: set the newer checkpoints aside in '
            '%s (kept, nothing deleted): ckpt-4.set_aside' %
            (root / 'ckpt')) in done.stderr.splitlines()
    assert 'resumed from %s at iteration 2' % (
        root / 'ckpt' / 'ckpt-2' / 'ckpt') in done.stdout
    assert 'iterations=3' in done.stdout.splitlines()[-1]
    done = _cli(root, '--gin_param', 'TrainerConfig.num_iterations=1',
                '--fresh_start', '--from_checkpoint', '2')
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        'alf-train: error: TrainerConfig.from_checkpoint=2 and '
        'fresh_start=True contradict each other: give one of them (gin: '
        'TrainerConfig.fresh_start = True, TrainerConfig.from_checkpoint = 2)')
    done = _cli(root, '--gin_param', 'TrainerConfig.num_iterations=1',
                '--fresh_start')
    assert done.returncode == 0, done.stderr
    assert ('alf_rl: fresh_start: moved the earlier run aside to %s (kept, '
            'nothing deleted): ckpt, train, config.gin; starting from '
            'iteration 0' % (root / 'set_aside-1')) in done.stderr
    assert 'iterations=1' in done.stdout.splitlines()[-1]
    assert sorted(os.listdir(root / 'set_aside-1' / 'ckpt')) == [
        'ckpt-2', 'ckpt-3', 'ckpt-4.set_aside', 'latest']
    # A run without a replay buffer resumes as usual with --without_replay.
    done = _cli(root, '--gin_param', 'TrainerConfig.num_iterations=2',
                '--without_replay')
    assert done.returncode == 0, done.stderr
    assert 'alf_rl: resumed from %s at iteration 1, ' % (
        root / 'ckpt' / 'ckpt-1' / 'ckpt') in done.stdout
    assert 'without its replay buffer' not in done.stdout
    assert 'TrainerConfig.restore_replay = False' in (
        root / 'config.gin').read_text()
