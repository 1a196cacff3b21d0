"""Advantage actor-critic (A2C).

Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning",
in its synchronous form: one actor network (a distribution over actions)
and one value network, trained together on the driver's on-policy unroll
with ``ActorCriticLoss``. Deviation from the paper: synchronous batched
environments instead of asynchronous workers; optional GAE.

Action bounds: a continuous sample of an unsquashed normal may leave the
spec's bounds; it is stored and trained on as sampled and clipped only for
the environment (``env_action``, as SB3). The fraction of such steps is
summarized as ``loss/action_clipped_fraction``; ``strict_action_bounds``
refuses a policy whose *mean* leaves the bounds by a wide margin. Discrete
actions are never clipped for the environment: one outside the spec (from a
subclass's ``rollout``) is refused at the environment boundary with its
value, environment index and bounds.
"""

from typing import Any, Callable, Optional

import gin
import numpy as np
import tensorflow as tf

from alf_rl.algorithms.actor_critic_loss import (ActorCriticLoss,
                                                 ActorCriticLossInfo)
from alf_rl.algorithms.ppo_loss import PPOLossInfo
from alf_rl.algorithms.entropy_target_algorithm import EntropyTargetAlgorithm
from alf_rl.algorithms.on_policy_algorithm import OnPolicyAlgorithm
from alf_rl.data_structures import (LossInfo, PolicyStep, TimeStep,
                                    TrainingInfo, namedtuple)
from alf_rl.networks import ActorDistributionNetwork, Network, ValueNetwork
from alf_rl.ops import distributions as dist_ops
from alf_rl.specs import cast_and_clip_to_spec, is_bounded
from alf_rl.utils.common import make_stateless_seed
from alf_rl.utils.nest import flatten_with_path

#: Start of the message of an in-graph check that drivers turn into a
#: one-line ``ValueError`` (see ``alf_rl.drivers.driver``).
CHECK_PREFIX = 'alf_rl: '

ActorCriticState = namedtuple(
    'ActorCriticState',
    [
        'actor',  # nest of [B, ...]: the actor network's state
        'value',  # nest of [B, ...]: the value network's state
    ],
    default_value=())

ActorCriticInfo = namedtuple(
    'ActorCriticInfo',
    [
        'action_distribution',  # nest of distributions with batch [B]
        'value',  # [B] float32 value estimate
    ],
    default_value=())


def _entropy_schedule_counter(
        loss: ActorCriticLoss) -> Optional[tf.Variable]:
    """The update counter given to a loss whose entropy bonus is a schedule
    (counted in ``after_train``; checkpointed), else None. A subclass may
    give the loss another counter (``PPOAlgorithm``: its ``num_updates``)."""
    if not callable(loss.entropy_regularization):
        return None
    counter = tf.Variable(0, dtype=tf.int64, trainable=False,
                          name='entropy_updates')
    loss.set_step_counter(counter)
    return counter


