"""Faults and bad inputs around the run directory: corrupt or missing
checkpoints, the lock, unwritable directories, a full disk, error exits
that keep the run, TensorBoard after a resume, the ETA, wrong-type and
mistyped configuration.

Each test asserts the message a user sees and that nothing on disk was
lost. Runs are tiny (``ValueUnittestEnv``, 8-unit networks, a few
iterations).
"""

import errno
import functools
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import gin
import pytest
import tensorflow as tf
import tf_keras
from tensorboard.backend.event_processing.event_accumulator import \
    EventAccumulator

from alf_rl.algorithms import ActorCriticAlgorithm
from alf_rl.bin.train import check_gin_syntax, parse_gin
from alf_rl.environments.suite_unittest import ValueUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.networks import ActorDistributionNetwork, ValueNetwork
from alf_rl.trainers import OnPolicyTrainer, TrainerConfig
from alf_rl.trainers.errors import EnvironmentStepError, NonFiniteLossError
from alf_rl.trainers.progress import RunClock
from alf_rl.utils.config_types import check_arg_types
from alf_rl.utils.checkpoint import (Checkpointer, CheckpointError,
                                     atomic_write_text,
                                     CheckpointSaveError,
                                     NoUsableCheckpointError, RunDirError,
                                     RunDirLock, RunDirLockedError,
                                     summarize_error)

REPO = os.path.join(os.path.dirname(__file__), '..', '..')
EXAMPLE = os.path.join(REPO, 'examples', 'ac_cart_pole.gin')


def _algorithm(observation_spec, action_spec, width=8):
    return ActorCriticAlgorithm(
        observation_spec, action_spec,
        actor_network_ctor=functools.partial(ActorDistributionNetwork,
                                             fc_layer_params=(width, )),
        value_network_ctor=functools.partial(ValueNetwork,
                                             fc_layer_params=(width, )),
        optimizer=tf_keras.optimizers.Adam(1e-3))


def _value_env(seed):
    return TFPyEnvironment(ValueUnittestEnv(batch_size=2, episode_length=4))


def _trainer(root, num_iterations, env=_value_env, **config):
    settings = dict(root_dir=str(root), algorithm_ctor=_algorithm,
                    num_iterations=num_iterations, unroll_length=4,
                    checkpoint_interval=3, summary_interval=1,
                    iterations_per_call=1, random_seed=0,
                    progress_interval_secs=1000.)
    settings.update(config)
    return OnPolicyTrainer(TrainerConfig(**settings), env=env)


def _train(root, num_iterations, **kwargs):
    trainer = _trainer(root, num_iterations, **kwargs)
    try:
        return trainer.train()
    finally:
        trainer.close()


def _ckpt(root, *names):
    return os.path.join(str(root), 'ckpt', *names)


def _listing(directory):
    """{relative path: size} of every file under ``directory``."""
    result = {}
    for base, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(base, name)
            result[os.path.relpath(path, directory)] = os.path.getsize(path)
    return result


def _data_file(root, step):
    return glob.glob(_ckpt(root, 'ckpt-%d' % step, 'ckpt.data*'))[0]


# ------------------------------------------------------ corrupt checkpoints
def test_corrupt_newest_data_file_resumes_from_the_older_one(tmp_path,
                                                             capsys):
    root = tmp_path / 'run'
    _train(root, 6)  # ckpt-3 and ckpt-6
    with open(_data_file(root, 6), 'r+b') as f:
        f.truncate(10)
    before = _listing(_ckpt(root, 'ckpt-6'))
    capsys.readouterr()
    result = _train(root, 8)
    out, err = capsys.readouterr()
    assert result['iterations'] == 8
    corrupt_line = [line for line in err.splitlines()
                    if line.startswith('alf_rl: checkpoint ')]
    assert len(corrupt_line) == 1
    assert corrupt_line[0].startswith(
        'alf_rl: checkpoint %s is corrupt (' % _ckpt(root, 'ckpt-6'))
    assert corrupt_line[0].endswith(
        'moved aside to ckpt-6.corrupt (kept), trying the next older one')
    assert 'resumed from %s at iteration 3' % _ckpt(root, 'ckpt-3',
                                                    'ckpt') in out
    # Moved aside with every file as it was; the older one is intact.
    assert _listing(_ckpt(root, 'ckpt-6.corrupt')) == before
    assert os.path.exists(_ckpt(root, 'ckpt-3', 'ckpt.index'))
    assert open(_ckpt(root, 'latest')).read() == 'ckpt-8'


