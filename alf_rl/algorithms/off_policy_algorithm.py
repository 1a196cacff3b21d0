"""``OffPolicyAlgorithm``: trained from a replay buffer
(``TrainingKind.REPLAY``: SAC, DQN, DDPG, TD3, SARSA).

Collection (``rollout``) runs without a tape and its experience goes to a
replay buffer; training (``train``, from ``ReplayTrainingMixin`` in
``replay_training.py``) recomputes ``train_step`` over sampled sequences
under a tape.
"""

from typing import Any

from alf_rl.algorithms.replay_training import ReplayTrainingMixin
from alf_rl.algorithms.rl_algorithm import RLAlgorithm
from alf_rl.algorithms.training_kind import TrainingKind


class OffPolicyAlgorithm(ReplayTrainingMixin, RLAlgorithm):
    """Base class of algorithms trained from a replay buffer
    (``OffPolicyTrainer``, ``AsyncOffPolicyTrainer``).

    Subclasses implement ``rollout`` (exploration), ``predict`` (greedy),
    ``train_step(experience, state)`` (recomputation on one replayed step,
    [B, ...] leaves) and ``calc_loss(training_info)`` ([T, B] losses; the
    last row only bootstraps), and ``after_train`` for target updates.

    Args:
        observation_spec: nest of specs of one observation.
        action_spec: nest of specs of one action.
        use_rollout_state: store the rollout state in the experience and
            start each training sequence from it (for RNN policies); else
            sequences start from the initial train state.
        **kwargs: passed to ``RLAlgorithm``.
    """

    training_kind = TrainingKind.REPLAY

    def __init__(self,
                 observation_spec: Any,
                 action_spec: Any,
                 use_rollout_state: bool = False,
                 **kwargs: Any):
        super().__init__(observation_spec, action_spec,
                         use_rollout_state=use_rollout_state, **kwargs)
