"""RunCheckpoints alone: lock, save, resume, the checkpoint after an error."""

import fcntl
import os

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.trainers.checkpoints import RunCheckpoints, non_finite_variable
from alf_rl.trainers.config import CheckpointConfig
from alf_rl.trainers.errors import NonFiniteLossError, TrainingError
from alf_rl.utils.checkpoint import NoUsableCheckpointError


def _checkpoints(root, fresh_start=False):
    iteration = tf.Variable(0, dtype=tf.int64)
    weights = tf.Variable([1.0, 2.0])
    return RunCheckpoints(str(root), CheckpointConfig(
        checkpoint_max_to_keep=2, fresh_start=fresh_start), iteration,
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


def test_fresh_start_when_no_checkpoint_is_usable(tmp_path, capsys):
    checkpoints, iteration, _ = _checkpoints(tmp_path)
    iteration.assign(2)
    with checkpoints.locked():
        checkpoints.save(2)
    data = [f for f in os.listdir(tmp_path / 'ckpt' / 'ckpt-2')
            if f.startswith('ckpt.data')][0]
    with open(tmp_path / 'ckpt' / 'ckpt-2' / data, 'r+b') as f:
        f.truncate(3)
    with pytest.raises(NoUsableCheckpointError):
        _checkpoints(tmp_path)[0].restore()
    fresh, iteration, _ = _checkpoints(tmp_path, fresh_start=True)
    assert fresh.restore() is None and int(iteration.numpy()) == 0
    assert 'fresh_start: no usable checkpoint' in capsys.readouterr().err


def test_a_checkpoint_after_an_error_only_of_a_good_model(tmp_path):
    checkpoints, iteration, weights = _checkpoints(tmp_path)
    error = _error()
    checkpoints.save_after_error(error, [weights])  # iteration 0
    assert error.checkpoint is None and 'no iteration had completed' in str(
        error)
    iteration.assign(3)
    error = _error()
    checkpoints.save_after_error(error, [weights])
    assert error.checkpoint.endswith(os.path.join('ckpt-3', 'ckpt'))
    assert 'A checkpoint was written at iteration 3' in str(error)
    # Current already: no second save.
    error = TrainingError('stopped', 4)
    checkpoints.save_after_error(error, [weights])
    assert 'The checkpoint of iteration 3' in str(error)
    iteration.assign(4)
    weights.assign([np.nan, 0.0])
    assert non_finite_variable([tf.Variable([1, 2]), weights]) == weights.name
    error = _error()
    checkpoints.save_after_error(error, [weights])
    assert error.checkpoint is None
    assert ('the model variable %s holds non-finite values; the last good '
            'checkpoint is' % weights.name) in str(error)
    error = _error(update_applied=True)
    checkpoints.save_after_error(error, [])
    assert 'already applied (XLA)' in str(error)
    assert checkpoints.checkpointer.checkpoints() == [3]
