"""Trainer end to end on CartPole: outputs, resume, checkpoints, errors."""

import glob
import os

import gin
import numpy as np
import pytest
import tensorflow as tf

from alf_rl.bin.train import train
from alf_rl.environments.suite_unittest import ValueUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.trainers import OnPolicyTrainer, TrainerConfig
from alf_rl.trainers.errors import (EnvironmentStepError, NonFiniteLossError,
                                    TrainingError, training_error_from)
from alf_rl.utils.checkpoint import CheckpointError
from small_algorithms import small_actor_critic

EXAMPLE = os.path.join(os.path.dirname(__file__), '..', '..', 'examples',
                       'ac_cart_pole.gin')
SMALL = [
    'create_environment.num_parallel_environments=2',
    'TrainerConfig.num_env_steps=0',
    'TrainerConfig.num_iterations=6',
    'TrainerConfig.unroll_length=4',
    'TrainerConfig.summary_interval=2',
    'TrainerConfig.checkpoint_interval=3',
    'TrainerConfig.eval_interval=3',
    'TrainerConfig.num_eval_episodes=2',
    "create_environment.max_episode_steps=20",
    'ActorDistributionNetwork.fc_layer_params=(8,)',
    'ValueNetwork.fc_layer_params=(8,)',
]


def _events(root, sub):
    """{tag: [(step, value)]} from the event files under root/sub."""
    result = {}
    for path in glob.glob(os.path.join(root, sub, 'events.*')):
        for event in tf.compat.v1.train.summary_iterator(path):
            for v in event.summary.value:
                value = float(tf.make_ndarray(v.tensor)) if v.HasField(
                    'tensor') else v.simple_value
                result.setdefault(v.tag, []).append((event.step, value))
    return result


def test_train_writes_outputs_and_resumes(tmp_path):
    root = str(tmp_path / 'run')
    result = train(root, [EXAMPLE], SMALL)
    assert result['iterations'] == 6
    assert os.path.exists(os.path.join(root, 'config.gin'))
    config = open(os.path.join(root, 'config.gin')).read()
    assert 'TrainerConfig.num_iterations = 6' in config
    assert open(os.path.join(root, 'ckpt', 'latest')).read() == 'ckpt-6'
    train_events = _events(root, 'train')
    for tag in ('Metrics/AverageReturn', 'Metrics/EnvironmentSteps',
                'Metrics/NumberOfEpisodes', 'Metrics/AverageEpisodeLength',
                'loss/total', 'loss/pg_loss', 'time/env_steps_per_sec'):
        assert tag in train_events, tag
    assert [s for s, _ in train_events['Metrics/EnvironmentSteps']] == [2, 4, 6]
    assert 'Metrics/AverageReturn' in _events(root, 'eval')
    steps_before = result['Metrics/EnvironmentSteps']
    assert steps_before == 6 * 4 * 2 - result['Metrics/NumberOfEpisodes']

    gin.clear_config()
    result2 = train(root, [EXAMPLE],
                    SMALL + ['TrainerConfig.num_iterations=9'])
    assert result2['iterations'] == 9
    assert result2['Metrics/EnvironmentSteps'] > steps_before
    assert result2['Metrics/NumberOfEpisodes'] >= result[
        'Metrics/NumberOfEpisodes']
    assert open(os.path.join(root, 'ckpt', 'latest')).read() == 'ckpt-9'


def test_mismatched_checkpoint_is_a_clear_error(tmp_path):
    root = str(tmp_path / 'run')
    train(root, [EXAMPLE], SMALL)
    gin.clear_config()
    with pytest.raises(CheckpointError, match='does not match the model'):
        train(root, [EXAMPLE], SMALL + [
            'TrainerConfig.num_iterations=8',
            'ActorDistributionNetwork.fc_layer_params=(16,)'
        ])
    # Nothing already written was touched.
    assert open(os.path.join(root, 'ckpt', 'latest')).read() == 'ckpt-6'


