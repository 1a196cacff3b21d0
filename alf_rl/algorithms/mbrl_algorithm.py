"""``MbrlAlgorithm``: model-based RL that plans with a learned model
(PETS: Chua et al. 2018, "Deep Reinforcement Learning in a Handful of
Trials using Probabilistic Dynamics Models").

``rollout`` and ``predict`` plan: a planner (``CEMPlanner`` or
``RandomShootingPlanner``) scores action sequences with the learned
``DynamicsLearningAlgorithm`` and a reward function (known, e.g.
``pendulum_reward``, or learned by a ``RewardEstimationAlgorithm``), and
the first action of the best plan is taken. Training fits the model (and
the learned reward) to transitions sampled from the replay buffer, so the
method trains with ``OffPolicyTrainer`` like SAC, and on a ``suite_tf``
environment a whole iteration (planning included) runs in one XLA call.

The first ``num_random_steps`` rollout steps (counted over all
environments) take uniform random actions, as PETS' first episode does,
so that the model is first fitted on data the untrained model did not
choose.
"""

from typing import Any, Callable, List, Optional

import gin
import numpy as np
import tensorflow as tf

from alf_rl.algorithms.dynamics_learning_algorithm import (
    DynamicsLearningAlgorithm,
)
from alf_rl.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from alf_rl.algorithms.planning_algorithm import CEMPlanner
from alf_rl.algorithms.reward_learning_algorithm import (
    RewardEstimationAlgorithm,
)
from alf_rl.data_structures import (
    LossInfo,
    PolicyStep,
    TrainingInfo,
    namedtuple,
)
from alf_rl.ops.masks import pad_last_row
from alf_rl.utils.nest import Nest

MbrlInfo = namedtuple(
    'MbrlInfo',
    [
        'observation',  # [B, d] s_t (the model's input and target)
    ],
    default_value=(),
)

MbrlLossInfo = namedtuple(
    'MbrlLossInfo',
    [
        'dynamics',  # [T, B] the model's loss on s_t -> s_{t+1}
        'reward',  # [T, B] the learned reward's squared error (or ())
    ],
    default_value=(),
)


