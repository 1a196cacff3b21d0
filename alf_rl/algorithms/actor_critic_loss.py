"""The A2C loss: policy gradient on advantages, value loss, entropy bonus.

Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning"
(synchronous variant). Advantages are the n-step return minus the value, or
GAE (Schulman et al. 2015) when ``use_gae``; the value target is the n-step
return, or the TD(lambda) return ``GAE + value`` when ``use_td_lambda_return``.
With ``off_policy_correction='vtrace'`` (for data collected by a stale
behaviour policy, e.g. by asynchronous actors) both come from V-trace
(Espeholt et al. 2018, IMPALA) instead. The equations live in
``alf_rl.ops.value_ops``, ``alf_rl.ops.vtrace`` and
``alf_rl.ops.policy_losses``; this class routes the training info to them.
"""

from typing import Any, Callable, Optional, Tuple, Union

import gin
import tensorflow as tf

from alf_rl.data_structures import LossInfo, TrainingInfo, namedtuple
from alf_rl.ops import distributions as dist_ops
from alf_rl.ops import losses, policy_losses, value_ops
from alf_rl.ops.masks import pad_last_row
from alf_rl.ops.vtrace import vtrace_returns
from alf_rl.utils.common import valid_step_mask
from alf_rl.utils.gradient_application import replica_context
from alf_rl.utils.schedules import schedule_value

ActorCriticLossInfo = namedtuple(
    'ActorCriticLossInfo',
    [
        'pg_loss',  # [T, B] -A_t * log pi(a_t|s_t)
        'td_loss',  # [T, B] value loss
        'neg_entropy',  # [T, B] -H(pi(.|s_t))
        'explained_variance',  # [] of the value function
        # EntropyTargetLossInfo of an ``entropy_target_ctor`` (alpha, ...),
        # () without one
        'entropy_target',
        # [T, B] 1.0 where env_action clipped a bounded continuous action
        # (filled in by ActorCriticAlgorithm; () for discrete actions)
        'action_clipped_fraction',
        # [T, B] (rho_t - 1) - log rho_t, rho_t = pi/mu of the action taken:
        # how stale the behaviour policy was (off_policy_correction only;
        # () without)
        'approx_kl',
    ],
    default_value=())

#: Values of ``ActorCriticLoss(off_policy_correction=...)``.
OFF_POLICY_CORRECTIONS = (None, 'vtrace')

#: ``(target, prediction) -> loss``, element-wise.
ElementWiseLoss = Callable[[tf.Tensor, tf.Tensor], tf.Tensor]


