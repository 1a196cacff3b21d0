"""``alf_rl.tune.spec``: grid, seeds, configuration names, runs, commands
and the search record."""

import json
import os
import sys

import pytest

from alf_rl.tune import spec
from alf_rl.tune.files import SEARCH_FILE


def test_grid_expands_to_named_configurations_with_bindings():
    grid = spec.parse_grid(['PPOLoss.gamma=[0.98, 0.99]',
                          "Adam.learning_rate = [1e-3, 3e-4]"])
    assert grid == {'PPOLoss.gamma': [0.98, 0.99],
                    'Adam.learning_rate': [1e-3, 3e-4]}
    configs = spec.expand_grid(grid)
    assert [c.name for c in configs] == [
        'gamma=0.98,learning_rate=0.001', 'gamma=0.98,learning_rate=0.0003',
        'gamma=0.99,learning_rate=0.001', 'gamma=0.99,learning_rate=0.0003']
    assert configs[1].bindings() == ['PPOLoss.gamma=0.98',
                                     'Adam.learning_rate=0.0003']
    runs = spec.plan_runs('P', configs[:2], [0, 1])
    assert [(r.config.name[:10], r.seed) for r in runs] == [
        ('gamma=0.98', 0), ('gamma=0.98', 0), ('gamma=0.98', 1),
        ('gamma=0.98', 1)]
    assert runs[2].root_dir == os.path.join(
        'P', 'gamma=0.98,learning_rate=0.001', 'seed1')
    command = spec.train_command(runs[2], ['a.gin'], ['X.y=1'], base=['t'])
    assert command == ['t', '--root_dir', runs[2].root_dir, '--gin_file',
                       'a.gin', '--gin_param', 'X.y=1', '--gin_param',
                       'PPOLoss.gamma=0.98', '--gin_param',
                       'Adam.learning_rate=0.001', '--gin_param',
                       'TrainerConfig.random_seed=1']
    assert spec.expand_grid({}) == [spec.Config('default', {})]


def test_names_stay_short_safe_and_distinct():
    assert spec.config_name({'A.gamma': 0.9, 'B.gamma': 0.8}) == (
        'A.gamma=0.9,B.gamma=0.8')
    assert spec.config_name({'N.fc': (64, 64), 'E.use': True}) == (
        'fc=64-64,use=True')
    odd = spec.config_name({'E.name': 'a/b c'})
    assert odd.startswith('name=a_b_c-') and len(odd) == len('name=a_b_c-')+8
    assert odd != spec.config_name({'E.name': 'a_b c'})
    long = spec.config_name({'E.name': 'x' * 200})
    assert len(long) == 80 and long == spec.config_name({'E.name': 'x' * 200})
    assert long != spec.config_name({'E.name': 'x' * 201})


def test_random_samples_are_seeded_distinct_and_in_grid_order():
    grid = {'A.x': [1, 2, 3, 4], 'A.y': [5, 6, 7]}
    picked = spec.expand_grid(grid, random_samples=5, sample_seed=3)
    names = [c.name for c in picked]
    assert len(set(names)) == 5
    assert names == [c.name for c in spec.expand_grid(grid)
                     if c.name in names]
    assert picked == spec.expand_grid(grid, random_samples=5, sample_seed=3)
    assert picked != spec.expand_grid(grid, random_samples=5, sample_seed=4)
    with pytest.raises(ValueError, match='expected 1 to 12'):
        spec.expand_grid(grid, random_samples=13)


@pytest.mark.parametrize('grid_spec, match', [
    ('PPOLoss.gamma', "expected 'Configurable.param="),
    ('gamma=[1]', "expected 'Configurable.param="),
    ('PPOLoss.gamma=[0.9,', 'Python list of literals'),
    ('PPOLoss.gamma=0.9', 'non-empty list'),
    ('PPOLoss.gamma=[]', 'non-empty list'),
    ('TrainerConfig.random_seed=[1, 2]', 'with --seeds'),
])
def test_bad_grid_is_one_line(grid_spec, match):
    with pytest.raises(ValueError, match=match):
        spec.parse_grid([grid_spec])


