"""Replay buffers checkpointed chunk by chunk (``chunked_state``): round
trips through a ``Checkpointer`` (with frame stacks, across chunk
boundaries), checkpoints written before chunks, plain ``tf.train.Checkpoint``
unchanged, corrupt / NaN / mismatched chunk files refused in one line."""

import glob
import hashlib
import json
import os
import shutil
import zlib

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.replay import PrioritizedReplayBuffer, ReplayBuffer
from alf_rl.utils import chunked_state
from alf_rl.utils.checkpoint import (
    CheckpointError,
    Checkpointer,
    NoUsableCheckpointError,
    NonFiniteStateError,
)
from alf_rl.utils.checkpoint_contents import read_back

SPEC = dict(
    obs=tf.TensorSpec([3, 2], tf.uint8), reward=tf.TensorSpec([], tf.float32)
)


def _buffer(cls=ReplayBuffer, capacity=40, seed=0):
    return cls(SPEC, num_environments=2, capacity=capacity, seed=seed)


def _fill(buffer, steps=17, start=0):
    for t in range(start, start + steps):
        buffer.add_batch(
            dict(
                obs=tf.constant(
                    np.full([2, 3, 2], [[t % 256]], np.uint8)
                    + np.arange(2, dtype=np.uint8)[:, None, None] * 100
                ),
                reward=tf.constant([t * 1.5, -t * 0.5], tf.float32),
            ),
            tf.constant([0, 1], tf.int64),
        )


def _assert_same_contents(buffer, restored):
    for a, b in zip(
        tf.nest.flatten(buffer.gather_all()),
        tf.nest.flatten(restored.gather_all()),
    ):
        np.testing.assert_array_equal(a, b)


@pytest.fixture
def small_chunks(monkeypatch):
    # 3 rows of obs (6 bytes each) per chunk: every variable spans chunks.
    monkeypatch.setattr(chunked_state, 'CHUNK_BYTES', 18)


def _manifest(prefix):
    with open(prefix + '.chunks/manifest.json') as f:
        return json.load(f)


def _chunk_file(prefix, key='replayer/_flat_data/0', i=0):
    """The file of chunk ``i`` of the variable ``key``."""
    entry = {e['key']: e for e in _manifest(prefix)['variables']}[key]
    return prefix + '.chunks/%s.bin' % entry['chunks'][i]


@pytest.mark.parametrize('cls', [ReplayBuffer, PrioritizedReplayBuffer])
def test_round_trip_in_chunks_outside_the_bundle(tmp_path, small_chunks, cls):
    buffer = _buffer(cls)
    _fill(buffer)
    prefix = Checkpointer(str(tmp_path), replayer=buffer).save(5)
    keys = dict(tf.train.list_variables(prefix))
    assert not any('_flat_data' in k for k in keys), keys
    assert 'replayer/_end/.ATTRIBUTES/VARIABLE_VALUE' in keys
    manifest = _manifest(prefix)
    entries = {e['key']: e for e in manifest['variables']}
    assert sorted(entries) == [
        'replayer/_flat_data/0',
        'replayer/_flat_data/1',
    ]
    obs = entries['replayer/_flat_data/0']
    assert obs['shape'] == [40, 3, 2] and obs['dtype'] == 'uint8'
    assert obs['rows_per_chunk'] == 3 and len(obs['chunks']) == 14
    assert read_back(prefix) == read_back(prefix).__class__()

    restored = _buffer(cls, seed=9)
    assert Checkpointer(str(tmp_path), replayer=restored).restore() == prefix
    _assert_same_contents(buffer, restored)
    np.testing.assert_array_equal(restored.current_size, [17, 17])
    # The sampler's state (in the bundle) came back too: same samples.
    for a, b in zip(
        tf.nest.flatten(buffer.get_batch(8, 2)),
        tf.nest.flatten(restored.get_batch(8, 2)),
    ):
        np.testing.assert_array_equal(a, b)


def _inode(path):
    return os.stat(path).st_ino


