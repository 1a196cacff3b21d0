"""The A2C loss: policy gradient on advantages, value loss, entropy bonus.

Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning"
(synchronous variant). Advantages are the n-step return minus the value, or
GAE (Schulman et al. 2015) when ``use_gae``; the value target is the n-step
return, or the TD(lambda) return ``GAE + value`` when ``use_td_lambda_return``.
"""

import gin
import tensorflow as tf

from alf_rl.data_structures import LossInfo, StepType, namedtuple
from alf_rl.ops import distributions as dist_ops
from alf_rl.ops import losses, value_ops

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
    ],
    default_value=())


def _pad_last(x_t):
    """Appends a zero row so a [T-1, B] tensor becomes [T, B]."""
    return tf.concat([x_t, tf.zeros_like(x_t[-1:])], axis=0)


@gin.configurable
class ActorCriticLoss(object):
    """Computes the per-step actor-critic loss from [T, B] training info.

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
                 gamma=0.99,
                 td_error_loss_fn=losses.element_wise_squared_loss,
                 use_gae=False,
                 td_lambda=0.95,
                 use_td_lambda_return=True,
                 normalize_advantages=False,
                 advantage_clip=None,
                 entropy_regularization=None,
                 td_loss_weight=1.0):
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
    def entropy_regularization(self):
        """The constant entropy-bonus weight (None or 0: no bonus)."""
        return self._entropy_regularization

    def advantages_and_returns(self, training_info, value):
        """Advantages and value targets, both [T-1, B].

        Args:
            training_info: ``TrainingInfo`` with [T, B] reward, discount,
                step_type.
            value: [T, B] float32 value estimates.
        """
        discounts = training_info.discount * self._gamma
        returns = value_ops.discounted_return(training_info.reward, value,
                                              training_info.step_type,
                                              discounts)
        if self._use_gae:
            advantages = value_ops.generalized_advantage_estimation(
                training_info.reward, value, training_info.step_type,
                discounts, self._td_lambda)
            if self._use_td_lambda_return:
                returns = advantages + value[:-1]
        else:
            advantages = returns - value[:-1]
        return advantages, returns

    def __call__(self, training_info, value, action_distribution=None):
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
        mask = tf.cast(
            tf.not_equal(training_info.step_type[:-1], StepType.LAST), tf.float32)
        if self._normalize_advantages:
            advantages = losses.normalize_masked(advantages, mask)
        if self._advantage_clip:
            advantages = tf.clip_by_value(advantages, -self._advantage_clip,
                                          self._advantage_clip)
        advantages = tf.stop_gradient(advantages)
        returns = tf.stop_gradient(returns)

        log_pi = dist_ops.log_prob(action_distribution, training_info.action)
        pg_loss = _pad_last(-advantages * log_pi[:-1])
        td_loss = self._td_loss_weight * _pad_last(
            self._td_error_loss_fn(returns, value[:-1]))
        loss = pg_loss + td_loss
        neg_entropy = ()
        if self._entropy_regularization:
            neg_entropy = -dist_ops.entropy(action_distribution)
            loss += self._entropy_regularization * neg_entropy
        ev = losses.explained_variance(returns, tf.stop_gradient(value[:-1]),
                                       mask)
        return LossInfo(loss=loss,
                        extra=ActorCriticLossInfo(pg_loss=pg_loss,
                                                  td_loss=td_loss,
                                                  neg_entropy=neg_entropy,
                                                  explained_variance=ev))