def test_corrupt_index_is_a_clean_message_not_an_op_error(tmp_path, capsys):
    root = tmp_path / 'run'
    _train(root, 6)
    with open(_ckpt(root, 'ckpt-6', 'ckpt.index'), 'r+b') as f:
        f.seek(0)
        f.write(b'\xff' * 64)
    capsys.readouterr()
    assert _train(root, 7)['iterations'] == 7
    out, err = capsys.readouterr()
    assert 'Traceback' not in err
    line = [line for line in err.splitlines()
            if line.startswith('alf_rl: checkpoint ')][0]
    assert line.startswith('alf_rl: checkpoint %s is corrupt (' %
                           _ckpt(root, 'ckpt-6'))
    assert 'resumed from %s' % _ckpt(root, 'ckpt-3', 'ckpt') in out
    assert os.path.exists(_ckpt(root, 'ckpt-6.corrupt', 'ckpt.index'))


def test_missing_latest_is_found_by_scanning(tmp_path, capsys):
    root = tmp_path / 'run'
    _train(root, 6)
    os.remove(_ckpt(root, 'latest'))
    capsys.readouterr()
    assert _train(root, 7)['iterations'] == 7
    out, err = capsys.readouterr()
    assert ('alf_rl: %s is missing; found ckpt-6, ckpt-3 by scanning %s' %
            (_ckpt(root, 'latest'), _ckpt(root))) in err
    assert 'resumed from %s at iteration 6' % _ckpt(root, 'ckpt-6',
                                                    'ckpt') in out


def test_no_usable_checkpoint_refuses_then_fresh_start(tmp_path, capsys):
    root = tmp_path / 'run'
    _train(root, 6)
    for step in (3, 6):
        with open(_data_file(root, step), 'r+b') as f:
            f.truncate(10)
    with pytest.raises(NoUsableCheckpointError) as raised:
        _train(root, 8)
    message = str(raised.value)
    assert message.startswith('no usable checkpoint in %s (corrupt: '
                              'ckpt-6.corrupt (' % _ckpt(root))
    assert '--fresh_start' in message and '\n' not in message
    assert [name for name, _ in raised.value.problems] == [
        'ckpt-6.corrupt', 'ckpt-3.corrupt']
    # Refusing again (nothing usable is left) still says why.
    with pytest.raises(NoUsableCheckpointError,
                       match='moved aside earlier: ckpt-3.corrupt, '
                       'ckpt-6.corrupt'):
        _train(root, 8)
    kept = _listing(_ckpt(root))
    capsys.readouterr()
    result = _train(root, 2, fresh_start=True)
    err = capsys.readouterr().err
    assert result['iterations'] == 2
    aside = str(root / 'set_aside-1')
    assert ('alf_rl: fresh_start: moved the earlier run aside to %s (kept, '
            'nothing deleted): ckpt, train, config.gin; starting from '
            'iteration 0' % aside) in err
    # The corrupt ones are kept, byte for byte.
    assert _listing(os.path.join(aside, 'ckpt')) == kept


