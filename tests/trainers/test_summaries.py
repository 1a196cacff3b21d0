"""RunSummaries alone: event files, config.gin, pruning after a resume."""

import glob
import os
import time

import gin
import tensorflow as tf

from alf_rl.trainers.summaries import RunSummaries, drop_summaries_after


def _scalars(root, sub):
    """{tag: [(step, value)]} of the event files under root/sub."""
    out = {}
    for path in glob.glob(os.path.join(root, sub, '*tfevents*')):
        for event in tf.compat.v1.train.summary_iterator(path):
            for v in event.summary.value:
                out.setdefault(v.tag, []).append(
                    (event.step, float(tf.make_ndarray(v.tensor))))
    return out


def test_writes_metrics_also_against_env_steps(tmp_path):
    summaries = RunSummaries(str(tmp_path), flush_secs=1, evaluate=True)
    summaries.open()
    summaries.write_train({'Metrics/AverageReturn': 2.0, 'loss/total': 0.5},
                          iteration=3, env_steps=96)
    summaries.write_eval({'Metrics/AverageReturn': 4.0}, 3, 96)
    summaries.flush()
    train = _scalars(str(tmp_path), 'train')
    assert train == {
        'Metrics/AverageReturn': [(3, 2.0)], 'loss/total': [(3, 0.5)],
        'Metrics_vs_EnvironmentSteps/AverageReturn': [(96, 2.0)]}
    assert _scalars(str(tmp_path), 'eval')[
        'Metrics_vs_EnvironmentSteps/AverageReturn'] == [(96, 4.0)]


def test_config_gin_is_the_operative_config(tmp_path):

    @gin.configurable
    def _setting(value=1):
        return value

    gin.parse_config('_setting.value = 7')
    assert _setting() == 7
    RunSummaries(str(tmp_path), 1, False).write_config()
    text = open(os.path.join(str(tmp_path), 'config.gin')).read()
    assert '_setting.value = 7' in text
    assert not os.path.exists(os.path.join(str(tmp_path), 'config.gin.tmp'))


def test_drop_after_removes_what_came_after_the_checkpoint(tmp_path, capsys):
    summaries = RunSummaries(str(tmp_path), 1, False)
    summaries.open()
    summaries.write_train({'loss/total': 1.0}, 1, 10)
    summaries.flush()
    time.sleep(0.05)
    checkpoint_time = time.time()
    time.sleep(0.05)
    summaries.write_train({'loss/total': 2.0}, 2, 20)
    summaries.flush()
    summaries.train_writer.close()
    RunSummaries(str(tmp_path), 1, False).drop_after(checkpoint_time)
    assert _scalars(str(tmp_path), 'train') == {'loss/total': [(1, 1.0)]}
    assert 'removed 1 summaries written after the checkpoint' in (
        capsys.readouterr().err)
    path = glob.glob(os.path.join(str(tmp_path), 'train', '*tfevents*'))[0]
    assert drop_summaries_after(path, None) == 1  # no checkpoint: all
    assert _scalars(str(tmp_path), 'train') == {}