def test_corrupt_checkpoints_are_a_clear_error(tmp_path):
    root = str(tmp_path / 'run')
    train(root, [EXAMPLE], SMALL)
    for step in (3, 6):
        data = glob.glob(os.path.join(root, 'ckpt', 'ckpt-%d' % step,
                                      'ckpt.data*'))[0]
        with open(data, 'r+b') as f:
            f.truncate(10)
    gin.clear_config()
    with pytest.raises(CheckpointError,
                       match='no usable checkpoint in .*ckpt-6.corrupt'):
        train(root, [EXAMPLE], SMALL + ['TrainerConfig.num_iterations=8'])
    # Moved aside, not deleted.
    assert sorted(os.listdir(os.path.join(root, 'ckpt'))) == [
        'ckpt-3.corrupt', 'ckpt-6.corrupt', 'latest']


def test_unknown_env_id(tmp_path):
    with pytest.raises(ValueError, match='CartPol-v1'):
        train(str(tmp_path), [EXAMPLE],
              SMALL + ["create_environment.env_name='CartPol-v1'"])


def test_bad_gin_binding(tmp_path):
    with pytest.raises(ValueError, match='no_such_param'):
        train(str(tmp_path), [EXAMPLE],
              SMALL + ['ActorCriticLoss.no_such_param=3'])


def test_nan_loss_stops_with_iteration_and_loss_name(tmp_path):
    root = str(tmp_path / 'run')
    with pytest.raises(TrainingError,
                       match='iteration 1: non-finite loss') as raised:
        train(root, [EXAMPLE],
              SMALL + ['ActorCriticLoss.td_loss_weight=1e400'])
    assert not glob.glob(os.path.join(root, 'ckpt', 'ckpt-*'))
    error = raised.value
    assert isinstance(error, NonFiniteLossError)
    assert (error.kind, error.iteration, error.last_iteration) == (
        'non_finite_loss', 1, 1)
    assert error.loss_name == 'ActorCriticAlgorithm'
    assert 'loss.td_loss' in error.components
    assert error.value in ('NaN', 'Inf') and not error.update_applied
    assert str(error) == error.message and '\n' not in str(error)
    assert str(error).endswith('no update was applied. No checkpoint was '
                               'written: no iteration had completed.')
    assert error.checkpoint is None


def _check_numerics_error(message, value=float('inf')):
    """The OpError a failing ``check_numerics`` raises in a graph."""

    @tf.function(autograph=False)
    def _check(x):
        return tf.debugging.check_numerics(x, message)

    try:
        _check(tf.constant(value))
    except tf.errors.OpError as e:
        return e
    raise AssertionError('check_numerics did not fail')


def test_training_error_from_a_loss_check():
    error = training_error_from(
        _check_numerics_error('loss of PPOAlgorithm (components: '
                              'loss.pg_loss, loss.td_loss)'), 4)
    assert isinstance(error, NonFiniteLossError)
    assert (error.kind, error.iteration, error.last_iteration) == (
        'non_finite_loss', 4, 4)
    assert error.loss_name == 'PPOAlgorithm'
    assert error.components == ('loss.pg_loss', 'loss.td_loss')
    assert error.value == 'Inf' and not error.update_applied
    assert error.detail == ('loss of PPOAlgorithm (components: '
                            'loss.pg_loss, loss.td_loss) : Tensor had Inf '
                            'values')
    assert str(error) == (
        'training stopped at iteration 4: non-finite loss (' + error.detail +
        '); no update was applied.')


@pytest.mark.parametrize('where', ['XLA-compiled update',
                                   'XLA-compiled iteration'])
def test_training_error_from_an_xla_loss_check(where):
    error = training_error_from(
        _check_numerics_error('loss of SacAlgorithm (%s)' % where,
                              float('nan')), 3, num_iterations=5)
    assert isinstance(error, NonFiniteLossError)
    assert (error.iteration, error.last_iteration) == (3, 7)
    assert error.loss_name == 'SacAlgorithm' and error.components == ()
    assert error.value == 'NaN' and error.update_applied
    assert str(error).startswith(
        'training stopped in iterations 3-7: non-finite loss (loss of '
        'SacAlgorithm (%s) : Tensor had NaN values); the XLA-compiled '
        'update was already applied.' % where)