def test_reader_skips_a_corrupt_checkpoint_without_touching_disk(tmp_path,
                                                                  capsys):
    root = tmp_path / 'run'
    _train(root, 6)
    with open(_data_file(root, 6), 'r+b') as f:
        f.truncate(10)
    os.mkdir(_ckpt(root, '.tmp-a-save-in-progress'))
    before = _listing(_ckpt(root))
    env = _value_env(0)
    algorithm = _algorithm(env.observation_spec(), env.action_spec())
    reader = Checkpointer(_ckpt(root), algorithm=algorithm)
    assert reader.restore() == _ckpt(root, 'ckpt-3', 'ckpt')
    assert 'ckpt-6 is corrupt' in capsys.readouterr().err
    assert _listing(_ckpt(root)) == before
    assert os.path.isdir(_ckpt(root, '.tmp-a-save-in-progress'))


def test_mismatched_checkpoint_names_shapes_not_values(tmp_path):
    root = tmp_path / 'run'
    _train(root, 3)
    with pytest.raises(CheckpointError,
                       match='does not match the model') as raised:
        _train(root, 4, algorithm_ctor=functools.partial(_algorithm,
                                                         width=16))
    message = str(raised.value)
    assert '\n' not in message and len(message) < 1000
    # Names and shapes, no values.
    assert 'numpy=' not in message
    assert not re.search(r'\d\.\d+,\s*-?\d+\.\d', message), message
    assert open(_ckpt(root, 'latest')).read() == 'ckpt-3'
    assert os.path.isdir(_ckpt(root, 'ckpt-3'))


def test_restore_errors_are_summarized_to_names_and_shapes():
    import numpy as np
    variable = tf.Variable(tf.zeros([3, 4]), name='actor/kernel')
    error = AssertionError('Some objects had attributes which were not '
                           'restored: %r, %r' % (variable, np.arange(100.)))
    assert summarize_error(error) == (
        'Some objects had attributes which were not restored: '
        'actor/kernel:0 shape=(3, 4) float32, array(...)')


# ------------------------------------------------------------------- lock
_HOLD_LOCK = ('import sys, time\n'
              'from alf_rl.utils.checkpoint import RunDirLock\n'
              'RunDirLock(sys.argv[1]).acquire()\n'
              'print("locked", flush=True)\n'
              'time.sleep(600)\n')

# Runs alf-train with TensorFlow made unimportable: the checks that must
# come before it (flags, gin syntax, root_dir, the lock) still answer.
_WITHOUT_TF = ('import sys\n'
               'class _NoTensorFlow:\n'
               '    def find_spec(self, name, path=None, target=None):\n'
               '        if name.split(".")[0] in ("tensorflow",\n'
               '                                  "tensorflow_probability"):\n'
               '            raise ImportError("TensorFlow imported too early")\n'
               'sys.meta_path.insert(0, _NoTensorFlow())\n'
               'sys.argv = ["alf-train"] + sys.argv[1:]\n'
               'from alf_rl.bin import train\n'
               'train.main()\n')


def _cli_without_tf(args):
    return subprocess.run([sys.executable, '-c', _WITHOUT_TF] + args,
                          capture_output=True, text=True, timeout=120,
                          cwd=REPO)


def _cli(args, **kwargs):
    return subprocess.run([sys.executable, '-m', 'alf_rl.bin.train'] + args,
                          capture_output=True, text=True, timeout=300,
                          cwd=REPO, **kwargs)


