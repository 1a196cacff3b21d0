"""Trusted-region actor-critic (TRAC, as ALF had it, reimplemented).

Wraps an ``ActorCriticAlgorithm`` (or a subclass: ``PPOAlgorithm``) and
bounds how far each update moves the policy: after the wrapped algorithm's
gradient step, the mean KL divergence ``KL(pi_old(.|s) || pi_new(.|s))``
(``ops.distributions.action_distance``) over the valid steps of the
training batch is measured, and while it exceeds ``max_kl`` the actor's
step is shrunk with a ``TrustedUpdater`` (``theta <- theta_old + (theta -
theta_old) * 0.9 / r``). The change handed to the updater is
``sqrt(mean KL)`` against ``sqrt(max_kl)``: a KL grows quadratically with a
small step, so its square root makes one shrink land near ``0.81 max_kl``.

``pi_old`` is the distribution in the training info (computed with the
weights before the update: by ``rollout`` on-policy, by ``train_step`` on a
replayed mini-batch); ``pi_new`` is recomputed by the wrapped algorithm's
``rollout`` on the same observations and input states, which ``rollout`` and
``train_step`` store in ``TracInfo``. Leaves of the action nest whose
"distribution" is a tensor (deterministic actions) contribute the squared
distance of the actions instead of a KL.

Only the actor's variables are rescaled; the critic keeps its full step
(as ALF). The wrapped algorithm's ``after_train`` (target updates, PPO's
update counter) runs after the trust-region step.

Deviation from ALF: a bound on the batch-mean KL (ALF bounded a
per-action-dimension distance: squared logit differences for categoricals,
a symmetric KL for others).
"""

from typing import Any, Callable, Optional, Tuple

import gin
import tensorflow as tf
import tensorflow_probability as tfp

from alf_rl.algorithms.actor_critic_algorithm import ActorCriticAlgorithm
from alf_rl.algorithms.on_policy_algorithm import OnPolicyAlgorithm
from alf_rl.algorithms.training_kind import TrainingKind
from alf_rl.algorithms.trusted_updater import TrustedUpdater
from alf_rl.data_structures import (Experience, LossInfo, PolicyStep,
                                    TimeStep, TrainingInfo, namedtuple)
from alf_rl.ops import distributions as dist_ops
from alf_rl.ops.masks import masked_mean
from alf_rl.specs import is_bounded, zeros_from_spec
from alf_rl.utils.common import valid_step_mask
from alf_rl.utils.gradient_application import replica_context

tfd = tfp.distributions

TracInfo = namedtuple(
    'TracInfo',
    [
        'observation',  # nest of [B, ...], the (transformed) observation
        'state',  # nest of [B, ...], the state passed into the step
        'ac',  # the wrapped algorithm's info
    ],
    default_value=())

TracLossInfo = namedtuple(
    'TracLossInfo',
    [
        'ac',  # the wrapped algorithm's LossInfo.extra
        'policy_kl',  # [] mean KL(pi_old || pi_new) before the shrink
        'adjust_steps',  # [] float32 shrinks done (0: step within bound)
    ],
    default_value=())


