"""``DelegatedHooks``: the replay hooks and capabilities of a composite
algorithm are those of the one algorithm it wraps.

A composite (``Agent``) trains one inner RL algorithm together with other
parts. How it is trained is the inner algorithm's: its ``training_kind``
and the other capabilities of the ``ReplayHooks`` protocol, its hooks
(``bootstrap_step``, ``first_train_step``, ``calc_priority``,
``continue_training``) and its update gate (``should_apply``). The
composite does not forward them one by one: it mixes in
``DelegatedHooks`` (before ``ReplayTrainingMixin``) and says once how its
data maps to the inner algorithm's:

- ``hooks_source``: the inner algorithm (a ``ReplayHooks``);
- ``outer_step(experience, state, inner_step)``: one replayed row
  ([B, ...] leaves) of the composite, with ``inner_step`` (one of the
  inner algorithm's step hooks) as the inner algorithm's step;
- ``inner_training_info(training_info)``: the inner algorithm's view of
  the composite's [T, B] ``TrainingInfo``;
- ``inner_loss_info(per_step_loss_info)``: the inner algorithm's part of
  the composite's per-step ``LossInfo``.

Every member of ``ReplayHooks`` is implemented here from these four, so
a hook or capability added to the base is added here too (beside its
default in ``ReplayTrainingMixin``), never to a composite;
``tests/algorithms/test_protocols.py`` checks that this class covers the
protocol and that ``Agent`` defines none of its members.
"""

from typing import Any, Callable, Optional, Union

import tensorflow as tf

from alf_rl.algorithms.training_kind import TrainingKind
from alf_rl.data_structures import (
    Experience,
    LossInfo,
    PolicyStep,
    TrainingInfo,
)
from alf_rl.utils.nest import Nest

#: One step hook: ``(experience row, state) -> PolicyStep``.
StepHook = Callable[[Experience, Nest], PolicyStep]


class DelegatedHooks(object):
    """Mixin: the replay hooks, capabilities and update gate of the inner
    algorithm, through the composite's four translations (see the module
    docstring). The translations raise ``NotImplementedError`` here."""

    # ------------------------------------------------ what a composite gives
    @property
    def hooks_source(self) -> Any:
        """The inner algorithm whose hooks and capabilities these are (an
        ``RLAlgorithm`` following ``ReplayHooks``)."""
        raise NotImplementedError()

    def outer_step(
        self, experience: Experience, state: Nest, inner_step: StepHook
    ) -> PolicyStep:
        """One replayed row of the composite with ``inner_step`` as the
        inner algorithm's step.

        Args:
            experience: ``Experience`` row with [B, ...] leaves (the
                composite's rollout info).
            state: the composite's train state.
            inner_step: one of the inner algorithm's step hooks.
        Returns:
            The composite's ``PolicyStep``.
        """
        raise NotImplementedError()

    def inner_training_info(self, training_info: TrainingInfo) -> TrainingInfo:
        """The inner algorithm's view of ``training_info`` ([T, B] leaves,
        the composite's infos)."""
        raise NotImplementedError()

    def inner_loss_info(self, per_step_loss_info: LossInfo) -> LossInfo:
        """The inner algorithm's part of the composite's per-step
        ``LossInfo`` (``loss`` [T, B])."""
        raise NotImplementedError()

    # ------------------------------------------------ ReplayHooks, delegated
    @property
    def training_kind(self) -> Optional[TrainingKind]:
        """The inner algorithm's ``training_kind``."""
        return self.hooks_source.training_kind

    @property
    def last_row_only_bootstraps(self) -> bool:
        """The inner algorithm's ``last_row_only_bootstraps``."""
        return self.hooks_source.last_row_only_bootstraps

    @property
    def has_first_train_step(self) -> bool:
        """The inner algorithm's ``has_first_train_step``."""
        return self.hooks_source.has_first_train_step

    @property
    def gives_priorities(self) -> bool:
        """The inner algorithm's ``gives_priorities``."""
        return self.hooks_source.gives_priorities

    def bootstrap_step(
        self, experience: Experience, state: Nest
    ) -> PolicyStep:
        """The composite's row with the inner ``bootstrap_step``."""
        return self.outer_step(
            experience, state, self.hooks_source.bootstrap_step
        )

    def first_train_step(
        self, experience: Experience, state: Nest
    ) -> PolicyStep:
        """The composite's row with the inner ``first_train_step``."""
        return self.outer_step(
            experience, state, self.hooks_source.first_train_step
        )

    def training_rows(self, experience: Experience) -> Experience:
        """The inner algorithm's ``training_rows`` of the composite's
        replayed [L, b] experience (a fold only selects and combines rows,
        so it applies to the composite's leaves as to the inner's)."""
        return self.hooks_source.training_rows(experience)

    def calc_priority(
        self, training_info: TrainingInfo, per_step_loss_info: LossInfo
    ) -> Optional[tf.Tensor]:
        """The inner algorithm's [b] priorities (or None) on its view of
        the [L, b] rows and of the loss."""
        return self.hooks_source.calc_priority(
            self.inner_training_info(training_info),
            self.inner_loss_info(per_step_loss_info),
        )

    def continue_training(
        self, training_info: TrainingInfo, valid_masks: tf.Tensor
    ) -> tf.Tensor:
        """The inner algorithm's early stop (bool scalar) on its view of
        the [L, b] rows."""
        return self.hooks_source.continue_training(
            self.inner_training_info(training_info), valid_masks
        )

    # ------------------------------------------------ Algorithm's gate
    def should_apply(self, optimizer: Any) -> Union[bool, tf.Tensor]:
        """The inner algorithm's gate of an optimizer's update (TD3's
        delayed actor)."""
        return self.hooks_source.should_apply(optimizer)
