"""``SkillGenerator``: a categorical skill drawn at FIRST steps and held
for the episode (the skill prior p(z) of DIAYN, Eysenbach et al. 2018,
"Diversity is All You Need").

The skill ``z`` is one of K, uniform (p(z) = 1/K, as the paper), given as
a [K] float32 one-hot. It is the generator's state: the caller resets the
state of FIRST rows to zeros (``reset_state_if_necessary``), and
``rollout``/``predict`` draw a new skill for those rows and keep the
state's skill for the others. ``train_step`` never draws: replayed rows
already carry their skill (in the observation the owning ``Agent`` stored),
and the state passed in is returned unchanged.

Draws use a stateless op seeded by ``make_stateless_seed()`` (the global
``tf.random.Generator``), once per step whatever the step types, so a
seeded run gives the same skills eagerly and compiled. Nothing is trained:
no variables, and ``calc_loss`` returns an unset ``LossInfo()``.
"""

from typing import Union

import gin
import numpy as np
import tensorflow as tf

from alf_rl.algorithms.algorithm import Algorithm
from alf_rl.data_structures import (AlgStep, Experience, LossInfo, TimeStep,
                                    TrainingInfo)
from alf_rl.utils.common import make_stateless_seed


@gin.configurable
class SkillGenerator(Algorithm):
    """Uniform categorical skills, drawn at FIRST steps and held.

    Its class attribute ``changes_goal_only_at_first`` is True: outside
    FIRST steps ``predict`` returns ``AlgStep(output=state, state=state,
    info=())``, so an ``Agent`` whose steps are never FIRST (an exported
    policy: the skill is its state input) need not run it.

    Args:
        num_skills: K >= 2, the number of skills.
        name: module name.

    Raises:
        ValueError: ``num_skills`` not an int, or below 2.
    """

    #: Outside FIRST steps the goal is the state, unchanged (see above).
    changes_goal_only_at_first = True

    def __init__(self, num_skills: int, name: str = 'SkillGenerator'):
        if (isinstance(num_skills, bool)
                or not isinstance(num_skills, (int, np.integer))
                or num_skills < 2):
            raise ValueError("%s: num_skills must be an int >= 2, got %r" %
                             (name, num_skills))
        self._num_skills = int(num_skills)
        self._skill_spec = tf.TensorSpec([self._num_skills], tf.float32)
        super().__init__(train_state_spec=self._skill_spec, name=name)

    @property
    def num_skills(self) -> int:
        """K, the number of skills."""
        return self._num_skills

    @property
    def output_spec(self) -> tf.TensorSpec:
        """``tf.TensorSpec([K], tf.float32)``: the one-hot skill (also the
        state spec of every step)."""
        return self._skill_spec

    # ------------------------------------------------------------ steps
    def _draw(self, inputs: Union[TimeStep, Experience],
              state: tf.Tensor) -> AlgStep:
        """A fresh uniform skill at FIRST rows, the state's elsewhere."""
        first = inputs.is_first()
        index = tf.random.stateless_uniform(
            tf.shape(first), seed=make_stateless_seed(), minval=0,
            maxval=self._num_skills, dtype=tf.int32)
        skill = tf.where(first[:, None],
                         tf.one_hot(index, self._num_skills), state)
        return AlgStep(output=skill, state=skill, info=())

    def predict(self, inputs: Union[TimeStep, Experience],
                state: tf.Tensor) -> AlgStep:
        """As ``rollout`` (skills are drawn in evaluation too)."""
        return self._draw(inputs, state)

    def rollout(self, inputs: Union[TimeStep, Experience],
                state: tf.Tensor) -> AlgStep:
        """One collection step: new skills at FIRST rows.

        Args:
            inputs: ``TimeStep`` (or ``Experience``) whose ``step_type`` is
                [B] int32 (nothing else is read).
            state: [B, K] float32 one-hot skills of the previous step
                (zeros at FIRST rows, reset by the caller).
        Returns:
            ``AlgStep(output=[B, K] float32 one-hot skill, state=the same,
            info=())``: a skill uniform over K at FIRST rows, the state's
            skill at the others.
        """
        return self._draw(inputs, state)

    def train_step(self, inputs: Union[TimeStep, Experience],
                   state: tf.Tensor) -> AlgStep:
        """Returns the state's skill unchanged; draws nothing.

        Args:
            inputs: ``Experience`` (or ``TimeStep``) with [B] leaves
                (unused).
            state: [B, K] float32 one-hot skills.
        Returns:
            ``AlgStep(output=state, state=state, info=())``.
        """
        del inputs
        return AlgStep(output=state, state=state, info=())

    # ------------------------------------------------------------ training
    def calc_loss(self, training_info: TrainingInfo) -> LossInfo:
        """Nothing to train: an unset ``LossInfo()``.

        Args:
            training_info: ``TrainingInfo`` with [T, B] leaves (unused).
        Returns:
            ``LossInfo()`` (every field ``()``).
        """
        del training_info
        return LossInfo()
