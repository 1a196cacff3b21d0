"""RunCheckpoints alone: lock, save, resume, the checkpoint after an error."""

import fcntl
import os

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.trainers.checkpoints import RunCheckpoints, non_finite_variable
from alf_rl.trainers.config import CheckpointConfig
from alf_rl.trainers.errors import NonFiniteLossError, TrainingError
from alf_rl.utils.checkpoint import (CheckpointError, NoUsableCheckpointError,
                                     rerun_advice)


def _checkpoints(root, fresh_start=False, from_checkpoint=None):
    iteration = tf.Variable(0, dtype=tf.int64)
    weights = tf.Variable([1.0, 2.0])
    return RunCheckpoints(str(root), CheckpointConfig(
        checkpoint_max_to_keep=2, fresh_start=fresh_start,
        from_checkpoint=from_checkpoint), iteration,
                          model=tf.Module()), iteration, weights


def _error(update_applied=False):
    return NonFiniteLossError('training stopped at iteration 4: non-finite '
                              'loss (x)', 4, 4, 'A', (), 'NaN',
                              update_applied, 'x')


def test_save_restore_and_keep(tmp_path, capsys):
    checkpoints, iteration, _ = _checkpoints(tmp_path)
    flushed = []
    with checkpoints.locked():
        for it in (1, 2, 3):
            iteration.assign(it)
            checkpoints.save(it, lambda it=it: flushed.append(it))
        checkpoints.save(3, lambda: flushed.append('again'))  # current
    assert flushed == [1, 2, 3]
    assert checkpoints.checkpointer.checkpoints() == [2, 3]  # keeps 2
    again, iteration2, _ = _checkpoints(tmp_path)
    with again.locked():
        restored = again.restore(lambda: ', 5 env steps')
    assert restored.endswith(os.path.join('ckpt-3', 'ckpt'))
    assert int(iteration2.numpy()) == 3 and again.saved_iteration == 3
    assert ('resumed from %s at iteration 3, 5 env steps' % restored
            in capsys.readouterr().out)


