"""The interfaces parts of an algorithm declare (``typing.Protocol``s).

- ``ReplayHooks``: the hooks a method trained through replay training
  (``ReplayTrainingMixin``) may provide, and the capabilities it declares
  (class attributes, never inferred by comparing methods with a base).
- ``IntrinsicRewardModule``: what an ``Agent`` relies on of its
  intrinsic-reward module (``IcmAlgorithm``, ``RNDAlgorithm``,
  ``DIAYNAlgorithm`` or your own).
- ``GoalGenerator``: what an ``Agent`` relies on of its goal/skill
  generator (``SkillGenerator`` or your own).
- ``HasActionDistribution``: a step info that carries the policy's
  action distribution (what an ``Agent``'s entropy target reads).

All are ``runtime_checkable``: ``isinstance(x, IntrinsicRewardModule)``
checks that the members exist (not their signatures);
``tests/algorithms/test_protocols.py`` checks each library class that
claims a protocol against it.
"""

from typing import Any, List, Optional, Protocol, runtime_checkable

import tensorflow as tf

from alf_rl.algorithms.training_kind import TrainingKind
from alf_rl.data_structures import (AlgStep, Experience, LossInfo,
                                    PolicyStep, TrainingInfo)
from alf_rl.utils.nest import Nest


@runtime_checkable
class ReplayHooks(Protocol):
    """The replay-training hooks and declared capabilities of a method.

    ``ReplayTrainingMixin`` (hence ``OnPolicyAlgorithm`` and
    ``OffPolicyAlgorithm``) provides every member with its default; a
    method overrides a hook and declares the matching capability:

    - ``training_kind``: how it is trained (``TrainingKind``; set by the
      base class, ``EPOCHS`` by mixing in ``EpochTraining``).
    - ``last_row_only_bootstraps`` (default True): the last row of every
      training sequence only bootstraps the rows before it: it runs
      ``bootstrap_step`` and its loss is masked. False for methods whose
      targets come precomputed from ``preprocess_experience`` (PPO).
    - ``has_first_train_step`` (default False): True when the class
      provides its own ``first_train_step``; only then is row 0 of a
      sequence run by it (with ``last_row_only_bootstraps``).
    - ``gives_priorities`` (default False): True when ``calc_priority``
      returns priorities (mix in ``TDErrorPriority``); prioritized replay
      is refused before training otherwise.
    - ``bootstrap_step(experience, state)``: ``train_step`` for the last
      row of a sequence, which only provides targets ([B, ...] leaves).
    - ``first_train_step(experience, state)``: ``train_step`` for the
      first row, whose target values nothing reads.
    - ``training_rows(experience)``: the rows of a replayed [L, b]
      mini-batch that an update unrolls (all by default; DQN's
      ``loss_rows='first'`` folds them into two).
    - ``calc_priority(training_info, per_step_loss_info)``: [b] priorities
      after an update on [L, b] rows, or None.
    - ``continue_training(training_info, valid_masks)``: bool scalar, False
      stops the remaining updates of ``train`` (PPO's KL early stop).

    A composite that trains one inner algorithm with other parts
    (``Agent``) has the inner algorithm's members through
    ``DelegatedHooks`` (``alf_rl.algorithms.delegated_hooks``), which
    implements every member listed here.
    """

    training_kind: TrainingKind
    last_row_only_bootstraps: bool
    has_first_train_step: bool
    gives_priorities: bool

    def bootstrap_step(self, experience: Experience,
                       state: Nest) -> PolicyStep:
        """One last (bootstrap-only) row; as ``train_step``."""

    def first_train_step(self, experience: Experience,
                         state: Nest) -> PolicyStep:
        """One first row (no target values needed); as ``train_step``."""

    def training_rows(self, experience: Experience) -> Experience:
        """The [L', b] rows an update unrolls from replayed [L, b] ones."""

    def calc_priority(self, training_info: TrainingInfo,
                      per_step_loss_info: LossInfo) -> Optional[tf.Tensor]:
        """[b] float32 priorities of the [L, b] rows, or None."""

    def continue_training(self, training_info: TrainingInfo,
                          valid_masks: tf.Tensor) -> tf.Tensor:
        """bool scalar: whether ``train`` goes on after this update."""


