"""Planners over a dynamics model: random shooting and the cross-entropy
method (CEM), in TensorFlow ops (one compiled call plans for a batch of
environments).

A planner scores P candidate action sequences of H steps per environment
by rolling them through a model (``step_fn``) and summing the predicted
rewards (``reward_fn``), and returns the first action of the best plan.
With an ensemble model, candidate p follows member ``p mod K`` for its whole
trajectory (PETS' TS-inf propagation), so P must be a multiple of K.
"""

from typing import Callable, Tuple

import gin
import numpy as np
import tensorflow as tf

from alf_rl.ops.planning import best_sequence, cem_update

# (observation [K, M, d], action [K, M, A]) -> next observation [K, M, d]
StepFn = Callable[[tf.Tensor, tf.Tensor], tf.Tensor]
# (observation [N, d], action [N, A]) -> reward [N]
RewardFn = Callable[[tf.Tensor, tf.Tensor], tf.Tensor]
# candidate sequences [B, P, H, A] -> predicted returns [B, P]
ScoreFn = Callable[[tf.Tensor], tf.Tensor]


class _Planner(tf.Module):
    """What both planners share: action bounds, sizes, scoring, and
    ``plan`` (a subclass says how it searches, in ``_plan``)."""

    def __init__(
        self,
        action_spec: tf.TensorSpec,
        horizon: int,
        population: int,
        name: str,
    ):
        super().__init__(name=name)
        if horizon < 1 or population < 1:
            raise ValueError(
                '%s: horizon and population must be >= 1, got %r and %r'
                % (name, horizon, population)
            )
        self.horizon = int(horizon)
        self.population = int(population)
        self._low = tf.constant(
            np.broadcast_to(action_spec.minimum, action_spec.shape), tf.float32
        )
        self._high = tf.constant(
            np.broadcast_to(action_spec.maximum, action_spec.shape), tf.float32
        )
        self._action_size = int(action_spec.shape[0])

    def check_ensemble_size(self, ensemble_size: int) -> None:
        """Refuses a population that does not split over the members.

        Args:
            ensemble_size: K.
        Raises:
            ValueError: ``population`` is not a multiple of K.
        """
        if self.population % ensemble_size:
            raise ValueError(
                '%s: population (%d) must be a multiple of the ensemble size '
                '(%d): each member follows population / K candidates'
                % (self.name, self.population, ensemble_size)
            )

    def evaluate(
        self,
        observation: tf.Tensor,
        samples: tf.Tensor,
        step_fn: StepFn,
        reward_fn: RewardFn,
        ensemble_size: int,
    ) -> tf.Tensor:
        """Returns of candidate sequences under the model.

        Args:
            observation: [B, d] current observations.
            samples: [B, P, H, A] candidate action sequences.
            step_fn: the model step (``predict_next``).
            reward_fn: the reward function.
            ensemble_size: K; candidate p follows member ``p mod K``.
        Returns:
            [B, P] predicted returns.
        """
        k, b = ensemble_size, tf.shape(observation)[0]
        p, h, a = self.population, self.horizon, self._action_size
        d = observation.shape[-1]
        # [B, P, ...] -> [K, B * P / K, ...]: candidate p = j * K + k.
        obs = tf.tile(observation[:, None, None, :], [1, p // k, k, 1])
        obs = tf.reshape(tf.transpose(obs, [2, 0, 1, 3]), [k, -1, d])
        acts = tf.reshape(samples, [b, p // k, k, h, a])
        acts = tf.reshape(tf.transpose(acts, [3, 2, 0, 1, 4]), [h, k, -1, a])

        def body(t, state, total):
            action = acts[t]
            flat_reward = reward_fn(
                tf.reshape(state, [-1, d]), tf.reshape(action, [-1, a])
            )
            total += tf.reshape(flat_reward, [k, -1])
            return t + 1, step_fn(state, action), total

        _, _, total = tf.while_loop(
            lambda t, *_: t < h,
            body,
            (tf.constant(0), obs, tf.zeros(tf.shape(obs)[:2])),
        )
        # [K, B * P / K] -> [B, P]
        total = tf.reshape(total, [k, b, p // k])
        return tf.reshape(tf.transpose(total, [1, 2, 0]), [b, p])

    def plan(
        self,
        observation: tf.Tensor,
        step_fn: StepFn,
        reward_fn: RewardFn,
        ensemble_size: int = 1,
    ) -> tf.Tensor:
        """The action to take now: the first of the best plan found.

        Args:
            observation: [B, d] current observations.
            step_fn: the model step (``predict_next``).
            reward_fn: the reward function.
            ensemble_size: K of the model; candidate p follows member
                ``p mod K``.
        Returns:
            [B, A] float32.
        """

        def score(samples: tf.Tensor) -> tf.Tensor:
            return self.evaluate(
                observation, samples, step_fn, reward_fn, ensemble_size
            )

        return self._plan(tf.shape(observation)[0], score)

    def _plan(self, batch: tf.Tensor, score: ScoreFn) -> tf.Tensor:
        """[B, A] first action of the best plan, given the batch size B and
        ``score``, the predicted returns [B, P] of sequences [B, P, H,
        A]."""
        raise NotImplementedError()

    def _uniform(self, batch: tf.Tensor) -> tf.Tensor:
        """[B, P, H, A] sequences uniform within the action bounds."""
        shape = [batch, self.population, self.horizon, self._action_size]
        return tf.random.uniform(shape) * (self._high - self._low) + self._low


@gin.configurable
class RandomShootingPlanner(_Planner):
    """Samples ``population`` uniform action sequences and takes the first
    action of the best one (Nagabandi et al. 2018).

    Args:
        action_spec: bounded float spec of one action [A].
        horizon: H, steps per sequence.
        population: P, sequences per environment.
        name: module name.
    """

    def __init__(
        self,
        action_spec: tf.TensorSpec,
        horizon: int = 25,
        population: int = 1000,
        name: str = 'RandomShootingPlanner',
    ):
        super().__init__(action_spec, horizon, population, name)

    def _plan(self, batch: tf.Tensor, score: ScoreFn) -> tf.Tensor:
        """The first action of the best sampled sequence."""
        samples = self._uniform(batch)
        return best_sequence(samples, score(samples))[:, 0]


@gin.configurable
class CEMPlanner(_Planner):
    """The cross-entropy method over action sequences (PETS' optimizer):
    sample from a Gaussian clipped to the bounds, refit it to the elites,
    repeat; return the mean's first action.

    Args:
        action_spec: bounded float spec of one action [A].
        horizon: H, steps per sequence.
        population: P, sequences per iteration and environment.
        num_elites: E, the best sequences the Gaussian is refitted to.
        iterations: refits per decision.
        smoothing: weight of the previous Gaussian in each refit (PETS:
            0.1).
        initial_std_fraction: the first Gaussian's std as a fraction of the
            action range (its mean is the range's middle).
        name: module name.

    Raises:
        ValueError: ``num_elites`` not in [1, population], ``iterations``
            < 1 or ``smoothing`` outside [0, 1).
    """

    def __init__(
        self,
        action_spec: tf.TensorSpec,
        horizon: int = 25,
        population: int = 400,
        num_elites: int = 40,
        iterations: int = 5,
        smoothing: float = 0.1,
        initial_std_fraction: float = 0.25,
        name: str = 'CEMPlanner',
    ):
        super().__init__(action_spec, horizon, population, name)
        if not 1 <= num_elites <= population or iterations < 1:
            raise ValueError(
                '%s: need 1 <= num_elites <= population and iterations >= 1,'
                ' got num_elites=%r, population=%r, iterations=%r'
                % (name, num_elites, population, iterations)
            )
        if not 0.0 <= smoothing < 1.0:
            raise ValueError(
                '%s: smoothing must be in [0, 1), got %r' % (name, smoothing)
            )
        self.num_elites = int(num_elites)
        self.iterations = int(iterations)
        self.smoothing = float(smoothing)
        self._initial_std_fraction = float(initial_std_fraction)

    def _initial(self, batch: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        """[B, H, A] mean (the middle of the bounds) and std."""
        shape = [batch, self.horizon, self._action_size]
        middle = (self._high + self._low) / 2
        std = self._initial_std_fraction * (self._high - self._low)
        return (
            tf.zeros(shape) + middle,
            tf.zeros(shape) + std,
        )

    def _plan(self, batch: tf.Tensor, score: ScoreFn) -> tf.Tensor:
        """The first action of the refitted Gaussian's mean."""
        mean, std = self._initial(batch)
        shape = [batch, self.population, self.horizon, self._action_size]
        for _ in range(self.iterations):
            noise = tf.random.normal(shape)
            samples = tf.clip_by_value(
                mean[:, None] + std[:, None] * noise, self._low, self._high
            )
            mean, std = cem_update(
                samples,
                score(samples),
                self.num_elites,
                mean,
                std,
                self.smoothing,
            )
        return mean[:, 0]