def test_training_error_from_an_environment_error():
    op_error = _check_numerics_error('step', float('nan'))
    env_error = ValueError("action: value 3 at env 1 outside action_spec "
                           "bounds [0, 1]")
    error = training_error_from(op_error, 2, env_error=env_error)
    assert isinstance(error, EnvironmentStepError)
    assert (error.kind, error.iteration, error.env_error) == (
        'environment', 2, env_error)
    assert str(error) == ("training stopped at iteration 2: action: value 3 "
                          "at env 1 outside action_spec bounds [0, 1]")


def test_training_error_from_another_error_is_none():
    assert training_error_from(_check_numerics_error('x of y'), 1) is None
    assert training_error_from(
        tf.errors.InvalidArgumentError(None, None, 'shapes differ'), 1) is None


class _FailingEnv(ValueUnittestEnv):
    """Raises from ``step`` number ``fail_at`` on."""

    def __init__(self, fail_at):
        super().__init__(batch_size=2, episode_length=4)
        self._fail_at = fail_at
        self._num_steps = 0

    def _step(self, action):
        self._num_steps += 1
        if self._num_steps >= self._fail_at:
            raise RuntimeError('sensor unplugged')
        return super()._step(action)


_small_actor_critic = small_actor_critic


def test_environment_error_stops_training_with_its_message(tmp_path):
    config = TrainerConfig(root_dir=str(tmp_path),
                           algorithm_ctor=_small_actor_critic,
                           num_iterations=3, unroll_length=4,
                           iterations_per_call=1)
    # 4 steps per iteration: the 6th step is in iteration 2.
    trainer = OnPolicyTrainer(
        config, env=lambda seed: TFPyEnvironment(_FailingEnv(fail_at=6)))
    try:
        with pytest.raises(EnvironmentStepError) as raised:
            trainer.train()
    finally:
        trainer.close()
    error = raised.value
    # Iteration 1 completed: the model is good, so it is checkpointed.
    path = os.path.join(str(tmp_path), 'ckpt', 'ckpt-1', 'ckpt')
    assert str(error) == ('training stopped at iteration 2: sensor unplugged. '
                          'A checkpoint was written at iteration 1 (%s): '
                          'rerun the same command to resume from it.' % path)
    assert error.checkpoint == path
    assert (error.kind, error.iteration) == ('environment', 2)
    assert isinstance(error.env_error, RuntimeError)
    assert error.__cause__ is error.env_error
    assert trainer.env.last_error is error.env_error


def test_a_stale_environment_error_is_not_blamed(tmp_path):
    config = TrainerConfig(root_dir=str(tmp_path),
                           algorithm_ctor=_small_actor_critic,
                           num_iterations=2, unroll_length=4)
    env = TFPyEnvironment(ValueUnittestEnv(batch_size=2, episode_length=4))
    env.last_error = ValueError('an old error from eager use')
    trainer = OnPolicyTrainer(config, env=env)
    try:
        assert trainer.train()['iterations'] == 2
        assert trainer.env is env and env.last_error is None
    finally:
        trainer.close()


def test_eager_mode_trains(tmp_path):
    result = train(str(tmp_path), [EXAMPLE], SMALL + [
        'TrainerConfig.use_tf_functions=False',
        'TrainerConfig.num_iterations=2', 'TrainerConfig.evaluate=False'
    ])
    assert result['iterations'] == 2


def test_legacy_adam_trains_checkpoints_and_resumes(tmp_path):
    """``@LegacyAdam()`` (tf_keras' fused-kernel Adam): its step count and
    moment slots are checkpointed and restored."""
    root = str(tmp_path / 'run')
    legacy = ['ActorCriticAlgorithm.optimizer=@LegacyAdam()',
              'LegacyAdam.learning_rate=1e-3']
    train(root, [EXAMPLE], SMALL + legacy)

    def optimizer_values(step):
        path = os.path.join(root, 'ckpt', 'ckpt-%d' % step, 'ckpt')
        names = [n for n, _ in tf.train.list_variables(path)]
        iters = [n for n in names if 'optimizer' in n and n.endswith(
            'iter/.ATTRIBUTES/VARIABLE_VALUE')]
        slots = [n for n in names if '.OPTIMIZER_SLOT' in n]
        assert len(iters) == 1 and slots, names
        return (int(tf.train.load_variable(path, iters[0])),
                {n: tf.train.load_variable(path, n) for n in slots})

    iterations, slots = optimizer_values(6)
    assert iterations == 6  # one update per on-policy iteration
    assert all(np.any(v != 0) for v in slots.values())
    gin.clear_config()
    train(root, [EXAMPLE], SMALL + legacy + ['TrainerConfig.num_iterations=9'])
    iterations, slots2 = optimizer_values(9)
    assert iterations == 9  # resumed from 6, not restarted
    assert slots2.keys() == slots.keys()