def test_seeds_are_lists_and_ranges_of_distinct_integers():
    assert spec.parse_seeds('0,1,2') == [0, 1, 2]
    assert spec.parse_seeds('3-5,9') == [3, 4, 5, 9]
    with pytest.raises(ValueError, match='distinct'):
        spec.parse_seeds('1,1')
    with pytest.raises(ValueError, match='integers'):
        spec.parse_seeds('a')


def test_a_different_search_is_refused_in_one_line(tmp_path):
    parent = str(tmp_path / 'P')
    record = {'gin_files': ['a.gin'], 'grid': {'A.x': [1, 2]},
              'gin_params': [], 'seeds': [0]}
    spec.check_search_record(parent, record, force=False)
    # More seeds are the same search: the record keeps their union.
    spec.check_search_record(parent, dict(record, seeds=[1, 2]),
                             force=False)
    with open(os.path.join(parent, SEARCH_FILE)) as f:
        assert json.load(f)['seeds'] == [0, 1, 2]
    other = dict(record, grid={'A.x': [1, 3]})
    with pytest.raises(ValueError, match=r'holds a different search \(differs in '
                       r'grid; grid: recorded \{"A.x": \[1, 2\]\}, now \{"A.x": \[1, '
                       r'3\]\}\); use another --root_dir, or --force'):
        spec.check_search_record(parent, other, force=False)
    spec.check_search_record(parent, other, force=True)
    with open(os.path.join(parent, SEARCH_FILE)) as f:
        assert json.load(f)['grid'] == {'A.x': [1, 3]}
    # A dry run checks without writing.
    spec.check_search_record(str(tmp_path / 'Q'), record, force=False,
                             write=False)
    assert not os.path.exists(str(tmp_path / 'Q'))


def test_run_label_names_config_and_seed():
    run = spec.Run(spec.Config('gamma=0.98', {'A.gamma': 0.98}), 3, 'P/x')
    assert run.label() == 'gamma=0.98/seed3'


def test_grid_values_that_are_gin_references_bind_as_references():
    grid = spec.parse_grid([
        'PPOAlgorithm.reward_normalizer_ctor=["@AdaptiveScalarNormalizer",'
        ' "@ReturnScaleNormalizer"]',
        'Net.kernel_initializer=["@VarianceScaling()", "glorot_uniform"]',
        'PPOLoss.gamma=["%GAMMA", "@ not a reference"]'])
    configs = spec.expand_grid(grid)
    assert configs[0].bindings() == [
        'PPOAlgorithm.reward_normalizer_ctor=@AdaptiveScalarNormalizer',
        'Net.kernel_initializer=@VarianceScaling()', 'PPOLoss.gamma=%GAMMA']
    assert configs[-1].bindings() == [
        'PPOAlgorithm.reward_normalizer_ctor=@ReturnScaleNormalizer',
        "Net.kernel_initializer='glorot_uniform'",
        "PPOLoss.gamma='@ not a reference'"]
    # and gin reads them as the configurables they name
    import gin
    import alf_rl.configurables  # noqa: F401
    from alf_rl.utils.normalizers import ReturnScaleNormalizer

    @gin.configurable('grid_probe')
    def probe(ctor=None):
        return ctor

    with gin.unlock_config():
        gin.parse_config('grid_probe.ctor=%s' % spec.gin_value_text(
            '@ReturnScaleNormalizer'))
    try:
        assert probe() is ReturnScaleNormalizer
    finally:
        gin.clear_config()


def test_binding_check_command_checks_each_grid_value_alone(tmp_path):
    command = spec.binding_check_command(
        ['a.gin'], ['X.y=1'], {'PPOLoss.gamma': [0.98, '%G'],
                               'E.mode': ['ok']}, [str(tmp_path)])
    assert command == [
        sys.executable, '-m', 'alf_rl.runs.binding_checks',
        '--gin_file', 'a.gin', '--gin_param', 'X.y=1',
        '--grid_param', 'PPOLoss.gamma=0.98', '--grid_param',
        'PPOLoss.gamma=%G', '--grid_param', "E.mode='ok'",
        '--module_path', str(tmp_path)]