def test_unchanged_chunks_are_shared_with_the_checkpoint_before(
    tmp_path, small_chunks
):
    buffer = _buffer(capacity=80)
    _fill(buffer, steps=17)
    checkpointer = Checkpointer(str(tmp_path), max_to_keep=2, replayer=buffer)
    first = checkpointer.save(1)
    obs = _manifest(first)['variables'][0]
    assert obs['key'] == 'replayer/_flat_data/0'
    # Each env's 23 unfilled rows (zeros) are the same chunk: one file.
    assert len(obs['chunks']) == 27 and len(set(obs['chunks'])) == 14
    # Rows 17..39 and 57..79 unfilled: chunks 6..12 and 19..25 of 3 rows.
    zero = obs['chunks'][6]
    assert [i for i, c in enumerate(obs['chunks']) if c == zero] == (
        list(range(6, 13)) + list(range(19, 26))
    )
    _fill(buffer, steps=2, start=17)  # rows 17, 18 of each env's half
    second = checkpointer.save(2)
    chunks = _manifest(second)['variables'][0]['chunks']
    changed = [i for i in range(27) if chunks[i] != obs['chunks'][i]]
    assert changed == [5, 6, 19]
    for i in (0, 4, 20, 26):  # the same content: the same file, linked
        assert _inode(_chunk_file(first, i=i)) == _inode(
            _chunk_file(second, i=i)
        )
    # The first checkpoint is deleted (max_to_keep=2): the third shares
    # its files (through the second's links) and restores exactly.
    _fill(buffer, steps=1, start=19)
    third = checkpointer.save(3)
    assert checkpointer.checkpoints() == [2, 3]
    restored = _buffer(capacity=80, seed=3)
    assert Checkpointer(str(tmp_path), replayer=restored).restore() == third
    _assert_same_contents(buffer, restored)


def test_without_hard_links_the_chunks_are_written(
    tmp_path, small_chunks, monkeypatch
):
    # A file system without hard links (or the files on another device):
    # every chunk file is written in full, the checkpoint the same.
    buffer = _buffer()
    _fill(buffer)
    checkpointer = Checkpointer(str(tmp_path), replayer=buffer)
    first = checkpointer.save(1)

    def no_links(source, destination):
        raise OSError(1, 'Operation not permitted')

    monkeypatch.setattr(chunked_state.os, 'link', no_links)
    _fill(buffer, steps=3, start=17)
    second = checkpointer.save(2)
    first_chunk = _manifest(first)['variables'][0]['chunks'][0]
    assert _manifest(second)['variables'][0]['chunks'][0] == first_chunk
    assert _inode(_chunk_file(first)) != _inode(_chunk_file(second))
    restored = _buffer(seed=5)
    Checkpointer(str(tmp_path), replayer=restored).restore()
    _assert_same_contents(buffer, restored)


def _as_first_format(prefix):
    """Rewrites the chunk files at ``prefix`` as the first format wrote
    them: a variable's rows in ``<i>.bin``, a CRC-32 per chunk."""
    directory = prefix + '.chunks'
    manifest = _manifest(prefix)
    for i, entry in enumerate(manifest['variables']):
        crcs = []
        with open(os.path.join(directory, '%d.bin' % i), 'wb') as out:
            for digest in entry['chunks']:
                with open(os.path.join(directory, digest + '.bin'), 'rb') as f:
                    data = f.read()
                crcs.append(zlib.crc32(data))
                out.write(data)
        entry.update(file='%d.bin' % i, crc32=crcs)
        del entry['chunks']
    for name in os.listdir(directory):
        if len(name) == 68:
            os.remove(os.path.join(directory, name))
    manifest['format'] = 1
    with open(os.path.join(directory, 'manifest.json'), 'w') as f:
        json.dump(manifest, f)


def test_checkpoint_of_the_first_chunk_format_is_restored(
    tmp_path, small_chunks
):
    buffer = _buffer()
    _fill(buffer)
    checkpointer = Checkpointer(str(tmp_path), replayer=buffer)
    prefix = checkpointer.save(1)
    _as_first_format(prefix)
    assert sorted(os.listdir(prefix + '.chunks')) == [
        '0.bin',
        '1.bin',
        'manifest.json',
    ]
    assert read_back(prefix).problem is None
    restored = _buffer(seed=2)
    assert Checkpointer(str(tmp_path), replayer=restored).restore() == prefix
    _assert_same_contents(buffer, restored)
    # The next save (from a run resumed from it) writes the new format.
    _fill(buffer, steps=1)
    assert _manifest(checkpointer.save(2))['format'] == 2


