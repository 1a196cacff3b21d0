"""Rewards for planning: a known reward function, or one learned from
replay (``RewardEstimationAlgorithm``).

A reward function maps a batch of observations and actions to rewards:
``reward_fn(observation [N, d], action [N, A]) -> [N]``, the reward of
taking ``action`` in ``observation`` (what arrives with the next step).
"""

from typing import Any, Optional, Tuple

import gin
import tensorflow as tf

from alf_rl.algorithms.dynamics_learning_algorithm import (
    TransitionModelAlgorithm,
)
from alf_rl.networks.ensemble_network import EnsembleNetwork


@gin.configurable
def pendulum_reward(observation: tf.Tensor, action: tf.Tensor) -> tf.Tensor:
    """``Pendulum-v1``'s reward from its observation:

        r = -(theta^2 + 0.1 thetadot^2 + 0.001 clip(u, -2, 2)^2),
        theta = atan2(sin theta, cos theta) in [-pi, pi]

    (gymnasium's ``angle_normalize(th)``, computed from the observation).

    Args:
        observation: [N, 3] ``(cos theta, sin theta, thetadot)``.
        action: [N, 1] torque u.
    Returns:
        [N] float32.
    """
    theta = tf.atan2(observation[:, 1], observation[:, 0])
    torque = tf.clip_by_value(action[:, 0], -2.0, 2.0)
    return -(
        tf.square(theta)
        + 0.1 * tf.square(observation[:, 2])
        + 0.001 * tf.square(torque)
    )


@gin.configurable
class RewardEstimationAlgorithm(TransitionModelAlgorithm):
    """A network regressing ``r(s_t, a_t)`` (the reward arriving with step
    t+1) on replayed transitions, for planning where the reward function
    is not known.

    Args:
        observation_spec: see ``TransitionModelAlgorithm``.
        action_spec: see ``TransitionModelAlgorithm``.
        hidden_layers: the MLP's hidden sizes.
        optimizer: see ``TransitionModelAlgorithm``.
        name: module name.
    """

    def __init__(
        self,
        observation_spec: Any,
        action_spec: Any,
        hidden_layers: Tuple[int, ...] = (200, 200),
        optimizer: Optional[Any] = None,
        name: str = 'RewardEstimationAlgorithm',
    ):
        super().__init__(observation_spec, action_spec, optimizer, name)
        self._network = EnsembleNetwork(
            self.input_size,
            1,
            ensemble_size=1,
            hidden_layers=hidden_layers,
            probabilistic=False,
            name='reward_network',
        )

    def __call__(self, observation: tf.Tensor, action: tf.Tensor) -> tf.Tensor:
        """The estimated reward (a reward function).

        Args:
            observation: [N, d].
            action: [N, A].
        Returns:
            [N] float32.
        """
        return self._network(self.joint(observation, action)[None])[0][0, :, 0]

    def prediction_loss(
        self, observation: tf.Tensor, action: tf.Tensor, reward: tf.Tensor
    ) -> tf.Tensor:
        """Squared error of the estimate.

        Args:
            observation: [N, d] s_t.
            action: [N, A] a_t.
            reward: [N] the reward that arrived with step t+1.
        Returns:
            [N] float32.
        """
        return tf.square(self(observation, action) - reward)
