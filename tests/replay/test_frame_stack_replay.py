"""ReplayBuffer(frame_stack=...): stacked frames stored once, rebuilt on
replay exactly as a whole-stack buffer returns them (across episode starts,
ring wrap-around, uneven environments, prioritized sampling, checkpoints and
tf.function); stacks that are not frame stacks are refused."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.data_structures import Experience, StepType
from alf_rl.replay import PrioritizedReplayBuffer, ReplayBuffer

N = 4
H = 3


def _spec():
    return Experience(step_type=tf.TensorSpec((), tf.int32),
                      observation=tf.TensorSpec((H, H, N), tf.uint8),
                      reward=tf.TensorSpec((), tf.float32),
                      env_id=tf.TensorSpec((), tf.int32))


class _Stacker(object):
    """What suite_atari's FrameStackLast gives: per environment, the last N
    frames oldest first, a reset filling the stack with its frame. Frame
    ``k`` of environment ``e`` is filled with ``(31 * e + 7 * k) % 256``;
    episodes end at random steps."""

    def __init__(self, num_envs, seed=0):
        self._rng = np.random.RandomState(seed)
        self._frames = [[] for _ in range(num_envs)]
        self._count = [0] * num_envs
        self._first = [True] * num_envs

    def step(self, env_ids):
        """[B] Experience for ``env_ids`` (numpy), advancing each."""
        obs, step_types = [], []
        for e in env_ids:
            frame = np.full((H, H), (31 * e + 7 * self._count[e]) % 256,
                            np.uint8)
            self._count[e] += 1
            if self._first[e]:
                self._frames[e] = [frame] * N
                step_types.append(StepType.FIRST)
                self._first[e] = False
            else:
                self._frames[e] = self._frames[e][1:] + [frame]
                last = self._rng.rand() < 0.2
                step_types.append(StepType.LAST if last else StepType.MID)
                self._first[e] = last
            obs.append(np.stack(self._frames[e], axis=-1))
        b = len(env_ids)
        return Experience(step_type=tf.constant(step_types, tf.int32),
                          observation=tf.constant(np.stack(obs)),
                          reward=tf.constant(
                              np.asarray(env_ids, np.float32) * 1000 +
                              np.asarray([self._count[e] for e in env_ids],
                                         np.float32)),
                          env_id=tf.constant(env_ids, tf.int32)), b


def _fill(buffers, num_envs, schedule, seed=0):
    stacker = _Stacker(num_envs, seed)
    for env_ids in schedule:
        exp, _ = stacker.step(env_ids)
        for buffer in buffers:
            buffer.add_batch(exp, tf.constant(env_ids, tf.int32))


def _assert_nest_equal(a, b):
    tf.nest.map_structure(np.testing.assert_array_equal, a, b)


@pytest.mark.parametrize('capacity', [40, 12])  # 12: the rings wrap
def test_rebuilt_stacks_equal_whole_stacks(capacity):
    plain = ReplayBuffer(_spec(), 2, capacity, seed=5)
    once = ReplayBuffer(_spec(), 2, capacity, seed=5,
                        frame_stack='experience.observation')
    rng = np.random.RandomState(1)
    schedule = [[0, 1]] * 5 + [[int(e)] for e in rng.randint(0, 2, 25)]
    _fill([plain, once], 2, schedule)
    _assert_nest_equal(once.current_size, plain.current_size)
    data, info = plain.get_batch(64, 3)
    data2, info2 = once.get_batch(64, 3)
    _assert_nest_equal(info2, info)
    _assert_nest_equal(data2, data)
    # Episode starts inside the sampled sequences were met (the test is
    # not only of MID steps).
    assert np.any(data.step_type.numpy()[1:] == StepType.FIRST)
    for _ in range(30):  # even out the environments for gather_all
        sizes = plain.current_size.numpy()
        if sizes[0] == sizes[1]:
            break
        _fill([plain, once], 2, [[int(np.argmin(sizes))]], seed=7)
    _assert_nest_equal(once.gather_all(), plain.gather_all())


def test_read_full_and_one_time_use():
    plain = ReplayBuffer(_spec(), 3, 15)
    once = ReplayBuffer(_spec(), 3, 15, frame_stack='experience.observation')
    for _ in range(2):
        _fill([plain, once], 3, [[0, 1, 2]] * 5)
        _assert_nest_equal(once.read_full(), plain.read_full())
        plain.clear()
        once.clear()
    # After clear() the stacks of new steps still reach back to the frames
    # of the previous iteration: the episode went on.
    _fill([plain, once], 3, [[2, 0, 1]] * 5)
    _assert_nest_equal(once.read_full(), plain.read_full())


def test_memory_is_one_frame_per_step():
    spec = Experience(step_type=tf.TensorSpec((), tf.int32),
                      observation=tf.TensorSpec((84, 84, 4), tf.uint8))
    plain = ReplayBuffer(spec, 2, 1000)
    once = ReplayBuffer(spec, 2, 1000, frame_stack='experience.observation')
    assert plain.bytes_per_item == 84 * 84 * 4 + 4
    assert once.bytes_per_item == 84 * 84 + 1 + 4
    assert once.num_frames == 4 and plain.num_frames == 1
    # N - 1 extra frames (and flags) per environment keep the oldest
    # stored step's stack.
    extra = 2 * 3 * (84 * 84 + 1)
    assert once.nbytes - extra == 1000 * once.bytes_per_item + (
        plain.nbytes - 1000 * plain.bytes_per_item)
    assert plain.nbytes / once.nbytes > 3.9


@pytest.mark.parametrize('prioritized', [False, True])
def test_checkpoint_round_trip_and_tf_function(tmp_path, prioritized):
    cls = PrioritizedReplayBuffer if prioritized else ReplayBuffer
    kwargs = dict(seed=3, frame_stack='experience.observation')
    buffer = cls(_spec(), 2, 10, **kwargs)
    plain = cls(_spec(), 2, 10, seed=3)
    traces = []

    @tf.function
    def add(exp, env_ids):
        traces.append(1)
        return buffer.add_batch(exp, env_ids)

    stacker = _Stacker(2, seed=4)
    for _ in range(9):
        exp, _ = stacker.step([1, 0])
        add(exp, tf.constant([1, 0]))
        plain.add_batch(exp, tf.constant([1, 0]))
    assert len(traces) == 1
    if prioritized:
        for b in (buffer, plain):
            b.update_priority([0, 1], [6, 7], [5.0, 0.5])
    path = tf.train.Checkpoint(buffer=buffer).write(str(tmp_path / 'ckpt'))
    restored = cls(_spec(), 2, 10, **dict(kwargs, seed=99))
    tf.train.Checkpoint(buffer=restored).read(path).assert_consumed()
    sample = tf.function(lambda b: b.get_batch(16, 2))
    expected = None
    for b in (buffer, restored):
        data, info = sample(b)
        if expected is None:  # the same batch for both (same seeds)
            expected = plain.get_batch(16, 2)
        _assert_nest_equal(data, expected[0])
        _assert_nest_equal(info, expected[1])
    # Training goes on after the restore with the frames it had.
    exp, _ = stacker.step([0])
    restored.add_batch(exp, tf.constant([0]))
    plain.add_batch(exp, tf.constant([0]))
    _assert_nest_equal(restored.gather_all().observation[-3:, 0],
                       plain.gather_all().observation[-3:, 0])


def test_a_stack_that_is_not_the_last_frames_is_refused():
    buffer = ReplayBuffer(_spec(), 2, 10, frame_stack='experience.observation')
    stacker = _Stacker(2)
    exp, _ = stacker.step([0, 1])
    buffer.add_batch(exp, tf.constant([0, 1]))
    exp, _ = stacker.step([0, 1])
    # Environment 1's stack has its channels in the wrong order.
    obs = exp.observation.numpy()
    obs[1] = obs[1][..., ::-1]
    bad = exp._replace(observation=tf.constant(obs))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r'not their last 4 frames.*env_ids: \[1\]'):
        buffer.add_batch(bad, tf.constant([0, 1]))


@pytest.mark.parametrize('cleared', [False, True])
def test_a_first_step_from_the_middle_of_an_episode(cleared):
    """A buffer that starts (or, cleared, starts again) in the middle of an
    episode, as a run resumed without its replay on an environment whose
    state was restored: the first step's older frames come from its own
    stack, and every later stack, through the ring's wrap-around, rebuilds
    exactly."""
    # Seed 6: environment 0's episode began one step before the buffer's
    # first (its stack is padded), environment 1's earlier.
    stacker = _Stacker(2, seed=6)
    skipped = [stacker.step([0, 1])[0] for _ in range(6)]
    once = ReplayBuffer(_spec(), 2, 10, frame_stack='experience.observation')
    if cleared:
        # What the cleared buffer holds is of other episodes: other frames.
        other = _Stacker(2, seed=4)
        for _ in range(4):
            once.add_batch(other.step([1, 0])[0], tf.constant([0, 1]))
        once.clear()
    plain = ReplayBuffer(_spec(), 2, 10)
    assert skipped[-2].step_type.numpy().tolist() == [StepType.FIRST,
                                                       StepType.MID]
    assert skipped[-1].step_type.numpy().tolist() == [StepType.MID] * 2
    compared = 0
    for env_ids in [[0, 1]] * 3 + [[1], [0, 1], [0]] * 4:
        exp, _ = stacker.step(env_ids)
        for buffer in (plain, once):
            buffer.add_batch(exp, tf.constant(env_ids, tf.int32))
        sizes = plain.current_size.numpy()
        if sizes[0] == sizes[1]:
            _assert_nest_equal(once.gather_all(), plain.gather_all())
            compared += 1
    assert compared == 13 and plain.current_size.numpy().tolist() == [5, 5]


def test_constructor_errors_name_the_leaf():
    with pytest.raises(ValueError, match="'experience.obs' is not a leaf.*"
                       "experience.observation"):
        ReplayBuffer(_spec(), 1, 10, frame_stack='experience.obs')
    with pytest.raises(ValueError, match=r'at least 2 frames.*\(\)'):
        ReplayBuffer(_spec(), 1, 10, frame_stack='experience.reward')
    with pytest.raises(ValueError, match='must be a \\[\\] integer'):
        ReplayBuffer(_spec(), 1, 10, frame_stack='experience.observation',
                     step_type_path='experience.reward')


def test_replay_memory_benchmark_runs_small(capfd, tmp_path):
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(__file__), '..', '..', 'benchmarks',
                        'replay_memory.py')
    spec = importlib.util.spec_from_file_location('replay_memory', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(['--capacity', '2000', '--fill', '300', '--checkpoint',
                 str(tmp_path)])
    out = capfd.readouterr().out
    assert 'frame_stack buffer of 2000 transitions' in out
    assert '(7077 B per transition)' in out
    assert 'get_batch(32, 2)' in out
    assert 'GB on disk' in out
    assert 'restore (fresh process)' in out and '300 steps back' in out