@gin.configurable
class ActorCriticLoss(object):
    """Computes the per-step actor-critic loss from [T, B] training info.

    Its ``extra`` (``ActorCriticLossInfo``, and ``PPOLossInfo`` of the
    subclass) has the fields ``neg_entropy`` and ``entropy_target`` that
    ``ActorCriticAlgorithm`` fills in when it has an entropy target.

    Args:
        gamma: discount factor, multiplied into the environment's discount.
        td_error_loss_fn: ``(target, prediction) -> loss`` element-wise.
        use_gae: advantages by GAE instead of return minus value.
        td_lambda: lambda of GAE.
        use_td_lambda_return: value target is GAE + value (needs use_gae).
        normalize_advantages: normalize advantages over the valid steps of
            the batch.
        advantage_clip: clip advantages to [-c, c] if set.
        entropy_regularization: weight of the entropy bonus (None: none),
            a float or a schedule of the update counter (e.g.
            ``LinearSchedule``; ``ActorCriticAlgorithm`` gives the loss its
            counter, ``set_step_counter``). Leave None with
            ``ActorCriticAlgorithm(entropy_target_ctor=...)``, whose
            adaptive bonus replaces this one.
        td_loss_weight: weight of the value loss.
        off_policy_correction: None (default: none) or ``'vtrace'``: the
            value target is V-trace's ``vs`` and the policy-gradient
            advantage V-trace's ``A^pg`` (``alf_rl.ops.vtrace``), with the
            importance ratios ``pi / mu`` of the actions taken against the
            behaviour policy ``mu`` stored in ``training_info.rollout_info``
            (so only for training from replayed experience: the
            off-policy trainer or the asynchronous one; the loss raises a
            ``ValueError`` when called without it). V-trace's lambda is
            ``td_lambda`` when ``use_gae``, else 1. On data of the current
            policy (ratios 1) it gives the value targets of the
            uncorrected loss (the n-step return, or with ``use_gae`` the
            TD(lambda) return) and, without ``use_gae``, also its
            advantages; with ``use_gae`` and lambda < 1 the advantage is
            ``delta_t + d_{t+1} A^lambda_{t+1}`` rather than GAE's.
        vtrace_clip_rho: V-trace's ``rho_bar`` > 0 (None: no truncation).
        vtrace_clip_pg_rho: V-trace's ``rho_bar_pg`` > 0 (None: none).
    """

    def __init__(self,
                 gamma: float = 0.99,
                 td_error_loss_fn: ElementWiseLoss = (
                     losses.element_wise_squared_loss),
                 use_gae: bool = False,
                 td_lambda: float = 0.95,
                 use_td_lambda_return: bool = True,
                 normalize_advantages: bool = False,
                 advantage_clip: Optional[float] = None,
                 entropy_regularization: Optional[Union[
                     float, Callable[[tf.Tensor], Any]]] = None,
                 td_loss_weight: float = 1.0,
                 off_policy_correction: Optional[str] = None,
                 vtrace_clip_rho: Optional[float] = 1.0,
                 vtrace_clip_pg_rho: Optional[float] = 1.0):
        _check_off_policy_correction(off_policy_correction, vtrace_clip_rho,
                                     vtrace_clip_pg_rho)
        if off_policy_correction and use_gae and not use_td_lambda_return:
            raise ValueError(
                "ActorCriticLoss: off_policy_correction=%r always trains the "
                "value on V-trace's TD(lambda)-like target, but "
                "use_td_lambda_return=False asks for the n-step return; "
                "leave use_td_lambda_return=True (or use_gae=False for "
                "lambda=1)" % off_policy_correction)
        if not 0.0 <= gamma <= 1.0:
            raise ValueError("gamma must be in [0, 1], got %s" % gamma)
        if not 0.0 <= td_lambda <= 1.0:
            raise ValueError("td_lambda must be in [0, 1], got %s" % td_lambda)
        self._gamma = gamma
        self._td_error_loss_fn = td_error_loss_fn
        self._use_gae = use_gae
        self._td_lambda = td_lambda
        self._use_td_lambda_return = use_td_lambda_return and use_gae
        self._normalize_advantages = normalize_advantages
        self._advantage_clip = advantage_clip
        self._entropy_regularization = entropy_regularization
        self._step_counter: Optional[tf.Variable] = None
        self._td_loss_weight = td_loss_weight
        self._off_policy_correction = off_policy_correction
        self._vtrace_clip_rho = vtrace_clip_rho
        self._vtrace_clip_pg_rho = vtrace_clip_pg_rho

    @property
    def entropy_regularization(
            self) -> Optional[Union[float, Callable[[tf.Tensor], Any]]]:
        """The entropy-bonus weight or its schedule (None or 0: no bonus)."""
        return self._entropy_regularization

    def set_step_counter(self, counter: tf.Variable) -> None:
        """The integer scalar variable that drives the schedules.

        Args:
            counter: e.g. the owning algorithm's count of updates.
        """
        self._step_counter = counter

    def entropy_weight(self) -> tf.Tensor:
        """The current entropy-bonus weight (float32 scalar tensor; 0
        without a bonus).

        Raises:
            ValueError: if the weight is a schedule and no step counter was
                set.
        """
        return self._scheduled('entropy_regularization',
                               self._entropy_regularization or 0.0,
                               'ActorCriticAlgorithm')

    def _scheduled(self, name: str,
                   value: Union[float, Callable[[tf.Tensor], Any]],
                   owner: str) -> tf.Tensor:
        """``value`` now: a float, or a schedule of the step counter.

        Args:
            name: the setting's name, for the error.
            value: a float or a schedule (e.g. ``LinearSchedule``).
            owner: the algorithm that sets the counter, for the error.
        Returns:
            float32 scalar tensor.
        Raises:
            ValueError: if ``value`` is a schedule and no step counter was
                set.
        """
        if callable(value) and self._step_counter is None:
            raise ValueError(
                "%s: %s is a schedule (%s) but no step counter was set: use "
                "it through %s, or call set_step_counter(variable)" %
                (type(self).__name__, name, type(value).__name__, owner))
        step = self._step_counter if self._step_counter is not None else 0
        return schedule_value(value, step)

    @property
    def gamma(self) -> float:
        """The discount factor folded into the environment's discount."""
        return self._gamma

    @property
    def td_lambda(self) -> float:
        """The lambda of GAE and of the TD(lambda) return."""
        return self._td_lambda

    def log_importance_ratio(self, training_info: TrainingInfo,
                             action_distribution: Any = None) -> tf.Tensor:
        """``log pi(a_t|s_t) - log mu(a_t|s_t)`` of the actions taken.

        Args:
            training_info: ``TrainingInfo`` with [T, B] leaves;
                ``rollout_info.action_distribution`` is the behaviour
                policy ``mu`` (its gradient is stopped).
            action_distribution: nest of current distributions ``pi`` with
                batch [T, B]; defaults to
                ``training_info.info.action_distribution``.
        Returns:
            [T, B] float32, with gradient through ``pi``.
        """
        if action_distribution is None:
            action_distribution = training_info.info.action_distribution
        log_pi = dist_ops.log_prob(action_distribution, training_info.action)
        old_log_pi = tf.stop_gradient(
            dist_ops.log_prob(training_info.rollout_info.action_distribution,
                              training_info.action))
        return log_pi - old_log_pi

    def advantages_and_returns(self,
                               training_info: TrainingInfo,
                               value: tf.Tensor,
                               log_rhos: Optional[tf.Tensor] = None
                               ) -> Tuple[tf.Tensor, tf.Tensor]:
        """Advantages and value targets of the first T-1 steps.

        Args:
            training_info: ``TrainingInfo`` with [T, B] reward, discount,
                step_type; with ``off_policy_correction`` also the actions
                and ``rollout_info.action_distribution`` (the behaviour
                policy).
            value: [T, B] float32 value estimates.
            log_rhos: [T, B] float32 ``log pi(a_t|s_t) - log mu(a_t|s_t)``,
                only for ``off_policy_correction``; when None, computed from
                ``training_info.info`` and ``training_info.rollout_info``
                (``log_importance_ratio``). Its gradient is stopped.
        Returns:
            ``(advantages, returns)``, both [T-1, B] float32.
        Raises:
            ValueError: ``off_policy_correction`` is set but
                ``training_info.rollout_info`` has no action distribution.
        """
        args = (training_info.reward, value, training_info.step_type,
                training_info.discount * self._gamma)
        if self._off_policy_correction == 'vtrace':
            if log_rhos is None:
                log_rhos = self._behaviour_log_ratio(training_info)
            result = vtrace_returns(
                tf.stop_gradient(log_rhos), *args,
                clip_rho_threshold=self._vtrace_clip_rho,
                clip_pg_rho_threshold=self._vtrace_clip_pg_rho,
                td_lambda=self._td_lambda if self._use_gae else 1.0)
            return result.pg_advantages, result.vs
        if not self._use_gae:
            returns = value_ops.discounted_return(*args)
            return returns - value[:-1], returns
        advantages, returns = value_ops.advantages_and_returns(
            *args, td_lambda=self._td_lambda)
        if not self._use_td_lambda_return:
            returns = value_ops.discounted_return(*args)
        return advantages, returns

    def _behaviour_log_ratio(self, training_info, action_distribution=None):
        """``log_importance_ratio``, after checking (at trace time) that
        the behaviour policy's distribution is there."""
        rollout_info = training_info.rollout_info
        if _is_empty(getattr(rollout_info, 'action_distribution', ())):
            raise ValueError(
                "ActorCriticLoss(off_policy_correction=%r): vtrace needs the "
                "behaviour policy's action distribution in rollout_info, got "
                "rollout_info=%s -- train through OffPolicyTrainer / the "
                "async trainer, not the on-policy driver" %
                (self._off_policy_correction,
                 '()' if _is_empty(rollout_info) else
                 type(rollout_info).__name__))
        return self.log_importance_ratio(training_info, action_distribution)

    def __call__(self,
                 training_info: TrainingInfo,
                 value: tf.Tensor,
                 action_distribution: Any = None) -> LossInfo:
        """The loss.

        Args:
            training_info: ``TrainingInfo`` with [T, B] leaves;
                ``training_info.action`` holds the actions taken.
            value: [T, B] float32 value estimates (with gradient).
            action_distribution: nest of distributions with batch [T, B];
                defaults to ``training_info.info.action_distribution``.
        Returns:
            ``LossInfo(loss=[T, B], extra=ActorCriticLossInfo)``; the last
            time step only bootstraps, so its loss is 0.
        Raises:
            ValueError: ``off_policy_correction`` is set but
                ``training_info.rollout_info`` has no action distribution
                (on-policy training).
        """
        if action_distribution is None:
            action_distribution = training_info.info.action_distribution
        log_rhos = None
        if self._off_policy_correction:
            log_rhos = tf.stop_gradient(self._behaviour_log_ratio(
                training_info, action_distribution))
        advantages, returns = self.advantages_and_returns(
            training_info, value, log_rhos)
        mask = valid_step_mask(training_info.step_type[:-1])
        advantages = self._prepare_advantages(advantages, mask)
        returns = tf.stop_gradient(returns)

        log_pi = dist_ops.log_prob(action_distribution, training_info.action)
        pg_loss = pad_last_row(
            policy_losses.policy_gradient_loss(log_pi[:-1], advantages))
        td_loss = self._td_loss_weight * pad_last_row(
            self._td_error_loss_fn(returns, value[:-1]))
        loss, neg_entropy = self._add_entropy_bonus(pg_loss + td_loss,
                                                    action_distribution)
        ev = losses.explained_variance(returns, tf.stop_gradient(value[:-1]),
                                       mask, replica_context())
        approx_kl = (() if log_rhos is None else
                     policy_losses.approx_kl(log_rhos))
        return LossInfo(loss=loss,
                        extra=ActorCriticLossInfo(pg_loss=pg_loss,
                                                  td_loss=td_loss,
                                                  neg_entropy=neg_entropy,
                                                  explained_variance=ev,
                                                  approx_kl=approx_kl))

    def _prepare_advantages(self, advantages, mask):
        """Normalized and clipped as configured; constants of the loss."""
        return tf.stop_gradient(
            policy_losses.normalize_advantages(
                advantages, mask, self._normalize_advantages,
                self._advantage_clip, replica_context()))

    def _add_entropy_bonus(self, loss, action_distribution):
        """``(loss + c * -H, -H)``, or ``(loss, ())`` without a bonus."""
        if not self._entropy_regularization:
            return loss, ()
        neg_entropy = -dist_ops.entropy(action_distribution)
        if not callable(self._entropy_regularization):
            return loss + self._entropy_regularization * neg_entropy, \
                neg_entropy
        return loss + self.entropy_weight() * neg_entropy, neg_entropy


def _check_off_policy_correction(correction: Any, clip_rho: Any,
                                 clip_pg_rho: Any) -> None:
    """ValueError unless the correction and its thresholds are valid."""
    if correction not in OFF_POLICY_CORRECTIONS:
        raise ValueError(
            "ActorCriticLoss.off_policy_correction: expected one of %s, got "
            "%r" % (', '.join(repr(c) for c in OFF_POLICY_CORRECTIONS),
                    correction))
    for name, x in (('vtrace_clip_rho', clip_rho),
                    ('vtrace_clip_pg_rho', clip_pg_rho)):
        if x is not None and (isinstance(x, bool) or not x > 0):
            raise ValueError("ActorCriticLoss.%s: expected None or a value "
                             "> 0, got %r" % (name, x))


def _is_empty(nest: Any) -> bool:
    """Whether ``nest`` holds no tensor or distribution (``()``, None)."""
    return nest is None or not tf.nest.flatten(nest)