@gin.configurable
class ActorCriticAlgorithm(OnPolicyAlgorithm):
    """A2C: an actor network, a value network and ``ActorCriticLoss``.

    Args:
        observation_spec: nest of specs of one observation.
        action_spec: nest of bounded specs of one action.
        actor_network_ctor: ``(observation_spec, action_spec) -> network``
            returning a nest of action distributions.
        value_network_ctor: ``(observation_spec) -> network`` returning [B]
            values.
        loss: an ``ActorCriticLoss`` (or a subclass: ``PPOLoss``);
            defaults to ``ActorCriticLoss()``.
        optimizer: a ``tf_keras`` optimizer for both networks.
        entropy_target_ctor: optional ``(action_spec) ->
            EntropyTargetAlgorithm``; its adaptive entropy bonus
            ``-alpha H`` is added to the loss instead of the loss's constant
            ``entropy_regularization`` (which must then be unset). Its
            ``EntropyTargetLossInfo`` is reported in the loss's
            ``extra.entropy_target`` and its ``-H`` in ``extra.neg_entropy``.
        strict_action_bounds: ``None`` (default) or a margin m >= 0: then
            ``rollout`` stops training (a one-line ``ValueError`` from the
            driver) as soon as the mean (greedy) action of a continuous
            leaf lies outside its bounds widened by m times their range,
            e.g. 0.5 for [-2, 2] allows means in [-4, 4]. Catches an actor
            whose output drifted out of the spec, which clipping would
            hide. Not checked in XLA-compiled loops (XLA drops asserts).
        **kwargs: passed to ``RLAlgorithm`` (reward shaping, observation
            transformers, gradient clipping, ...).
    """

    def __init__(self,
                 observation_spec: Any,
                 action_spec: Any,
                 actor_network_ctor: Callable[[Any, Any], Network] = (
                     ActorDistributionNetwork),
                 value_network_ctor: Callable[[Any], Network] = ValueNetwork,
                 loss: Optional[ActorCriticLoss] = None,
                 optimizer: Any = None,
                 entropy_target_ctor: Optional[
                     Callable[[Any], EntropyTargetAlgorithm]] = None,
                 strict_action_bounds: Optional[float] = None,
                 name: str = 'ActorCriticAlgorithm',
                 **kwargs: Any):
        loss = loss if loss is not None else ActorCriticLoss()
        if not isinstance(loss, ActorCriticLoss):
            raise TypeError(
                "%s: loss must be an ActorCriticLoss (or PPOLoss), got %s" %
                (name, type(loss).__name__))
        if (entropy_target_ctor is not None
                and loss.entropy_regularization):
            raise ValueError(
                "%s: entropy_target_ctor replaces the constant entropy bonus, "
                "but the loss also has entropy_regularization=%s; set it to "
                "None" % (name, loss.entropy_regularization))
        _check_margin(name, strict_action_bounds)
        actor_network = actor_network_ctor(observation_spec, action_spec)
        value_network = value_network_ctor(observation_spec)
        state_spec = ActorCriticState(actor=actor_network.state_spec,
                                      value=value_network.state_spec)
        super().__init__(observation_spec,
                         action_spec,
                         train_state_spec=state_spec,
                         predict_state_spec=ActorCriticState(
                             actor=actor_network.state_spec),
                         optimizer=optimizer,
                         name=name,
                         **kwargs)
        self._actor_network = actor_network
        self._value_network = value_network
        self._loss = loss
        self._entropy_target = (entropy_target_ctor(action_spec)
                                if entropy_target_ctor is not None else None)
        self._entropy_updates = _entropy_schedule_counter(loss)
        self._strict_action_bounds = strict_action_bounds
        # (index, path, spec) of the bounded continuous leaves: the ones
        # env_action clips, summarized and checked by strict_action_bounds.
        self._clipped_leaves = _bounded_float_leaves(action_spec)

    @property
    def actor_network(self) -> Network:
        """The network mapping observations to action distributions."""
        return self._actor_network

    @property
    def entropy_target(self) -> Optional[EntropyTargetAlgorithm]:
        """The ``EntropyTargetAlgorithm`` sub-algorithm, or None."""
        return self._entropy_target

    def predict(self, time_step: TimeStep, state: Any) -> PolicyStep:
        """Greedy action (the mode of the action distribution).

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: ``ActorCriticState`` with [B, ...] leaves.
        Returns:
            ``PolicyStep(action, ActorCriticState, info=())``.
        """
        dist, actor_state = self._actor_network(time_step.observation,
                                                state=state.actor)
        action = cast_and_clip_to_spec(dist_ops.mode(dist), self.action_spec)
        return PolicyStep(action=action,
                          state=ActorCriticState(actor=actor_state))

    def rollout(self, time_step: TimeStep, state: Any) -> PolicyStep:
        """Samples an action and evaluates the value.

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: ``ActorCriticState`` with [B, ...] leaves.
        Returns:
            ``PolicyStep(action [B, ...], ActorCriticState,
            ActorCriticInfo(action_distribution, value [B]))``.
        """
        dist, actor_state = self._actor_network(time_step.observation,
                                                state=state.actor)
        value, value_state = self._value_network(time_step.observation,
                                                 state=state.value)
        # Continuous samples of an unsquashed normal may leave the bounds.
        # They are returned as sampled (stored and trained on: the log-prob
        # of a clipped action would be the density at the bound, a biased
        # gradient); ``env_action`` clips them for the environment, as SB3
        # does. Discrete samples of a categorical are in range unless the
        # logits are NaN; they are clipped here so that NaN logits surface
        # as a non-finite loss (naming the loss) rather than as an
        # out-of-range action. ``env_action`` does not clip discrete
        # actions: one out of range (a subclass's) is refused by the
        # environment with its value, env index and bounds.
        action = dist_ops.sample_action_distribution(
            dist, seed=make_stateless_seed())
        action = tf.nest.map_structure(
            lambda a, s: (cast_and_clip_to_spec(a, s)
                          if s.dtype.is_integer else tf.cast(a, s.dtype)),
            action, self.action_spec)
        if self._strict_action_bounds is not None and self._clipped_leaves:
            checks = self._check_mean_in_bounds(dist)
            if not tf.executing_eagerly():
                # The environment step waits for the check.
                with tf.control_dependencies(checks):
                    action = tf.nest.map_structure(tf.identity, action)
        return PolicyStep(action=action,
                          state=ActorCriticState(actor=actor_state,
                                                 value=value_state),
                          info=ActorCriticInfo(action_distribution=dist,
                                               value=value))

    def env_action(self, action: Any) -> Any:
        """``rollout``'s action for the environment: continuous leaves
        clipped into the spec's bounds, discrete ones only cast.

        A discrete action outside the spec is passed on unchanged, so that
        the environment refuses it with its value, env index and bounds
        (clipping it would train the loss on a label the environment never
        saw, and fail there with a raw TensorFlow error).

        Args:
            action: nest of [B, ...] actions from ``rollout``.
        Returns:
            Nest of [B, ...] actions of the spec's dtypes; float leaves
            clipped to the bounds.
        """
        return tf.nest.map_structure(
            lambda a, s: (tf.cast(a, s.dtype) if not s.dtype.is_floating
                          else cast_and_clip_to_spec(a, s)),
            action, self.action_spec)

    def _check_mean_in_bounds(self, dist):
        """Assert ops (eagerly: raises at once) that the mean action of
        every bounded continuous leaf of ``dist`` lies within the bounds
        widened by ``strict_action_bounds`` times their range (see the
        constructor)."""
        margin = float(self._strict_action_bounds)
        means = tf.nest.flatten(dist_ops.mode(dist))
        checks = []
        for i, path, spec in self._clipped_leaves:
            mean = tf.cast(means[i], tf.float32)
            low = np.asarray(spec.minimum, np.float32)
            high = np.asarray(spec.maximum, np.float32)
            wide_low = low - margin * (high - low)
            wide_high = high + margin * (high - low)
            outside = tf.logical_or(mean < wide_low, mean > wide_high)
            batch = tf.shape(mean)[0]
            flat_outside = tf.reshape(outside, [batch, -1])
            first = tf.argmax(tf.cast(tf.reshape(outside, [-1]), tf.int32),
                              output_type=tf.int32)
            per_env = tf.shape(flat_outside)[1]
            message = (
                "%s%s.strict_action_bounds=%g: the policy's mean %s left "
                "its bounds %s by more than %g x their range, i.e. %s -- "
                "fix the actor's output (e.g. squash it with tanh) or set "
                "strict_action_bounds=None to clip silently; first mean "
                "outside, its env index, envs outside:" %
                (CHECK_PREFIX, self.name, margin, path, _interval(low, high),
                 margin, _interval(wide_low, wide_high)))
            checks.append(tf.debugging.Assert(
                tf.logical_not(tf.reduce_any(outside)),
                [message, tf.reshape(mean, [-1])[first], first // per_env,
                 tf.reduce_sum(tf.cast(tf.reduce_any(flat_outside, axis=1),
                                       tf.int32))],
                summarize=1, name='strict_action_bounds'))
        return checks

    def calc_loss(self, training_info: TrainingInfo) -> LossInfo:
        """The loss (``ActorCriticLoss`` or ``PPOLoss``) on [T, B] training
        info, plus the adaptive entropy bonus of the entropy target if any.

        Args:
            training_info: ``TrainingInfo`` with [T, B] leaves; ``info`` has
                ``action_distribution`` and ``value``.
        Returns:
            ``LossInfo(loss=[T, B], extra=the loss's extra)``.
        """
        loss_info = self._loss(training_info, training_info.info.value)
        if self._entropy_target is not None:
            entropy_loss = self._entropy_target.calc_loss(
                training_info.info.action_distribution,
                training_info.step_type)
            # ActorCriticLossInfo and PPOLossInfo both declare these fields.
            extra = loss_info.extra._replace(
                neg_entropy=entropy_loss.extra.neg_entropy,
                entropy_target=entropy_loss.extra._replace(neg_entropy=()))
            loss_info = loss_info._replace(
                loss=loss_info.loss + entropy_loss.loss, extra=extra)
        if self._clipped_leaves and isinstance(
                loss_info.extra, (ActorCriticLossInfo, PPOLossInfo)):
            # (Both declare the field; a custom loss's extra is left alone.)
            loss_info = loss_info._replace(extra=loss_info.extra._replace(
                action_clipped_fraction=self._clipped_fraction(
                    training_info.action)))
        return loss_info

    def _clipped_fraction(self, action):
        """[T, B] float32: 1 where ``env_action`` clipped some element of
        a bounded continuous leaf of ``action`` ([T, B, ...] as sampled)."""
        flat = tf.nest.flatten(action)
        clipped = None
        for i, _, spec in self._clipped_leaves:
            a = flat[i]
            outside = tf.logical_or(a < tf.cast(spec.minimum, a.dtype),
                                    a > tf.cast(spec.maximum, a.dtype))
            if a.shape.rank > 2:
                outside = tf.reduce_any(outside,
                                        axis=list(range(2, a.shape.rank)))
            clipped = (outside if clipped is None else
                       tf.logical_or(clipped, outside))
        return tf.cast(clipped, tf.float32)

    def after_train(self, training_info: TrainingInfo) -> None:
        """The entropy target's controller step (if any) and the count of
        updates of an entropy-bonus schedule (if any), after the update.

        Args:
            training_info: ``TrainingInfo`` with [T, B] leaves, as given to
                ``calc_loss``.
        """
        if self._entropy_target is not None:
            self._entropy_target.after_train(training_info)
        if self._entropy_updates is not None:
            self._entropy_updates.assign_add(1)
        super().after_train(training_info)


def _check_margin(name: str, margin: Any) -> None:
    """ValueError unless ``strict_action_bounds`` is None or >= 0."""
    if margin is not None and (
            isinstance(margin, bool) or not isinstance(
                margin, (int, float, np.integer, np.floating))
            or not margin >= 0):
        raise ValueError(
            "%s.strict_action_bounds: expected None or a margin >= 0 (a "
            "fraction of each bound's range), got %r" % (name, margin))


def _bounded_float_leaves(action_spec: Any) -> list:
    """[(flat index, path, spec)] of the bounded float leaves."""
    return [(i, path, spec) for i, (path, spec) in enumerate(
        flatten_with_path(action_spec, 'action'))
            if spec.dtype.is_floating and is_bounded(spec)]


def _interval(low: np.ndarray, high: np.ndarray) -> str:
    """'(lo, hi)' with scalars for constant bounds."""
    def _short(x):
        flat = np.ravel(x)
        if flat.size and np.all(flat == flat[0]):
            return '%g' % flat[0]
        inner = ', '.join('%g' % v for v in flat[:6])
        return '(%s%s)' % (inner, ', ...' if flat.size > 6 else '')
    return '(%s, %s)' % (_short(low), _short(high))