@gin.configurable
class TracAlgorithm(OnPolicyAlgorithm):
    """Bounds each update of a wrapped actor-critic algorithm's policy.

    Works with the ``OnPolicyDriver`` (on-policy A2C) and with replay
    training (``train``: PPO epochs, off-policy actor-critic), delegating
    specs, steps, ``transform_timestep``, ``preprocess_experience``, the loss
    and ``after_train`` to the wrapped algorithm. Its infos are ``TracInfo``
    and its ``LossInfo.extra`` is ``TracLossInfo(ac=wrapped extra, ...)``.
    ``rollout`` stores the observation in its info (so on the replay path the
    buffer holds the observation twice).

    Args:
        observation_spec: nest of specs; None takes the wrapped algorithm's.
        action_spec: nest of specs; None takes the wrapped algorithm's.
        ac_algorithm_ctor: ``(observation_spec, action_spec) -> algorithm``,
            used when ``ac_algorithm`` is None (gin:
            ``TracAlgorithm.ac_algorithm_ctor=@PPOAlgorithm``).
        ac_algorithm: an already built algorithm to wrap.
        max_kl: bound of the mean ``KL(pi_old || pi_new)`` per update (nats,
            summed over the action nest), > 0.
        shrink_factor: ``TrustedUpdater``'s target fraction after a shrink.
        max_iterations: shrinks before the actor's step is dropped.
        optimizer: trains the wrapped algorithm's variables when it has no
            optimizer of its own.
        name: module name.

    Raises:
        ValueError: specs that differ from the wrapped algorithm's, no specs
            at all, bad ``max_kl``.
        TypeError: a wrapped algorithm that is not an
            ``ActorCriticAlgorithm`` (no actor network to bound).
    """

    def __init__(self,
                 observation_spec: Any = None,
                 action_spec: Any = None,
                 ac_algorithm_ctor: Callable[[Any, Any], ActorCriticAlgorithm]
                 = ActorCriticAlgorithm,
                 ac_algorithm: Optional[ActorCriticAlgorithm] = None,
                 max_kl: float = 0.01,
                 shrink_factor: float = 0.9,
                 max_iterations: int = 20,
                 optimizer: Any = None,
                 name: str = 'TracAlgorithm'):
        if not max_kl > 0:
            raise ValueError("%s: max_kl must be > 0, got %s" % (name, max_kl))
        if ac_algorithm is None:
            if observation_spec is None or action_spec is None:
                raise ValueError(
                    "%s: give observation_spec and action_spec (to build "
                    "ac_algorithm_ctor) or an ac_algorithm" % name)
            ac_algorithm = ac_algorithm_ctor(observation_spec, action_spec)
        for what, given, own in (('observation_spec', observation_spec,
                                  ac_algorithm.observation_spec),
                                 ('action_spec', action_spec,
                                  ac_algorithm.action_spec)):
            if given is not None and not _same_specs(given, own):
                raise ValueError(
                    "%s: %s %s differs from the wrapped algorithm's %s" %
                    (name, what, given, own))
        if not isinstance(ac_algorithm, ActorCriticAlgorithm):
            raise TypeError(
                "%s: the wrapped algorithm must be an ActorCriticAlgorithm "
                "(or PPOAlgorithm), whose actor_network's update is bounded; "
                "got %s" % (name, type(ac_algorithm).__name__))
        # The replay path (PPO epochs) stores the rollout state when the
        # wrapped algorithm was configured to.
        super().__init__(ac_algorithm.observation_spec,
                         ac_algorithm.action_spec,
                         use_rollout_state=ac_algorithm.use_rollout_state,
                         train_state_spec=ac_algorithm.train_state_spec,
                         rollout_state_spec=ac_algorithm.rollout_state_spec,
                         predict_state_spec=ac_algorithm.predict_state_spec,
                         optimizer=optimizer,
                         name=name)
        self._ac_algorithm = ac_algorithm
        self._max_kl = float(max_kl)
        self._trusted_updater = TrustedUpdater(
            ac_algorithm.actor_network.trainable_variables,
            max_change=float(max_kl)**0.5,
            shrink_factor=shrink_factor,
            max_iterations=max_iterations)

    # ------------------------------------------------------------ delegation
    @property
    def actor_network(self) -> Any:
        """The actor network of the wrapped actor-critic algorithm."""
        return self._ac_algorithm.actor_network

    @property
    def ac_algorithm(self) -> ActorCriticAlgorithm:
        """The wrapped algorithm."""
        return self._ac_algorithm

    has_own_update = True  # train_complete adds the trust region

    @property
    def last_row_only_bootstraps(self) -> bool:
        """As the wrapped algorithm's (False for PPO)."""
        return self._ac_algorithm.last_row_only_bootstraps

    @property
    def training_kind(self) -> TrainingKind:
        """As the wrapped algorithm's (``EPOCHS`` for PPO)."""
        return self._ac_algorithm.training_kind

    def transform_timestep(self, time_step: Any,
                           update_normalizers: bool = False) -> Any:
        """The wrapped algorithm's ``transform_timestep``."""
        return self._ac_algorithm.transform_timestep(
            time_step, update_normalizers=update_normalizers)

    def predict(self, time_step: TimeStep, state: Any) -> PolicyStep:
        """The wrapped algorithm's ``predict`` (greedy actions)."""
        return self._ac_algorithm.predict(time_step, state)

    def env_action(self, action: Any) -> Any:
        """The wrapped algorithm's ``env_action`` (e.g. clipping)."""
        return self._ac_algorithm.env_action(action)

    def rollout(self, time_step: TimeStep, state: Any) -> PolicyStep:
        """The wrapped ``rollout``, with the observation and state kept.

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves (transformed).
            state: nest matching ``rollout_state_spec``.
        Returns:
            ``PolicyStep(action, state, TracInfo(observation, state, ac))``.
        """
        step = self._ac_algorithm.rollout(time_step, state)
        return step._replace(info=TracInfo(observation=time_step.observation,
                                           state=state,
                                           ac=step.info))

    def train_step(self, experience: Experience, state: Any) -> PolicyStep:
        """The wrapped ``train_step`` on the unwrapped rollout info.

        Args:
            experience: ``Experience`` with [B, ...] leaves, ``rollout_info``
                a ``TracInfo``.
            state: nest matching ``train_state_spec``.
        Returns:
            ``PolicyStep`` with ``TracInfo`` info.
        """
        return self._wrapped_step(self._ac_algorithm.train_step, experience,
                                  state)

    def bootstrap_step(self, experience: Experience,
                       state: Any) -> PolicyStep:
        """The wrapped ``bootstrap_step`` (see ``train_step``)."""
        return self._wrapped_step(self._ac_algorithm.bootstrap_step,
                                  experience, state)

    def first_train_step(self, experience: Experience,
                         state: Any) -> PolicyStep:
        """The wrapped ``first_train_step`` (see ``train_step``)."""
        return self._wrapped_step(self._ac_algorithm.first_train_step,
                                  experience, state)

    def _wrapped_step(self, step_fn, experience, state):
        inner_exp = experience._replace(
            rollout_info=_unwrap(experience.rollout_info))
        step = step_fn(inner_exp, state)
        return step._replace(info=TracInfo(observation=experience.observation,
                                           state=state,
                                           ac=step.info))

    def preprocess_experience(self, experience: Experience) -> Experience:
        """The wrapped ``preprocess_experience`` on the unwrapped info.

        Args:
            experience: ``Experience`` with [T, B, ...] leaves.
        Returns:
            The processed experience, ``rollout_info`` wrapped again.
        """
        info = experience.rollout_info
        processed = self._ac_algorithm.preprocess_experience(
            experience._replace(rollout_info=_unwrap(info)))
        if isinstance(info, TracInfo):
            processed = processed._replace(rollout_info=info._replace(
                ac=processed.rollout_info))
        return processed

    def calc_loss(self, training_info: TrainingInfo) -> LossInfo:
        """The wrapped algorithm's loss on the unwrapped training info.

        Args:
            training_info: ``TrainingInfo`` with [T, B, ...] leaves and
                ``TracInfo`` infos.
        Returns:
            The wrapped algorithm's per-step ``LossInfo`` ([T, B]).
        """
        return self._ac_algorithm.calc_loss(_unwrap_training_info(
            training_info))

    def continue_training(self, training_info: TrainingInfo,
                          valid_masks: tf.Tensor) -> tf.Tensor:
        """The wrapped algorithm's early-stopping decision (PPO's KL stop).

        Args:
            training_info: the [L, b] ``TrainingInfo`` of the update just
                done, with ``TracInfo`` infos.
            valid_masks: [L, b] float32 mask of the steps that counted.
        Returns:
            bool scalar tensor.
        """
        return self._ac_algorithm.continue_training(
            _unwrap_training_info(training_info), valid_masks)

    def after_train(self, training_info: TrainingInfo) -> None:
        """Nothing: ``train_complete`` bounds the step and then calls the
        wrapped algorithm's ``after_train``."""
        del training_info

    # ------------------------------------------------------------ training
    def train_complete(self,
                       tape: tf.GradientTape,
                       training_info: TrainingInfo,
                       valid_masks: Optional[tf.Tensor] = None,
                       weight: float = 1.0,
                       per_step_loss_info: Optional[LossInfo] = None
                       ) -> Tuple[LossInfo, list]:
        """The wrapped update, then the trust-region shrink of the actor.

        Args:
            tape: ``tf.GradientTape`` of the forward pass.
            training_info: ``TrainingInfo`` with [T, B, ...] leaves and
                ``TracInfo`` info.
            valid_masks: [T, B] float32; defaults to ``step_type != LAST``.
                Also the steps the KL is averaged over.
            weight: scalar loss weight.
            per_step_loss_info: as ``Algorithm.train_complete``.
        Returns:
            ``(loss_info with TracLossInfo extra, grads_and_vars)``.
        """
        if valid_masks is None:
            valid_masks = valid_step_mask(training_info.step_type)
        self._trusted_updater.remember()
        loss_info, grads_and_vars = super().train_complete(
            tape, training_info, valid_masks, weight, per_step_loss_info)
        change, steps = self._trusted_updater.adjust(
            self._policy_change_fn(training_info, valid_masks))
        self._ac_algorithm.after_train(_unwrap_training_info(training_info))
        extra = TracLossInfo(ac=loss_info.extra,
                             policy_kl=tf.square(change),
                             adjust_steps=tf.cast(steps, tf.float32))
        return loss_info._replace(extra=extra), grads_and_vars

    def _policy_change_fn(self, training_info, valid_masks):
        """``() -> sqrt(mean KL(pi_old || pi_new))`` on the batch."""
        info = training_info.info
        old = tf.nest.map_structure(
            lambda d: d if isinstance(d, tfd.Distribution) else
            tf.stop_gradient(d), info.ac.action_distribution)
        old = dist_ops.merge_outer_dims(old)
        observation = dist_ops.merge_outer_dims(info.observation)
        state = dist_ops.merge_outer_dims(info.state)
        step_type = tf.reshape(training_info.step_type, [-1])
        mask = tf.reshape(valid_masks, [-1])
        n = tf.shape(step_type)[0]
        time_step = TimeStep(step_type=step_type,
                             reward=tf.zeros([n]),
                             discount=tf.ones([n]),
                             observation=observation,
                             prev_action=zeros_from_spec(
                                 self.action_spec, [n]),
                             env_id=tf.zeros([n], tf.int32))

        def _change():
            new = self._ac_algorithm.rollout(time_step,
                                             state).info.action_distribution
            kl = tf.stop_gradient(dist_ops.action_distance(old, new))
            return tf.sqrt(tf.maximum(
                masked_mean(kl, mask, replica_context()), 0.0))

        return _change


def _unwrap(info):
    return info.ac if isinstance(info, TracInfo) else info


def _unwrap_training_info(training_info):
    return training_info._replace(
        info=_unwrap(training_info.info),
        rollout_info=_unwrap(training_info.rollout_info))


def _same_specs(a, b):
    """Same structure, shapes, dtypes and bounds (names aside)."""
    try:
        tf.nest.assert_same_structure(a, b)
    except (TypeError, ValueError):
        return False
    for x, y in zip(tf.nest.flatten(a), tf.nest.flatten(b)):
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if is_bounded(x) != is_bounded(y):
            return False
        # BoundedTensorSpec's == compares shape, dtype and bounds.
        if is_bounded(x) and x != y:
            return False
    return True
