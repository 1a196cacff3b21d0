"""Bad gin bindings named before training starts, and a failed start that
leaves root_dir as it found it (issue 26, findings 6 and 10).

Finding 6: wrong-type values outside ``TrainerConfig``/``create_environment``
were not named (``PPOLoss.gamma='high'`` -> ``'<=' not supported between
'float' and 'str'``; ``LegacyAdam.learning_rate='fast'`` -> ``Unknown
initializer: 'fast'``, leaving config.gin, an events file and the lock in
root_dir; ``ActorDistributionNetwork.fc_layer_params=64`` -> ``'int' object
is not iterable``). Finding 10: ``alf-grid-search --dry_run`` listed runs of
a misspelled parameter (``gama=...``), each of which then failed.
"""

import glob
import os
import subprocess
import sys

import gin
import pytest
import tf_keras

from alf_rl.algorithms.actor_critic_loss import ActorCriticLoss
from alf_rl.environments.suite_unittest import ValueUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.runs.binding_checks import explain_configurable_error
from alf_rl.runs.gin_files import parse_gin
from alf_rl.trainers import OnPolicyTrainer, TrainerConfig
from alf_rl.tune.search import SearchOptions, prepare
from small_algorithms import small_actor_critic

REPO = os.path.join(os.path.dirname(__file__), '..', '..')
PPO = os.path.join(REPO, 'examples', 'ppo_cart_pole.gin')


# ------------------------------------------------------------ finding 6
@pytest.mark.parametrize('binding, message', [
    ("PPOLoss.gamma='high'",
     "PPOLoss.gamma: expected a number, got 'high' (str)"),
    ("LegacyAdam.learning_rate='fast'",
     "LegacyAdam.learning_rate: expected a number or a learning-rate "
     "schedule, got 'fast' (str)"),
    ('ActorDistributionNetwork.fc_layer_params=64',
     'ActorDistributionNetwork.fc_layer_params: expected a sequence of ints '
     'or None, e.g. (64,), got 64 (int)'),
    ("ValueNetwork.conv_layer_params=[(32, 8)]",
     'ValueNetwork.conv_layer_params: expected a sequence of (filters, '
     'kernel_size, strides) tuples of ints or None, got [(32, 8)] (list)'),
    ("QNetwork.conv_layer_params=(32, 8, 4)",
     'QNetwork.conv_layer_params: expected a sequence of (filters, '
     'kernel_size, strides) tuples of ints or None, e.g. ((32, 8, 4),), got '
     '(32, 8, 4) (tuple)'),
    ("PPOLoss.td_error_loss_fn='squared'",
     "PPOLoss.td_error_loss_fn: expected a callable, got 'squared' (str)"),
    ("VarianceScaling.mode='fan'",
     "VarianceScaling.mode: expected one of 'fan_in', 'fan_out', 'fan_avg', "
     "got 'fan' (str)"),
    ("create_environment.num_parallel_environments=2.0",
     'create_environment.num_parallel_environments: expected an int, got '
     '2.0 (float)'),
    ("G='high'\nPPOLoss.td_lambda=%G",
     "PPOLoss.td_lambda: expected a number, got %G = 'high' (str)"),
    ('train/PPOLoss.gamma=None',
     'train/PPOLoss.gamma: expected a number, got None (NoneType)'),
])
def test_a_wrong_type_names_the_binding_when_parsed(binding, message):
    with pytest.raises(ValueError) as raised:
        parse_gin([PPO], binding.split('\n'))
    assert str(raised.value) == message


