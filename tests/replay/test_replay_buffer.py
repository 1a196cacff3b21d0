"""ReplayBuffer: ring order, per-env heads, sampling windows, specs, errors,
checkpoints and tf.function."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.data_structures import Experience, StepType
from alf_rl.replay import BatchInfo, ReplayBuffer

SCALAR = tf.TensorSpec((), tf.int64)


def _add(buffer, env_ids):
    """Adds one step to ``env_ids``, value = 100 * env + position."""
    env_ids = np.asarray(env_ids, np.int32)
    pos = buffer.end_positions.numpy()[env_ids]
    return buffer.add_batch(tf.constant(100 * env_ids + pos, tf.int64),
                            tf.constant(env_ids))


def test_ring_order_across_wrap_around():
    buffer = ReplayBuffer(SCALAR, num_environments=2, capacity=8)
    assert buffer.max_length == 4 and buffer.capacity == 8
    for _ in range(10):
        _add(buffer, [0, 1])
    np.testing.assert_array_equal(buffer.current_size, [4, 4])
    np.testing.assert_array_equal(buffer.start_positions, [6, 6])
    np.testing.assert_array_equal(buffer.end_positions, [10, 10])
    assert int(buffer.total_size) == 8 and int(buffer.num_steps) == 20
    # The head is at slot 10 % 4 = 2, not 0: raw storage is out of order,
    # gather_all must not be (ALF's bug).
    # Time-major [T, E].
    np.testing.assert_array_equal(
        buffer.gather_all(), [[6, 106], [7, 107], [8, 108], [9, 109]])


def test_uneven_adds_keep_per_env_heads():
    buffer = ReplayBuffer(SCALAR, num_environments=3, capacity=9)
    for ids in [[0], [2, 0], [0], [1, 0], [0, 2]]:
        positions = _add(buffer, ids)
    np.testing.assert_array_equal(positions, [4, 1])  # env 0 wrapped
    np.testing.assert_array_equal(buffer.current_size, [3, 1, 2])
    np.testing.assert_array_equal(buffer.start_positions, [2, 0, 0])
    np.testing.assert_array_equal(buffer.end_positions, [5, 1, 2])
    data, info = buffer.get_batch(batch_size=200, batch_length=2)
    env_ids = info.env_ids.numpy()
    positions = info.positions.numpy()
    # Env 1 holds one step, too few for a length-2 sequence.
    assert set(env_ids) == {0, 2}
    np.testing.assert_array_equal(
        data.numpy(),
        100 * env_ids[None, :] + positions[None, :] + np.arange(2)[:, None])
    assert set(positions[env_ids == 0]) == {2, 3}
    assert set(positions[env_ids == 2]) == {0}


def test_sequences_never_cross_the_write_head():
    buffer = ReplayBuffer(SCALAR, num_environments=2, capacity=10, seed=3)
    for _ in range(4):
        _add(buffer, [0, 1])
    for _ in range(9):
        _add(buffer, [0])  # env 0 wraps: stores positions 8..12
    length = 3
    data, info = buffer.get_batch(batch_size=4000, batch_length=length)
    env_ids, positions = info.env_ids.numpy(), info.positions.numpy()
    start = buffer.start_positions.numpy()[env_ids]
    end = buffer.end_positions.numpy()[env_ids]
    assert np.all(positions >= start) and np.all(positions + length <= end)
    np.testing.assert_array_equal(
        data.numpy(),
        100 * env_ids[None, :] + positions[None, :] +
        np.arange(length)[:, None])
    np.testing.assert_array_equal(info.importance_weights, np.ones(4000))
    # Uniform over the valid (env, start) pairs: 3 in env 0, 2 in env 1.
    pairs, counts = np.unique(np.stack([env_ids, positions], 1), axis=0,
                              return_counts=True)
    np.testing.assert_array_equal(
        pairs, [[0, 8], [0, 9], [0, 10], [1, 0], [1, 1]])
    np.testing.assert_allclose(counts / 4000., 0.2, atol=0.03)


def _nested_spec():
    return Experience(step_type=tf.TensorSpec((), tf.int32),
                      reward=tf.TensorSpec((), tf.float32),
                      observation={
                          'image': tf.TensorSpec((6, 6, 3), tf.uint8),
                          'pos': tf.TensorSpec((3, ), tf.float32)
                      },
                      action=(tf.TensorSpec((2, ), tf.float32),
                              tf.TensorSpec((), tf.int64)),
                      env_id=tf.TensorSpec((), tf.int32))


def _nested_batch(env_ids, t):
    b = len(env_ids)
    return Experience(step_type=tf.fill([b], StepType.MID),
                      reward=tf.fill([b], float(t)),
                      observation={
                          'image': tf.fill([b, 6, 6, 3],
                                           tf.constant(250 + t, tf.uint8)),
                          'pos': tf.fill([b, 3], float(t))
                      },
                      action=(tf.fill([b, 2], -float(t)),
                              tf.fill([b], tf.constant(t, tf.int64))),
                      env_id=tf.constant(env_ids, tf.int32))


def test_nested_spec_with_uint8_images():
    buffer = ReplayBuffer(_nested_spec(), num_environments=2, capacity=6)
    # Stored flat: [num_environments * max_length, 6, 6, 3].
    image_vars = [v for v in buffer.variables if v.shape.rank == 4]
    assert [v.dtype for v in image_vars] == [tf.uint8]
    for t in range(5):
        buffer.add_batch(_nested_batch([1, 0], t), tf.constant([1, 0]))
    exp = buffer.gather_all()
    assert isinstance(exp, Experience)
    assert exp.observation['image'].dtype == tf.uint8
    assert exp.observation['image'].shape == (3, 2, 6, 6, 3)
    np.testing.assert_array_equal(exp.observation['image'][:, :, 0, 0, 0],
                                  [[252] * 2, [253] * 2, [254] * 2])
    np.testing.assert_array_equal(exp.action[1], [[2] * 2, [3] * 2, [4] * 2])
    np.testing.assert_array_equal(exp.action[0][..., 1],
                                  [[-2] * 2, [-3] * 2, [-4] * 2])
    np.testing.assert_array_equal(exp.env_id, [[0, 1]] * 3)


def test_nbytes_is_what_the_spec_says():
    spec = {
        'image': tf.TensorSpec((84, 84, 4), tf.uint8),
        'pos': tf.TensorSpec((3, ), tf.float32),
        'done': tf.TensorSpec((), tf.bool),
        'step': tf.TensorSpec((), tf.int64)
    }
    buffer = ReplayBuffer(spec, num_environments=4, capacity=64)
    per_item = 84 * 84 * 4 + 3 * 4 + 1 + 8
    assert buffer.bytes_per_item == per_item
    data_bytes = sum(v.shape.num_elements() * v.dtype.size
                     for v in buffer.variables if '/data_' in v.name)
    assert data_bytes == 64 * per_item
    # Bookkeeping: two int64 counters per env plus the sampler's state.
    assert 64 * per_item < buffer.nbytes <= 64 * per_item + 2 * 4 * 8 + 64


def test_capacity_split_and_constructor_errors():
    buffer = ReplayBuffer(SCALAR, num_environments=3, capacity=10)
    assert buffer.max_length == 3 and buffer.capacity == 9
    with pytest.raises(ValueError, match=r'capacity \(2\).*num_environments'
                       r' \(3\)'):
        ReplayBuffer(SCALAR, num_environments=3, capacity=2)
    with pytest.raises(ValueError, match=r"experience\['x'\].*fully defined"):
        ReplayBuffer({'x': tf.TensorSpec([None], tf.float32)}, 1, 4)


def test_add_batch_errors_name_the_path():
    buffer = ReplayBuffer(_nested_spec(), num_environments=2, capacity=4)
    batch = _nested_batch([0, 1], 0)
    bad = batch._replace(observation=dict(batch.observation,
                                          pos=tf.zeros([2, 1, 3],
                                                       tf.float64)))
    with pytest.raises(ValueError,
                       match=r"experience\.observation\['pos'\]: expected "
                       r"\[B, 3\] float32 from experience_spec, got "
                       r"\[2, 1, 3\] float64"):
        buffer.add_batch(bad, tf.constant([0, 1]))
    with pytest.raises(ValueError, match=r"experience\.observation"):
        buffer.add_batch(batch._replace(observation=batch.observation['pos']),
                         tf.constant([0, 1]))
    with pytest.raises(ValueError, match=r"batch size 2 but env_ids has 1"):
        buffer.add_batch(batch, tf.constant([0]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match='at most once per call'):
        buffer.add_batch(batch, tf.constant([1, 1]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r'\[0, 2\)'):
        buffer.add_batch(batch, tf.constant([0, 2]))
    np.testing.assert_array_equal(buffer.current_size, [0, 0])


def test_sampling_and_gather_errors():
    buffer = ReplayBuffer(SCALAR, num_environments=2, capacity=8)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r'batch_length=1.*stored counts per '
                       r'environment:.*\[0 0\]'):
        buffer.get_batch(4, 1)
    _add(buffer, [0, 1])
    _add(buffer, [0])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r'batch_length=3.*\[2 1\]'):
        buffer.get_batch(4, 3)
    with pytest.raises(ValueError, match=r'batch_length=5 exceeds the 4'):
        buffer.get_batch(4, 5)
    with pytest.raises(ValueError, match='batch_size'):
        buffer.get_batch(0, 1)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r'same number of steps.*\[2 1\]'):
        buffer.gather_all()

    @tf.function
    def sample():
        return buffer.get_batch(4, 3)

    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r'batch_length=3.*\[2 1\]'):
        sample()


def test_clear_keeps_positions_monotonic():
    buffer = ReplayBuffer(SCALAR, num_environments=2, capacity=4)
    for _ in range(3):
        _add(buffer, [0, 1])
    buffer.clear()
    np.testing.assert_array_equal(buffer.current_size, [0, 0])
    assert int(buffer.total_size) == 0 and int(buffer.num_steps) == 6
    assert buffer.gather_all().shape == (0, 2)
    np.testing.assert_array_equal(_add(buffer, [1, 0]), [3, 3])
    np.testing.assert_array_equal(buffer.gather_all(), [[3, 103]])


@pytest.mark.parametrize('prioritized', [False, True])
def test_checkpoint_round_trip(tmp_path, prioritized):
    from alf_rl.replay import PrioritizedReplayBuffer
    cls = PrioritizedReplayBuffer if prioritized else ReplayBuffer
    buffer = cls(SCALAR, num_environments=2, capacity=6, seed=1)
    for _ in range(5):
        _add(buffer, [0, 1])
    if prioritized:
        buffer.update_priority([0, 1], [3, 4], [5.0, 0.5])
    path = tf.train.Checkpoint(buffer=buffer).write(str(tmp_path / 'ckpt'))
    restored = cls(SCALAR, num_environments=2, capacity=6, seed=99)
    tf.train.Checkpoint(buffer=restored).read(path).assert_consumed()
    np.testing.assert_array_equal(restored.gather_all(), buffer.gather_all())
    np.testing.assert_array_equal(restored.gather_all(),
                                  [[2, 102], [3, 103], [4, 104]])
    # The sampler's state is checkpointed too: the same samples follow.
    data, info = buffer.get_batch(16, 2)
    data2, info2 = restored.get_batch(16, 2)
    np.testing.assert_array_equal(data2, data)
    np.testing.assert_array_equal(info2.positions, info.positions)
    np.testing.assert_array_equal(info2.importance_weights,
                                  info.importance_weights)
    # Both keep working identically after the restore.
    _add(buffer, [1])
    _add(restored, [1])
    np.testing.assert_array_equal(restored.end_positions, [5, 6])


def test_everything_runs_in_tf_function_and_traces_once():
    buffer = ReplayBuffer(_nested_spec(), num_environments=3, capacity=12)
    traces = {'add': 0, 'sample': 0}
    sig = tf.nest.map_structure(
        lambda s: tf.TensorSpec([None] + s.shape.as_list(), s.dtype),
        _nested_spec())

    @tf.function(input_signature=[sig, tf.TensorSpec([None], tf.int32)])
    def add(batch, env_ids):
        traces['add'] += 1
        return buffer.add_batch(batch, env_ids)

    @tf.function
    def sample_and_gather():
        traces['sample'] += 1
        data, info = buffer.get_batch(8, 2)
        return data, info, buffer.gather_all(), buffer.total_size

    for t in range(6):
        add(_nested_batch([2, 0, 1], t), tf.constant([2, 0, 1]))
    for t in range(6, 8):  # a different batch size: same trace
        add(_nested_batch([1], t), tf.constant([1]))
        add(_nested_batch([0, 2], t), tf.constant([0, 2]))
    for _ in range(3):
        data, info, everything, total = sample_and_gather()
    assert traces == {'add': 1, 'sample': 1}
    assert isinstance(info, BatchInfo)
    assert int(total) == 12
    np.testing.assert_array_equal(everything.reward,
                                  [[4] * 3, [5] * 3, [6] * 3, [7] * 3])
    # Every sampled sequence is two consecutive steps, reward == position.
    np.testing.assert_array_equal(
        data.reward,
        info.positions.numpy()[None, :] + np.arange(2)[:, None])
    np.testing.assert_array_equal(data.env_id[0], info.env_ids)
