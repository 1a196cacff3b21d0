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

How the delay is implemented: ``train_complete`` is overridden. A counter
variable counts updates; the critics' gradients are computed and applied on
every update, while the actor's gradients are computed and applied inside a
``tf.cond`` only when ``count % actor_update_period == 0`` (updates N, 2N,
..., as in the authors' code where the counter is incremented first). Scaling
the actor loss by 0 instead would not do: Adam's momentum would still move
the actor, and its step count would advance. The target networks use the
DDPG updater with ``target_update_period = actor_update_period``, whose own
counter advances in lockstep, so they move on the same updates as the actor.

Deviations from the paper: as in ``DdpgAlgorithm`` (noise in half-range
units, Gaussian exploration by default, actions enter the critic at its
input).
"""

import gin
import tensorflow as tf

from alf_rl import specs as alf_specs
from alf_rl.algorithms.algorithm import reduce_loss_info
from alf_rl.algorithms.ddpg_algorithm import DdpgAlgorithm, leaf_seeds
from alf_rl.utils.common import valid_step_mask
from alf_rl.utils.nest import flatten_with_path


def smoothed_target_action(action, half_range, noise_stddev, noise_clip,
                           seed):
    """``mu'(s) + clip(N(0, sigma * r), -c * r, c * r)`` for one leaf.

    Args:
        action: [B, ...] float32 target-actor action.
        half_range: [...] float32 ``(maximum - minimum) / 2``.
        noise_stddev: sigma, in half-range units.
        noise_clip: c, in half-range units.
        seed: [2] int32 stateless seed.
    Returns:
        [B, ...] float32 (not yet clipped to the spec).
    """
    noise = tf.random.stateless_normal(tf.shape(action), seed,
                                       stddev=noise_stddev)
    noise = tf.clip_by_value(noise, -noise_clip, noise_clip)
    return action + noise * half_range


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
                 observation_spec,
                 action_spec,
                 actor_optimizer=None,
                 critic_optimizer=None,
                 num_critic_replicas=2,
                 target_policy_noise=0.2,
                 target_policy_noise_clip=0.5,
                 actor_update_period=2,
                 name='Td3Algorithm',
                 **kwargs):
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
        actor_refs = {v.ref() for v in self._actor_network.trainable_variables}
        # The actor's (optimizer, variables) set, found once.
        self._actor_set_index = None
        for i, (_, variables) in enumerate(
                self.get_optimizer_and_variable_sets()):
            if any(v.ref() in actor_refs for v in variables):
                self._actor_set_index = i

    @property
    def actor_update_period(self):
        """int: the actor and targets move once every this many updates."""
        return self._actor_update_period

    def _target_action(self, observation):
        """``clip(mu'(s') + clipped noise)`` (target policy smoothing)."""
        action, _ = self._target_actor_network(observation)
        flat = tf.nest.flatten(action)
        seeds = leaf_seeds(len(flat))
        flat = [
            smoothed_target_action(a, r, self._target_policy_noise,
                                   self._target_policy_noise_clip, s)
            for a, r, s in zip(flat, self._half_range, seeds)
        ]
        return alf_specs.clip_to_spec(
            tf.nest.pack_sequence_as(self._action_spec, flat),
            self._action_spec)

    def train_complete(self, tape, training_info, valid_masks=None,
                       weight=1.0):
        """``Algorithm.train_complete`` with the actor update gated.

        Critics are updated every call; the actor's gradients are computed
        and applied only on every ``actor_update_period``-th call (zeros are
        reported for it otherwise). The loss reduction repeats the base
        class's.

        Args:
            tape: the ``tf.GradientTape`` of the forward pass (persistent).
            training_info: ``TrainingInfo`` with [T, B, ...] leaves.
            valid_masks: [T, B] float mask; defaults to ``step_type !=
                LAST``.
            weight: scalar loss weight.
        Returns:
            ``(loss_info, grads_and_vars)``.
        """
        if valid_masks is None:
            valid_masks = valid_step_mask(training_info.step_type)
        # Same reduction as Algorithm.train_complete.
        with tape:
            loss_info = self.calc_loss(training_info)
            self.last_per_step_loss_info = loss_info
            loss_info = reduce_loss_info(loss_info, valid_masks)
            total = tf.debugging.check_numerics(
                loss_info.loss * weight, "loss of %s (components: %s)" %
                (self.name, ', '.join(p for p, _ in flatten_with_path(
                    loss_info.extra, 'loss'))))
        count = self._num_updates.assign_add(1)
        update_actor = tf.equal(count % self._actor_update_period, 0)
        all_grads_and_vars = []
        for i, (optimizer, variables) in enumerate(
                self.get_optimizer_and_variable_sets()):
            if i == self._actor_set_index:

                def _update(optimizer=optimizer, variables=variables):
                    grads = [g for g, _ in self._apply(
                        tape, total, optimizer, variables)]
                    return grads

                def _skip(variables=variables):
                    return [tf.zeros_like(v) for v in variables]

                grads = tf.cond(update_actor, _update, _skip)
                all_grads_and_vars.extend(zip(grads, variables))
            else:
                all_grads_and_vars.extend(
                    self._apply(tape, total, optimizer, variables))
        self.after_train(training_info)
        return loss_info._replace(loss=total), all_grads_and_vars

    def _apply(self, tape, total, optimizer, variables):
        """Gradients of ``total``, clipped, applied; returns them.

        Every variable must get a gradient (the networks are fully used).
        """
        grads = tape.gradient(total, variables)
        grads_and_vars = [(g if g is not None else tf.zeros_like(v), v)
                          for g, v in zip(grads, variables)]
        grads_and_vars = self._clip(grads_and_vars)
        optimizer.apply_gradients(grads_and_vars)
        return grads_and_vars