def test_second_run_on_a_locked_root_dir_names_the_holder(tmp_path):
    root = str(tmp_path / 'run')
    os.makedirs(os.path.join(root, 'ckpt'))
    with open(os.path.join(root, 'ckpt', 'latest'), 'w') as f:
        f.write('ckpt-3')
    holder = subprocess.Popen([sys.executable, '-c', _HOLD_LOCK, root],
                              stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert holder.stdout.readline().strip() == 'locked'
        expected = ('root_dir %s is in use by another training run (pid %d '
                    'on host ' % (root, holder.pid))
        # The CLI answers before importing TensorFlow, in one line.
        done = _cli_without_tf(['--gin_file', EXAMPLE, '--root_dir', root])
        assert done.returncode == 1, done.stderr
        assert done.stderr.startswith('alf-train: error: ' + expected)
        assert done.stderr.count('\n') == 1
        # So does a trainer built in Python; nothing on disk changed.
        trainer = _trainer(root, 2)
        try:
            with pytest.raises(RunDirLockedError) as raised:
                trainer.train()
        finally:
            trainer.close()
        assert str(raised.value).startswith(expected)
        assert raised.value.owner.startswith('pid %d on host' % holder.pid)
        assert sorted(os.listdir(root)) == ['.alf_rl.lock', 'ckpt']
        assert os.listdir(os.path.join(root, 'ckpt')) == ['latest']
    finally:
        holder.kill()
        holder.wait()
    # A killed holder leaves no stale lock.
    lock = RunDirLock(root).acquire()
    lock.release()


def test_lock_is_reentrant_in_one_process_and_cleans_up(tmp_path):
    root = str(tmp_path / 'a' / 'run')
    outer = RunDirLock(root).acquire()
    inner = RunDirLock(root).acquire()  # e.g. alf-train, then the trainer
    inner.release(remove_if_unused=True)
    assert os.path.exists(os.path.join(root, '.alf_rl.lock'))
    outer.release(remove_if_unused=True)
    # A failed start removes what it created, and only that.
    assert os.listdir(str(tmp_path)) == []


# ------------------------------------------------------ unusable root_dir
def test_root_dir_under_proc_is_one_line(tmp_path):
    root = '/proc/alf_rl_test/run'
    with pytest.raises(RunDirError) as raised:
        RunDirLock(root).acquire()
    message = str(raised.value)
    assert message.startswith('cannot create root_dir %s: ' % root)
    assert '\n' not in message
    done = _cli_without_tf(['--gin_file', EXAMPLE, '--root_dir', root])
    assert done.returncode == 1
    assert done.stderr == 'alf-train: error: %s\n' % message


def test_root_dir_that_is_a_file_or_under_a_file(tmp_path):
    a_file = tmp_path / 'notes.txt'
    a_file.write_text('keep me')
    with pytest.raises(RunDirError) as raised:
        RunDirLock(str(a_file)).acquire()
    assert str(raised.value) == ('root_dir %s: exists and is not a '
                                 'directory' % a_file)
    with pytest.raises(RunDirError) as raised:
        RunDirLock(str(a_file / 'run')).acquire()
    assert str(raised.value) == ('root_dir %s: %s is not a directory' %
                                 (a_file / 'run', a_file))
    assert a_file.read_text() == 'keep me'


@pytest.mark.parametrize('code, reason', [
    (errno.EROFS, 'Read-only file system'),
    (errno.EACCES, 'Permission denied'),
    (errno.ENOSPC, None),
])
def test_unwritable_root_dir_gives_the_os_reason(tmp_path, monkeypatch, code,
                                                 reason):
    root = str(tmp_path / 'run')
    real_open = os.open

    def refuse(path, *args, **kwargs):
        if path.endswith('.alf_rl.lock'):
            raise OSError(code, os.strerror(code), path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, 'open', refuse)
    with pytest.raises(RunDirError) as raised:
        RunDirLock(root).acquire()
    if reason is None:
        assert str(raised.value) == 'no space left on device at %s' % root
    else:
        assert str(raised.value) == ('cannot write in root_dir %s: %s (%s)' %
                                     (root, reason,
                                      os.path.join(root, '.alf_rl.lock')))
    assert not os.path.exists(root)  # the directory it made is removed


# ------------------------------------------------------------- full disk
def test_full_disk_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    root = tmp_path / 'run'
    _train(root, 3)
    before = _listing(_ckpt(root))

    def disk_full(self, file_prefix, options=None):
        with open(file_prefix + '.data-00000-of-00001', 'wb') as f:
            f.write(b'partial')
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(tf.train.Checkpoint, 'write', disk_full)
    with pytest.raises(CheckpointSaveError) as raised:
        _train(root, 6)
    assert str(raised.value) == (
        'checkpoint ckpt-6 not written: no space left on device at %s; the '
        'last good checkpoint ckpt-3 is kept' % _ckpt(root))
    # No temporary directory left; ckpt-3 and latest as they were.
    after = _listing(_ckpt(root))
    assert not [p for p in after if p.startswith('.tmp-')]
    assert {p: s for p, s in after.items() if p.startswith('ckpt-3')} == {
        p: s for p, s in before.items() if p.startswith('ckpt-3')}
    assert open(_ckpt(root, 'latest')).read() == 'ckpt-3'


# --------------------------------------------- error exits keep the run
class _NanRewardEnv(ValueUnittestEnv):
    """Rewards turn NaN from the ``nan_from``-th reward on."""

    def __init__(self, nan_from):
        super().__init__(batch_size=2, episode_length=4)
        self._nan_from = nan_from
        self._rewards = 0

    def _reward(self, step, action):
        self._rewards += 1
        reward = super()._reward(step, action)
        return reward * float('nan') if self._rewards >= self._nan_from \
            else reward


def test_nan_loss_writes_no_checkpoint_and_names_an_earlier_one(tmp_path):
    root = tmp_path / 'run'
    # About 3 rewards per iteration (4 steps, no reward on FIRST): NaN
    # rewards from the 9th, a few iterations in (the environment's own
    # check opted out, so that they reach the loss).
    trainer = _trainer(root, 10, checkpoint_interval=1,
                       env=lambda seed: TFPyEnvironment(
                           _NanRewardEnv(nan_from=9), check_finite=False))
    try:
        with pytest.raises(NonFiniteLossError) as raised:
            trainer.train()
    finally:
        trainer.close()
    error = raised.value
    assert not error.update_applied
    failed = error.iteration
    assert failed >= 3  # iterations before it completed
    assert str(error).startswith('training stopped at iteration %d: '
                                 'non-finite loss (' % failed)
    # The model of the iteration before computed the NaN loss: its
    # checkpoint is set aside, and the one before it is advised.
    assert str(error).endswith(
        'no update was applied. No checkpoint was written: the model that '
        'produced it computes NaN/Inf, so its checkpoint ckpt-%d was set '
        'aside as ckpt-%d.non_finite (kept, not resumed from); to resume '
        'from ckpt-%d, the newest earlier checkpoint whose values are '
        'finite, rerun with --from_checkpoint %d (TrainerConfig.'
        'from_checkpoint; the newer ones are set aside, nothing deleted).' %
        (failed - 1, failed - 1, failed - 2, failed - 2))
    assert error.checkpoint is None
    assert open(_ckpt(root, 'latest')).read() == 'ckpt-%d' % (failed - 2)


def _xla_nan_error():
    @tf.function(autograph=False)
    def check(x):
        return tf.debugging.check_numerics(
            x, 'loss of ActorCriticAlgorithm (XLA-compiled iteration)')

    try:
        check(tf.constant(float('nan')))
    except tf.errors.OpError as e:
        return e
    raise AssertionError('check_numerics did not fail')


def test_nan_after_an_applied_update_writes_no_checkpoint(tmp_path):
    root = tmp_path / 'run'
    trainer = _trainer(root, 10)
    real = trainer._train_iterations
    calls = []

    def fail_at_fifth(n):
        calls.append(n)
        if len(calls) == 5:
            raise _xla_nan_error()
        return real(n)

    trainer._train_iterations = fail_at_fifth
    try:
        with pytest.raises(NonFiniteLossError) as raised:
            trainer.train()
    finally:
        trainer.close()
    assert raised.value.update_applied and raised.value.checkpoint is None
    assert str(raised.value).endswith(
        'the XLA-compiled update was already applied. No checkpoint was '
        'written: the update with the non-finite loss was already applied '
        '(XLA), so the model may hold NaN/Inf values; to resume from '
        'ckpt-3, the newest earlier checkpoint whose values are finite, '
        'rerun with --from_checkpoint 3 (TrainerConfig.from_checkpoint; the '
        'newer ones are set aside, nothing deleted).')
    assert sorted(n for n in os.listdir(_ckpt(root))
                  if n.startswith('ckpt')) == ['ckpt-3']


class _DyingEnv(ValueUnittestEnv):
    """Its step raises from step ``fail_at`` on, as a dead worker does."""

    def __init__(self, fail_at):
        super().__init__(batch_size=2, episode_length=4)
        self._fail_at = fail_at
        self._num_steps = 0

    def _step(self, action):
        self._num_steps += 1
        if self._num_steps >= self._fail_at:
            raise RuntimeError('environment worker 1 (pid 4242) died')
        return super()._step(action)


def test_dead_environment_writes_a_checkpoint_before_exiting(tmp_path):
    root = tmp_path / 'run'
    trainer = _trainer(root, 10, checkpoint_interval=100,
                       env=lambda seed: TFPyEnvironment(_DyingEnv(fail_at=18)))
    try:
        with pytest.raises(EnvironmentStepError) as raised:
            trainer.train()
    finally:
        trainer.close()
    failed = raised.value.iteration
    assert failed >= 4
    path = _ckpt(root, 'ckpt-%d' % (failed - 1), 'ckpt')
    assert str(raised.value) == (
        'training stopped at iteration %d: environment worker 1 (pid 4242) '
        'died. A checkpoint was written at iteration %d (%s): rerun the same '
        'command to resume from it.' % (failed, failed - 1, path))
    assert raised.value.checkpoint == path
    assert os.path.exists(path + '.index')
    assert open(_ckpt(root, 'latest')).read() == 'ckpt-%d' % (failed - 1)


def test_sigterm_writes_a_checkpoint_and_exits_143(tmp_path):
    root = str(tmp_path / 'run')
    cmd = [sys.executable, '-m', 'alf_rl.bin.train', '--gin_file', EXAMPLE,
           '--root_dir', root,
           '--gin_param', 'TrainerConfig.num_env_steps=100000000',
           '--gin_param', 'TrainerConfig.checkpoint_interval=5',
           '--gin_param', 'TrainerConfig.evaluate=False',
           '--gin_param', 'create_environment.num_parallel_environments=2',
           '--gin_param', 'ActorDistributionNetwork.fc_layer_params=(8,)',
           '--gin_param', 'ValueNetwork.fc_layer_params=(8,)']
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO)
    latest = os.path.join(root, 'ckpt', 'latest')
    deadline = time.time() + 120
    while not os.path.exists(latest) and time.time() < deadline:
        time.sleep(0.2)
    assert os.path.exists(latest), proc.communicate(timeout=5)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, (out, err)
    assert 'Traceback' not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith('alf-train: terminated (SIGTERM); a checkpoint '
                           'was written at iteration ')
    iteration = int(last.split('iteration ')[1].split(':')[0])
    assert open(latest).read() == 'ckpt-%d' % iteration
    assert os.path.exists(os.path.join(root, 'ckpt', 'ckpt-%d' % iteration,
                                       'ckpt.index'))


