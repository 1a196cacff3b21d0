"""``benchmarks/benchmark_table.py``: records from fake event files, the
table's numbers against hand-computed values, marker replacement,
``--check`` and the one-line errors."""

import importlib.util
import json
import os
import time

import pytest
import tensorflow as tf

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location(
    'benchmark_table', os.path.join(_ROOT, 'benchmarks', 'benchmark_table.py'))
bt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bt)

TAG = 'Metrics_vs_EnvironmentSteps/AverageReturn'
GIN = os.path.join(_ROOT, 'examples', 'ppo_hopper.gin')


def _summary_writes(event_dir, points, elapsed_secs=None):
    """One process's event file written by ``tf.summary`` (as alf-train
    does): ``points`` of TAG and, when given, ``time/elapsed_secs`` whose
    clock started ``elapsed_secs`` before now (so that, as in a real run,
    wall time minus elapsed seconds is the process's start)."""
    start = time.time() - (elapsed_secs or 0.0)
    writer = tf.summary.create_file_writer(event_dir)
    with writer.as_default():
        for step, value in points:
            tf.summary.scalar(TAG, value, step=step)
            if elapsed_secs is not None:
                tf.summary.scalar('time/elapsed_secs', time.time() - start,
                                  step=step // 100)
    writer.close()
    time.sleep(0.01)  # the next file's writes come strictly later


def _proto_writes(event_dir, rows):
    """An event file of TAG ``(wall_time, step, value)`` rows with the
    wall times given (``simple_value`` summaries)."""
    os.makedirs(event_dir, exist_ok=True)
    path = os.path.join(event_dir, 'events.out.tfevents.%d.fake' % len(
        os.listdir(event_dir)))
    with tf.io.TFRecordWriter(path) as f:
        for wall, step, value in rows:
            f.write(tf.compat.v1.Event(
                wall_time=wall, step=step, summary=tf.compat.v1.Summary(
                    value=[tf.compat.v1.Summary.Value(
                        tag=TAG, simple_value=value)])).SerializeToString())


def _seed_line(run_dir, seed):
    with open(os.path.join(run_dir, 'config.gin'), 'w') as f:
        f.write('# Parameters for TrainerConfig:\n'
                'TrainerConfig.num_env_steps = 4000\n'
                'TrainerConfig.random_seed = %d\n' % seed)


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    """Two seeds' run dirs (given in the order seed 1, seed 0).

    seed0 (tf.summary, resumed once): train 10 @1000, 30 @2000; then a
    new process: 25 @2000 (replaces 30), 20 @3000; elapsed_secs ~100 in
    the first process, ~120 in the second (no drop: the start moved) ->
    220 s. eval 100 @1000, 400 @2000, 300 @3000.
    seed1 (protos, wall times given, no elapsed_secs): train 5, 15, 35 @
    1000, 2000, 4000 (walls 1000-1030: 30 s); eval 50, 200, 500 @ 1000,
    2000, 4000 (walls 1005-1065: 60 s).
    """
    root = tmp_path_factory.mktemp('runs')
    seed0, seed1 = str(root / 'seed0'), str(root / 'seed1')
    _summary_writes(os.path.join(seed0, 'train'), [(1000, 10.0),
                                                   (2000, 30.0)], 100.0)
    _summary_writes(os.path.join(seed0, 'train'), [(2000, 25.0),
                                                   (3000, 20.0)], 120.0)
    _summary_writes(os.path.join(seed0, 'eval'), [(1000, 100.0), (
        2000, 400.0), (3000, 300.0)])
    _proto_writes(os.path.join(seed1, 'train'), [
        (1000.0, 1000, 5.0), (1010.0, 2000, 15.0), (1030.0, 4000, 35.0)])
    _proto_writes(os.path.join(seed1, 'eval'), [
        (1005.0, 1000, 50.0), (1015.0, 2000, 200.0), (1065.0, 4000, 500.0)])
    _seed_line(seed0, 0)
    _seed_line(seed1, 1)
    empty = root / 'not_a_run'
    empty.mkdir()
    same_seed = root / 'seed0_again'
    same_seed.mkdir()
    _seed_line(str(same_seed), 0)
    return {'seed0': seed0, 'seed1': seed1, 'empty': str(empty),
            'same_seed': str(same_seed), 'root': str(root)}


def _collect(records, run_dirs, *flags):
    return bt.main(['collect', '--task', 'Hopper-v5', '--gin', GIN,
                    '--records', str(records)] + list(flags) +
                   list(run_dirs))


@pytest.fixture(scope='module')
def records(runs, tmp_path_factory):
    """The records of both sources, and collect's exit codes."""
    directory = tmp_path_factory.mktemp('records')
    dirs = [runs['seed1'], runs['seed0']]
    codes = [
        _collect(directory, dirs, '--name', 'ppo_hopper', '--algorithm',
                 'PPO', '--reference', '2410 (rl-zoo, PPO, Hopper-v3)'),
        _collect(directory, dirs, '--name', 'a2c_hopper', '--algorithm',
                 'A2C', '--source', 'train', '--reference', 'n/a | none')]
    return str(directory), codes


def _load(directory, name):
    with open(os.path.join(directory, name + '.json')) as f:
        return json.load(f)


def test_collect_records_final_best_steps_wall_and_curve(records, runs):
    directory, codes = records
    assert codes == [0, 0]
    ev, tr = _load(directory, 'ppo_hopper'), _load(directory, 'a2c_hopper')
    assert (ev['metric'], ev['source'], ev['tag'], ev['gin']) == (
        'AverageReturn', 'eval', TAG, 'examples/ppo_hopper.gin')
    assert 'greedy' in ev['source_description']
    assert ev['reference'] == '2410 (rl-zoo, PPO, Hopper-v3)'
    assert [s['seed'] for s in ev['seeds']] == [0, 1]  # sorted by seed
    s0, s1 = ev['seeds']
    assert (s0['final'], s0['best'], s0['env_steps']) == (300.0, 400.0, 3000)
    assert (s1['final'], s1['best'], s1['env_steps']) == (500.0, 500.0, 4000)
    assert s0['curve'] == [[1000, 100.0], [2000, 400.0], [3000, 300.0]]
    assert s0['wall_from'] == 'time/elapsed_secs'
    assert s0['wall_secs'] == pytest.approx(220.0, abs=0.5)
    assert (s1['wall_from'], s1['wall_secs']) == ('event wall-time span',
                                                  60.0)
    assert s0['run_dir'].endswith('seed0')
    t0, t1 = tr['seeds']
    # The resumed process's 25 @2000 replaces the first one's 30.
    assert (t0['final'], t0['best'], t0['env_steps']) == (20.0, 25.0, 3000)
    assert t0['curve'] == [[1000, 10.0], [2000, 25.0], [3000, 20.0]]
    assert (t1['final'], t1['best'], t1['wall_secs']) == (35.0, 35.0, 30.0)
    assert t0['wall_secs'] == pytest.approx(220.0, abs=0.5)


def test_table_numbers_order_and_links(records, capsys):
    directory, _ = records
    capsys.readouterr()
    assert bt.main(['table', '--records', directory]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith('<!--') and lines[1].startswith('| task |')
    a2c, ppo = lines[3:]  # sorted by task, then algorithm
    assert ppo == (
        '| Hopper-v5 | PPO | [ppo_hopper.gin](examples/ppo_hopper.gin) | '
        '3k-4k of 4k (unfinished) | 2 | AverageReturn (eval) | 400 [300, '
        '500]; seeds: 300, 500 | 2 min | - | 2410 (rl-zoo, PPO, '
        'Hopper-v3) |')
    # seed0 stopped at 3k of its configured 4k env steps: unfinished.
    # Mean 27.5 of 20 and 35; bootstrap 95% CI of two values: (min, max);
    # wall (220 + 30) / 2 = 125 s.
    assert a2c == (
        '| Hopper-v5 | A2C | [ppo_hopper.gin](examples/ppo_hopper.gin) | '
        '3k-4k of 4k (unfinished) | 2 | AverageReturn (train) | 27.5 '
        '[20.0, 35.0]; seeds: 20.0, 35.0 | 2 min | - | n/a \\| none |')


def test_budget_cell_says_how_far_an_unfinished_run_got(runs):
    assert bt.read_planned_steps(runs['seed0']) == 4000
    assert bt.read_planned_steps(runs['empty']) is None
    done = {'env_steps': 1000472, 'planned_env_steps': 1000000}
    assert bt.budget_cell([done]) == '1M'
    assert bt.budget_cell([done, {'env_steps': 120000,
                                  'planned_env_steps': 1000000}]) == (
                                      '120k-1M of 1M (unfinished)')
    # Older records (no planned steps) and iteration-bounded runs.
    assert bt.budget_cell([{'env_steps': 20000}]) == '20k'
    assert bt.budget_cell([{'env_steps': 5, 'planned_env_steps': None}]) == '5'


def test_planned_steps_of_a_run_stopped_before_its_budget(tmp_path):
    run = str(tmp_path)
    for text, planned in (
            ('TrainerConfig.num_env_steps = 10000000\n'
             'TrainerConfig.stop_at_env_steps = 2048000\n', 2048000),
            ('TrainerConfig.num_env_steps = 1000\n'
             'TrainerConfig.stop_at_env_steps = 5000\n', 1000),
            ('TrainerConfig.num_env_steps = 0\n'
             'TrainerConfig.stop_at_env_steps = 300\n', 300),
            ('TrainerConfig.num_env_steps = 700\n'
             'TrainerConfig.stop_at_env_steps = None\n', 700)):
        with open(os.path.join(run, 'config.gin'), 'w') as f:
            f.write(text)
        assert bt.read_planned_steps(run) == planned, text


def test_collect_threshold_records_env_steps_and_wall_to_it(runs, tmp_path,
                                                          capsys):
    assert _collect(tmp_path, [runs['seed0'], runs['seed1']], '--name',
                    'dqn_x', '--algorithm', 'DQN', '--source', 'train',
                    '--threshold', '25') == 0
    record = _load(str(tmp_path), 'dqn_x')
    assert record['threshold'] == 25.0
    s0, s1 = record['seeds']
    # seed0: 30 @2000 (first process, ~100 s into it) is the first write
    # >= 25, although the resumed process later replaced it by 25.
    # Its clock started 100 s before the writes (which take a moment, more
    # on a loaded machine); the second process's 120 s do not count.
    secs = s0['to_threshold']['wall_secs']
    assert s0['to_threshold']['env_steps'] == 2000
    assert 100.0 <= secs < 110.0 and secs < s0['wall_secs'] - 100.0
    # seed1: 35 @4000, written 30 s after its first point (no
    # elapsed_secs).
    assert s1['to_threshold'] == {'env_steps': 4000, 'wall_secs': 30.0}
    cell = '>= 25.0: 2k (%.0f s), 4k (30 s); median 3k' % secs
    assert bt.threshold_cell(record) == cell
    assert bt.time_to_threshold(runs['seed1'], 'AverageReturn', 'train',
                                35.5) is None
    capsys.readouterr()
    assert bt.main(['table', '--records', str(tmp_path)]) == 0
    row = capsys.readouterr().out.splitlines()[3]
    assert row.endswith('| %s |  |' % cell)


def test_threshold_cell_and_runs_stopped_at_the_threshold():
    assert bt.threshold_cell({'seeds': []}) == '-'
    stopped = {'env_steps': 44000, 'planned_env_steps': 100000,
               'to_threshold': {'env_steps': 44000, 'wall_secs': 80.0}}
    missed = {'env_steps': 100000, 'planned_env_steps': 100000,
              'to_threshold': None}
    late = {'env_steps': 68000, 'planned_env_steps': 100000,
            'to_threshold': {'env_steps': 68000, 'wall_secs': 119.0}}
    record = {'threshold': 475.0, 'seeds': [stopped, missed, late]}
    # Median of 44k, 68k and "more than any": 68k.
    assert bt.threshold_cell(record) == (
        '>= 475: 44k (80 s), not reached, 68k (119 s); median 68k')
    record['seeds'] = [stopped, missed, dict(missed)]
    assert bt.threshold_cell(record).endswith('; median not reached')
    # Stopping on reaching the threshold is not "unfinished".
    assert bt.budget_cell([stopped, late], 475.0) == (
        '44k-68k of 100k (stopped at 475)')
    assert bt.budget_cell([stopped, missed], 475.0) == (
        '44k-100k of 100k (stopped at 475)')
    short = {'env_steps': 50000, 'planned_env_steps': 100000,
             'to_threshold': None}
    assert bt.budget_cell([stopped, short], 475.0) == (
        '44k-50k of 100k (unfinished)')


def test_write_replaces_between_markers_and_check(records, tmp_path,
                                                  capsys):
    directory, _ = records
    readme = tmp_path / 'docs' / 'README.md'
    readme.parent.mkdir()
    readme.write_text('intro\n%s\nold | table\n%s\noutro\n' %
                      (bt.START_MARKER, bt.END_MARKER))
    assert bt.main(['table', '--records', directory, '--check',
                    str(readme)]) == 1
    assert 'differs' in capsys.readouterr().out
    assert bt.main(['table', '--records', directory, '--write',
                    str(readme)]) == 0
    text = readme.read_text()
    table = bt.render_table(bt.load_records(directory), str(readme.parent))
    assert text == 'intro\n%s\n%s%s\noutro\n' % (bt.START_MARKER, table,
                                                 bt.END_MARKER)
    link = os.path.relpath(GIN, str(readme.parent))
    assert '[ppo_hopper.gin](%s)' % link in text
    capsys.readouterr()
    assert bt.main(['table', '--records', directory, '--check',
                    str(readme)]) == 0
    assert 'up to date' in capsys.readouterr().out
    readme.write_text(text.replace('400 [300, 500]', '401 [300, 500]'))
    assert bt.main(['table', '--records', directory, '--check',
                    str(readme)]) == 1
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 1 and str(readme) in out


def _error(capsys, argv, *expected):
    capsys.readouterr()
    assert bt.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ''
    assert len(captured.err.splitlines()) == 1, captured.err
    assert 'Traceback' not in captured.err
    for text in expected:
        assert text in captured.err, captured.err


def test_mistakes_are_one_line_with_exit_code_2(runs, records, tmp_path,
                                                capsys):
    directory, _ = records
    out = str(tmp_path / 'out')
    base = ['collect', '--name', 'x', '--task', 'T', '--algorithm', 'A',
            '--gin', GIN, '--records', out]
    _error(capsys, base + [runs['empty']], runs['empty'],
           'no TensorBoard event files')
    _error(capsys, base + [runs['root'] + '/missing'], 'missing',
           'not a directory')
    _error(capsys, base + ['--metric', 'GameScore', runs['seed0']],
           'no scalar Metrics_vs_EnvironmentSteps/GameScore',
           'metrics there: AverageReturn')
    _error(capsys, base + ['--source', 'test', runs['seed0']], "'test'")
    _error(capsys, base + [runs['seed0'], runs['seed0']], 'given twice')
    _error(capsys, base + [runs['seed0'], runs['same_seed']],
           'random_seed = 0', runs['same_seed'])
    _error(capsys, base[:-4] + ['--gin', 'nowhere.gin', '--records', out,
                                runs['seed0']],
           'nowhere.gin')
    assert not os.path.exists(out)  # nothing written on a mistake
    _error(capsys, ['table', '--records', str(tmp_path)], str(tmp_path),
           'no *.json')
    no_markers = tmp_path / 'README.md'
    no_markers.write_text('no markers here\n')
    for flag in ('--write', '--check'):
        _error(capsys, ['table', '--records', directory, flag,
                        str(no_markers)], str(no_markers), bt.START_MARKER)
    assert no_markers.read_text() == 'no markers here\n'


def test_thin_curve_keeps_at_most_200_points_with_both_ends():
    points = [(i * 10, float(i)) for i in range(1001)]
    thin = bt.thin_curve(points)
    assert len(thin) == 200
    assert thin[0] == [0, 0.0] and thin[-1] == [10000, 1000.0]
    assert [s for s, _ in thin] == sorted({s for s, _ in thin})
    assert bt.thin_curve(points[:5]) == [[s, v] for s, v in points[:5]]


@pytest.mark.parametrize('steps, text', [
    (1_000_000, '1M'), (999_424, '1M'), (1_500_000, '1.5M'),
    (250_000, '250k'), (204_800, '200k'), (3000, '3k'), (999, '1k'),
    (990, '990')])
def test_format_steps(steps, text):
    assert bt.format_steps(steps) == text


@pytest.mark.parametrize('secs, text', [(45, '45 s'), (1655, '28 min'),
                                        (9000, '2.5 h')])
def test_format_duration(secs, text):
    assert bt.format_duration(secs) == text


def test_the_readme_table_is_what_the_committed_records_give():
    """The README's table is generated: editing a figure by hand, or adding
    a record without regenerating, fails here."""
    readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                          'README.md')
    assert bt.main(['table', '--check', readme]) == 0


def test_points_table_values_at_steps_last_and_wall(runs, capsys):
    code = bt.main(['points', '--source', 'train', '--at', '2k,4k',
                    runs['seed0'], runs['seed1']])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == '| run | seed | 2k | 4k | last | wall time |'
    # seed0: 25 replaced 30 at 2000 on resume; it ended at 3000 (4k not
    # reached); 220 s (4 min) over its two processes. seed1: no elapsed_secs, so
    # the time from its first to its last point, 30 s.
    assert lines[2] == ('| seed0 | 0 | 25.0 (at 2k) | not yet | 20.0 (at 3k) '
                        '| 4 min |')
    assert lines[3] == ('| seed1 | 1 | 15.0 (at 2k) | 35.0 (at 4k) | '
                        '35.0 (at 4k) | 30 s |')
    assert len(lines) == 4


@pytest.mark.parametrize('text, steps', [('250k,1M', [250000, 1000000]),
                                         ('2.5e6', [2500000]),
                                         ('1500', [1500])])
def test_parse_steps(text, steps):
    assert bt.parse_steps(text) == steps


def test_points_mistakes_are_one_line(runs, capsys):
    assert bt.main(['points', '--at', '1M,x', runs['seed0']]) == 2
    assert "'x' is not a positive env step count" in capsys.readouterr().err
    assert bt.main(['points', '--at', '1M', '--metric', 'GameScore',
                    runs['seed0']]) == 2
    err = capsys.readouterr().err
    assert 'no scalar Metrics_vs_EnvironmentSteps/GameScore' in err
    assert len(err.strip().splitlines()) == 1


def test_point_cell_counts_points_within_one_percent():
    curve = [(250000, 1.0), (500000, 2.0), (997403, 3.0), (1000472, 4.0)]
    assert bt.point_cell(curve, 1000000) == '4 (at 1M)'
    assert bt.point_cell(curve[:3], 1000000) == '3 (at 1M)'
    assert bt.point_cell(curve[:2], 1000000) == 'not yet'
    assert bt.point_cell(curve, 400000) == '1 (at 250k)'
    assert bt.point_cell(curve, 100000) == 'none yet'


def test_an_offline_run_is_recorded_over_iterations(tmp_path):
    """No env steps (every env-step point at 0): the curve is read from
    ``Metrics/<metric>`` (step = iteration) and the budget says offline."""
    run = str(tmp_path / 'offline')
    writer = tf.summary.create_file_writer(os.path.join(run, 'eval'))
    with writer.as_default():
        for iteration, value in [(500, 30.0), (1000, 34.5), (1500, 33.0)]:
            tf.summary.scalar(TAG, value, step=0)
            tf.summary.scalar('Metrics/AverageReturn', value, step=iteration)
    writer.close()
    entry = bt.read_run(run, 'AverageReturn', 'eval')
    assert (entry['env_steps'], entry['iterations']) == (0, 1500)
    assert (entry['final'], entry['best'], entry['num_points']) == (
        33.0, 34.5, 3)
    other = dict(entry, iterations=20000)
    assert bt.budget_cell([entry]) == 'offline: 1.5k iterations'
    assert bt.budget_cell([entry, other]) == 'offline: 1.5k-20k iterations'


def _population_file(event_dir, version_wall, rows):
    """One process's event file of a population run: its first event (the
    writer's file version, whole seconds as TensorFlow writes it) and
    ``(wall_time, tag, step, value)`` rows."""
    os.makedirs(event_dir, exist_ok=True)
    path = os.path.join(event_dir, 'events.out.tfevents.%d.fake' % len(
        os.listdir(event_dir)))
    with tf.io.TFRecordWriter(path) as f:
        f.write(tf.compat.v1.Event(wall_time=version_wall,
                                   file_version='brain.Event:2')
                .SerializeToString())
        for wall, tag, step, value in rows:
            f.write(tf.compat.v1.Event(
                wall_time=wall, step=step, summary=tf.compat.v1.Summary(
                    value=[tf.compat.v1.Summary.Value(
                        tag=tag, simple_value=value)])).SerializeToString())


@pytest.fixture(scope='module')
def population(tmp_path_factory):
    """A population run of seeds 3 and 4 (``num_seeds = 2``), resumed once.

    First process: file version at 1000, writes at 1010 (1000 env steps
    per seed) and 1020 (2000). Second: version 1100, writes at 1130 (3000)
    and 1150 (4000), then a loss at 1160 (not a metric write). Wall time:
    (1020 - 1000) + (1150 - 1100) = 70 s. seed_3: 1, 5, 3, 8; seed_4: 2, 2,
    6, 4.
    """
    run = str(tmp_path_factory.mktemp('pop') / 'seeds3-4')
    values = {3: [1.0, 5.0, 3.0, 8.0], 4: [2.0, 2.0, 6.0, 4.0]}
    walls = [1010.0, 1020.0, 1130.0, 1150.0]
    rows = [(walls[i], 'seed_%d/Metrics/AverageReturn' % seed,
             1000 * (i + 1), values[seed][i])
            for i in range(4) for seed in (3, 4)]
    train = os.path.join(run, 'train')
    _population_file(train, 1000.0, rows[:4])
    _population_file(train, 1100.0, rows[4:] + [
        (1160.0, 'seed_3/loss/pg_loss', 4000, 0.5)])
    with open(os.path.join(run, 'config.gin'), 'w') as f:
        f.write('TrainerConfig.num_env_steps = 4000\n'
                'TrainerConfig.num_seeds = 2\n'
                'TrainerConfig.random_seed = 3\n')
    return run


def test_a_population_run_gives_an_entry_per_seed(population, tmp_path,
                                                  capsys):
    assert bt.read_num_seeds(population) == 2
    assert _collect(tmp_path, [population], '--name', 'pop', '--algorithm',
                    'PPO', '--source', 'train', '--threshold', '5') == 0
    record = _load(str(tmp_path), 'pop')
    assert record['tag'] == 'seed_<k>/Metrics/AverageReturn'
    s3, s4 = record['seeds']
    assert (s3['seed'], s3['final'], s3['best'], s3['env_steps']) == (
        3, 8.0, 8.0, 4000)
    assert (s4['seed'], s4['final'], s4['best'], s4['env_steps']) == (
        4, 4.0, 6.0, 4000)
    assert s4['curve'] == [[1000, 2.0], [2000, 2.0], [3000, 6.0],
                           [4000, 4.0]]
    for s in (s3, s4):
        assert (s['population'], s['planned_env_steps']) == (2, 4000)
        assert (s['wall_secs'], s['wall_from']) == (
            70.0, 'population event-file spans')
    # seed 3 reaches 5 at 2000 (1020: 20 s into the first process); seed 4
    # at 3000 (1130: 20 s + 30 s into the second).
    assert s3['to_threshold'] == {'env_steps': 2000, 'wall_secs': 20.0}
    assert s4['to_threshold'] == {'env_steps': 3000, 'wall_secs': 50.0}
    capsys.readouterr()
    assert bt.main(['table', '--records', str(tmp_path)]) == 0
    row = capsys.readouterr().out.splitlines()[3]
    assert row == (
        '| Hopper-v5 | PPO | [ppo_hopper.gin](examples/ppo_hopper.gin) | '
        '4k | 2 | AverageReturn (train) | 6 [4, 8]; seeds: 8, 4 | 70 s (2 '
        'seeds per run) | >= 5: 2k (20 s), 3k (50 s); median 2.5k |  |')
    assert bt.main(['points', '--source', 'train', '--at', '2k',
                    population]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:] == [
        '| seeds3-4/seed_3 | 3 | 5 (at 2k) | 8 (at 4k) | 70 s |',
        '| seeds3-4/seed_4 | 4 | 2 (at 2k) | 4 (at 4k) | 70 s |']


def test_population_run_mistakes_are_one_line(population, runs, tmp_path,
                                              capsys):
    base = ['collect', '--name', 'x', '--task', 'T', '--algorithm', 'A',
            '--gin', GIN, '--records', str(tmp_path / 'out')]
    _error(capsys, base + [population], population, 'num_seeds = 2',
           'use --source train')
    _error(capsys, base + ['--source', 'train', '--metric', 'GameScore',
                           population],
           'no scalar seed_<k>/Metrics/GameScore',
           'metrics there: AverageReturn')
    other = tmp_path / 'seed4'
    other.mkdir()
    with open(str(other / 'config.gin'), 'w') as f:
        f.write('TrainerConfig.random_seed = 4\n')
    _error(capsys, base + ['--source', 'train', population, str(other)],
           'both train seed 4', str(other))


def test_plot_draws_a_line_per_seed_from_the_records(records, tmp_path,
                                                     capsys):
    directory, _ = records
    out = tmp_path / 'curves.svg'
    assert bt.main(['plot', '--records', directory, '--out', str(out),
                    '--title', 'Hopper', 'ppo_hopper', 'a2c_hopper']) == 0
    assert 'wrote %s (2 records, 4 seeds)' % out in capsys.readouterr().out
    svg = out.read_text()
    assert svg.startswith('<svg') and '>Hopper<' in svg
    for label in ('PPO Hopper-v5 seed 0 (eval)', 'PPO Hopper-v5 seed 1 (eval)',
                  'A2C Hopper-v5 seed 0 (train)',
                  'A2C Hopper-v5 seed 1 (train)'):
        assert '>%s<' % label in svg, label
    assert svg.count('<polyline') == 4
    # The eval curve of seed 1 (50, 200, 500 at 1k, 2k, 4k) spans the axis
    # up to 500 and out to 4,000 env steps.
    assert '>500<' in svg and '>4000<' in svg


def test_plot_names_records_that_share_algorithm_and_task():
    """Two records of one method on one task (two schedules, say) are told
    apart by their names; a record alone keeps the short label."""
    def record(name, algorithm):
        return dict(name=name, algorithm=algorithm, task='Pong', metric='R',
                    source='eval', seeds=[dict(seed=0, curve=[[0, 1],
                                                              [10, 2]])])

    svg = bt.records_chart([record('qr_a', 'QR-DQN'), record('qr_b', 'QR-DQN'),
                            record('dqn', 'DQN')])
    assert '>qr_a: QR-DQN Pong seed 0 (eval)<' in svg
    assert '>qr_b: QR-DQN Pong seed 0 (eval)<' in svg
    assert '>DQN Pong seed 0 (eval)<' in svg


def test_plot_mistakes_are_one_line(records, tmp_path, capsys):
    directory, _ = records
    out = str(tmp_path / 'c.svg')
    base = ['plot', '--records', directory, '--out']
    _error(capsys, base + [out, 'sac_hopper'], 'no record sac_hopper',
           'records there: a2c_hopper, ppo_hopper')
    _error(capsys, base + [out, 'ppo_hopper', 'ppo_hopper'], 'given twice')
    _error(capsys, base + [str(tmp_path / 'c.png'), 'ppo_hopper'],
           'c.png', '.svg')
    _error(capsys, base + [str(tmp_path / 'no' / 'c.svg'), 'ppo_hopper'],
           'is not a directory')
    assert not os.listdir(str(tmp_path))  # nothing written on a mistake


def test_collect_add_keeps_the_seeds_whose_runs_are_gone(runs, records,
                                                         tmp_path, capsys):
    out = tmp_path / 'records'
    flags = ['--name', 'ppo_hopper', '--algorithm', 'PPO', '--reference',
             'ref']
    assert _collect(out, [runs['seed0']], *flags) == 0
    seed0 = _load(str(out), 'ppo_hopper')['seeds']
    assert [s['seed'] for s in seed0] == [0]
    # Seed 0's run dir is not given again (as if gone): its entry stays.
    assert _collect(out, [runs['seed1']], '--add', *flags) == 0
    both = _load(str(out), 'ppo_hopper')
    assert [s['seed'] for s in both['seeds']] == [0, 1]
    assert both['seeds'][0] == seed0[0]
    # The same as collecting both at once.
    assert both == _load(records[0], 'ppo_hopper') | {'reference': 'ref'}
    # A run of a seed already there replaces its entry, not duplicates it.
    assert _collect(out, [runs['seed1']], '--add', *flags) == 0
    assert _load(str(out), 'ppo_hopper') == both
    capsys.readouterr()


def test_collect_add_mistakes_are_one_line(runs, tmp_path, capsys):
    out = str(tmp_path / 'records')
    base = ['collect', '--name', 'x', '--task', 'Hopper-v5', '--algorithm',
            'PPO', '--gin', GIN, '--records', out]
    _error(capsys, base + ['--add', runs['seed1']], 'no record',
           'x.json', 'without --add')
    assert bt.main(base + [runs['seed0']]) == 0
    _error(capsys, base + ['--add', '--source', 'train', runs['seed1']],
           "source 'eval'", "'train'")
    _error(capsys, base[:6] + ['SAC'] + base[7:] + ['--add', runs['seed1']],
           "algorithm 'PPO'", "'SAC'")
    _error(capsys, base + ['--add', '--threshold', '100', runs['seed1']],
           'threshold None', '100.0')
    no_seed = tmp_path / 'no_seed'
    _summary_writes(str(no_seed / 'eval'), [(1000, 1.0)])
    _error(capsys, base + ['--add', str(no_seed)], str(no_seed),
           'random_seed')
    assert [s['seed'] for s in _load(out, 'x')['seeds']] == [0]


def test_points_reads_a_reference_runs_eval_jsonl(runs, tmp_path, capsys):
    """sb3_reference.py's ``DIR/seed<S>/eval.jsonl`` sits in the same table
    as alf-train runs; a step logged again after a resume keeps its last
    value."""
    ref = tmp_path / 'sb3_td3' / 'seed1'
    ref.mkdir(parents=True)
    ref.joinpath('eval.jsonl').write_text(
        '{"env_steps": 1000, "return": 12.0, "wall_s": 5.0}\n'
        '{"env_steps": 2000, "return": 40.0, "wall_s": 9.0}\n'
        '{"env_steps": 2000, "return": 41.5, "wall_s": 3.0}\n'
        '{"env_steps": 3000, "return": 50.0, "wall_s": 7.0}\n')
    code = bt.main(['points', '--at', '2k,4k', str(ref), runs['seed1']])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == ('| sb3_td3/seed1 | 1 | 41.5 (at 2k) | not yet | '
                        '50.0 (at 3k) | - |')
    assert lines[3].startswith('| seed1 | 1 |')
    # Only greedy returns are in the file: another metric is one line.
    assert bt.main(['points', '--at', '2k', '--source', 'train',
                    str(ref)]) == 2
    err = capsys.readouterr().err
    assert 'holds greedy evaluation returns only' in err
    assert len(err.strip().splitlines()) == 1
    ref.joinpath('eval.jsonl').write_text('{"steps": 1}\n')
    assert bt.main(['points', '--at', '2k', str(ref)]) == 2
    assert 'line 1: expected' in capsys.readouterr().err


def test_points_reads_a_record_file_a_row_per_seed(runs, tmp_path, capsys):
    """A record's thinned curves make the same table after the runs'
    directories are gone; a record of another metric or source is one
    line."""
    records = tmp_path / 'records'
    assert bt.main(['collect', '--name', 'x', '--task', 'T',
                    '--algorithm', 'A', '--gin', GIN,
                    '--source', 'train', '--records', str(records),
                    runs['seed0'], runs['seed1']]) == 0
    capsys.readouterr()
    from_runs = bt.points_table([runs['seed0'], runs['seed1']],
                                'AverageReturn', 'train', [2000, 4000])
    path = str(records / 'x.json')
    assert bt.main(['points', '--source', 'train', '--at', '2k,4k',
                    path]) == 0
    lines = capsys.readouterr().out.splitlines()
    # Same cells as from the runs themselves, labelled NAME/seed_S.
    assert [line.split('|')[2:] for line in lines[2:]] == [
        line.split('|')[2:] for line in from_runs.splitlines()[2:]]
    assert [line.split('|')[1].strip() for line in lines[2:]] == [
        'x/seed_0', 'x/seed_1']
    assert bt.main(['points', '--at', '2k', path]) == 2
    err = capsys.readouterr().err
    assert 'holds AverageReturn (train): use --metric AverageReturn ' \
        '--source train' in err
    assert len(err.strip().splitlines()) == 1
