"""The A2C loss: policy gradient on advantages, value loss, entropy bonus.

Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning"
(synchronous variant). Advantages are the n-step return minus the value, or
GAE (Schulman et al. 2015) when ``use_gae``; the value target is the n-step
return, or the TD(lambda) return ``GAE + value`` when ``use_td_lambda_return``.
The equations live in ``alf_rl.ops.value_ops`` and
``alf_rl.ops.policy_losses``; this class routes the training info to them.
"""

from typing import Any, Callable, Optional, Tuple

import gin
import tensorflow as tf

from alf_rl.data_structures import LossInfo, TrainingInfo, namedtuple
from alf_rl.ops import distributions as dist_ops
from alf_rl.ops import losses, policy_losses, value_ops
from alf_rl.ops.masks import pad_last_row
from alf_rl.utils.common import valid_step_mask

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
    ],
    default_value=())

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
        entropy_regularization: weight of the entropy bonus (None: none).
            Leave None with ``ActorCriticAlgorithm(entropy_target_ctor=...)``,
            whose adaptive bonus replaces this constant one.
        td_loss_weight: weight of the value loss.
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
                 entropy_regularization: Optional[float] = None,
                 td_loss_weight: float = 1.0):
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
        self._td_loss_weight = td_loss_weight

    @property
    def entropy_regularization(self) -> Optional[float]:
        """The constant entropy-bonus weight (None or 0: no bonus)."""
        return self._entropy_regularization

    @property
    def gamma(self) -> float:
        """The discount factor folded into the environment's discount."""
        return self._gamma

    @property
    def td_lambda(self) -> float:
        """The lambda of GAE and of the TD(lambda) return."""
        return self._td_lambda

    def advantages_and_returns(self, training_info: TrainingInfo,
                               value: tf.Tensor
                               ) -> Tuple[tf.Tensor, tf.Tensor]:
        """Advantages and value targets of the first T-1 steps.

        Args:
            training_info: ``TrainingInfo`` with [T, B] reward, discount,
                step_type.
            value: [T, B] float32 value estimates.
        Returns:
            ``(advantages, returns)``, both [T-1, B] float32.
        """
        args = (training_info.reward, value, training_info.step_type,
                training_info.discount * self._gamma)
        if not self._use_gae:
            returns = value_ops.discounted_return(*args)
            return returns - value[:-1], returns
        advantages, returns = value_ops.advantages_and_returns(
            *args, td_lambda=self._td_lambda)
        if not self._use_td_lambda_return:
            returns = value_ops.discounted_return(*args)
        return advantages, returns

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
        """
        if action_distribution is None:
            action_distribution = training_info.info.action_distribution
        advantages, returns = self.advantages_and_returns(training_info,
                                                          value)
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
                                       mask)
        return LossInfo(loss=loss,
                        extra=ActorCriticLossInfo(pg_loss=pg_loss,
                                                  td_loss=td_loss,
                                                  neg_entropy=neg_entropy,
                                                  explained_variance=ev))

    def _prepare_advantages(self, advantages, mask):
        """Normalized and clipped as configured; constants of the loss."""
        return tf.stop_gradient(
            policy_losses.normalize_advantages(advantages, mask,
                                               self._normalize_advantages,
                                               self._advantage_clip))

    def _add_entropy_bonus(self, loss, action_distribution):
        """``(loss + c * -H, -H)``, or ``(loss, ())`` without a bonus."""
        if not self._entropy_regularization:
            return loss, ()
        neg_entropy = -dist_ops.entropy(action_distribution)
        return loss + self._entropy_regularization * neg_entropy, neg_entropy
