"""PPO for a population of P independent agents trained as one.

Schulman et al. 2017, "Proximal Policy Optimization Algorithms", with the
settings of ``examples/ppo_cart_pole.gin`` (separate tanh actor and critic,
GAE over the whole collected batch, clipped surrogate, squared TD loss,
gradients clipped by global norm, Adam), for discrete actions; optionally
with ``PPOLoss``'s entropy bonus and its value loss clipped around the
behaviour-time value (``examples/ppo_minatar_breakout.gin``).

Every tensor carries a leading population axis P: the networks are
``PopulationMLP``s (one batched matmul per layer for all agents), the loss
of agent k is the mean over agent k's own rows only, and the update
minimises the sum of the P agents' losses, so the gradient of agent k's
slice of every stacked variable is agent k's own gradient. The global-norm
clipping is done per agent (each agent's norm over its own slices) and Adam
is element-wise, so one optimizer over the stacked variables is P
independent optimizers. Agent k therefore trains as the one-agent population
with its seed does, up to float rounding of the batched kernels.

Deviation from ``PPOAlgorithm``: the last collected step of every
environment is not trained on (as there), the advantages are normalized
over each agent's valid mini-batch rows; actions are drawn by Gumbel-max
from noise the caller passes in (so the random stream is the caller's).
"""

from typing import Dict, NamedTuple, Optional, Sequence, Tuple

import gin
import tensorflow as tf
import tf_keras

from alf_rl.algorithms.optimizer_sets import create_optimizer_slots
from alf_rl.networks.population_network import PopulationMLP, check_seeds
from alf_rl.ops import losses, policy_losses, value_ops
from alf_rl.utils.config_types import is_number

#: The [P] statistics of ``PopulationPPO.update``.
STAT_NAMES = ('loss', 'pg_loss', 'td_loss', 'neg_entropy', 'grad_norm')


class PopulationBatch(NamedTuple):
    """What one agent trains on, per agent: n rows each.

    Attributes:
        observation: [P, n, d] float32.
        action: [P, n] int64.
        log_prob: [P, n] float32, the behaviour policy's log pi(a|s).
        value: [P, n] float32, the behaviour-time value v_old(s) (the
            centre of the value clipping).
        advantages: [P, n] float32, GAE(lambda).
        returns: [P, n] float32, TD(lambda) returns.
        mask: [P, n] float32, 1 for rows that are trained on.
    """

    observation: tf.Tensor
    action: tf.Tensor
    log_prob: tf.Tensor
    value: tf.Tensor
    advantages: tf.Tensor
    returns: tf.Tensor
    mask: tf.Tensor