@pytest.mark.parametrize('binding, message', [
    # **encoder_kwargs reach the encoding network: gin cannot check them.
    ('ActorDistributionNetwork.fc_layer_param=(64,)',
     "Configurable 'ActorDistributionNetwork' doesn't have a parameter "
     "named 'fc_layer_param' (nor does its encoding_network_ctor, "
     "EncodingNetwork); did you mean fc_layer_params?"),
    # **kwargs going up the algorithm's base classes.
    ('PPOAlgorithm.gradient_cliping=0.5',
     "Configurable 'PPOAlgorithm' doesn't have a parameter named "
     "'gradient_cliping'; did you mean gradient_clipping?"),
    # A renamed argument keeps its rename message.
    ('PPOAlgorithm.td_loss_fn=@element_wise_squared_loss',
     "PPOAlgorithm: argument 'td_loss_fn' was renamed to 'td_error_loss_fn';"
     " pass td_error_loss_fn=... instead (in a gin file: "
     "PPOAlgorithm.td_error_loss_fn = ...)"),
    # The declared parameters of an external optimizer.
    ('LegacyAdam.learning_rte=0.1',
     "Configurable 'LegacyAdam' doesn't have a parameter named "
     "'learning_rte'; did you mean learning_rate?"),
])
def test_an_unknown_name_behind_kwargs_is_named(binding, message):
    with pytest.raises(ValueError) as raised:
        parse_gin([PPO], [binding])
    assert str(raised.value) == message


def test_the_checks_follow_the_encoder_a_binding_chooses():
    # LSTMEncodingNetwork takes lstm_size (an int or a sequence of ints)
    # but no fc_layer_params, which ppo_cart_pole.gin binds.
    lstm = ['ActorDistributionNetwork.encoding_network_ctor='
            '@LSTMEncodingNetwork']
    with pytest.raises(ValueError, match="'fc_layer_params' \\(nor does "
                       "its encoding_network_ctor, LSTMEncodingNetwork\\)"):
        parse_gin([PPO], lstm)
    gin.clear_config()
    with pytest.raises(ValueError) as raised:
        parse_gin([], lstm + ["ActorDistributionNetwork.lstm_size='8'"])
    assert str(raised.value) == (
        "ActorDistributionNetwork.lstm_size: expected a sequence of ints "
        "or an int, got '8' (str)")


def test_good_values_pass():
    parse_gin([PPO], [
        'PPOLoss.gamma=1',  # an int for a float
        'LegacyAdam.learning_rate=@LinearSchedule()',
        'LinearSchedule.initial_value=1e-3', 'LinearSchedule.final_value=0.',
        'LinearSchedule.num_steps=100',
        'ActorDistributionNetwork.fc_layer_params=[32, 32]',
        "ActorDistributionNetwork.activation='relu'",
        'ValueNetwork.kernel_initializer=@Orthogonal()',
        'PPOLoss.entropy_regularization=None',
        "VarianceScaling.mode='fan_avg'"])
    assert gin.query_parameter('PPOLoss.gamma') == 1


def test_every_example_passes_the_checks():
    files = sorted(glob.glob(os.path.join(REPO, 'examples', '*.gin')))
    assert len(files) > 30
    for path in files:
        gin.clear_config()
        parse_gin([path], [])  # raises on a bad binding


def test_a_range_error_names_the_configurable_and_its_binding():
    parse_gin([PPO], ['PPOLoss.gamma=1.5'])
    with pytest.raises(ValueError) as raised:
        gin.get_configurable('PPOLoss')()
    # PPOLoss.__init__ calls ActorCriticLoss's, gin-wrapped too: the line
    # names the one bound in the gin file.
    assert explain_configurable_error(str(raised.value)) == (
        'PPOLoss: gamma must be in [0, 1], got 1.5 (gin: PPOLoss.gamma = '
        '1.5)')
    assert explain_configurable_error('no gin\n  here') == 'no gin here'


def _bad_rate_algorithm(observation_spec, action_spec):
    return small_actor_critic(
        observation_spec, action_spec,
        optimizer=tf_keras.optimizers.legacy.Adam(learning_rate='fast'))


class _FailingLoss(ActorCriticLoss):
    """Raises while the first iteration is traced."""

    def __call__(self, *args, **kwargs):
        raise RuntimeError('the loss failed')