# ------------------------------------------------- failed start, bad gin
def test_failed_start_leaves_no_root_dir_and_names_the_binding(tmp_path):
    root = str(tmp_path / 'new' / 'run')
    done = _cli(['--gin_file', EXAMPLE, '--root_dir', root, '--gin_param',
                 "TrainerConfig.num_iterations='ten'"])
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "alf-train: error: TrainerConfig.num_iterations: expected an int, "
        "got 'ten' (str)")
    assert not os.path.exists(str(tmp_path / 'new'))


def test_unknown_env_in_python_leaves_no_root_dir(tmp_path):
    from alf_rl.bin.train import train
    root = str(tmp_path / 'run')
    with pytest.raises(ValueError, match='CartPol-v1'):
        train(root, [EXAMPLE], ["create_environment.env_name='CartPol-v1'"])
    assert not os.path.exists(root)


def test_mistyped_gin_param_is_named_with_a_suggestion():
    with pytest.raises(ValueError) as raised:
        parse_gin([EXAMPLE], ['TrainerConfig.num_env_step=5'])
    assert str(raised.value) == (
        "--gin_param 'TrainerConfig.num_env_step=5': Configurable "
        "'TrainerConfig' doesn't have a parameter named 'num_env_step'; did "
        "you mean num_env_steps?")
    gin.clear_config()
    with pytest.raises(ValueError) as raised:
        parse_gin([EXAMPLE], ['TrainerConfg.num_iterations=5'])
    assert str(raised.value) == (
        "--gin_param 'TrainerConfg.num_iterations=5': No configurable "
        "matching 'TrainerConfg'; did you mean TrainerConfig?")


