"""Experiment trackers: W&B (offline) and MLflow (a file store in a temp
directory) get the same scalars at the same steps as the TensorBoard
events, the gin settings and the final metrics; nothing leaves the
machine. Without the package, one line with the pip command."""

import glob
import json
import os
import struct
import subprocess
import sys
import time

import pytest

from alf_rl.bin.train import train
from alf_rl.trainers.tracking import (
    MissingExtraError,
    MLflowTracker,
    WandbTracker,
    gin_hparams,
)
from alf_rl.utils.curves import read_scalar_events, scalar_tags

AC = os.path.join(
    os.path.dirname(__file__), '..', '..', 'examples', 'ac_cart_pole.gin'
)
SHORT = [
    'create_environment.num_parallel_environments=2',
    'create_environment.max_episode_steps=20',
    'TrainerConfig.num_env_steps=0',
    'TrainerConfig.num_iterations=4',
    'TrainerConfig.iterations_per_call=1',
    'TrainerConfig.summary_interval=1',
    'TrainerConfig.eval_interval=2',
    'TrainerConfig.num_eval_episodes=2',
]


def _tensorboard(root, split):
    """``{tag: [(step, value), ...]}`` of a run's event files."""
    directory = os.path.join(root, split)
    return {
        tag: sorted((s, v) for _, s, v in read_scalar_events(directory, tag))
        for tag in scalar_tags(directory)
    }


def _same_points(tracked, expected, tag):
    assert [s for s, _ in tracked] == [s for s, _ in expected], tag
    for (_, a), (_, b) in zip(tracked, expected):
        assert a == pytest.approx(b, rel=1e-6, abs=1e-6), tag


@pytest.mark.parametrize(
    'tracker, module', [(WandbTracker, 'wandb'), (MLflowTracker, 'mlflow')]
)
def test_a_missing_package_is_one_line_with_the_pip_command(
    tracker, module, monkeypatch
):
    monkeypatch.setitem(sys.modules, module, None)  # import fails
    with pytest.raises(MissingExtraError) as raised:
        tracker()
    # (gin adds the configurable's name on a line of its own)
    assert str(raised.value).splitlines()[0] == (
        "%s needs the %s package, which is not installed: "
        "pip install 'alf_rl[%s]'" % (tracker.__name__, module, module)
    )
    assert isinstance(raised.value, ImportError)


def test_alf_train_says_so_in_one_line(tmp_path):
    script = (
        'import sys; sys.modules["wandb"] = None; '
        'from alf_rl.bin.train import main; main()'
    )
    done = subprocess.run(
        [sys.executable, '-c', script, '--gin_file', AC, '--root_dir',
         str(tmp_path / 'run'), '--gin_param',
         'training_callbacks.callbacks=[@WandbTracker()]'],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        'alf-train: error: WandbTracker needs the wandb package, which is '
        "not installed: pip install 'alf_rl[wandb]'"
    ), line
    assert not os.path.exists(tmp_path / 'run' / 'config.gin')


def test_mlflow_gets_what_tensorboard_gets(tmp_path, monkeypatch):
    pytest.importorskip('mlflow')
    monkeypatch.setenv('MLFLOW_ALLOW_FILE_STORE', 'true')
    uri = 'file:' + str(tmp_path / 'mlruns')
    tracker = MLflowTracker(tracking_uri=uri, experiment='test')
    root = str(tmp_path / 'run')
    result = train(root, [AC], SHORT, callbacks=[tracker])
    import mlflow

    client = mlflow.tracking.MlflowClient(uri)
    run = client.get_run(tracker.run_id)
    assert run.info.status == 'FINISHED'
    compared = 0
    for split in ('train', 'eval'):
        for tag, points in _tensorboard(root, split).items():
            history = client.get_metric_history(
                tracker.run_id, split + '/' + tag
            )
            _same_points(
                sorted((m.step, m.value) for m in history), points, tag
            )
            compared += 1
    assert compared >= 15
    params = run.data.params
    assert params['create_environment.env_name'] == 'CartPole-v1'
    assert params['TrainerConfig.num_iterations'] == '4'
    final = run.data.metrics
    assert final['final/iterations'] == 4
    assert final['final/Metrics/EnvironmentSteps'] == pytest.approx(
        result['Metrics/EnvironmentSteps']
    )
    assert final['final/eval/Metrics/AverageReturn'] == pytest.approx(
        result['eval/Metrics/AverageReturn']
    )