@gin.configurable
class MbrlAlgorithm(OffPolicyAlgorithm):
    """Plans with a learned dynamics model; fits it from replay.

    Args:
        observation_spec: spec of one observation, a float vector [d].
        action_spec: bounded float spec of one action [A].
        dynamics_ctor: ``(observation_spec, action_spec) ->
            DynamicsLearningAlgorithm``.
        planner_ctor: ``(action_spec) -> planner`` (``CEMPlanner``,
            ``RandomShootingPlanner``).
        reward_fn: the reward function ``(observation [N, d], action [N, A])
            -> [N]``; None to learn one with ``reward_ctor``.
        reward_ctor: ``(observation_spec, action_spec) ->
            RewardEstimationAlgorithm``, used when ``reward_fn`` is None.
        num_random_steps: rollout steps (over all environments) taken
            uniformly at random before planning starts.
        name: module name.
        **kwargs: passed to ``OffPolicyAlgorithm`` (``optimizer``,
            gradient clipping).

    Raises:
        ValueError: non-vector specs, an unbounded action spec, or a
            planner population that does not split over the ensemble.
    """

    def __init__(
        self,
        observation_spec: Any,
        action_spec: Any,
        dynamics_ctor: Callable[
            ..., DynamicsLearningAlgorithm
        ] = DynamicsLearningAlgorithm,
        planner_ctor: Callable[..., Any] = CEMPlanner,
        reward_fn: Optional[Callable] = None,
        reward_ctor: Callable[
            ..., RewardEstimationAlgorithm
        ] = RewardEstimationAlgorithm,
        num_random_steps: int = 0,
        name: str = 'MbrlAlgorithm',
        **kwargs: Any,
    ):
        dynamics = dynamics_ctor(observation_spec, action_spec)
        if not (
            np.all(np.isfinite(action_spec.minimum))
            and np.all(np.isfinite(action_spec.maximum))
        ):
            raise ValueError(
                '%s: action_spec must be bounded (planners sample within '
                'the bounds), got %s' % (name, action_spec)
            )
        planner = planner_ctor(action_spec)
        planner.check_ensemble_size(dynamics.ensemble_size)
        super().__init__(observation_spec, action_spec, name=name, **kwargs)
        self._dynamics = dynamics
        self._planner = planner
        self._reward_estimator = None
        if reward_fn is None:
            self._reward_estimator = reward_ctor(observation_spec, action_spec)
            reward_fn = self._reward_estimator
        self._reward_fn = reward_fn
        self._num_random_steps = int(num_random_steps)
        self._rollout_count = tf.Variable(
            0, dtype=tf.int64, trainable=False, name='rollout_count'
        )
        self._low = tf.constant(action_spec.minimum, tf.float32)
        self._high = tf.constant(action_spec.maximum, tf.float32)

    @property
    def dynamics(self) -> DynamicsLearningAlgorithm:
        """The learned model."""
        return self._dynamics

    def rollout_owned_variables(self) -> List[tf.Variable]:
        """The count of rollout steps (random steps first; see
        ``Algorithm.rollout_owned_variables``)."""
        return [self._rollout_count]

    def _plan(self, observation: tf.Tensor) -> tf.Tensor:
        """[B, A] planned actions for [B, d] observations."""
        return self._planner.plan(
            observation,
            self._dynamics.predict_next,
            self._reward_fn,
            self._dynamics.ensemble_size,
        )

    def predict(self, time_step: Any, state: Nest) -> PolicyStep:
        """The planned action (evaluation).

        Args:
            time_step: ``TimeStep`` with [B, d] observations.
            state: ``()``.
        Returns:
            ``PolicyStep(action [B, A], state=(), info=())``.
        """
        return PolicyStep(action=self._plan(time_step.observation), state=())

    def rollout(self, time_step: Any, state: Nest) -> PolicyStep:
        """A uniform random action for the first ``num_random_steps`` steps,
        then the planned one.

        Args:
            time_step: ``TimeStep`` with [B, d] observations.
            state: ``()``.
        Returns:
            ``PolicyStep(action [B, A], state=(), info=())``.
        """
        observation = time_step.observation
        batch = tf.shape(observation)[0]
        count = self._rollout_count.assign_add(tf.cast(batch, tf.int64))

        def random_action():
            shape = tf.concat([[batch], tf.shape(self._low)], 0)
            uniform = tf.random.uniform(shape)
            return uniform * (self._high - self._low) + self._low

        action = tf.cond(
            count <= self._num_random_steps,
            random_action,
            lambda: self._plan(observation),
        )
        # The static batch size, lost by the dynamic shapes above: an
        # in-graph environment's step keeps it across a while_loop.
        action = tf.ensure_shape(
            action, observation.shape[:1].concatenate(self._low.shape)
        )
        return PolicyStep(action=action, state=())

    def train_step(self, exp: Any, state: Nest) -> PolicyStep:
        """Passes the replayed observation to ``calc_loss`` (the model is
        fitted on whole [T, B] sequences there).

        Args:
            exp: ``Experience`` with [B, ...] leaves.
            state: ``()``.
        Returns:
            ``PolicyStep(action=exp.action, state=(), info=MbrlInfo)``.
        """
        return PolicyStep(
            action=exp.action,
            state=(),
            info=MbrlInfo(observation=exp.observation),
        )

    def calc_loss(self, training_info: TrainingInfo) -> LossInfo:
        """The model's loss on each transition ``s_t, a_t -> s_{t+1}``
        (plus the learned reward's), [T, B]; the last row is padded with
        zeros (the base masks it, and rows at LAST steps).

        Args:
            training_info: ``TrainingInfo`` with [T, B, ...] leaves and
                ``info`` an ``MbrlInfo``.
        Returns:
            ``LossInfo(loss [T, B], extra=MbrlLossInfo)``.
        """
        obs = training_info.info.observation
        action = tf.cast(training_info.action, tf.float32)
        t, b = tf.shape(obs)[0], tf.shape(obs)[1]
        d, a = obs.shape[-1], action.shape[-1]
        s_t = tf.reshape(obs[:-1], [-1, d])
        a_t = tf.reshape(action[:-1], [-1, a])
        self._dynamics.update_statistics(s_t, a_t)
        dynamics = self._dynamics.prediction_loss(
            s_t, a_t, tf.reshape(obs[1:], [-1, d])
        )
        dynamics = tf.reshape(dynamics, [t - 1, b])
        loss = pad_last_row(dynamics + self._dynamics.bound_penalty())
        reward_loss = ()
        if self._reward_estimator is not None:
            reward = tf.reshape(training_info.reward[1:], [-1])
            reward_loss = pad_last_row(
                tf.reshape(
                    self._reward_estimator.prediction_loss(s_t, a_t, reward),
                    [t - 1, b],
                )
            )
            loss += reward_loss
        return LossInfo(
            loss=loss,
            extra=MbrlLossInfo(
                dynamics=pad_last_row(dynamics), reward=reward_loss
            ),
        )