def test_gin_syntax_is_checked_without_tensorflow(tmp_path):
    bad = tmp_path / 'bad.gin'
    bad.write_text('TrainerConfig.num_iterations = 10\n'
                   'TrainerConfig.unroll_length = = 3\n')
    with pytest.raises(ValueError) as raised:
        check_gin_syntax([str(bad)], [])
    assert str(raised.value).startswith('gin file %s: gin syntax error, '
                                        'line 2: ' % bad)
    with pytest.raises(ValueError, match='gin file not found: nope.gin'):
        check_gin_syntax(['nope.gin'], [])
    with pytest.raises(ValueError) as raised:
        check_gin_syntax([EXAMPLE], ['TrainerConfig.num_iterations=(3'])
    assert str(raised.value).startswith(
        "--gin_param 'TrainerConfig.num_iterations=(3': gin syntax error")
    check_gin_syntax([EXAMPLE], ['TrainerConfig.num_iterations=3'])
    # The CLI reports it before importing TensorFlow.
    done = _cli_without_tf(['--gin_file', str(bad), '--root_dir',
                            str(tmp_path / 'run')])
    assert done.returncode == 1
    assert done.stderr.startswith('alf-train: error: gin file %s: gin '
                                  'syntax error, line 2: ' % bad)
    assert not os.path.exists(str(tmp_path / 'run'))


