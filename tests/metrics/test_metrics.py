"""Tests for alf_rl.metrics: exact counts on hand-built step sequences."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl import metrics
from alf_rl.data_structures import TimeStep

F, M, L = 0, 1, 2

# B=3 environments; episodes of different lengths, two ending on the same
# step (t2, t5, t7). Completed episodes (length, return), in push order:
#   t2: env0 (2, 2), env2 (2, 6)   t3: env1 (3, 6)
#   t5: env0 (2, 10), env2 (2, 2)  t6: env1 (2, 8)
#   t7: env0 (1, 7), env2 (1, 9)
STEP_TYPES = np.array([[F, F, F],
                       [M, M, M],
                       [L, M, L],
                       [F, L, F],
                       [M, F, M],
                       [L, M, L],
                       [F, L, F],
                       [L, F, L]], np.int32)
REWARDS = np.array([[0, 0, 0],
                    [1, 2, 3],
                    [1, 2, 3],
                    [0, 2, 0],
                    [5, 0, 1],
                    [5, 4, 1],
                    [0, 4, 0],
                    [7, 0, 9]], np.float32)
# Expected results after each step, with buffer_size=3 (wraps at t5).
EXPECTED_EPISODES = [0, 0, 2, 3, 3, 5, 6, 8]
EXPECTED_STEPS = [0, 3, 6, 7, 9, 12, 13, 15]
EXPECTED_RETURN = [0, 0, 4, 14 / 3, 14 / 3, 6, 20 / 3, 8]
EXPECTED_LENGTH = [0, 0, 2, 7 / 3, 7 / 3, 7 / 3, 2, 4 / 3]


def _time_step(t, step_types=STEP_TYPES, rewards=REWARDS):
    batch = step_types.shape[1]
    return TimeStep(step_type=tf.constant(step_types[t]),
                    reward=tf.constant(rewards[t]),
                    discount=tf.ones([batch]),
                    observation=tf.zeros([batch, 1]),
                    prev_action=tf.zeros([batch], tf.int32),
                    env_id=tf.range(batch))


def _make_metrics(buffer_size=3):
    return metrics.default_metrics(batch_size=3, buffer_size=buffer_size)


def _results(ms):
    return [float(m.result().numpy()) for m in ms]


def test_exact_counts_step_by_step():
    ms = _make_metrics()
    episodes, steps, avg_return, avg_length = ms
    for t in range(len(STEP_TYPES)):
        for m in ms:
            assert m(_time_step(t)) is None  # eager: nothing to return
        assert episodes.result().numpy() == EXPECTED_EPISODES[t], t
        assert steps.result().numpy() == EXPECTED_STEPS[t], t
        np.testing.assert_allclose(avg_return.result().numpy(),
                                   EXPECTED_RETURN[t], rtol=1e-6)
        np.testing.assert_allclose(avg_length.result().numpy(),
                                   EXPECTED_LENGTH[t], rtol=1e-6)
    assert episodes.result().dtype == tf.int64
    assert steps.result().dtype == tf.int64
    assert avg_return.result().dtype == tf.float32
    assert avg_return.result().shape == ()


def test_names_and_tags():
    ms = _make_metrics()
    assert [m.name for m in ms] == [
        'NumberOfEpisodes', 'EnvironmentSteps', 'AverageReturn',
        'AverageEpisodeLength'
    ]
    assert [m.tag for m in ms] == [
        'Metrics/NumberOfEpisodes', 'Metrics/EnvironmentSteps',
        'Metrics/AverageReturn', 'Metrics/AverageEpisodeLength'
    ]
    assert metrics.AverageReturn(3).buffer_size == 10


def test_more_finishers_than_buffer_slots_keeps_the_last():
    avg_return = metrics.AverageReturn(batch_size=5, buffer_size=2)
    step_types = np.array([[F] * 5, [M] * 5, [L] * 5], np.int32)
    rewards = np.array([[0] * 5, [1, 1, 1, 1, 1], [0, 1, 2, 3, 4]],
                       np.float32)
    for t in range(3):
        avg_return.update(_time_step(t, step_types, rewards))
    # returns 1..5 finish together; batch order keeps envs 3 and 4.
    np.testing.assert_allclose(avg_return.result().numpy(), 4.5)
    np.testing.assert_allclose(avg_return._buffer.numpy(), [5., 4.])
    assert avg_return._head.numpy() == 1  # (0 + 5) mod 2


def test_reset():
    ms = _make_metrics()
    for t in range(5):
        for m in ms:
            m(_time_step(t))
    for m in ms:
        m.reset()
    assert _results(ms) == [0., 0., 0., 0.]
    # After a reset the metrics count again from scratch.
    for t in range(len(STEP_TYPES)):
        for m in ms:
            m(_time_step(t))
    np.testing.assert_allclose(_results(ms), [
        EXPECTED_EPISODES[-1], EXPECTED_STEPS[-1], EXPECTED_RETURN[-1],
        EXPECTED_LENGTH[-1]
    ], rtol=1e-6)


def test_inside_tf_function_while_loop_equals_eager():
    eager = _make_metrics()
    for t in range(len(STEP_TYPES)):
        for m in eager:
            m(_time_step(t))

    compiled = _make_metrics()
    step_types = tf.constant(STEP_TYPES)
    rewards = tf.constant(REWARDS)

    @tf.function
    def run():

        def body(t):
            time_step = TimeStep(step_type=step_types[t],
                                 reward=rewards[t],
                                 discount=tf.ones([3]),
                                 observation=tf.zeros([3, 1]),
                                 prev_action=tf.zeros([3], tf.int32),
                                 env_id=tf.range(3))
            for m in compiled:
                op = m(time_step)
                assert op is not None  # graph mode returns the update op
            return (t + 1, )

        tf.while_loop(lambda t: t < len(STEP_TYPES), body, (tf.constant(0), ))
        return [m.result() for m in compiled]

    in_graph = [float(x.numpy()) for x in run()]
    np.testing.assert_allclose(in_graph, _results(eager), rtol=1e-6)
    np.testing.assert_allclose(_results(compiled), [8, 15, 8, 4 / 3],
                               rtol=1e-6)


def test_checkpoint_round_trip(tmp_path):
    ms = _make_metrics()
    for t in range(5):  # stop mid-episode so the accumulators matter
        for m in ms:
            m(_time_step(t))
    path = tf.train.Checkpoint(metrics=ms).save(str(tmp_path / 'ckpt'))

    restored = _make_metrics()
    tf.train.Checkpoint(metrics=restored).restore(path).assert_consumed()
    assert _results(restored) == _results(ms)
    for t in range(5, len(STEP_TYPES)):
        for m in restored:
            m(_time_step(t))
    np.testing.assert_allclose(_results(restored), [8, 15, 8, 4 / 3],
                               rtol=1e-6)


def test_int64_step_types_are_accepted():
    steps = metrics.EnvironmentSteps()
    length = metrics.AverageEpisodeLength(batch_size=3)
    for t in range(3):
        ts = _time_step(t)._replace(
            step_type=tf.constant(STEP_TYPES[t], tf.int64))
        steps(ts)
        length(ts)
    assert steps.result().numpy() == 6
    assert length.result().numpy() == 2.


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match='batch_size'):
        metrics.AverageReturn(batch_size=0)
    with pytest.raises(ValueError, match='buffer_size'):
        metrics.AverageEpisodeLength(batch_size=2, buffer_size=0)
    avg_return = metrics.AverageReturn(batch_size=2)
    with pytest.raises(ValueError, match=r'expected \[2\]'):
        avg_return(_time_step(0))


def test_results_have_value_independent_shapes_under_xla():
    """``result()`` must not slice by the episode count: under XLA a slice
    of data-dependent size is a compile-time constant, so a jit-compiled
    loop checking the score would be recompiled for every count."""
    ms = _make_metrics(buffer_size=3)
    compiled = tf.function(lambda: [m.result() for m in ms],
                           jit_compile=True, autograph=False)
    graph = compiled.get_concrete_function().graph
    for op in graph.get_operations():
        if op.type == 'StridedSlice':
            assert all(x.op.type == 'Const' for x in op.inputs[1:]), op.name
    # Same values as eagerly, step by step (episode counts 0 .. 8).
    for t in range(len(STEP_TYPES)):
        for m in ms:
            m(_time_step(t))
        np.testing.assert_allclose([float(x) for x in compiled()],
                                   _results(ms), rtol=1e-6)


def test_rows_of_some_environments_update_only_theirs():
    """An asynchronous learner folds in one actor's environments at a time
    (``env_ids``): feeding env 1 alone, then envs 0 and 2 together, step by
    step, gives the counts of the full batch (episodes ending on the same
    step are pushed in the order they are fed)."""
    ms = _make_metrics(buffer_size=10)
    full = _make_metrics(buffer_size=10)
    for t in range(len(STEP_TYPES)):
        for rows in ([1], [0, 2]):
            step = _time_step(t)
            part = tf.nest.map_structure(
                lambda x, rows=rows: tf.gather(x, rows), step)
            for m in ms:
                m(part, env_ids=tf.constant(rows, tf.int32))
        for m in full:
            m(_time_step(t))
        np.testing.assert_allclose(_results(ms), _results(full), rtol=1e-6)
    with pytest.raises(ValueError, match=r'expected \[2\] \(env_ids\)'):
        ms[2](_time_step(0), env_ids=tf.constant([0, 1], tf.int32))


def test_game_score_averages_the_last_games_and_checkpoints(tmp_path):
    from alf_rl.metrics import GameScore
    m = GameScore(buffer_size=3)
    assert m.tag == 'Metrics/GameScore' and m.num_games == 0
    assert float(m.result()) == 0.0
    m.add([])
    m.add([1.0, 2.0])
    assert m.num_games == 2 and float(m.result()) == 1.5
    m.add([3.0, 4.0])
    assert m.num_games == 4 and float(m.result()) == 3.0  # 2, 3, 4
    m.add([5.0, 6.0, 7.0, 8.0, 9.0])  # more than the buffer at once
    assert m.num_games == 9 and float(m.result()) == 8.0  # 7, 8, 9
    m.add([10.0])
    assert float(m.result()) == 9.0  # 8, 9, 10
    path = tf.train.Checkpoint(m=m).save(str(tmp_path / 'c'))
    restored = GameScore(buffer_size=3)
    tf.train.Checkpoint(m=restored).restore(path).assert_consumed()
    assert restored.num_games == 10 and float(restored.result()) == 9.0
    with pytest.raises(ValueError, match='buffer_size'):
        GameScore(buffer_size=0)
