"""Twin Delayed DDPG (TD3).

Fujimoto, van Hoof and Meger 2018, "Addressing Function Approximation Error
in Actor-Critic Methods" (arXiv:1802.09477). Three changes to DDPG:

1. Clipped double-Q: two critics, each regressed on
   ``r + gamma * discount * min(Q'_1, Q'_2)(s', a')``.
2. Target policy smoothing: ``a' = clip(mu'(s') + clip(N(0, sigma),
   -c, c))`` with sigma = 0.2 and c = 0.5 in units of the action
   half-range.
3. Delayed updates: the actor and all target networks are updated once every
   ``actor_update_period`` (2) critic updates.

How the delay is implemented: ``should_apply`` gates the actor's optimizer.
A counter variable counts updates (in ``after_train``); the critics'
gradients are computed and applied on every update, while the actor's
gradients are computed and applied inside a ``tf.cond`` only on updates N,
2N, ... (as in the authors' code, where the counter is incremented first). Scaling
the actor loss by 0 instead would not do: Adam's momentum would still move
the actor, and its step count would advance. The target networks use the
DDPG updater with ``target_update_period = actor_update_period``, whose own
counter advances in lockstep, so they move on the same updates as the actor.

Deviations from the paper: as in ``DdpgAlgorithm`` (noise in half-range
units, Gaussian exploration by default, actions enter the critic at its
input).
"""

from typing import Any, Optional, Union

import gin
import tensorflow as tf

from alf_rl import specs as alf_specs
from alf_rl.algorithms.ddpg_algorithm import DdpgAlgorithm
from alf_rl.algorithms.deterministic_actor import leaf_seeds
from alf_rl.algorithms.network_streams import StreamStep
from alf_rl.data_structures import TrainingInfo
from alf_rl.ops.exploration import smoothed_target_action

from alf_rl.utils.nest import Nest


@gin.configurable
class Td3Algorithm(DdpgAlgorithm):
    """TD3: ``DdpgAlgorithm`` with twin critics, target policy smoothing and
    delayed actor/target updates (see the module docstring).

    Args:
        observation_spec: nest of specs of one observation.
        action_spec: nest of bounded float specs of one action.
        actor_optimizer: ``tf_keras`` optimizer of the actor (required: the
            delay gates this optimizer alone).
        critic_optimizer: ``tf_keras`` optimizer of the critics (None: the
            algorithm's ``optimizer``).
        num_critic_replicas: number of critics (2 in the paper).
        target_policy_noise: sigma of the target smoothing noise (half-range
            units).
        target_policy_noise_clip: c, the smoothing noise's bound.
        actor_update_period: update the actor and the targets once every
            this many updates.
        name: module name.
        **kwargs: passed to ``DdpgAlgorithm`` (networks, gamma, tau,
            exploration noise, ...), except ``target_update_period``, which
            is ``actor_update_period``.

    Raises:
        ValueError: as ``DdpgAlgorithm``; no ``actor_optimizer``; bad
            periods or noise.
    """

    def __init__(self,
                 observation_spec: Nest,
                 action_spec: Nest,
                 actor_optimizer: Optional[Any] = None,
                 critic_optimizer: Optional[Any] = None,
                 num_critic_replicas: int = 2,
                 target_policy_noise: float = 0.2,
                 target_policy_noise_clip: float = 0.5,
                 actor_update_period: int = 2,
                 name: str = 'Td3Algorithm',
                 **kwargs: Any):
        if 'target_update_period' in kwargs:
            raise ValueError(
                "%s: target_update_period is set by actor_update_period "
                "(targets move with the actor), do not pass it" % name)
        if actor_optimizer is None:
            raise ValueError("%s: actor_optimizer is required (the delayed "
                             "actor update gates it)" % name)
        if int(actor_update_period) < 1:
            raise ValueError("%s: actor_update_period must be >= 1, got %r" %
                             (name, actor_update_period))
        if target_policy_noise < 0 or target_policy_noise_clip < 0:
            raise ValueError(
                "%s: target_policy_noise and target_policy_noise_clip must "
                "be >= 0, got %r and %r" %
                (name, target_policy_noise, target_policy_noise_clip))
        super().__init__(observation_spec,
                         action_spec,
                         actor_optimizer=actor_optimizer,
                         critic_optimizer=critic_optimizer,
                         num_critic_replicas=num_critic_replicas,
                         target_update_period=int(actor_update_period),
                         name=name,
                         **kwargs)
        self._target_policy_noise = target_policy_noise
        self._target_policy_noise_clip = target_policy_noise_clip
        self._actor_update_period = int(actor_update_period)
        self._num_updates = tf.Variable(0, dtype=tf.int64, trainable=False,
                                        name='num_updates')

    @property
    def actor_update_period(self) -> int:
        """int: the actor and targets move once every this many updates."""
        return self._actor_update_period

    def _target_action(self, step: StreamStep, observation: Nest) -> Nest:
        """``clip(mu'(s') + clipped noise)`` (target policy smoothing)."""
        action, _ = step('target_actor',
                         self._target_actor_network)(observation)
        flat = tf.nest.flatten(action)
        seeds = leaf_seeds(len(flat))
        flat = [
            smoothed_target_action(a, r, self._target_policy_noise,
                                   self._target_policy_noise_clip, s)
            for a, r, s in zip(flat, self._noise.half_ranges, seeds)
        ]
        return alf_specs.clip_to_spec(
            tf.nest.pack_sequence_as(self._action_spec, flat),
            self._action_spec)

    def should_apply(self, optimizer: Any) -> Union[bool, tf.Tensor]:
        """Gates the actor's optimizer: true on every
        ``actor_update_period``-th update (updates N, 2N, ...)."""
        if optimizer is not self._actor_optimizer:
            return True
        return tf.equal((self._num_updates + 1) % self._actor_update_period,
                        0)

    def after_train(self, training_info: TrainingInfo) -> None:
        """Counts the update, then DDPG's (periodic) target updates.

        Args:
            training_info: the ``TrainingInfo`` trained on.
        """
        self._num_updates.assign_add(1)
        super().after_train(training_info)