def test_manifest_naming_a_file_outside_is_refused(tmp_path):
    prefix = _saved(tmp_path)
    manifest = _manifest(prefix)
    manifest['variables'][0]['chunks'][0] = '../../ckpt-2/ckpt'
    with open(prefix + '.chunks/manifest.json', 'w') as f:
        json.dump(manifest, f)
    assert read_back(prefix).problem.endswith(
        "manifest.json is unreadable (a chunk named '../../ckpt-2/ckpt')"
    )


def test_frame_stack_buffer_round_trip(tmp_path, small_chunks):
    from tests.replay.test_frame_stack_replay import _spec, _Stacker

    buffer = ReplayBuffer(_spec(), 2, 24, frame_stack='experience.observation')
    stacker = _Stacker(2)
    for _ in range(20):
        exp, _ = stacker.step([0, 1])
        buffer.add_batch(exp, tf.constant([0, 1], tf.int64))
    prefix = Checkpointer(str(tmp_path), replayer=buffer).save(1)
    assert 'replayer/_frame_first' in {
        e['key'] for e in _manifest(prefix)['variables']
    }
    restored = ReplayBuffer(
        _spec(), 2, 24, frame_stack='experience.observation'
    )
    Checkpointer(str(tmp_path), replayer=restored).restore()
    _assert_same_contents(buffer, restored)


def test_checkpoint_written_before_chunks_is_restored(tmp_path):
    # What a Checkpointer wrote before chunks: tf.train.Checkpoint of the
    # same objects, replay data inside the bundle.
    buffer = _buffer()
    _fill(buffer)
    os.makedirs(tmp_path / 'ckpt-3')
    tf.train.Checkpoint(replayer=buffer).write(
        str(tmp_path / 'ckpt-3' / 'ckpt')
    )
    restored = _buffer(seed=4)
    prefix = Checkpointer(str(tmp_path), replayer=restored).restore()
    assert prefix == str(tmp_path / 'ckpt-3' / 'ckpt')
    _assert_same_contents(buffer, restored)


def test_plain_tf_checkpoint_keeps_data_in_its_bundle(tmp_path):
    buffer = _buffer()
    _fill(buffer)
    path = tf.train.Checkpoint(b=buffer).write(str(tmp_path / 'plain'))
    assert 'b/_flat_data/0/.ATTRIBUTES/VARIABLE_VALUE' in dict(
        tf.train.list_variables(path)
    )
    assert not os.path.exists(path + '.chunks')
    restored = _buffer()
    tf.train.Checkpoint(b=restored).read(path).assert_consumed()
    np.testing.assert_array_equal(
        restored.gather_all()['obs'], buffer.gather_all()['obs']
    )


def _saved(tmp_path):
    buffer = _buffer()
    _fill(buffer)
    return Checkpointer(str(tmp_path), replayer=buffer).save(2)


def test_corrupt_chunk_is_moved_aside_naming_the_file(
    tmp_path, small_chunks, capsys
):
    prefix = _saved(tmp_path)
    path = _chunk_file(prefix, i=1)
    with open(path, 'r+b') as f:
        f.seek(2)
        byte = f.read(1)
        f.seek(2)
        f.write(bytes([byte[0] ^ 1]))
    problem = read_back(prefix).problem
    assert problem == ('ValueError: %s: checksum mismatch in rows 3..6' % path)
    with pytest.raises(NoUsableCheckpointError, match='checksum mismatch'):
        Checkpointer(str(tmp_path), replayer=_buffer()).restore(
            move_corrupt=True
        )
    assert os.path.isdir(tmp_path / 'ckpt-2.corrupt')
    assert 'checksum mismatch in rows 3..6' in capsys.readouterr().err