def _annotated(kind):
    """TrainerConfig's parameters annotated ``kind`` (or Optional)."""
    import typing
    hints = typing.get_type_hints(TrainerConfig.__init__)
    return sorted(name for name, hint in hints.items()
                  if hint is kind or hint == typing.Optional[kind])


@pytest.mark.parametrize('name', _annotated(int))
def test_every_int_setting_refuses_a_float_and_a_string(name):
    for value, shown in ((2.5, '2.5 (float)'), ('ten', "'ten' (str)"),
                         (True, 'True (bool)')):
        with pytest.raises(TypeError) as raised:
            check_arg_types('TrainerConfig', TrainerConfig.__init__,
                             {name: value})
        assert str(raised.value).startswith(
            'TrainerConfig.%s: expected an int' % name)
        assert str(raised.value).endswith('got %s' % shown)


@pytest.mark.parametrize('name', _annotated(float) + _annotated(bool))
def test_every_float_and_bool_setting_refuses_a_string(name):
    with pytest.raises(TypeError, match=r"^TrainerConfig\.%s: expected a "
                       r"(number|bool)( or None)?, got 'x' \(str\)$" % name):
        check_arg_types('TrainerConfig', TrainerConfig.__init__,
                         {name: 'x'})


def test_trainer_config_type_messages(tmp_path):
    base = dict(root_dir=str(tmp_path), algorithm_ctor=_algorithm)
    with pytest.raises(TypeError) as raised:
        TrainerConfig(num_iterations='ten', **base)
    assert str(raised.value).split('\n')[0] == (
        "TrainerConfig.num_iterations: expected an int, got 'ten' (str)")
    with pytest.raises(TypeError, match=r"^TrainerConfig\.evaluate: expected "
                       r"a bool, got 1 \(int\)"):
        TrainerConfig(evaluate=1, **base)
    with pytest.raises(TypeError, match=r"^TrainerConfig\.random_seed: "
                       r"expected an int or None, got 1\.5 \(float\)"):
        TrainerConfig(random_seed=1.5, **base)
    with pytest.raises(ValueError, match=r"^TrainerConfig\.iterations_per_call"
                       r": expected an int >= 1 or 'auto', got 2\.5 "
                       r"\(float\)"):
        TrainerConfig(iterations_per_call=2.5, **base)
    # Numbers where a float is expected, and numpy ints, are fine.
    import numpy as np
    config = TrainerConfig(progress_interval_secs=2, random_seed=np.int64(3),
                           **base)
    assert config.progress_interval_secs == 2.0 and config.random_seed == 3
    assert not os.listdir(str(tmp_path))


