"""``PopulationPPO``'s loss is ``PPOLoss``'s, member by member."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp

from alf_rl.algorithms.population_ppo import PopulationBatch, PopulationPPO
from alf_rl.algorithms.ppo_loss import PPOInfo, PPOLoss
from alf_rl.data_structures import StepType, TrainingInfo

# Both options of examples/ppo_minatar_breakout.gin on.
_SETTINGS = dict(
    importance_ratio_clipping=0.2,
    normalize_advantages=True,
    td_loss_weight=0.5,
    entropy_regularization=0.01,
    value_clipping=0.2,
)


def _batch(pop: PopulationPPO, n: int) -> tuple:
    """A random batch of n rows per member and the behaviour logits."""
    rng = np.random.RandomState(0)
    p, a = pop.population_size, pop.num_actions
    observation = tf.constant(rng.normal(size=(p, n, 4)), tf.float32)
    logits = tf.constant(rng.normal(size=(p, n, a)), tf.float32)
    action = tf.constant(rng.randint(0, a, size=(p, n)), tf.int64)
    _, value = pop.policy_and_value(observation)
    # Behaviour values within and beyond the clip (0.2) of the current.
    old_value = value + tf.constant(rng.uniform(-0.6, 0.6, (p, n)), tf.float32)
    mask = np.ones((p, n), np.float32)
    mask[0, 3] = mask[1, [0, 5]] = 0.0
    batch = PopulationBatch(
        observation=observation,
        action=action,
        log_prob=tf.gather(tf.nn.log_softmax(logits), action, batch_dims=2),
        value=old_value,
        advantages=tf.constant(rng.normal(size=(p, n)), tf.float32),
        returns=tf.constant(rng.normal(size=(p, n)), tf.float32),
        mask=tf.constant(mask),
    )
    return batch, logits


def _ppo_loss(
    loss: PPOLoss, pop: PopulationPPO, batch: PopulationBatch, logits, k: int
) -> dict:
    """Member k's rows as a [T=n, B=1] batch through ``PPOLoss``, averaged
    over the valid rows as the trainer averages them."""
    log_probs, value = pop.policy_and_value(batch.observation)

    def col(x: tf.Tensor) -> tf.Tensor:
        return x[k][:, None]

    mask = col(batch.mask)
    info = TrainingInfo(
        action=col(batch.action),
        step_type=tf.where(mask > 0, StepType.MID, StepType.LAST),
        reward=tf.zeros_like(mask),
        discount=tf.ones_like(mask),
        rollout_info=PPOInfo(
            action_distribution=tfp.distributions.Categorical(
                logits=col(logits)
            ),
            value=col(batch.value),
            returns=col(batch.returns),
            advantages=col(batch.advantages),
        ),
    )
    out = loss(
        info,
        col(value),
        tfp.distributions.Categorical(logits=col(log_probs)),
    )

    def mean(x: tf.Tensor) -> float:
        return float(tf.reduce_sum(x * mask) / tf.reduce_sum(mask))

    return {
        'loss': mean(out.loss),
        'pg_loss': mean(out.extra.pg_loss),
        'td_loss': mean(out.extra.td_loss),
        'neg_entropy': mean(out.extra.neg_entropy),
    }


def test_member_loss_equals_ppo_loss_with_entropy_and_value_clipping():
    pop = PopulationPPO([3, 8], 4, 3, hidden_layers=(8,), **_SETTINGS)
    batch, logits = _batch(pop, 12)
    got = {k: v.numpy() for k, v in pop.loss(batch).items()}
    ppo_loss = PPOLoss(gamma=pop.gamma, td_lambda=pop.td_lambda, **_SETTINGS)
    for k in range(2):
        want = _ppo_loss(ppo_loss, pop, batch, logits, k)
        for name, value in want.items():
            np.testing.assert_allclose(got[name][k], value, rtol=1e-5)
    # The options matter on this batch: the clip raised the value loss
    # (the same seeds: the same weights) and the bonus moved the loss (the
    # entropy of 3 actions is at most log 3).
    plain = PopulationPPO([3, 8], 4, 3, hidden_layers=(8,), td_loss_weight=0.5)
    plain_td = plain.loss(batch)['td_loss'].numpy()
    assert np.all(got['td_loss'] > plain_td + 1e-3)
    assert np.all(-np.log(3) <= got['neg_entropy'])
    assert np.all(got['neg_entropy'] < -0.1)
    np.testing.assert_allclose(
        got['loss'],
        got['pg_loss'] + got['td_loss'] + 0.01 * got['neg_entropy'],
        rtol=1e-5,
    )


@pytest.mark.parametrize(
    'argument, value',
    [
        ('entropy_regularization', -0.1),
        ('value_clipping', 0.0),
        ('importance_ratio_clipping', 'big'),
    ],
)
def test_bad_loss_settings_name_the_argument(argument: str, value) -> None:
    with pytest.raises(ValueError, match='PopulationPPO: %s' % argument):
        PopulationPPO([0], 4, 2, **{argument: value})