def test_no_score_is_shown_before_an_episode_ends(tmp_path, capsys):
    # One env, 4 steps per iteration: no CartPole episode ends in 4 steps
    # (the pole needs ~8 to fall), so iteration 1 has no score yet.
    root = str(tmp_path / 'run')
    result = train(root, [EXAMPLE], SMALL + [
        'create_environment.num_parallel_environments=1',
        'TrainerConfig.summary_interval=1', 'TrainerConfig.evaluate=False',
        'TrainerConfig.num_iterations=12',
        'TrainerConfig.progress_interval_secs=0'  # a line per call
    ])
    assert result['Metrics/NumberOfEpisodes'] > 0
    lines = [l for l in capsys.readouterr().out.splitlines()
             if l.startswith('iter ')]
    assert 'no episode ended yet' in lines[0], lines[0]
    assert 'AverageReturn' not in lines[0]
    assert 'AverageReturn' in lines[-1]
    events = _events(root, 'train')
    episodes = dict(events['Metrics/NumberOfEpisodes'])
    scored = [s for s, _ in events['Metrics/AverageReturn']]
    assert scored == [s for s in sorted(episodes) if episodes[s] > 0]
    assert 1 not in scored and len(episodes) == 12


class _GameEnv(ValueUnittestEnv):
    """Reports one 'game' per finished episode, scored 10 x its number."""

    def __init__(self):
        super().__init__(batch_size=2, episode_length=6)
        self._games = 0
        self._pending = []

    @property
    def reports_game_scores(self):
        return True

    def _step(self, action):
        ts = super()._step(action)
        for _ in range(int(np.sum(ts.step_type == 2))):
            self._games += 1
            self._pending.append(10.0 * self._games)
        return ts

    def pop_game_scores(self):
        scores, self._pending = self._pending, []
        return scores


def test_game_scores_are_summarized_shown_and_checkpointed(tmp_path, capsys):
    from alf_rl.utils.curves import read_scalar_events

    def run(iterations):
        config = TrainerConfig(root_dir=str(tmp_path),
                               algorithm_ctor=_small_actor_critic,
                               num_iterations=iterations, unroll_length=4,
                               iterations_per_call=1, summary_interval=1,
                               checkpoint_interval=2, evaluate=False,
                               progress_interval_secs=0)
        trainer = OnPolicyTrainer(config,
                                  env=TFPyEnvironment(_GameEnv()))
        try:
            return trainer.train(), trainer
        finally:
            trainer.close()

    result, trainer = run(4)
    # 4 iterations x 4 steps of 2 envs; the first games end in iteration 2.
    games = trainer.metrics.game_score.num_games
    assert games == int(result['Metrics/NumberOfEpisodes']) > 0
    expected = np.mean(10.0 * np.arange(1, games + 1)[-10:])
    assert result['Metrics/GameScore'] == pytest.approx(expected)
    assert 'game score %.1f' % expected in capsys.readouterr().out
    rows = read_scalar_events(os.path.join(str(tmp_path), 'train'),
                              'Metrics_vs_EnvironmentSteps/GameScore')
    assert rows and rows[-1][2] == pytest.approx(expected)
    # no summary before the first game ended
    first = read_scalar_events(os.path.join(str(tmp_path), 'train'),
                               'Metrics/GameScore')
    assert first[0][1] == 2
    # resumed: the games before the checkpoint are still counted
    result, trainer = run(6)
    assert trainer.metrics.game_score.num_games == int(
        result['Metrics/NumberOfEpisodes']) > games
