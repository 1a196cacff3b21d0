"""RunSummaries alone: event files, config.gin, pruning after a resume,
corrupt event files."""

import glob
import os
import stat
import time

import gin
import pytest
import tensorflow as tf

from alf_rl.trainers.summaries import (EventsRewrite, RunSummaries,
                                      drop_summaries_after)


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
    summaries.close()
    RunSummaries(str(tmp_path), 1, False).drop_after(checkpoint_time)
    assert _scalars(str(tmp_path), 'train') == {'loss/total': [(1, 1.0)]}
    assert 'removed 1 summaries written after the checkpoint' in (
        capsys.readouterr().err)
    path = glob.glob(os.path.join(str(tmp_path), 'train', '*tfevents*'))[0]
    # No checkpoint: all; a file left without summaries is removed.
    assert drop_summaries_after(path, None) == EventsRewrite(dropped=1)
    assert os.listdir(os.path.join(str(tmp_path), 'train')) == []


def test_an_event_file_is_created_with_its_first_summary(tmp_path):
    summaries = RunSummaries(str(tmp_path), 1, evaluate=True)
    summaries.open()
    summaries.flush()
    summaries.close()
    assert os.listdir(str(tmp_path)) == []  # no empty 78-byte files
    summaries.open()
    summaries.write_eval({'Metrics/AverageReturn': 1.0}, 1, 8)
    summaries.close()
    assert os.listdir(str(tmp_path)) == ['eval']
    with pytest.raises(ValueError, match='evaluate=False'):
        RunSummaries(str(tmp_path), 1, False).write_eval({}, 1, 8)
    assert _scalars(str(tmp_path), 'eval')['Metrics/AverageReturn'] == [
        (1, 1.0)]


def _events_file(root, before, after):
    """An event file of ``before`` summaries (steps 0...) stamped before
    the returned checkpoint time and ``after`` ones after it."""
    summaries = RunSummaries(str(root), 1, False)
    for step in range(before):
        summaries.write_train({'loss/total': float(step)}, step, step)
    summaries.flush()
    time.sleep(0.05)
    checkpoint_time = time.time()
    time.sleep(0.05)
    for step in range(before, before + after):
        summaries.write_train({'loss/total': float(step)}, step, step)
    summaries.close()
    path, = glob.glob(os.path.join(str(root), 'train', '*tfevents*'))
    return path, checkpoint_time


def test_rewritten_event_files_keep_their_mode(tmp_path):
    path, checkpoint_time = _events_file(tmp_path, 3, 2)
    os.chmod(path, 0o640)
    result = drop_summaries_after(path, checkpoint_time)
    assert result == EventsRewrite(dropped=2, kept=3)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert [s for s, _ in _scalars(str(tmp_path), 'train')['loss/total']
            ] == [0, 1, 2]


def test_an_incomplete_last_record_is_dropped_and_said(tmp_path, capsys):
    path, checkpoint_time = _events_file(tmp_path, 3, 0)
    with open(path, 'r+b') as f:
        f.truncate(os.path.getsize(path) - 5)  # a kill mid-write
    RunSummaries(str(tmp_path), 1, False).drop_after(checkpoint_time)
    assert capsys.readouterr().err == (
        'alf_rl: TensorBoard: removed 0 summaries written after the '
        'checkpoint from %s (their iterations run again); and an incomplete'
        ' last record (cut short by a kill)\n' % path)
    assert [s for s, _ in _scalars(str(tmp_path), 'train')['loss/total']
            ] == [0, 1]


def test_a_corrupt_event_file_is_set_aside_whole(tmp_path, capsys):
    path, checkpoint_time = _events_file(tmp_path, 20, 5)
    os.chmod(path, 0o644)
    original = open(path, 'rb').read()
    damaged = bytearray(original)
    damaged[len(original) // 2] ^= 0x01  # one flipped bit mid-file
    open(path, 'wb').write(bytes(damaged))
    RunSummaries(str(tmp_path), 1, False).drop_after(checkpoint_time)
    aside = os.path.join(os.path.dirname(path), os.path.basename(
        path).replace('tfevents', 'tf-events') + '.corrupt')
    assert open(aside, 'rb').read() == bytes(damaged)  # kept whole
    steps = [s for s, _ in _scalars(str(tmp_path), 'train')['loss/total']]
    assert 4 < len(steps) < 20 and steps == list(range(len(steps)))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    kept = len(steps)
    err = capsys.readouterr().err
    assert err.startswith('alf_rl: TensorBoard: event file %s is corrupt '
                          '(corrupted record at ' % path)
    assert err.endswith(
        '); moved aside whole to %s (kept; TensorBoard skips it); %d '
        'summaries before it stay in %s\n' % (aside, kept, path))
    # Damaged at its first record: nothing to keep.
    open(path, 'wb').write(b'\xff' + original[1:])
    assert drop_summaries_after(path, None) == EventsRewrite(
        corrupt='corrupted record at 0', set_aside=aside + '-1')
    assert not os.path.exists(path)
