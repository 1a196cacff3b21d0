"""Experience replayers: one-time (per iteration) and uniform/prioritized."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.data_structures import Experience
from alf_rl.replay import (OnetimeExperienceReplayer, PrioritizedReplayBuffer,
                           ReplayBuffer, SyncUniformExperienceReplayer)

SPEC = Experience(step_type=tf.TensorSpec((), tf.int32),
                  reward=tf.TensorSpec((), tf.float32),
                  observation={'image': tf.TensorSpec((2, 2), tf.uint8)},
                  env_id=tf.TensorSpec((), tf.int32))


def _exp(t, env_ids=(0, 1, 2)):
    env_ids = tf.constant(env_ids, tf.int32)
    b = env_ids.shape[0]
    return Experience(step_type=tf.fill([b], 1),
                      reward=10. * tf.cast(env_ids, tf.float32) + t,
                      observation={'image': tf.fill([b, 2, 2],
                                                    tf.constant(t, tf.uint8))},
                      env_id=env_ids)


def test_onetime_replayer_returns_this_iterations_steps_in_graphs():
    replayer = OnetimeExperienceReplayer(SPEC, num_envs=3, max_length=4)
    assert replayer.batch_size == 3
    traces = {'observe': 0, 'replay': 0}

    @tf.function
    def observe(exp):
        traces['observe'] += 1
        replayer.observe(exp)

    @tf.function
    def replay_all():
        traces['replay'] += 1
        return replayer.replay_all()

    for t in range(4):
        observe(_exp(t, env_ids=(2, 0, 1) if t % 2 else (0, 1, 2)))
    exp = replay_all()
    # Time-major [T, B]: step t of env e at [t, e].
    assert exp.reward.shape == (4, 3)
    np.testing.assert_array_equal(exp.reward,
                                  [[0, 10, 20], [1, 11, 21], [2, 12, 22],
                                   [3, 13, 23]])
    np.testing.assert_array_equal(exp.env_id, [[0, 1, 2]] * 4)
    np.testing.assert_array_equal(replayer.buffer.current_size, [0, 0, 0])
    # Next iteration: a shorter unroll, only its own steps come back (the
    # ring head is now mid-buffer).
    for t in range(10, 13):
        observe(_exp(t))
    exp = replay_all()
    np.testing.assert_array_equal(exp.observation['image'][:, :, 0, 0],
                                  [[10] * 3, [11] * 3, [12] * 3])
    assert traces == {'observe': 1, 'replay': 1}


def test_onetime_replayer_refuses_to_drop_steps():
    replayer = OnetimeExperienceReplayer(SPEC, num_envs=3, max_length=2)
    replayer.observe(_exp(0))
    replayer.observe(_exp(1))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r'more than max_length=2 steps.*\[2 2 2\]'):
        replayer.observe(_exp(2))
    np.testing.assert_array_equal(replayer.replay_all().reward[-1],
                                  [1, 11, 21])


def test_uniform_replayer_observe_replay_clear():
    replayer = SyncUniformExperienceReplayer(SPEC, num_envs=3, capacity=9,
                                             seed=0)
    assert isinstance(replayer.buffer, ReplayBuffer)
    assert not isinstance(replayer.buffer, PrioritizedReplayBuffer)
    for t in range(5):
        replayer.observe(_exp(t, env_ids=(1, 2, 0)))
    exp, info = replayer.replay(batch_size=6, batch_length=2)
    assert exp.reward.shape == (2, 6) and exp.observation['image'].shape == (
        2, 6, 2, 2)
    np.testing.assert_array_equal(
        exp.reward, 10. * info.env_ids.numpy()[None, :] +
        info.positions.numpy()[None, :] + np.arange(2)[:, None])
    replayer.update_priority(info.env_ids, info.positions, tf.ones([6]))
    np.testing.assert_array_equal(replayer.replay_all().reward,
                                  [[2, 12, 22], [3, 13, 23], [4, 14, 24]])
    replayer.clear()
    assert int(replayer.buffer.total_size) == 0


def test_prioritized_replayer_updates_priorities():
    replayer = SyncUniformExperienceReplayer(SPEC, num_envs=3, capacity=9,
                                             prioritized=True, alpha=1.,
                                             epsilon=0., seed=1)
    for t in range(3):
        replayer.observe(_exp(t))
    replayer.update_priority([0, 1, 2, 0, 1, 2], [0, 0, 0, 1, 1, 1],
                             [0.] * 6)
    exp, info = replayer.replay(batch_size=30, batch_length=1)
    np.testing.assert_array_equal(info.positions, np.full(30, 2))
    np.testing.assert_array_equal(exp.reward[0],
                                  10. * info.env_ids.numpy() + 2)
    with pytest.raises(ValueError, match=r"\['alpha'\] only apply with "
                       r"prioritized=True"):
        SyncUniformExperienceReplayer(SPEC, 3, 9, alpha=0.5)


def test_replayers_without_env_id_use_row_order():
    replayer = SyncUniformExperienceReplayer(
        {'x': tf.TensorSpec((), tf.float32)}, num_envs=2, capacity=4)
    replayer.observe({'x': tf.constant([1., 2.])})
    replayer.observe({'x': tf.constant([3., 4.])})
    np.testing.assert_array_equal(replayer.replay_all()['x'],
                                  [[1, 2], [3, 4]])