def per_member_normalize(x: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
    """Each member's rows normalized over its own masked entries.

        x_kn <- (x_kn - mean_k) / (std_k + 1e-8)

    with ``mean_k``, ``std_k`` over the n with ``mask_kn = 1`` (as
    ``losses.normalize_masked`` does for one member).

    Args:
        x: [P, n] float32.
        mask: [P, n] float32 in {0, 1}.
    Returns:
        [P, n] float32.
    """
    n = tf.maximum(tf.reduce_sum(mask, axis=1, keepdims=True), 1.0)
    mean = tf.reduce_sum(x * mask, axis=1, keepdims=True) / n
    var = tf.reduce_sum(tf.square(x - mean) * mask, axis=1, keepdims=True) / n
    return (x - mean) / (tf.sqrt(var) + 1e-8)


def clip_per_member(
    grads: Sequence[tf.Tensor], clip_norm: float
) -> Tuple[list, tf.Tensor]:
    """``tf.clip_by_global_norm`` for each member's slices separately.

        g_k <- g_k * c / max(||g_k||, c),  ||g_k|| over every variable's
        slice k

    Args:
        grads: gradients of stacked variables, each [P, ...] float32.
        clip_norm: c > 0.
    Returns:
        ``(clipped grads, norms [P] float32 before clipping)``.
    """
    squares = [
        tf.reduce_sum(tf.square(g), axis=list(range(1, g.shape.rank)))
        for g in grads
    ]
    norms = tf.sqrt(tf.add_n(squares))
    scale = clip_norm / tf.maximum(norms, clip_norm)
    clipped = [
        g * tf.reshape(scale, [-1] + [1] * (g.shape.rank - 1)) for g in grads
    ]
    return clipped, norms


def _check_clips(
    name: str,
    ratio_clip: float,
    gradient_clipping: Optional[float],
    value_clipping: Optional[float],
    entropy_regularization: float,
) -> None:
    """ValueError unless the ratio clip is > 0, the gradient and value clips
    None or > 0 and the entropy weight a number >= 0."""
    if not is_number(ratio_clip) or not ratio_clip > 0:
        raise ValueError(
            '%s: importance_ratio_clipping must be a number > 0, got %r'
            % (name, ratio_clip)
        )
    for arg, clip in (
        ('gradient_clipping', gradient_clipping),
        ('value_clipping', value_clipping),
    ):
        if clip is not None and not (is_number(clip) and clip > 0):
            raise ValueError(
                '%s: %s must be None or a number > 0, got %r'
                % (name, arg, clip)
            )
    if not (is_number(entropy_regularization) and entropy_regularization >= 0):
        raise ValueError(
            '%s: entropy_regularization must be a number >= 0, got %r'
            % (name, entropy_regularization)
        )


@gin.configurable
class PopulationPPO(tf.Module):
    """P PPO agents (discrete actions) with stacked weights.

    Args:
        seeds: P distinct int seeds (agent k's weights come from seed k).
        observation_size: d, the size of a flat observation.
        num_actions: A, the number of discrete actions.
        hidden_layers: hidden sizes of both the actor and the critic.
        activation: their hidden activation.
        learning_rate: Adam's (``tf_keras`` legacy Adam).
        adam_epsilon: Adam's epsilon.
        gamma: discount of the GAE and returns.
        td_lambda: lambda of the GAE and returns.
        importance_ratio_clipping: eps of the clipped surrogate, > 0.
        td_loss_weight: weight of the squared TD loss.
        gradient_clipping: per-agent global-norm clip, or ``None``.
        normalize_advantages: per agent and mini-batch.
        entropy_regularization: c >= 0: ``c * -H(pi(.|s))`` is added to
            every row's loss (``PPOLoss.entropy_regularization``; 0 for
            none).
        value_clipping: ``None``, or c > 0: the TD loss is the max of the
            squared loss of v and of ``v_old + clip(v - v_old, -c, c)``
            (``PPOLoss.value_clipping``).
        name: module name.
    """

    def __init__(
        self,
        seeds: Sequence[int],
        observation_size: int,
        num_actions: int,
        hidden_layers: Tuple[int, ...] = (64, 64),
        activation: str = 'tanh',
        learning_rate: float = 1e-3,
        adam_epsilon: float = 1e-5,
        gamma: float = 0.98,
        td_lambda: float = 0.8,
        importance_ratio_clipping: float = 0.2,
        td_loss_weight: float = 0.5,
        gradient_clipping: Optional[float] = 0.5,
        normalize_advantages: bool = True,
        entropy_regularization: float = 0.0,
        value_clipping: Optional[float] = None,
        name: str = 'PopulationPPO',
    ):
        super().__init__(name=name)
        self.seeds = check_seeds(seeds, name)
        _check_clips(
            name,
            importance_ratio_clipping,
            gradient_clipping,
            value_clipping,
            entropy_regularization,
        )
        self.num_actions = num_actions
        self.gamma = gamma
        self.td_lambda = td_lambda
        self._clip = importance_ratio_clipping
        self._td_loss_weight = td_loss_weight
        self._gradient_clipping = gradient_clipping
        self._normalize_advantages = normalize_advantages
        self._entropy_regularization = float(entropy_regularization)
        self._value_clipping = value_clipping
        layers = (hidden_layers, activation)
        self.actor = PopulationMLP(
            self.seeds, observation_size, num_actions, *layers, name='actor'
        )
        # The critic's seeds are offset so that its initial weights are not
        # the actor's (both are drawn from the agent's seed).
        critic_seeds = tuple(s + 2**40 for s in self.seeds)
        self.critic = PopulationMLP(
            critic_seeds, observation_size, 1, *layers, name='critic'
        )
        self.optimizer = tf_keras.optimizers.legacy.Adam(
            learning_rate, epsilon=adam_epsilon
        )

    def build_optimizer(self) -> None:
        """Creates Adam's slot variables (and its step counter) now
        (``create_optimizer_slots``): called before the update is traced,
        so that the trace creates no variables."""
        create_optimizer_slots(self.optimizer, self.trainable_variables)

    @property
    def population_size(self) -> int:
        """P, the number of agents."""
        return len(self.seeds)

    def policy_and_value(
        self, observation: tf.Tensor
    ) -> Tuple[tf.Tensor, tf.Tensor]:
        """Log-probabilities of the actions and state values.

        Args:
            observation: [P, N, d] float32.
        Returns:
            ``(log_probs [P, N, A], values [P, N])`` float32.
        """
        logits = self.actor(observation)
        value = self.critic(observation)[..., 0]
        return tf.nn.log_softmax(logits), value

    def sample(
        self, observation: tf.Tensor, uniform: tf.Tensor
    ) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """Samples actions by Gumbel-max from the caller's uniform noise.

            a = argmax_a (log pi(a|s) - log(-log u_a))

        Args:
            observation: [P, N, d] float32.
            uniform: [P, N, A] float32 in (0, 1).
        Returns:
            ``(action [P, N] int64, log_prob [P, N], value [P, N])``.
        """
        log_probs, value = self.policy_and_value(observation)
        gumbel = -tf.math.log(-tf.math.log(uniform))
        action = tf.argmax(log_probs + gumbel, axis=-1)
        log_prob = tf.gather(log_probs, action, batch_dims=2)
        return action, log_prob, value

    def targets(
        self,
        reward: tf.Tensor,
        value: tf.Tensor,
        step_type: tf.Tensor,
        discount: tf.Tensor,
    ) -> Tuple[tf.Tensor, tf.Tensor]:
        """GAE advantages and TD(lambda) returns of every collected step.

        Args:
            reward: [T, M] float32 (M = P * B, any row order).
            value: [T, M] float32.
            step_type: [T, M] int32.
            discount: [T, M] float32 (without gamma).
        Returns:
            ``(advantages, returns)`` [T, M]; the last row has advantage 0
            and return v (it is masked out of training by the caller).
        """
        advantages, returns = value_ops.advantages_and_returns(
            reward, value, step_type, discount * self.gamma, self.td_lambda
        )
        advantages = tf.concat([advantages, tf.zeros_like(value[-1:])], 0)
        returns = tf.concat([returns, value[-1:]], 0)
        return advantages, returns

    def loss(self, batch: PopulationBatch) -> Dict[str, tf.Tensor]:
        """Each agent's PPO loss over its own rows (``PPOLoss``'s, averaged
        over the agent's masked rows).

            L = pg + w * td + c * -H(pi(.|s)),  td = l(G, v) or, clipped,
            max(l(G, v), l(G, v_old + clip(v - v_old, -eps_v, eps_v)))

        Args:
            batch: a ``PopulationBatch`` of n rows per agent.
        Returns:
            dict of [P] float32: ``loss`` (the mean of L over the agent's
            masked rows), ``pg_loss``, ``td_loss`` (weighted) and
            ``neg_entropy`` (-H, also without the bonus).
        """
        log_probs, value = self.policy_and_value(batch.observation)
        log_prob = tf.gather(log_probs, batch.action, batch_dims=2)
        advantages = batch.advantages
        if self._normalize_advantages:
            advantages = per_member_normalize(advantages, batch.mask)
        ratio = tf.exp(log_prob - batch.log_prob)
        pg = policy_losses.clipped_surrogate_loss(
            ratio, tf.stop_gradient(advantages), self._clip
        )
        returns = tf.stop_gradient(batch.returns)
        if self._value_clipping is not None:
            td = policy_losses.clipped_value_loss(
                value,
                tf.stop_gradient(batch.value),
                returns,
                self._value_clipping,
            )
        else:
            td = losses.element_wise_squared_loss(returns, value)
        td = self._td_loss_weight * td
        neg_entropy = tf.reduce_sum(tf.exp(log_probs) * log_probs, axis=-1)
        total = pg + td
        if self._entropy_regularization:
            total += self._entropy_regularization * neg_entropy
        count = tf.maximum(tf.reduce_sum(batch.mask, axis=1), 1.0)

        def mean(x: tf.Tensor) -> tf.Tensor:
            return tf.reduce_sum(x * batch.mask, axis=1) / count

        return {
            'loss': mean(total),
            'pg_loss': mean(pg),
            'td_loss': mean(td),
            'neg_entropy': mean(neg_entropy),
        }

    def update(self, batch: PopulationBatch) -> Dict[str, tf.Tensor]:
        """One gradient step of every agent on its own mini-batch.

        Args:
            batch: a ``PopulationBatch`` (the agents' mini-batches).
        Returns:
            ``loss``'s dict plus ``grad_norm`` [P] (before clipping).
        """
        variables = self.trainable_variables
        with tf.GradientTape() as tape:
            stats = self.loss(batch)
            total = tf.reduce_sum(stats['loss'])
        grads = tape.gradient(total, variables)
        if self._gradient_clipping is not None:
            grads, norms = clip_per_member(grads, self._gradient_clipping)
        else:
            _, norms = clip_per_member(grads, 1.0)
        self.optimizer.apply_gradients(zip(grads, variables))
        return dict(stats, grad_norm=norms)