def test_policy_only_reader_skips_the_chunk_files(
    tmp_path, small_chunks, monkeypatch
):
    # alf-play / export restore the model alone: the replay data's chunk
    # files are neither read back nor needed (a corrupt one is no reason
    # to refuse the policy).
    buffer = _buffer()
    _fill(buffer)
    policy = tf.Variable([1.5, -2.0])
    prefix = Checkpointer(str(tmp_path), replayer=buffer, policy=policy).save(
        2
    )
    with open(_chunk_file(prefix), 'r+b') as f:
        f.write(b'\xff\xff')
    assert read_back(prefix).problem is not None
    assert read_back(prefix, chunks=False).problem is None

    def no_chunk_reads(prefix):
        raise AssertionError('chunk files read for a policy-only restore')

    monkeypatch.setattr(chunked_state, 'check_chunks', no_chunk_reads)
    restored = tf.Variable([0.0, 0.0])
    assert Checkpointer(str(tmp_path), policy=restored).restore() == prefix
    np.testing.assert_array_equal(restored.numpy(), [1.5, -2.0])


@pytest.mark.parametrize(
    'damage, expected',
    [
        ('truncate', r'[0-9a-f]{64}\.bin holds 239 bytes, expected 240'),
        ('manifest', r'manifest\.json is missing'),
    ],
)
def test_short_file_or_missing_manifest_does_not_read_back(
    tmp_path, damage, expected
):
    prefix = _saved(tmp_path)
    if damage == 'truncate':
        with open(_chunk_file(prefix), 'r+b') as f:
            f.truncate(239)
    else:
        os.remove(prefix + '.chunks/manifest.json')
    assert read_back(prefix).problem is not None
    with pytest.raises(NoUsableCheckpointError, match=expected):
        Checkpointer(str(tmp_path), replayer=_buffer()).restore()


def test_nan_in_a_chunk_is_refused_naming_the_variable(tmp_path):
    prefix = _saved(tmp_path)
    manifest = _manifest(prefix)
    entry = [e for e in manifest['variables'] if e['dtype'] == 'float32'][0]
    values = np.fromfile(_chunk_file(prefix, entry['key']), np.float32)
    values[5] = np.nan
    # A consistent checkpoint holding NaN: the file named by its content.
    entry['chunks'] = [hashlib.sha256(values.data).hexdigest()]
    entry['crc32'] = [zlib.crc32(values.data)]
    values.tofile(prefix + '.chunks/%s.bin' % entry['chunks'][0])
    with open(prefix + '.chunks/manifest.json', 'w') as f:
        json.dump(manifest, f)
    assert read_back(prefix)[1:] == ('replayer/_flat_data/1', 'NaN')
    with pytest.raises(
        NonFiniteStateError, match=r'holds NaN values in replayer/_flat_data/1'
    ):
        Checkpointer(str(tmp_path), replayer=_buffer()).restore()


def test_nan_in_the_buffer_writes_nothing(tmp_path):
    buffer = _buffer()
    _fill(buffer)
    buffer._flat_data[1].scatter_update(
        tf.IndexedSlices(tf.constant([np.inf]), tf.constant([3]))
    )
    with pytest.raises(
        NonFiniteStateError, match=r'ReplayBuffer/data_1:0 holds NaN/Inf'
    ):
        Checkpointer(str(tmp_path), replayer=buffer).save(1)
    assert os.listdir(tmp_path) == []


def test_other_capacity_is_refused_before_anything_is_restored(tmp_path):
    _saved(tmp_path)
    other = _buffer(capacity=60)
    end = other._end.numpy()
    with pytest.raises(
        CheckpointError,
        match=r'replayer/_flat_data/0 is saved as uint8 '
        r'\[40, 3, 2\], the model has uint8 \[60, 3, 2\]',
    ):
        Checkpointer(str(tmp_path), replayer=other).restore()
    np.testing.assert_array_equal(other._end.numpy(), end)


