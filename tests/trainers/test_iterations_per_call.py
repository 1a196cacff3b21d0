"""Several training iterations per compiled call (``iterations_per_call``)."""

import glob
import os

import gin
import numpy as np
import pytest
import tensorflow as tf

from alf_rl.bin.train import train
from alf_rl.utils.common import loop_traced_once

from test_trainer import EXAMPLE, SMALL, _events


def _run(tmp_path, name, params):
    gin.clear_config()
    root = str(tmp_path / name)
    return root, train(root, [EXAMPLE], SMALL + params)


def test_calls_end_at_summary_eval_and_checkpoint_iterations(tmp_path):
    params = ['TrainerConfig.num_iterations=7', 'TrainerConfig.random_seed=3']
    root1, one = _run(tmp_path, 'one', params +
                      ['TrainerConfig.iterations_per_call=1'])
    root5, five = _run(tmp_path, 'five', params +
                       ['TrainerConfig.iterations_per_call=5'])
    assert one['iterations'] == five['iterations'] == 7
    for root in (root1, root5):
        train_events = _events(root, 'train')
        # summary_interval=2, checkpoint_interval=3, eval_interval=3;
        # summaries and evaluation also at the last iteration (7).
        assert [s for s, _ in train_events['loss/total']] == [2, 4, 6, 7]
        assert [s for s, _ in _events(root, 'eval')[
            'Metrics/AverageReturn']] == [3, 6, 7]
        checkpoints = sorted(
            int(p.rsplit('-', 1)[1])
            for p in glob.glob(os.path.join(root, 'ckpt', 'ckpt-*')))
        assert checkpoints == [3, 6, 7]
    # The same seeded run, whether iterations share a call or not.
    for key in ('Metrics/EnvironmentSteps', 'Metrics/NumberOfEpisodes'):
        assert one[key] == five[key], key
    assert one['Metrics/AverageReturn'] == pytest.approx(
        five['Metrics/AverageReturn'], rel=1e-5)


def test_step_budget_and_score_are_checked_inside_the_call(tmp_path):
    # 2 envs x 4 steps per iteration; one call could run 100 iterations.
    common = ['TrainerConfig.num_iterations=0',
              'TrainerConfig.iterations_per_call=100',
              'TrainerConfig.summary_interval=100',
              'TrainerConfig.checkpoint_interval=100',
              'TrainerConfig.evaluate=False']
    _, result = _run(tmp_path, 'budget', common +
                     ['TrainerConfig.num_env_steps=50'])
    assert 50 <= result['Metrics/EnvironmentSteps'] < 50 + 8
    assert result['iterations'] < 10
    # Every CartPole episode returns >= 8 (its length): stop at the first.
    _, result = _run(tmp_path, 'score', common + [
        'TrainerConfig.num_env_steps=100000',
        'TrainerConfig.stop_at_average_return=5.0'
    ])
    assert result['Metrics/AverageReturn'] >= 5.0
    assert result['iterations'] <= 6  # episodes are capped at 20 steps
    # A score at or below 0 is not "reached" by the 0 that AverageReturn
    # is before any episode has ended: the run goes on to the first one.
    _, result = _run(tmp_path, 'negative', common + [
        'TrainerConfig.num_env_steps=100000',
        'TrainerConfig.stop_at_average_return=-1.0'
    ])
    assert result['Metrics/NumberOfEpisodes'] >= 1


def test_stop_at_env_steps_stops_inside_the_call_and_resumes_past_it(
        tmp_path):
    common = ['TrainerConfig.num_iterations=0',
              'TrainerConfig.num_env_steps=120',
              'TrainerConfig.iterations_per_call=100',
              'TrainerConfig.summary_interval=100',
              'TrainerConfig.checkpoint_interval=100',
              'TrainerConfig.evaluate=False']
    stop = ['TrainerConfig.stop_at_env_steps=50']
    root, result = _run(tmp_path, 'stop', common + stop)
    assert 50 <= result['Metrics/EnvironmentSteps'] < 50 + 8
    stopped_at = result['iterations']
    assert os.path.isdir(os.path.join(root, 'ckpt', 'ckpt-%d' % stopped_at))
    # The same command again: already there, no iteration more.
    gin.clear_config()
    again = train(root, [EXAMPLE], SMALL + common + stop)
    assert again['iterations'] == stopped_at
    # Without the stop: on to the configured budget.
    gin.clear_config()
    rest = train(root, [EXAMPLE], SMALL + common)
    assert 120 <= rest['Metrics/EnvironmentSteps'] < 120 + 8
    assert rest['iterations'] > stopped_at


@pytest.mark.parametrize('value', [0, -3, 'fast', 2.5])
def test_bad_iterations_per_call_is_a_clear_error(tmp_path, value):
    with pytest.raises(ValueError, match='iterations_per_call'):
        _run(tmp_path, 'bad', ['TrainerConfig.iterations_per_call=%r' %
                               (value, )])


def test_loop_traced_once_traces_once_and_stops_early():
    traces = []
    total = tf.Variable(0)

    def _step(i, carry):
        traces.append(1)  # Python side effect: runs once per trace
        total.assign_add(i)
        return carry + 1, {'i': i, 'sum': tf.identity(total)}

    @tf.function(autograph=False)
    def _run(n, stop_at):
        return loop_traced_once(_step, tf.constant(10), n,
                                keep_going=lambda r: r['sum'] < stop_at)

    carry, result, done = _run(tf.constant(6), tf.constant(1000))
    assert len(traces) == 1
    assert (int(carry), int(done), int(result['i'])) == (16, 6, 5)
    assert int(result['sum']) == 15  # 0 + 1 + ... + 5
    # keep_going false after the step whose running sum reaches 3 (i=2).
    total.assign(0)
    carry, result, done = _run(tf.constant(6), tf.constant(3))
    assert (int(done), int(result['sum'])) == (3, 3)
    assert len(traces) == 1  # same signature: not traced again
    # At least one step runs; eagerly it is a Python loop with the same
    # results.
    total.assign(0)
    carry, result, done = loop_traced_once(_step, tf.constant(10), 0)
    assert (int(carry), int(done)) == (11, 1)
    total.assign(0)
    eager = loop_traced_once(_step, tf.constant(10), 6,
                             keep_going=lambda r: r['sum'] < 3)
    assert (int(eager[0]), int(eager[2]), int(eager[1]['sum'])) == (13, 3, 3)
    np.testing.assert_equal(int(eager[1]['i']), 2)