@runtime_checkable
class HasActionDistribution(Protocol):
    """A step info with the policy's ``action_distribution`` (a nest of
    distributions with batch [B]; e.g. ``ActorCriticInfo``, ``SacInfo``).
    An ``Agent``'s entropy target needs its RL algorithm's info to be one.
    """

    action_distribution: Nest


@runtime_checkable
class IntrinsicRewardModule(Protocol):
    """An intrinsic-reward module, as an ``Agent`` uses it.

    - Built by ``Agent`` as ``ctor(observation_spec=, action_spec=)`` with
      the observation spec the RL algorithm sees (a module that does not
      need the action spec accepts and ignores it).
    - ``rollout(time_step, state)``, ``predict(time_step, state)`` and
      ``train_step(time_step_or_experience, state)`` take a ``TimeStep``
      or an ``Experience`` with [B, ...] leaves (``observation``,
      ``prev_action``, ``step_type`` are read) and return
      ``AlgStep(output=[B] float32 intrinsic reward with stopped gradient,
      state=..., info=...)``. The reward returned at step t is for the
      transition INTO step t (the library's convention for ``reward[t]``),
      and 0 at FIRST steps.
    - Normalizer statistics change only in ``rollout``; ``predict`` and
      ``train_step`` use them unchanged (``rollout_owned_variables``
      names them, for asynchronous actors).
    - ``calc_loss(training_info)`` takes a ``TrainingInfo`` whose ``info``
      holds the steps' infos with [T, B] leaves (or those infos
      themselves) and returns a per-step ``LossInfo`` (``loss`` [T, B];
      each component in ``extra`` under its name: ICM ``forward_loss`` and
      ``inverse_loss``, RND ``prediction_loss``, DIAYN the ``DIAYNInfo``).
    - ``rollout_state_spec``/``train_state_spec`` declare the state; rows
      are reset by the caller at FIRST steps
      (``reset_state_if_necessary``), and FIRST steps are also masked
      inside, so a stale state never leaks a reward or a loss across
      episodes.
    - Each module may have its own ``optimizer``; ``None`` lets the owning
      algorithm's optimizer train it.
    """

    @property
    def rollout_state_spec(self) -> Nest:
        """State spec of ``rollout`` (no batch dim)."""

    @property
    def train_state_spec(self) -> Nest:
        """State spec of ``train_step`` (no batch dim)."""

    def rollout(self, inputs: Any, state: Nest) -> AlgStep:
        """[B] intrinsic reward of a collected step."""

    def train_step(self, inputs: Any, state: Nest) -> AlgStep:
        """[B] intrinsic reward of a replayed row (statistics unchanged)."""

    def calc_loss(self, training_info: TrainingInfo) -> LossInfo:
        """Per-step [T, B] ``LossInfo``."""

    def after_train(self, training_info: TrainingInfo) -> None:
        """State changes after the update."""

    def rollout_owned_variables(self) -> List[tf.Variable]:
        """Variables ``rollout`` advances (normalizer statistics)."""


@runtime_checkable
class GoalGenerator(Protocol):
    """A goal/skill generator, as an ``Agent`` uses it.

    Its step output (the goal, [B, ...] of ``output_spec``) is paired with
    the observation: the RL algorithm and the intrinsic-reward module see
    ``(observation, goal)``. On replayed rows the stored goal is used;
    ``calc_loss``/``after_train`` see its own infos.
    ``changes_goal_only_at_first``: True when, outside FIRST steps,
    ``predict`` returns the state as the goal (an exported policy then
    takes the goal as its state input and does not run the generator).
    """

    changes_goal_only_at_first: bool

    @property
    def output_spec(self) -> tf.TensorSpec:
        """Spec of one goal (no batch dim)."""

    @property
    def rollout_state_spec(self) -> Nest:
        """State spec of ``rollout`` (no batch dim)."""

    @property
    def predict_state_spec(self) -> Nest:
        """State spec of ``predict`` (no batch dim)."""

    def predict(self, inputs: Any, state: Nest) -> AlgStep:
        """The goal at evaluation."""

    def rollout(self, inputs: Any, state: Nest) -> AlgStep:
        """The goal of a collected step."""

    def calc_loss(self, training_info: TrainingInfo) -> LossInfo:
        """Per-step [T, B] ``LossInfo``."""

    def after_train(self, training_info: TrainingInfo) -> None:
        """State changes after the update."""

    def rollout_owned_variables(self) -> List[tf.Variable]:
        """Variables ``rollout`` advances."""
