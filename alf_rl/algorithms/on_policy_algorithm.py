"""``OnPolicyAlgorithm``: trained on the driver's unroll (A2C), and
``EpochTraining``: trained in epochs over what one iteration collected (PPO).

An ``OnPolicyAlgorithm``'s ``rollout`` runs under the driver's
``GradientTape`` (``OnPolicyTrainer``), so the infos it returns carry
gradients to the loss: one update per unroll (``TrainingKind.UNROLL``).
``train_step`` replays ``rollout`` on stored experience, so the same
algorithm can also be trained from replay (``OffPolicyTrainer``: off-policy
actor-critic). Mixing in ``EpochTraining`` makes a method trained in epochs
of mini-batches over what one iteration collected (``TrainingKind.EPOCHS``,
``OffPolicyTrainer`` with ``clear_replay_buffer=True``).
"""

from typing import Any

from alf_rl.algorithms.replay_training import ReplayTrainingMixin
from alf_rl.algorithms.rl_algorithm import RLAlgorithm
from alf_rl.algorithms.training_kind import TrainingKind
from alf_rl.data_structures import (Experience, PolicyStep,
                                    experience_to_time_step)


class OnPolicyAlgorithm(ReplayTrainingMixin, RLAlgorithm):
    """An ``RLAlgorithm`` trained on the driver's unroll, whose
    ``train_step`` is its ``rollout``.

    Args:
        observation_spec: nest of specs of one observation.
        action_spec: nest of specs of one action.
        use_rollout_state: when trained from replay (PPO, off-policy
            actor-critic) with recurrent networks: store the rollout state
            in the experience and start each training sequence from it.
            The on-policy driver always carries the state itself.
        **kwargs: passed to ``RLAlgorithm``.
    """

    training_kind = TrainingKind.UNROLL

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


class EpochTraining(object):
    """Mixed in before an ``OnPolicyAlgorithm`` base: trained in epochs of
    mini-batches over what one iteration collected (PPO).

    Its targets are computed beforehand over the whole iteration, in
    ``preprocess_experience``, so every row of a mini-batch trains and
    counts (``last_row_only_bootstraps = False``; sequences may be one
    step long).
    """

    training_kind = TrainingKind.EPOCHS
    last_row_only_bootstraps = False
