"""``RLAlgorithm``: an ``Algorithm`` that acts in an environment.

Adds observation/action specs, ``transform_timestep`` (reward shaping and
observation transformers, applied identically at rollout and at replay) and
the default LAST-step masking of ``train_complete``.
"""

from typing import Any, Callable, List, Optional, Tuple, Union

import tensorflow as tf

from alf_rl.algorithms.algorithm import Algorithm
from alf_rl.algorithms.training_kind import TrainingKind
from alf_rl.data_structures import LossInfo, TimeStep, TrainingInfo
from alf_rl.specs import time_step_spec
from alf_rl.utils.common import valid_step_mask
from alf_rl.utils.nest import Nest
from alf_rl.utils.normalizers import update_reward_normalizer


class RLAlgorithm(Algorithm):
    """Base class of reinforcement-learning algorithms.

    Args:
        observation_spec: nest of specs of one observation (no batch dim).
        action_spec: nest of (bounded) specs of one action.
        reward_shaping_fn: optional callable ``[B] reward -> [B] reward``
            applied in ``transform_timestep``.
        observation_transformer: optional callable (or list of callables)
            ``observation nest -> observation nest`` applied in
            ``transform_timestep``.
        observation_normalizer_ctor: optional ``(observation_spec) ->
            normalizer`` (e.g. ``StreamingMeanVarNormalizer``); observations
            are normalized in ``transform_timestep`` after the transformers.
        reward_normalizer_ctor: optional ``() -> normalizer`` of scalar
            rewards (e.g. ``AdaptiveScalarNormalizer``), applied after
            reward shaping.
        reward_clip_value: if set, clip (normalized) rewards to [-c, c].
        **kwargs: passed to ``Algorithm`` (state specs, optimizer, clipping,
            name).
    """

    #: How the method is trained (``alf_rl.algorithms.training_kind``):
    #: set by ``OnPolicyAlgorithm`` (``UNROLL``), ``EpochTraining``
    #: (``EPOCHS``) and ``OffPolicyAlgorithm`` (``REPLAY``); None here (no
    #: trainer trains a bare ``RLAlgorithm``).
    training_kind: Optional[TrainingKind] = None

    #: Whether ``train_complete`` is the class's own update (TRAC's trust
    #: region) rather than ``Algorithm``'s single gradient update; an
    #: ``Agent``, which trains all its parts in one update, refuses it.
    has_own_update = False

    def __init__(self,
                 observation_spec: Nest,
                 action_spec: Nest,
                 reward_shaping_fn: Optional[Callable[[tf.Tensor],
                                                      tf.Tensor]] = None,
                 observation_transformer: Union[None, Callable,
                                                List[Callable]] = None,
                 observation_normalizer_ctor: Optional[Callable] = None,
                 reward_normalizer_ctor: Optional[Callable] = None,
                 reward_clip_value: Optional[float] = None,
                 name: str = 'RLAlgorithm',
                 **kwargs: Any):
        super().__init__(name=name, **kwargs)
        self._observation_spec = observation_spec
        self._action_spec = action_spec
        self._reward_shaping_fn = reward_shaping_fn
        if observation_transformer is None:
            observation_transformer = []
        elif callable(observation_transformer):
            observation_transformer = [observation_transformer]
        self._observation_transformers = list(observation_transformer)
        # Statistics are updated only where drivers ask (rollout); replayed
        # experience is normalized with them unchanged.
        self._observation_normalizer = (
            observation_normalizer_ctor(observation_spec)
            if observation_normalizer_ctor else None)
        self._reward_normalizer = (reward_normalizer_ctor()
                                   if reward_normalizer_ctor else None)
        self._reward_clip_value = reward_clip_value

    @property
    def observation_spec(self) -> Nest:
        """Nest of specs of one observation."""
        return self._observation_spec

    @property
    def action_spec(self) -> Nest:
        """Nest of specs of one action."""
        return self._action_spec

    @property
    def time_step_spec(self) -> TimeStep:
        """``TimeStep`` spec (no batch dim)."""
        return time_step_spec(self._observation_spec, self._action_spec)

    @property
    def use_rollout_state(self) -> bool:
        """Whether stored experience carries the rollout state (RNN
        policies trained from replay). False here; replay-trained
        algorithms (``ReplayTrainingMixin``) make it a setting."""
        return False

    def env_action(self, action: Nest) -> Nest:
        """The action the environment is stepped with, for an action that
        ``rollout`` returned.

        Drivers store ``rollout``'s action in the experience (it is what
        the policy's log-probability is trained on) and step the
        environment with ``env_action(action)``. The default returns it
        unchanged, so an action outside the spec's bounds still gets the
        environment's clear error.

        Args:
            action: nest of [B, ...] actions from ``rollout``.
        Returns:
            Nest of [B, ...] actions, the structure and dtypes of
            ``action_spec``.
        """
        return action

    def transform_timestep(self, time_step: Any,
                           update_normalizers: bool = False) -> Any:
        """Reward shaping and normalization, observation transformers and
        normalization: the same transformation at rollout and at replay.

        Args:
            time_step: ``TimeStep`` or ``Experience`` with [B, ...] or
                [T, B, ...] leaves.
            update_normalizers: fold this batch into the normalizers'
                statistics first (drivers do so at rollout; training on
                replayed data does not).
        Returns:
            The same structure with transformed reward and observation.
        """
        return time_step._replace(
            reward=self.transform_reward(time_step, update_normalizers),
            observation=self.transform_observation(
                time_step.observation, time_step.step_type.shape.rank,
                update_normalizers))

    @property
    def has_observation_transforms(self) -> bool:
        """Whether ``transform_observation`` changes observations (an
        observation transformer or normalizer is configured)."""
        return bool(self._observation_transformers or
                    self._observation_normalizer is not None)

    def transform_reward(self, time_step: Any,
                         update_normalizers: bool = False) -> tf.Tensor:
        """The reward part of ``transform_timestep``: shaping, then
        normalization, then clipping.

        Args:
            time_step: ``TimeStep`` or ``Experience`` with [B] or [T, B]
                ``reward`` and ``step_type``.
            update_normalizers: fold the (shaped) rewards into the reward
                normalizer's statistics first.
        Returns:
            float32 rewards shaped like ``time_step.reward``.
        """
        reward = time_step.reward
        if self._reward_shaping_fn is not None:
            reward = self._reward_shaping_fn(reward)
        if self._reward_normalizer is not None:
            if update_normalizers:
                update_reward_normalizer(self._reward_normalizer, reward,
                                         time_step.step_type)
            reward = self._reward_normalizer.normalize(reward)
        if self._reward_clip_value:
            reward = tf.clip_by_value(reward, -self._reward_clip_value,
                                      self._reward_clip_value)
        return reward

    def transform_observation(self, observation: Nest, outer_rank: int,
                              update_normalizers: bool = False) -> Nest:
        """The observation part of ``transform_timestep``: transformers,
        then normalization.

        Args:
            observation: nest of [B, ...] or [T, B, ...] observations.
            outer_rank: 1 or 2, the number of outer (batch/time) dims.
            update_normalizers: fold them into the observation
                normalizer's statistics first.
        Returns:
            The transformed observation nest.
        """
        for transformer in self._observation_transformers:
            observation = transformer(observation)
        if self._observation_normalizer is not None:
            if update_normalizers:
                self._observation_normalizer.update(observation, outer_rank)
            observation = self._observation_normalizer.normalize(
                observation, outer_rank)
        return observation

    def train_complete(self,
                       tape: tf.GradientTape,
                       training_info: TrainingInfo,
                       valid_masks: Optional[tf.Tensor] = None,
                       weight: float = 1.0,
                       per_step_loss_info: Optional[LossInfo] = None
                       ) -> Tuple[LossInfo, list]:
        """``Algorithm.train_complete`` with LAST steps masked by default.

        Args:
            tape: ``tf.GradientTape`` of the forward pass.
            training_info: ``TrainingInfo`` with [T, B, ...] leaves.
            valid_masks: [T, B] float mask; defaults to ``step_type != LAST``.
            weight: scalar loss weight.
            per_step_loss_info: as ``Algorithm.train_complete``.
        Returns:
            ``(loss_info, grads_and_vars)``.
        """
        if valid_masks is None:
            valid_masks = valid_step_mask(training_info.step_type)
        return super().train_complete(tape, training_info, valid_masks,
                                      weight, per_step_loss_info)