# ------------------------------------------------- TensorBoard and the ETA
def _steps(directory, tag):
    accumulator = EventAccumulator(directory, size_guidance={'tensors': 0})
    accumulator.Reload()
    return [event.step for event in accumulator.Tensors(tag)]


def test_tensorboard_shows_one_value_per_step_after_a_resume(tmp_path,
                                                             capsys):
    root = tmp_path / 'run'
    _train(root, 5)  # summaries 1-5, checkpoints 3 and 5
    # As if killed after iteration 5's summaries, before its checkpoint.
    shutil.move(_ckpt(root, 'ckpt-5'), str(tmp_path / 'ckpt-5'))
    capsys.readouterr()
    assert _train(root, 7)['iterations'] == 7
    err = capsys.readouterr().err
    assert ('alf_rl: %s names ckpt-5, which is missing; found ckpt-3 by '
            'scanning' % _ckpt(root, 'latest')) in err
    assert 'alf_rl: TensorBoard: removed ' in err
    train_dir = str(root / 'train')
    assert len(glob.glob(os.path.join(train_dir, '*tfevents*'))) == 2
    assert _steps(train_dir, 'Metrics/EnvironmentSteps') == list(
        range(1, 8))
    env_steps = _steps(train_dir,
                       'Metrics_vs_EnvironmentSteps/EnvironmentSteps')
    assert len(env_steps) == 7 and env_steps == sorted(set(env_steps))


def test_eta_uses_this_processs_steady_rate_only():
    run = RunClock(start_time=100.0, start_steps=5000)
    assert run.eta_secs(100.0, 0.5) is None
    # Resumed at 50 %: the first call (tracing) takes 30 s for 1 %.
    run.record_call(130.0, 100.0, 1, 0.51)
    assert run.eta_secs(130.0, 0.51) is None
    run.record_call(140.0, 130.0, 10, 0.61)
    # 10 % in 10 s after the first call: 39 % left takes 39 s.
    assert run.eta_secs(140.0, 0.61) == pytest.approx(39.0)
    assert run.eta_secs(150.0, 1.0) is None


def test_atomic_write_text_leaves_the_old_file_on_failure(tmp_path,
                                                          monkeypatch):
    path = str(tmp_path / 'summary.md')
    atomic_write_text(path, 'old\n')
    atomic_write_text(path, 'new\n')
    assert open(path).read() == 'new\n'

    def _fail(src, dst):
        raise OSError(28, 'No space left on device')

    monkeypatch.setattr(os, 'replace', _fail)
    with pytest.raises(OSError, match='No space left'):
        atomic_write_text(path, 'lost\n')
    assert open(path).read() == 'new\n'
    assert sorted(os.listdir(str(tmp_path))) == ['summary.md']  # no temp
