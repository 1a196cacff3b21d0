"""Trusted-region actor-critic (TRAC, as ALF had it, reimplemented).

Wraps an actor-critic-style algorithm (``ActorCriticAlgorithm``,
``PPOAlgorithm``, or anything whose step infos carry an
``action_distribution`` and which has an ``actor_network``) and bounds how
far each update moves the policy: after the wrapped algorithm's gradient
step, the mean KL divergence ``KL(pi_old(.|s) || pi_new(.|s))`` over the
valid steps of the training batch is measured, and while it exceeds
``max_kl`` the actor's step is shrunk with a ``TrustedUpdater``
(``theta <- theta_old + (theta - theta_old) * 0.9 / r``). The change handed
to the updater is ``sqrt(mean KL)`` against ``sqrt(max_kl)``: a KL grows
quadratically with a small step, so its square root makes one shrink land
near ``0.81 max_kl``.

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

import gin
import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

from alf_rl.algorithms.actor_critic_algorithm import ActorCriticAlgorithm
from alf_rl.algorithms.algorithm import masked_mean
from alf_rl.algorithms.on_policy_algorithm import OnPolicyAlgorithm
from alf_rl.algorithms.trusted_updater import TrustedUpdater
from alf_rl.data_structures import TimeStep, namedtuple
from alf_rl.ops import distributions as dist_ops
from alf_rl.specs import zeros_from_spec
from alf_rl.utils.common import make_stateless_seed, valid_step_mask

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


def action_distance(old, new, seed=None):
    """Per-sample divergence between two nests of action distributions.

    ``KL(old || new)`` per leaf: analytic where TFP has it; for two
    ``TransformedDistribution``s (e.g. tanh-squashed normals from one
    network, hence the same bijector) the KL of their base distributions,
    which a bijection leaves unchanged; otherwise the one-sample estimate
    ``log old(a) - log new(a)`` with ``a ~ old``. Tensor leaves
    (deterministic actions) give the squared distance summed over the action
    dims. Leaves are summed.

    Args:
        old: nest of distributions (or action tensors) with batch [N].
        new: the same nest with batch [N].
        seed: stateless seed for sampled estimates (None: draw one).
    Returns:
        [N] float32.
    """
    tf.nest.assert_same_structure(old, new)
    terms = []
    for p, q in zip(tf.nest.flatten(old), tf.nest.flatten(new)):
        if not isinstance(p, tfd.Distribution):
            d = tf.square(tf.cast(q, tf.float32) - tf.cast(p, tf.float32))
            terms.append(tf.reduce_sum(tf.reshape(d, [tf.shape(d)[0], -1]),
                                       axis=-1))
            continue
        if (isinstance(p, tfd.TransformedDistribution)
                and isinstance(q, tfd.TransformedDistribution)):
            p, q = p.distribution, q.distribution
        try:
            kl = tfd.kl_divergence(p, q)
        except NotImplementedError:
            a = p.sample(seed=make_stateless_seed() if seed is None else seed)
            kl = p.log_prob(a) - q.log_prob(a)
        terms.append(kl)
    return tf.add_n(terms)


def _merge_outer_dims(nest):
    """Reshapes [T, B, ...] leaves to [T * B, ...]."""
    return tf.nest.map_structure(
        lambda x: tf.reshape(x, [-1] + x.shape[2:].as_list()), nest)


def _merge_distribution_outer_dims(nest):
    """A nest of [T, B] distributions (or tensors) as [T * B] ones."""
    spec = dist_ops.extract_spec(nest, from_dim=2)
    params = dist_ops.distributions_to_params(nest)
    return dist_ops.params_to_distributions(_merge_outer_dims(params), spec)


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
            at all, an algorithm without ``actor_network``, bad ``max_kl``.
    """

    def __init__(self,
                 observation_spec=None,
                 action_spec=None,
                 ac_algorithm_ctor=ActorCriticAlgorithm,
                 ac_algorithm=None,
                 max_kl=0.01,
                 shrink_factor=0.9,
                 max_iterations=20,
                 optimizer=None,
                 name='TracAlgorithm'):
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
        actor = getattr(ac_algorithm, 'actor_network', None)
        if actor is None:
            raise ValueError(
                "%s: the wrapped %s has no actor_network whose update could "
                "be bounded" % (name, type(ac_algorithm).__name__))
        super().__init__(ac_algorithm.observation_spec,
                         ac_algorithm.action_spec,
                         train_state_spec=ac_algorithm.train_state_spec,
                         rollout_state_spec=ac_algorithm.rollout_state_spec,
                         predict_state_spec=ac_algorithm.predict_state_spec,
                         optimizer=optimizer,
                         name=name)
        self._ac_algorithm = ac_algorithm
        self._max_kl = float(max_kl)
        self._trusted_updater = TrustedUpdater(
            actor.trainable_variables,
            max_change=float(max_kl)**0.5,
            shrink_factor=shrink_factor,
            max_iterations=max_iterations)

    # ------------------------------------------------------------ delegation
    @property
    def ac_algorithm(self):
        """The wrapped algorithm."""
        return self._ac_algorithm

    @property
    def last_row_only_bootstraps(self):
        """As the wrapped algorithm's (False for PPO)."""
        return self._ac_algorithm.last_row_only_bootstraps

    @property
    def _use_rollout_state(self):
        # Read by the replay mixin; the wrapped algorithm's setting rules.
        inner = self.__dict__.get('_ac_algorithm')
        return bool(inner is not None and inner.use_rollout_state)

    @_use_rollout_state.setter
    def _use_rollout_state(self, value):
        inner = self.__dict__.get('_ac_algorithm')
        if inner is not None:
            inner.use_rollout_state = value

    def _trainable_attributes_to_ignore(self):
        return ['_trusted_updater']

    def transform_timestep(self, time_step, update_normalizers=False):
        """The wrapped algorithm's ``transform_timestep``."""
        return self._ac_algorithm.transform_timestep(
            time_step, update_normalizers=update_normalizers)

    def predict(self, time_step, state):
        """The wrapped algorithm's ``predict`` (greedy actions)."""
        return self._ac_algorithm.predict(time_step, state)

    def env_action(self, action):
        """The wrapped algorithm's ``env_action`` (e.g. clipping)."""
        return self._ac_algorithm.env_action(action)

    def rollout(self, time_step, state):
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

    def train_step(self, experience, state):
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

    def bootstrap_step(self, experience, state):
        """The wrapped ``bootstrap_step`` (see ``train_step``)."""
        return self._wrapped_step(self._ac_algorithm.bootstrap_step,
                                  experience, state)

    def _wrapped_step(self, step_fn, experience, state):
        inner_exp = experience._replace(
            rollout_info=_unwrap(experience.rollout_info))
        step = step_fn(inner_exp, state)
        return step._replace(info=TracInfo(observation=experience.observation,
                                           state=state,
                                           ac=step.info))

    def preprocess_experience(self, experience):
        """The wrapped ``preprocess_experience`` on the unwrapped info.

        Args:
            experience: ``Experience`` with [B, T, ...] leaves.
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

    def calc_loss(self, training_info):
        """The wrapped algorithm's loss on the unwrapped training info."""
        return self._ac_algorithm.calc_loss(_unwrap_training_info(
            training_info))

    def continue_training(self, loss_info):
        """The wrapped algorithm's early-stopping decision, if it has one.

        Args:
            loss_info: reduced ``LossInfo`` with ``TracLossInfo`` extra.
        Returns:
            bool scalar tensor.
        """
        inner = getattr(self._ac_algorithm, 'continue_training', None)
        if inner is None:
            return tf.constant(True)
        extra = loss_info.extra
        if isinstance(extra, TracLossInfo):
            loss_info = loss_info._replace(extra=extra.ac)
        return inner(loss_info)

    def after_train(self, training_info):
        """Nothing: ``train_complete`` bounds the step and then calls the
        wrapped algorithm's ``after_train``."""
        del training_info

    # ------------------------------------------------------------ training
    def train_complete(self, tape, training_info, valid_masks=None,
                       weight=1.0):
        """The wrapped update, then the trust-region shrink of the actor.

        Args:
            tape: ``tf.GradientTape`` of the forward pass.
            training_info: ``TrainingInfo`` with [T, B, ...] leaves and
                ``TracInfo`` info.
            valid_masks: [T, B] float32; defaults to ``step_type != LAST``.
                Also the steps the KL is averaged over.
            weight: scalar loss weight.
        Returns:
            ``(loss_info with TracLossInfo extra, grads_and_vars)``.
        """
        if valid_masks is None:
            valid_masks = valid_step_mask(training_info.step_type)
        self._trusted_updater.remember()
        loss_info, grads_and_vars = super().train_complete(
            tape, training_info, valid_masks, weight)
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
        old = _merge_distribution_outer_dims(old)
        observation = _merge_outer_dims(info.observation)
        state = _merge_outer_dims(info.state)
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
            kl = tf.stop_gradient(action_distance(old, new))
            return tf.sqrt(tf.maximum(masked_mean(kl, mask), 0.0))

        return _change


def _unwrap(info):
    return info.ac if isinstance(info, TracInfo) else info


def _unwrap_training_info(training_info):
    return training_info._replace(
        info=_unwrap(training_info.info),
        rollout_info=_unwrap(training_info.rollout_info))


def _same_specs(a, b):
    try:
        tf.nest.assert_same_structure(a, b)
    except (TypeError, ValueError):
        return False
    for x, y in zip(tf.nest.flatten(a), tf.nest.flatten(b)):
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        bounds = [(getattr(s, 'minimum', None), getattr(s, 'maximum', None))
                  for s in (x, y)]
        if (bounds[0][0] is None) != (bounds[1][0] is None):
            return False
        if bounds[0][0] is not None and not (
                np.array_equal(bounds[0][0], bounds[1][0])
                and np.array_equal(bounds[0][1], bounds[1][1])):
            return False
    return True
