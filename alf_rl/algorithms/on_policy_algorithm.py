"""``OnPolicyAlgorithm``: trained from the on-policy unroll of a driver.

Its ``rollout`` runs under the driver's ``GradientTape``, so the infos it
returns carry gradients to the loss. ``train_step`` replays ``rollout`` on
stored experience, so the same algorithm can also be trained from a replay
buffer (off-policy actor-critic, PPO's mini-batch epochs).
"""

from typing import Any

from alf_rl.algorithms.replay_training import ReplayTrainingMixin
from alf_rl.algorithms.rl_algorithm import RLAlgorithm
from alf_rl.data_structures import (Experience, PolicyStep,
                                    experience_to_time_step)


class OnPolicyAlgorithm(ReplayTrainingMixin, RLAlgorithm):
    """An ``RLAlgorithm`` whose ``train_step`` is its ``rollout``.

    Args:
        observation_spec: nest of specs of one observation.
        action_spec: nest of specs of one action.
        use_rollout_state: when trained from replay (PPO, off-policy
            actor-critic) with recurrent networks: store the rollout state
            in the experience and start each training sequence from it.
            The on-policy driver always carries the state itself.
        **kwargs: passed to ``RLAlgorithm``.
    """

    def __init__(self,
                 observation_spec: Any,
                 action_spec: Any,
                 use_rollout_state: bool = False,
                 **kwargs: Any):
        super().__init__(observation_spec, action_spec,
                         use_rollout_state=use_rollout_state, **kwargs)

    def train_step(self, experience: Experience, state: Any) -> PolicyStep:
        """``rollout`` on the ``TimeStep`` part of ``experience``.

        Args:
            experience: ``Experience`` with [B, ...] leaves.
            state: nest matching ``train_state_spec``.
        Returns:
            ``PolicyStep`` as from ``rollout``.
        """
        return self.rollout(experience_to_time_step(experience), state)