def _failing_algorithm(observation_spec, action_spec):
    return small_actor_critic(observation_spec, action_spec,
                              loss=_FailingLoss())


def _trainer(root, algorithm_ctor):
    return OnPolicyTrainer(
        TrainerConfig(root_dir=str(root), algorithm_ctor=algorithm_ctor,
                      num_iterations=3, unroll_length=4, random_seed=0),
        env=lambda seed: TFPyEnvironment(ValueUnittestEnv(
            batch_size=2, episode_length=4)))


def _assert_as_found(root, existing):
    if existing:
        assert os.listdir(str(root)) == ['notes.txt']
        assert (root / 'notes.txt').read_text() == 'mine'
    else:
        assert not root.exists()


def _make_root(tmp_path, existing):
    root = tmp_path / 'run'
    if existing:
        root.mkdir()
        (root / 'notes.txt').write_text('mine')
    return root


@pytest.mark.parametrize('existing', [False, True])
def test_a_run_failing_in_its_first_iteration_leaves_root_dir_as_found(
        tmp_path, existing):
    root = _make_root(tmp_path, existing)
    trainer = _trainer(root, _failing_algorithm)
    try:
        with pytest.raises(RuntimeError, match='the loss failed'):
            trainer.train()
    finally:
        trainer.close()
    _assert_as_found(root, existing)


@pytest.mark.parametrize('existing', [False, True])
def test_a_bad_learning_rate_from_python_is_named_before_anything(
        tmp_path, existing):
    # Gin bindings are checked when parsed; an optimizer built in Python
    # is checked when the driver builds the optimizers' variables.
    root = _make_root(tmp_path, existing)
    with pytest.raises(ValueError) as raised:
        _trainer(root, _bad_rate_algorithm)
    assert str(raised.value).splitlines()[0] == (
        "Adam.learning_rate: expected a number or a learning-rate "
        "schedule, got 'fast' (str)")
    _assert_as_found(root, existing)


def test_alf_train_names_the_bad_learning_rate_and_leaves_root_dir(tmp_path):
    root = tmp_path / 'run'
    root.mkdir()
    (root / 'notes.txt').write_text('mine')
    done = subprocess.run(
        [sys.executable, '-m', 'alf_rl.bin.train', '--gin_file', PPO,
         '--root_dir', str(root), '--gin_param',
         "LegacyAdam.learning_rate='fast'"],
        capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "alf-train: error: LegacyAdam.learning_rate: expected a number or a "
        "learning-rate schedule, got 'fast' (str)")
    assert os.listdir(str(root)) == ['notes.txt']  # no lock, events, config


# ----------------------------------------------------------- finding 10
def test_grid_search_refuses_a_misspelled_name_before_anything(tmp_path):
    parent = str(tmp_path / 'P')
    options = SearchOptions(gin_files=[PPO], root_dir=parent,
                            grid=['PPOLoss.gama=[0.98, 0.99]'],
                            dry_run=True)
    with pytest.raises(ValueError) as raised:
        prepare(options)
    assert str(raised.value) == (
        "--grid PPOLoss.gama=0.98: Configurable 'PPOLoss' doesn't have a "
        "parameter named 'gama'; did you mean gamma?")
    assert not os.path.exists(parent)


def test_grid_search_cli_refuses_a_value_of_the_wrong_type(tmp_path):
    parent = str(tmp_path / 'P')
    done = subprocess.run(
        [sys.executable, '-m', 'alf_rl.bin.grid_search', '--gin_file', PPO,
         '--root_dir', parent, '--grid', "PPOLoss.gamma=[0.98, 'high']",
         '--grid', 'LegacyAdam.learning_rate=[1e-3]', '--dry_run'],
        capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 1
    assert done.stdout == ''  # no run listed
    assert done.stderr == (
        "alf-grid-search: error: --grid PPOLoss.gamma='high': PPOLoss.gamma:"
        " expected a number, got 'high' (str)\n")
    assert not os.path.exists(parent)
