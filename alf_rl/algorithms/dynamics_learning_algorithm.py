"""``DynamicsLearningAlgorithm``: a learned model of an environment's
dynamics, ``s_{t+1} ~ s_t + f(s_t, a_t)``.

An ensemble of K networks (``EnsembleNetwork``; probabilistic, i.e. a
diagonal Gaussian per member, by default, as PETS) predicts the change of
the observation from the normalized observation and action. Trained by
maximum likelihood (``ops.planning.gaussian_nll``; the squared error for a
deterministic ensemble) on transitions replayed by its owner (e.g.
``MbrlAlgorithm``), which also decides which member a planned trajectory
follows (``predict_next``: member k steps the rows ``[k]``).
"""

from typing import Any, Callable, Optional

import gin
import tensorflow as tf

from alf_rl.algorithms.algorithm import Algorithm
from alf_rl.networks.ensemble_network import EnsembleNetwork
from alf_rl.ops.planning import gaussian_nll
from alf_rl.utils.normalizers import StreamingMeanVarNormalizer


def flat_vector_size(spec: Any, what: str, owner: str) -> int:
    """The size of a single rank-1 float spec (an observation or action
    vector), or a one-line error.

    Args:
        spec: a ``tf.TensorSpec``.
        what: ``'observation_spec'`` or ``'action_spec'``, for the message.
        owner: the algorithm's name, for the message.
    Returns:
        ``spec.shape[0]``.
    Raises:
        ValueError: a nest, an integer dtype or a shape other than [n].
    """
    if (
        tf.nest.is_nested(spec)
        or not spec.dtype.is_floating
        or spec.shape.rank != 1
    ):
        raise ValueError(
            '%s: %s must be one float vector spec [n] (model-based methods '
            'model vector states and continuous actions), got %s'
            % (owner, what, spec)
        )
    return int(spec.shape[0])


class TransitionModelAlgorithm(Algorithm):
    """A model over ``(s_t, a_t)`` pairs of float vectors (what the
    dynamics and reward models share): checks the specs and joins the two.

    Args:
        observation_spec: spec of one observation, a float vector [d].
        action_spec: spec of one action, a float vector [A].
        optimizer: optional ``tf_keras`` optimizer (else its owner's).
        name: module name.

    Raises:
        ValueError: a spec that is not a float vector.
    """

    def __init__(
        self,
        observation_spec: Any,
        action_spec: Any,
        optimizer: Optional[Any],
        name: str,
    ):
        obs_size = flat_vector_size(observation_spec, 'observation_spec', name)
        action_size = flat_vector_size(action_spec, 'action_spec', name)
        super().__init__(optimizer=optimizer, name=name)
        self.observation_size = obs_size
        self.input_size = obs_size + action_size

    @staticmethod
    def joint(observation: tf.Tensor, action: tf.Tensor) -> tf.Tensor:
        """``[..., d + A]`` float32: the observation and the action."""
        return tf.concat([observation, tf.cast(action, tf.float32)], -1)


@gin.configurable
class DynamicsLearningAlgorithm(TransitionModelAlgorithm):
    """An ensemble model of ``s_{t+1} - s_t`` given ``(s_t, a_t)``.

    Args:
        observation_spec: see ``TransitionModelAlgorithm``.
        action_spec: see ``TransitionModelAlgorithm``.
        ensemble_ctor: ``(input_size, output_size) -> EnsembleNetwork``.
        log_var_bound_weight: weight of ``EnsembleNetwork``'s
            ``log_var_bound_penalty`` in ``bound_penalty`` (PETS: 0.01).
        optimizer: optional ``tf_keras`` optimizer of the ensemble (else
            its owner's).
        name: module name.
    """

    def __init__(
        self,
        observation_spec: Any,
        action_spec: Any,
        ensemble_ctor: Callable[..., EnsembleNetwork] = EnsembleNetwork,
        log_var_bound_weight: float = 0.01,
        optimizer: Optional[Any] = None,
        name: str = 'DynamicsLearningAlgorithm',
    ):
        super().__init__(observation_spec, action_spec, optimizer, name)
        self._ensemble = ensemble_ctor(self.input_size, self.observation_size)
        self._normalizer = StreamingMeanVarNormalizer(
            tf.TensorSpec([self.input_size], tf.float32),
            name='input_normalizer',
        )
        self._log_var_bound_weight = float(log_var_bound_weight)

    @property
    def ensemble_size(self) -> int:
        """K, the number of ensemble members."""
        return self._ensemble.ensemble_size

    def _inputs(self, observation: tf.Tensor, action: tf.Tensor) -> tf.Tensor:
        """``[..., d + A]`` normalized network inputs."""
        joint = self.joint(observation, action)
        rank = joint.shape.rank - 1
        return self._normalizer.normalize(joint, outer_rank=rank)

    def update_statistics(
        self, observation: tf.Tensor, action: tf.Tensor
    ) -> None:
        """Folds a batch of inputs into the input normalizer.

        Args:
            observation: [N, d].
            action: [N, A].
        """
        self._normalizer.update(self.joint(observation, action), outer_rank=1)

    def predict_next(
        self,
        observation: tf.Tensor,
        action: tf.Tensor,
        sample: bool = True,
    ) -> tf.Tensor:
        """One model step per member.

        Args:
            observation: [K, N, d], member k predicting rows ``[k]``.
            action: [K, N, A].
            sample: draw the next observation from the member's Gaussian
                (PETS' trajectory sampling); else its mean.
        Returns:
            [K, N, d] predicted next observations.
        """
        mean, log_var = self._ensemble(self._inputs(observation, action))
        if sample and self._ensemble.probabilistic:
            noise = tf.random.normal(tf.shape(mean))
            mean = mean + tf.exp(0.5 * log_var) * noise
        return observation + mean

    def prediction_loss(
        self,
        observation: tf.Tensor,
        action: tf.Tensor,
        next_observation: tf.Tensor,
    ) -> tf.Tensor:
        """Per-transition loss, averaged over the members (every member
        sees every transition).

        Args:
            observation: [N, d] s_t.
            action: [N, A] a_t.
            next_observation: [N, d] s_{t+1}.
        Returns:
            [N] float32: Gaussian NLL (probabilistic) or mean squared error
            of ``s_{t+1} - s_t``.
        """
        k = self.ensemble_size
        inputs = tf.tile(self._inputs(observation, action)[None], [k, 1, 1])
        mean, log_var = self._ensemble(inputs)
        delta = (next_observation - observation)[None]
        if self._ensemble.probabilistic:
            loss = gaussian_nll(delta, mean, log_var)
        else:
            loss = tf.reduce_mean(tf.square(delta - mean), -1)
        return tf.reduce_mean(loss, axis=0)

    def bound_penalty(self) -> tf.Tensor:
        """[] the weighted ``log_var_bound_penalty`` (0 when
        deterministic), added once per loss row by the owner."""
        return self._log_var_bound_weight * (
            self._ensemble.log_var_bound_penalty()
        )
