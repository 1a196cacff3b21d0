"""TrainerConfig: groups, the flat names gin files use, and the checks."""

import gin
import pytest

from alf_rl.trainers import (CheckpointConfig, EvaluationConfig,
                             ExecutionConfig, ReplayConfig, ReportConfig,
                             TrainerConfig)


def _algorithm(observation_spec, action_spec):
    raise AssertionError('not built in these tests')


def _config(**kwargs):
    return TrainerConfig(root_dir='/tmp/unused', algorithm_ctor=_algorithm,
                         **kwargs)


def test_flat_names_go_to_their_groups():
    config = _config(mini_batch_size=64, evaluate=True, eval_interval=5,
                     checkpoint_interval=7, summary_interval=3,
                     iterations_per_call=4)
    assert isinstance(config.replay, ReplayConfig)
    assert config.replay.mini_batch_size == 64
    assert config.replay.replay_buffer_capacity == 100000  # default
    assert (config.evaluation.evaluate, config.evaluation.eval_interval) == (
        True, 5)
    assert config.checkpoint.checkpoint_interval == 7
    assert config.report.summary_interval == 3
    assert config.execution.iterations_per_call == 4
    # Read back by the flat name too.
    assert config.mini_batch_size == 64 and config.eval_interval == 5


def test_groups_can_be_given_whole():
    replay = ReplayConfig(mini_batch_size=32, clear_replay_buffer=True)
    config = _config(replay=replay, evaluation=EvaluationConfig(),
                     checkpoint=CheckpointConfig(checkpoint_max_to_keep=1),
                     report=ReportConfig(progress_metrics=['X']),
                     execution=ExecutionConfig(jit_compile=True))
    assert config.replay is replay
    assert config.checkpoint.checkpoint_max_to_keep == 1
    assert config.report.progress_metrics == ('X', )
    assert config.execution.jit_compile


def test_a_group_and_one_of_its_settings_by_name_is_refused():
    with pytest.raises(ValueError, match="mini_batch_size is given twice, "
                       r"in replay=ReplayConfig\(...\) and by name"):
        _config(replay=ReplayConfig(), mini_batch_size=8)


def test_unknown_and_mistyped_settings_name_the_binding():
    with pytest.raises(TypeError, match="no setting named 'mini_batch'"):
        _config(mini_batch=8)
    with pytest.raises(TypeError, match=r"TrainerConfig.mini_batch_size: "
                       r"expected an int or None, got 2.5 \(float\)"):
        _config(mini_batch_size=2.5)
    with pytest.raises(ValueError, match='TrainerConfig.eval_interval must '
                       'be >= 1, got 0'):
        _config(eval_interval=0)
    with pytest.raises(TypeError, match='TrainerConfig.replay: expected a '
                       'ReplayConfig, got EvaluationConfig'):
        _config(replay=EvaluationConfig())
    with pytest.raises(AttributeError, match="no setting 'nope'"):
        _ = _config().nope


def test_gin_binds_the_flat_names_and_checks_them_when_parsing():
    gin.parse_config(['TrainerConfig.mini_batch_size = 16',
                      'TrainerConfig.strategy = None',
                      "TrainerConfig.root_dir = '/tmp/unused'"])
    config = TrainerConfig(algorithm_ctor=_algorithm)
    assert config.replay.mini_batch_size == 16
    with pytest.raises(ValueError, match="doesn't have a parameter named "
                       "'mini_batch'"):
        gin.parse_config('TrainerConfig.mini_batch = 16')
    # The operative config lists the flat names (config.gin as before).
    assert 'TrainerConfig.mini_batch_size = 16' in gin.operative_config_str()


def test_iterations_for_call_stops_at_the_next_due_interval():
    config = _config(num_iterations=100, summary_interval=10,
                     checkpoint_interval=25, evaluate=True, eval_interval=7,
                     iterations_per_call=50)
    assert config.iterations_for_call(0, None) == 7  # eval at 7
    assert config.iterations_for_call(7, None) == 3  # summary at 10
    assert config.iterations_for_call(98, None) == 2  # the budget
    auto = _config(num_iterations=1000, summary_interval=1000,
                   checkpoint_interval=1000, call_target_secs=0.5)
    assert auto.iterations_for_call(0, None) == 1  # not measured yet
    assert auto.iterations_for_call(0, 0.01) == 50
    assert auto.fraction_done(250, 0) == 0.25
    both = _config(num_iterations=100, num_env_steps=1000)
    assert both.fraction_done(10, 500) == 0.5