def _locked_by_someone(root):
    """Whether another open file description cannot flock the lock file."""
    fd = os.open(os.path.join(str(root), '.alf_rl.lock'), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def test_the_lock_is_held_inside(tmp_path):
    checkpoints, _, _ = _checkpoints(tmp_path)
    with checkpoints.locked():
        assert _locked_by_someone(tmp_path)
    assert not _locked_by_someone(tmp_path)


def _saved(root, *iterations):
    checkpoints, iteration, _ = _checkpoints(root)
    with checkpoints.locked():
        for it in iterations:
            iteration.assign(it)
            checkpoints.save(it)


def test_fresh_start_sets_the_whole_earlier_run_aside(tmp_path, capsys):
    _saved(tmp_path, 2)  # a usable checkpoint
    os.mkdir(tmp_path / 'train')
    (tmp_path / 'train' / 'events.out.tfevents.1').write_bytes(b'x' * 40)
    (tmp_path / 'config.gin').write_text('a = 1\n')
    (tmp_path / 'notes.txt').write_text('mine')
    fresh, iteration, _ = _checkpoints(tmp_path, fresh_start=True)
    with fresh.locked():
        assert fresh.restore() is None
    assert int(iteration.numpy()) == 0
    aside = tmp_path / 'set_aside-1'
    assert sorted(os.listdir(aside)) == ['ckpt', 'config.gin', 'train']
    assert os.listdir(aside / 'ckpt' / 'ckpt-2')  # moved whole
    assert (aside / 'train' / 'events.out.tfevents.1').read_bytes() == \
        b'x' * 40
    assert sorted(os.listdir(tmp_path)) == ['.alf_rl.lock', 'notes.txt',
                                            'set_aside-1']
    assert capsys.readouterr().err == (
        'alf_rl: fresh_start: moved the earlier run aside to %s (kept, '
        'nothing deleted): ckpt, train, config.gin; starting from '
        'iteration 0\n' % aside)
    # Again, with a new checkpoint: the next free directory.
    _saved(tmp_path, 1)
    with fresh.locked():
        fresh.restore()
    assert os.listdir(tmp_path / 'set_aside-2') == ['ckpt']
    # Nothing to move.
    with fresh.locked():
        fresh.restore()
    assert capsys.readouterr().err.endswith(
        'fresh_start: no earlier run in %s; starting from iteration 0\n'
        % tmp_path)


def test_fresh_start_when_no_checkpoint_is_usable(tmp_path, capsys):
    _saved(tmp_path, 2)
    data = [f for f in os.listdir(tmp_path / 'ckpt' / 'ckpt-2')
            if f.startswith('ckpt.data')][0]
    with open(tmp_path / 'ckpt' / 'ckpt-2' / data, 'r+b') as f:
        f.truncate(3)
    with pytest.raises(NoUsableCheckpointError, match='set_aside'):
        _checkpoints(tmp_path)[0].restore()
    fresh, iteration, _ = _checkpoints(tmp_path, fresh_start=True)
    assert fresh.restore() is None and int(iteration.numpy()) == 0
    assert 'fresh_start: moved the earlier run aside' in (
        capsys.readouterr().err)
    assert sorted(os.listdir(tmp_path / 'set_aside-1' / 'ckpt')) == [
        'ckpt-2.corrupt', 'latest']


def test_from_checkpoint_sets_the_newer_ones_aside(tmp_path, capsys):
    _saved(tmp_path, 2, 3)
    os.mkdir(tmp_path / 'ckpt' / 'ckpt-3.set_aside')  # an earlier rescue
    capsys.readouterr()
    with pytest.raises(CheckpointError) as error:
        _checkpoints(tmp_path, from_checkpoint=7)[0].restore()
    assert str(error.value) == (
        'from_checkpoint=7: there is no checkpoint ckpt-7 in %s (it holds '
        'ckpt-2, ckpt-3)' % (tmp_path / 'ckpt'))
    rescue, iteration, _ = _checkpoints(tmp_path, from_checkpoint=2)
    with rescue.locked():
        restored = rescue.restore()
    assert restored == str(tmp_path / 'ckpt' / 'ckpt-2' / 'ckpt')
    assert int(iteration.numpy()) == 2 and rescue.saved_iteration == 2
    assert sorted(os.listdir(tmp_path / 'ckpt')) == [
        'ckpt-2', 'ckpt-3.set_aside', 'ckpt-3.set_aside-1', 'latest']
    assert (tmp_path / 'ckpt' / 'latest').read_text() == 'ckpt-2'
    out, err = capsys.readouterr()
    assert err == ('alf_rl: from_checkpoint=2: set the newer checkpoints '
                   'aside in %s (kept, nothing deleted): ckpt-3.set_aside-1'
                   '\n' % (tmp_path / 'ckpt'))
    assert 'resumed from %s at iteration 2' % restored in out
    # The newest already: nothing to set aside.
    with rescue.locked():
        rescue.restore()
    assert 'no newer checkpoint to set aside' in capsys.readouterr().err


def test_from_a_corrupt_checkpoint_moves_nothing(tmp_path):
    _saved(tmp_path, 2, 3)
    index = tmp_path / 'ckpt' / 'ckpt-2' / 'ckpt.index'
    index.write_bytes(b'garbage')
    with pytest.raises(CheckpointError, match=r'from_checkpoint=2: checkpoint'
                       r' .*ckpt-2/ckpt is corrupt or unreadable'):
        _checkpoints(tmp_path, from_checkpoint=2)[0].restore()
    assert sorted(os.listdir(tmp_path / 'ckpt')) == ['ckpt-2', 'ckpt-3',
                                                     'latest']


def test_a_checkpoint_after_an_error_only_of_a_good_model(tmp_path):
    checkpoints, iteration, weights = _checkpoints(tmp_path)
    error = _error()
    checkpoints.save_after_error(error, [weights])  # iteration 0
    assert error.checkpoint is None and 'no iteration had completed' in str(
        error)
    iteration.assign(3)
    error = TrainingError('training stopped at iteration 4', 4)
    checkpoints.save_after_error(error, [weights])
    assert error.checkpoint.endswith(os.path.join('ckpt-3', 'ckpt'))
    assert ('A checkpoint was written at iteration 3 (%s): rerun the same '
            'command to resume from it.' % error.checkpoint) in str(error)
    # Current already: no second save.
    error = TrainingError('stopped', 4)
    checkpoints.save_after_error(error, [weights])
    assert 'The checkpoint of iteration 3' in str(error)
    iteration.assign(4)
    # A non-finite loss: the model that produced it is suspect, so nothing
    # is written, and the advice names the newest earlier finite one.
    error = _error()
    checkpoints.save_after_error(error, [weights])
    assert error.checkpoint is None
    assert str(error).endswith(
        'No checkpoint was written: the model that produced it may itself '
        'compute NaN/Inf; to resume from ckpt-3, the newest earlier '
        'checkpoint whose values are finite, rerun with --from_checkpoint 3 '
        '(TrainerConfig.from_checkpoint; the newer ones are set aside, '
        'nothing deleted).')
    weights.assign([np.nan, 0.0])
    assert non_finite_variable([tf.Variable([1, 2]), weights]) == weights.name
    error = TrainingError('training stopped at iteration 5', 5)
    checkpoints.save_after_error(error, [weights])
    assert error.checkpoint is None
    assert ('the model variable %s holds non-finite values; the last good '
            'checkpoint is' % weights.name) in str(error)
    error = _error(update_applied=True)
    checkpoints.save_after_error(error, [])
    assert 'already applied (XLA)' in str(error)
    assert checkpoints.checkpointer.checkpoints() == [3]


def test_after_a_rescue_the_advice_is_to_rerun_without_it(tmp_path):
    _saved(tmp_path, 2)
    for config, flag in (({'fresh_start': True}, '--fresh_start'),
                         ({'from_checkpoint': 2}, '--from_checkpoint')):
        checkpoints, iteration, weights = _checkpoints(tmp_path, **config)
        iteration.assign(5)
        error = TrainingError('training stopped at iteration 6', 6)
        checkpoints.save_after_error(error, [weights])
        assert ('A checkpoint was written at iteration 5 (%s): rerun '
                'without %s to resume from it.' % (error.checkpoint, flag)
                in str(error))


def test_the_rerun_advice_names_every_rescue_given():
    assert rerun_advice() == 'rerun the same command'
    assert rerun_advice(fresh_start=True) == 'rerun without --fresh_start'
    assert rerun_advice(from_checkpoint=True, without_replay=True) == (
        'rerun without --from_checkpoint and --without_replay')
    checkpoints = RunCheckpoints('unused', CheckpointConfig(
        restore_replay=False), tf.Variable(0, dtype=tf.int64))
    assert checkpoints._rerun_advice() == 'rerun without --without_replay'