@pytest.mark.parametrize(
    'error, line',
    [
        (
            OSError(28, 'No space left on device'),
            'checkpoint ckpt-2 not written: no space left on device at %s; '
            'the last good checkpoint ckpt-1 is kept',
        ),
        # A bug inside the save (as a tf.function's OperatorNotAllowedIn
        # GraphError once was): the same one line, naming the error's type.
        (
            TypeError('unsupported operand'),
            'checkpoint ckpt-2 not written: TypeError: unsupported operand; '
            'the last good checkpoint ckpt-1 is kept',
        ),
    ],
)
def test_write_failure_leaves_no_checkpoint(
    tmp_path, monkeypatch, error, line
):
    buffer = _buffer()
    _fill(buffer)
    checkpointer = Checkpointer(str(tmp_path), replayer=buffer)
    checkpointer.save(1)

    def failing(found, prefix, reuse=None):
        raise error

    monkeypatch.setattr(chunked_state, 'write_chunks', failing)
    from alf_rl.utils.checkpoint import CheckpointSaveError

    with pytest.raises(CheckpointSaveError) as raised:
        checkpointer.save(2)
    assert str(raised.value) == line.replace('%s', str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ['ckpt-1', 'latest']


def test_restore_reads_a_chunk_at_a_time(tmp_path, small_chunks, monkeypatch):
    prefix = _saved(tmp_path)
    reads = []
    real = np.fromfile

    def counted(f, dtype, count):
        reads.append(count)
        return real(f, dtype, count=count)

    monkeypatch.setattr(chunked_state.np, 'fromfile', counted)
    Checkpointer(str(tmp_path), replayer=_buffer()).restore(prefix)
    # obs: 13 chunks of 3 rows (18 values) and one of 1 row; reward: 10
    # chunks of 4; read back (checksums), then restored.
    assert reads == ([18] * 13 + [6] + [4] * 10) * 2


def test_unfilled_rows_are_read_once_per_run_of_alike_chunks(
    tmp_path, small_chunks, monkeypatch
):
    buffer = _buffer(capacity=80)
    _fill(buffer)
    prefix = Checkpointer(str(tmp_path), replayer=buffer).save(1)
    reads = []
    real = np.fromfile

    def counted(f, dtype, count):
        reads.append(os.path.basename(f.name))
        return real(f, dtype, count=count)

    monkeypatch.setattr(chunked_state.np, 'fromfile', counted)
    restored = _buffer(capacity=80, seed=1)
    Checkpointer(str(tmp_path), replayer=restored).restore(prefix)
    _assert_same_contents(buffer, restored)
    # obs: 27 chunks, of which 6..12 and 19..25 alike (zeros): 15 reads;
    # reward: 20 chunks of 4, 5..9 and 15..19 alike: 12; read back, then
    # restored.
    assert len(reads) == (15 + 12) * 2


def test_scalar_chunked_variable_is_refused():
    class Bad(chunked_state.ChunkedVariables, tf.Module):
        _chunked_attributes = ('_v',)

        def __init__(self):
            super().__init__()
            self._v = tf.Variable(1.0)

    with pytest.raises(
        ValueError,
        match=r'Bad: chunked variable _v must '
        r'have rank >= 1',
    ):
        Bad().chunked_variables()


def _damage(path):
    """Flips one bit of the file at ``path`` (as a disk error at rest)."""
    with open(path, 'r+b') as f:
        byte = f.read(1)
        f.seek(0)
        f.write(bytes([byte[0] ^ 1]))


@pytest.fixture
def new_process(monkeypatch):
    """No chunk directory written or restored by this process yet."""
    monkeypatch.setattr(chunked_state, '_VOUCHED', set())
    monkeypatch.setattr(chunked_state, '_FILES', {})


def test_with_chunks_left_out_the_rest_is_restored_from_damaged_chunks(
    tmp_path, small_chunks, new_process
):
    buffer = _buffer()
    _fill(buffer)
    prefix = Checkpointer(str(tmp_path), replayer=buffer).save(5)
    _damage(_chunk_file(prefix, i=1))
    restored = _buffer(seed=9)
    checkpointer = Checkpointer(str(tmp_path), replayer=restored)
    with pytest.raises(NoUsableCheckpointError, match='checksum mismatch'):
        checkpointer.restore()
    with chunked_state.chunks_left_out():
        assert not chunked_state.chunks_restored(checkpointer._checkpoint)
        assert checkpointer.restore() == prefix
    assert chunked_state.chunks_restored(checkpointer._checkpoint)
    # The counters (bundle) came back; the chunked variables were left as
    # they were (zeros), for the caller to clear.
    np.testing.assert_array_equal(restored.current_size, [17, 17])
    for var in restored.chunked_variables().values():
        assert not np.any(var.numpy())
    restored.clear()
    _fill(restored, steps=2)
    # The next save writes its chunk files, none linked to the damaged ones.
    second = checkpointer.save(6)
    assert read_back(second).problem is None
    before = {_inode(p) for p in glob.glob(prefix + '.chunks/*.bin')}
    after = {_inode(p) for p in glob.glob(second + '.chunks/*.bin')}
    assert before and after and not before & after


def test_a_save_links_only_chunk_files_written_or_restored_here(
    tmp_path, small_chunks, new_process
):
    buffer = _buffer(capacity=80)
    _fill(buffer)
    first = Checkpointer(str(tmp_path), replayer=buffer).save(1)
    zero = _chunk_file(first, i=6)  # unfilled rows: kept by every save

    def saved_again(step):
        # As a new process: nothing vouched for.
        chunked_state._VOUCHED.clear()
        checkpointer = Checkpointer(
            str(tmp_path), replayer=_buffer(capacity=80, seed=step)
        )
        return checkpointer, checkpointer.save(step)

    # A checkpoint this process neither wrote nor restored from: written.
    _, second = saved_again(2)
    assert _inode(_chunk_file(second, i=6)) != _inode(zero)
    # One it restored from (every chunk file read and checked): linked.
    chunked_state._VOUCHED.clear()
    checkpointer = Checkpointer(str(tmp_path), replayer=buffer)
    assert checkpointer.restore() == second
    third = checkpointer.save(3)
    assert _inode(_chunk_file(third, i=6)) == _inode(_chunk_file(second, i=6))
    # One whose read-back failed is no longer vouched for, even if this
    # process wrote it.
    _damage(_chunk_file(third, i=0))
    assert read_back(third).problem is not None
    fourth = checkpointer.save(4)
    assert _inode(_chunk_file(fourth, i=6)) != _inode(_chunk_file(third, i=6))


def test_a_chunk_file_written_into_between_two_saves_is_not_linked(
    tmp_path, small_chunks, new_process
):
    buffer = _buffer(capacity=80)
    _fill(buffer)
    checkpointer = Checkpointer(str(tmp_path), max_to_keep=3, replayer=buffer)
    first = checkpointer.save(1)
    damaged, kept = _chunk_file(first, i=0), _chunk_file(first, i=1)
    # Damaged in place after the save (nothing read it back since).
    _damage(damaged)
    second = checkpointer.save(2)
    # Its chunk is written again; the untouched ones are still shared.
    assert _inode(_chunk_file(second, i=0)) != _inode(damaged)
    assert _inode(_chunk_file(second, i=1)) == _inode(kept)
    assert read_back(second).problem is None
    assert 'checksum mismatch' in read_back(first).problem
    restored = _buffer(capacity=80, seed=4)
    assert Checkpointer(str(tmp_path), replayer=restored).restore() == second
    _assert_same_contents(buffer, restored)


def test_a_checkpoint_whose_chunk_files_were_deleted_restores_without_them(
    tmp_path, new_process
):
    buffer = _buffer()
    _fill(buffer)
    prefix = Checkpointer(str(tmp_path), replayer=buffer).save(2)
    shutil.rmtree(prefix + '.chunks')  # to free the disk
    restored = _buffer(seed=1)
    checkpointer = Checkpointer(str(tmp_path), replayer=restored)
    with pytest.raises(
        CheckpointError,
        match=r'it holds no replayer/_flat_data/0 \(its chunk files, '
        r'ckpt.chunks, are gone: restore the rest with restore_replay=False, '
        r'alf-train --without_replay\)',
    ):
        checkpointer.restore()
    with chunked_state.chunks_left_out():
        assert checkpointer.restore() == prefix
    np.testing.assert_array_equal(restored.current_size, [17, 17])
    # A model of another kind (its module absent from the checkpoint) is
    # not told its chunk files are gone.
    other = Checkpointer(str(tmp_path), other=_buffer())
    with pytest.raises(
        CheckpointError, match='it holds no other/_flat_data/0. '
    ):
        other.restore()
