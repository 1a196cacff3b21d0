"""SkillGenerator: draws at FIRST rows only and holds the skill, uniform
over K, the same draws eagerly and compiled, train_step draws nothing."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.algorithms import SkillGenerator
from alf_rl.data_structures import (Experience, LossInfo, StepType, TimeStep,
                                    TrainingInfo)
from alf_rl.utils.common import reset_state_if_necessary, set_random_seed

F, M, L = StepType.FIRST, StepType.MID, StepType.LAST


def _time_step(step_type):
    return TimeStep(step_type=tf.constant(step_type, tf.int32))


def _rollout(gen, step_types, method='rollout'):
    """[T, B, K] skills of ``method`` over [T][B] step types, the state
    reset to zeros at FIRST rows as a driver does."""
    initial = gen.get_initial_rollout_state(len(step_types[0]))
    state, skills = initial, []
    for step_type in step_types:
        ts = _time_step(step_type)
        state = reset_state_if_necessary(state, initial, ts.is_first())
        step = getattr(gen, method)(ts, state)
        np.testing.assert_array_equal(step.state.numpy(), step.output.numpy())
        state = step.state
        skills.append(step.output.numpy())
    return np.stack(skills)


def test_specs_and_nothing_to_train():
    gen = SkillGenerator(5)
    spec = tf.TensorSpec([5], tf.float32)
    assert gen.num_skills == 5 and gen.output_spec == spec
    assert (gen.train_state_spec == gen.rollout_state_spec ==
            gen.predict_state_spec == spec)
    assert not gen.variables and not gen.trainable_variables
    assert gen.calc_loss(TrainingInfo()) == LossInfo()
    np.testing.assert_array_equal(gen.get_initial_rollout_state(3), 0.)


@pytest.mark.parametrize('method', ['rollout', 'predict'])
def test_draws_at_first_rows_only_and_holds_the_skill(method):
    set_random_seed(0)
    gen = SkillGenerator(4)
    # Row 0: one 6-step episode; row 1: episodes of 3; row 2: new episode
    # every step; row 3: episodes of 2.
    step_types = [[F, F, F, F], [M, M, F, L], [M, L, F, F],
                  [M, F, F, L], [M, M, F, F], [L, L, F, L]]
    skills = _rollout(gen, step_types, method)
    assert skills.shape == (6, 4, 4) and skills.dtype == np.float32
    # Every row is a one-hot.
    np.testing.assert_array_equal(skills.sum(-1), 1.)
    assert set(np.unique(skills)) == {0., 1.}
    index = skills.argmax(-1)
    first = np.array(step_types) == F
    for t in range(1, 6):
        held = ~first[t]
        np.testing.assert_array_equal(index[t][held], index[t - 1][held])
    # Row 2 draws six times: not all the same skill (seeded: a fixed fact).
    assert len(set(index[:, 2])) > 1


def test_skills_are_uniform_over_k():
    set_random_seed(0)
    num_skills, batch_size = 8, 4000
    gen = SkillGenerator(num_skills)
    state = gen.get_initial_rollout_state(batch_size)
    skills = gen.rollout(_time_step([F] * batch_size), state).output.numpy()
    counts = np.bincount(skills.argmax(-1), minlength=num_skills)
    # 500 expected each; binomial std ~20.9: 4 std either side.
    assert counts.shape == (num_skills, ) and counts.sum() == batch_size
    assert np.all(np.abs(counts - 500) < 84), counts
    # Consecutive calls draw different skills (new seeds each call).
    again = gen.rollout(_time_step([F] * batch_size), state).output.numpy()
    assert np.mean(again.argmax(-1) == skills.argmax(-1)) < 0.2


def test_eager_equals_compiled_under_the_same_seed():
    step_types = [[F, F, F], [M, F, M], [F, M, L], [F, F, F]]

    def run(compiled):
        set_random_seed(3)
        gen = SkillGenerator(6)
        rollout = tf.function(gen.rollout) if compiled else gen.rollout
        initial = gen.get_initial_rollout_state(3)
        state, out = initial, []
        for step_type in step_types:
            ts = _time_step(step_type)
            state = reset_state_if_necessary(state, initial, ts.is_first())
            state = rollout(ts, state).state
            out.append(state.numpy())
        return np.stack(out)

    eager, compiled = run(False), run(True)
    np.testing.assert_array_equal(compiled, eager)
    assert len(set(eager.argmax(-1).ravel())) > 1


def test_train_step_returns_the_state_and_draws_nothing():
    set_random_seed(0)
    gen = SkillGenerator(3)
    generator_state = tf.random.get_global_generator().state.numpy()
    state = tf.constant([[0., 1., 0.], [0., 0., 1.]])
    experience = Experience(step_type=tf.constant([F, M], tf.int32))
    step = gen.train_step(experience, state)
    np.testing.assert_array_equal(step.output.numpy(), state.numpy())
    np.testing.assert_array_equal(step.state.numpy(), state.numpy())
    assert step.info == ()
    np.testing.assert_array_equal(
        tf.random.get_global_generator().state.numpy(), generator_state)
    # rollout draws (one seed per call).
    gen.rollout(experience, state)
    assert not np.array_equal(
        tf.random.get_global_generator().state.numpy(), generator_state)


@pytest.mark.parametrize('num_skills', [1, 0, 2.0, True, '3', None])
def test_rejects_bad_num_skills(num_skills):
    with pytest.raises(ValueError,
                       match=r"num_skills must be an int >= 2, got"):
        SkillGenerator(num_skills)
    assert SkillGenerator(np.int64(2)).num_skills == 2
