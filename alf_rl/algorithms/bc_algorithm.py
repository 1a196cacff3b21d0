"""Behaviour cloning: supervised learning of the dataset's actions.

Pomerleau 1991 (ALVINN); the offline-RL baseline of Fu et al. 2020 (D4RL).

- Stochastic policy (an ``ActorDistributionNetwork``, default): minimizes
  the negative log-likelihood ``-log pi(a_data | s)`` (discrete actions:
  cross-entropy; continuous: Gaussian or tanh-Gaussian likelihood).
  ``predict`` takes the mode, ``rollout`` samples.
- Deterministic policy (an ``ActorNetwork``, continuous actions only):
  minimizes ``||mu(s) - a_data||^2``.

Choices: float actions are clipped a hair inside their bounds before the
likelihood (a tanh-squashed Gaussian has no density on the bounds, where
clipped exploration noise puts data). Steps whose ``step_type`` is
``LAST`` carry an action the environment ignored; the base masks them.
Every row of a sequence is trained (``last_row_only_bootstraps = False``),
so ``mini_batch_length=1`` is allowed.
"""

from typing import Any, Callable, Optional

import gin
import tensorflow as tf

from alf_rl.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from alf_rl.algorithms.policy_actions import DEFAULT_ACTOR_CTOR, ActorPolicy
from alf_rl.data_structures import (
    LossInfo,
    PolicyStep,
    TrainingInfo,
    namedtuple,
)
from alf_rl.networks import ActorDistributionNetwork
from alf_rl.ops import distributions as dist_ops
from alf_rl.ops.offline_losses import squared_action_error
from alf_rl.utils.common import check_feed_forward
from alf_rl.utils.nest import Nest

BcInfo = namedtuple(
    'BcInfo',
    [
        'loss',  # [B] float32 -log pi(a|s), or ||mu(s) - a||^2
    ],
    default_value=(),
)

# Fraction of a float action's range kept clear of each bound.
_BOUND_MARGIN = 1e-4


def inside_bounds(action: Nest, action_spec: Nest) -> Nest:
    """Float actions clipped ``_BOUND_MARGIN`` of their range inside the
    bounds; integer actions as they are."""

    def clip(a, spec):
        if not spec.dtype.is_floating or not hasattr(spec, 'minimum'):
            return a
        low = tf.constant(spec.minimum, a.dtype)
        high = tf.constant(spec.maximum, a.dtype)
        margin = _BOUND_MARGIN * (high - low)
        return tf.clip_by_value(a, low + margin, high - margin)

    return tf.nest.map_structure(clip, action, action_spec)


@gin.configurable
class BcAlgorithm(ActorPolicy, OffPolicyAlgorithm):
    """Behaviour cloning from replayed (offline) experience.

    Args:
        observation_spec: nest of specs of one observation.
        action_spec: nest of action specs (bounded).
        actor_network_ctor: ``(observation_spec, action_spec) -> network``:
            an ``ActorDistributionNetwork`` (stochastic: likelihood loss)
            or an ``ActorNetwork`` (deterministic: squared error; float
            actions only). Feed-forward.
        optimizer: a ``tf_keras`` optimizer.
        name: module name.
        **kwargs: passed to ``OffPolicyAlgorithm``.

    Raises:
        ValueError: a recurrent network, or a deterministic network with
            integer actions.
    """

    last_row_only_bootstraps = False

    def __init__(
        self,
        observation_spec: Nest,
        action_spec: Nest,
        actor_network_ctor: Callable = DEFAULT_ACTOR_CTOR,
        optimizer: Optional[Any] = None,
        name: str = 'BcAlgorithm',
        **kwargs: Any,
    ):
        actor = actor_network_ctor(observation_spec, action_spec)
        check_feed_forward(name, [actor])
        super().__init__(
            observation_spec,
            action_spec,
            optimizer=optimizer,
            name=name,
            **kwargs,
        )
        self._actor_network = actor
        self._deterministic = not isinstance(actor, ActorDistributionNetwork)
        if self._deterministic and any(
            not s.dtype.is_floating for s in tf.nest.flatten(action_spec)
        ):
            raise ValueError(
                "%s: a deterministic actor (%s) clones float "
                "actions only; use an ActorDistributionNetwork "
                "for discrete actions" % (name, type(actor).__name__)
            )

    def _policy(self, observation: Nest) -> Any:
        output, _ = self._actor_network(observation)
        return output

    def train_step(self, exp: Any, state: Nest) -> PolicyStep:
        """The cloning loss of the dataset's action at this step.

        Args:
            exp: ``Experience`` with [B, ...] leaves.
            state: ``()``.
        Returns:
            ``PolicyStep((), (), BcInfo(loss [B]))``.
        """
        output = self._policy(exp.observation)
        action = inside_bounds(exp.action, self.action_spec)
        if self._deterministic:
            loss = tf.add_n(
                [
                    squared_action_error(
                        tf.reshape(o, [tf.shape(o)[0], -1]),
                        tf.reshape(tf.cast(a, o.dtype), [tf.shape(o)[0], -1]),
                    )
                    for o, a in zip(
                        tf.nest.flatten(output), tf.nest.flatten(action)
                    )
                ]
            )
        else:
            loss = -dist_ops.log_prob(output, action)
        return PolicyStep(action=(), state=state, info=BcInfo(loss=loss))

    def calc_loss(self, training_info: TrainingInfo) -> LossInfo:
        """The per-step cloning loss.

        Args:
            training_info: ``TrainingInfo`` whose ``info`` is a ``BcInfo``
                of [T, B] tensors.
        Returns:
            ``LossInfo(loss [T, B])``.
        """
        return LossInfo(loss=training_info.info.loss)
