"""The training half of ``Agent`` (``alf_rl.algorithms.agent``): the
reward mix, ``preprocess_experience``, the summed loss, ``after_train``,
each on its part's own view of the batch, and the RL algorithm's view of
the training info and the loss (what ``DelegatedHooks`` needs to run the
RL algorithm's replay hooks for the agent).
"""

from typing import Any, Tuple, Union

import tensorflow as tf

from alf_rl.algorithms.agent_parts import (AgentInfo, AgentLossInfo,
                                           action_distribution, merged_apply,
                                           sum_part_losses)
from alf_rl.data_structures import Experience, LossInfo, TrainingInfo
from alf_rl.ops.masks import is_unset


class AgentTraining(object):
    """Mixed into ``Agent``: how its parts are trained together. Uses the
    agent's parts (``_rl_algorithm``, ``_intrinsic_module``,
    ``_entropy_target``, ``_goal_generator``, ``_encoding_network``) and
    reward coefficients."""

    # Set by ``Agent.__init__`` (declared here for the type checker).
    _rl_algorithm: Any
    _intrinsic_module: Any
    _entropy_target: Any
    _goal_generator: Any
    _encoding_network: Any
    _extrinsic_reward_coef: float
    _intrinsic_reward_coef: float

    def training_reward(self, reward: tf.Tensor,
                        intrinsic_reward: Union[tf.Tensor, tuple]
                        ) -> tf.Tensor:
        """``extrinsic_reward_coef * reward + intrinsic_reward_coef *
        intrinsic_reward`` (the extrinsic part alone without a module).

        Args:
            reward: [T, B] (or [B]) float32 transformed rewards.
            intrinsic_reward: the same shape, or ``()``.
        Returns:
            float32 tensor shaped like ``reward``.
        """
        mixed = self._extrinsic_reward_coef * reward
        if not is_unset(intrinsic_reward):
            mixed += self._intrinsic_reward_coef * tf.convert_to_tensor(
                intrinsic_reward)
        return mixed

    def preprocess_experience(self, experience: Experience) -> Experience:
        """The RL algorithm's ``preprocess_experience`` on the training
        reward (e.g. PPO's advantages of the mixed reward).

        Args:
            experience: ``Experience`` with [T, B, ...] leaves and
                ``AgentInfo`` rollout info.
        Returns:
            The processed experience: the RL algorithm's changes, the
            extrinsic reward and the observation kept, the rollout info an
            ``AgentInfo`` again.
        """
        info = experience.rollout_info
        observation = experience.observation
        if self._encoding_network is not None:
            observation = merged_apply(self._encoding_network, observation)
        if self._goal_generator is not None:
            observation = (observation, info.goal)
        processed = self._rl_algorithm.preprocess_experience(
            experience._replace(
                reward=self.training_reward(experience.reward,
                                            info.intrinsic_reward),
                observation=observation,
                rollout_info=info.rl))
        return processed._replace(
            reward=experience.reward,
            observation=experience.observation,
            rollout_info=info._replace(rl=processed.rollout_info))

    def inner_training_info(self, training_info: TrainingInfo
                            ) -> TrainingInfo:
        """The RL algorithm's view of ``training_info`` ([T, B] leaves,
        ``AgentInfo`` infos): its infos, rewarded with the training
        reward (``DelegatedHooks``)."""
        return self._rl_training_info(training_info)[0]

    def inner_loss_info(self, per_step_loss_info: LossInfo) -> LossInfo:
        """The RL algorithm's per-step loss (``loss`` [T, B]) and extras
        in the agent's ``LossInfo`` (``DelegatedHooks``)."""
        extra = per_step_loss_info.extra
        return LossInfo(loss=extra.rl_loss, extra=extra.rl)

    def _rl_training_info(self, training_info: TrainingInfo
                          ) -> Tuple[TrainingInfo, Any]:
        """The RL algorithm's view: its infos and the training reward."""
        stored = training_info.rollout_info
        replayed = isinstance(stored, AgentInfo)
        intrinsic_reward = (stored if replayed else
                            training_info.info).intrinsic_reward
        return training_info._replace(
            reward=self.training_reward(training_info.reward,
                                        intrinsic_reward),
            info=training_info.info.rl,
            rollout_info=stored.rl if replayed else stored), intrinsic_reward

    def calc_loss(self, training_info: TrainingInfo) -> LossInfo:
        """The sum of every part's per-step loss.

        Args:
            training_info: ``TrainingInfo`` with [T, B, ...] leaves and
                ``AgentInfo`` infos (``rollout_info`` ``()`` on-policy,
                the stored ``AgentInfo`` from replay).
        Returns:
            ``LossInfo(loss=[T, B], scalar_loss, extra=AgentLossInfo)``.
        """
        rl_info, intrinsic_reward = self._rl_training_info(training_info)
        info = training_info.info
        if self._entropy_target is not None:  # checked first
            entropy_loss = self._entropy_target.calc_loss(
                action_distribution(self._rl_algorithm, info.rl),
                step_type=training_info.step_type)
        parts = {'rl': self._rl_algorithm.calc_loss(rl_info)}
        if self._intrinsic_module is not None:
            parts['intrinsic'] = self._intrinsic_module.calc_loss(
                training_info._replace(info=info.intrinsic, rollout_info=()))
        if self._entropy_target is not None:
            parts['entropy_target'] = entropy_loss
        if self._goal_generator is not None:
            parts['goal'] = self._goal_generator.calc_loss(
                training_info._replace(info=info.goal_info, rollout_info=()))
        total = sum_part_losses(parts)
        return total._replace(extra=AgentLossInfo(
            extrinsic_reward=training_info.reward,
            intrinsic_reward=intrinsic_reward,
            training_reward=rl_info.reward, **total.extra))

    def after_train(self, training_info: TrainingInfo) -> None:
        """Every part's ``after_train`` on its own view of the batch (the
        entropy target's controller on the RL algorithm's infos)."""
        rl_info, _ = self._rl_training_info(training_info)
        self._rl_algorithm.after_train(rl_info)
        if self._intrinsic_module is not None:
            self._intrinsic_module.after_train(training_info._replace(
                info=training_info.info.intrinsic, rollout_info=()))
        if self._entropy_target is not None:
            self._entropy_target.after_train(rl_info)
        if self._goal_generator is not None:
            self._goal_generator.after_train(training_info._replace(
                info=training_info.info.goal_info, rollout_info=()))