def _wandb_records(path):
    """The records of an offline W&B run file (a LevelDB-style log of
    32 KiB blocks, each record with a 7-byte header)."""
    from wandb.proto import wandb_internal_pb2

    data = open(path, 'rb').read()
    assert data[:4] == b':W&B'
    pos, block, parts = 7, 32768, []
    while pos + 7 <= len(data):
        left = block - pos % block
        _, length, kind = struct.unpack('<IHB', data[pos : pos + 7])
        if left < 7 or (kind == 0 and length == 0):
            pos += left  # padding up to the next block
            continue
        parts.append(data[pos + 7 : pos + 7 + length])
        pos += 7 + length
        if kind in (1, 4):  # a whole record, or its last part
            record = wandb_internal_pb2.Record()
            record.ParseFromString(b''.join(parts))
            parts = []
            yield record


def _key(item):
    """An item's key (one with a ``/`` comes as its parts)."""
    return item.key or '/'.join(item.nested_key)


def _wandb_run(directory):
    """``(history rows, config, summary)`` of the offline run there."""
    (path,) = glob.glob(
        os.path.join(directory, 'wandb', 'offline-run-*', 'run-*.wandb')
    )
    # W&B's service writes the file after finish() returns: wait for its
    # last record ('exit'), 60 s at most.
    for _ in range(600):
        try:
            records = list(_wandb_records(path))
        except Exception:  # a record still being written
            records = []
        if any(r.WhichOneof('record_type') == 'exit' for r in records):
            break
        time.sleep(0.1)
    rows, config, summary = [], {}, {}
    for record in records:
        kind = record.WhichOneof('record_type')
        if kind == 'history':
            rows.append(
                {
                    _key(i): json.loads(i.value_json)
                    for i in record.history.item
                }
            )
        elif kind == 'config':
            for item in record.config.update:
                config[item.key] = json.loads(item.value_json)
        elif kind == 'summary':
            for item in record.summary.update:
                summary[_key(item)] = json.loads(item.value_json)
    return rows, config, summary


def test_wandb_offline_gets_what_tensorboard_gets(tmp_path, monkeypatch):
    pytest.importorskip('wandb')
    monkeypatch.setenv('WANDB_MODE', 'offline')
    monkeypatch.setenv('WANDB_SILENT', 'true')
    monkeypatch.setenv('WANDB_CONSOLE', 'off')  # leave pytest's capture
    # Were anything sent, it would go to a closed local port.
    monkeypatch.setenv('WANDB_BASE_URL', 'http://127.0.0.1:9')
    tracker = WandbTracker(project='test', mode='offline', dir=str(tmp_path))
    root = str(tmp_path / 'run')
    result = train(root, [AC], SHORT, callbacks=[tracker])
    rows, config, summary = _wandb_run(str(tmp_path))
    compared = 0
    for split in ('train', 'eval'):
        for tag, points in _tensorboard(root, split).items():
            key = split + '/' + tag
            if tag.startswith('Metrics_vs_EnvironmentSteps/'):
                step = split + '/env_steps'  # its x axis, as in TensorBoard
            else:
                step = '_step'
            tracked = sorted((r[step], r[key]) for r in rows if key in r)
            _same_points(tracked, points, tag)
            compared += 1
    assert compared >= 15
    assert config['create_environment.env_name'] == 'CartPole-v1'
    assert config['TrainerConfig.num_iterations'] == 4
    assert summary['final/iterations'] == 4
    assert summary['final/eval/Metrics/AverageReturn'] == pytest.approx(
        result['eval/Metrics/AverageReturn']
    )


def test_gin_hparams_are_the_operative_settings():
    import gin

    from alf_rl.trainers.gin_scope import own_gin_config

    with own_gin_config():
        gin.parse_config(
            'StopAtAverageReturn.threshold = 3.5\n'
            'training_callbacks.callbacks = [@StopAtAverageReturn()]'
        )
        from alf_rl.trainers.callbacks import training_callbacks

        (stop,) = training_callbacks()
        assert gin_hparams() == {
            'StopAtAverageReturn.threshold': 3.5,
            'training_callbacks.callbacks': "['@StopAtAverageReturn()']",
        }
