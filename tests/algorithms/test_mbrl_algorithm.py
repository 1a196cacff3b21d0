"""Model-based RL: planners on an exact model, the dynamics ensemble and
the learned reward fit known functions, MbrlAlgorithm's random phase and
its one-line errors, pendulum_reward equals the environment's reward."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl import specs
from alf_rl.algorithms import (
    CEMPlanner,
    DynamicsLearningAlgorithm,
    MbrlAlgorithm,
    RandomShootingPlanner,
    RewardEstimationAlgorithm,
    pendulum_reward,
)
from alf_rl.data_structures import StepType, TimeStep
from alf_rl.environments import suite_tf
from alf_rl.networks import EnsembleNetwork

OBS = specs.TensorSpec([1], tf.float32)
ACT = specs.BoundedTensorSpec([1], tf.float32, -1.0, 1.0)


def _step(observation, action):
    """The exact model s' = s + a, shaped [K, M, 1]."""
    return observation + action


def _reward(observation, action):
    """-(s + a)^2: the best first action is -s (then 0)."""
    return -tf.square(observation[:, 0] + action[:, 0])


@pytest.mark.parametrize(
    'planner,tolerance',
    [
        (
            CEMPlanner(
                ACT, horizon=3, population=200, num_elites=20, iterations=5
            ),
            0.05,
        ),
        (RandomShootingPlanner(ACT, horizon=3, population=2000), 0.2),
    ],
)
def test_planners_find_the_optimal_first_action(planner, tolerance):
    tf.random.set_seed(0)
    s = tf.constant([[-0.8], [-0.3], [0.0], [0.5], [0.9]])
    action = planner.plan(s, _step, _reward, ensemble_size=1).numpy()
    assert action.shape == (5, 1)
    np.testing.assert_allclose(action, -s.numpy(), atol=tolerance)


def test_planner_splits_the_population_over_the_members():
    planner = CEMPlanner(ACT, horizon=2, population=6, num_elites=2)
    planner.check_ensemble_size(3)
    with pytest.raises(ValueError, match='multiple of the ensemble size'):
        planner.check_ensemble_size(4)
    # Member k steps its own rows: a member-dependent model shows it.
    seen = []

    def step(observation, action):
        seen.append(observation.shape)
        member = tf.range(3, dtype=tf.float32)[:, None, None]
        return observation + member

    samples = tf.zeros([2, 6, 2, 1])
    returns = planner.evaluate(
        tf.zeros([2, 1]), samples, step, lambda o, a: o[:, 0], ensemble_size=3
    )
    # Candidate p follows member p mod 3: its return is 0 + member.
    np.testing.assert_allclose(returns, [[0, 1, 2, 0, 1, 2]] * 2)


def test_dynamics_ensemble_learns_a_linear_system():
    tf.random.set_seed(1)
    obs_spec = specs.TensorSpec([2], tf.float32)
    act_spec = specs.BoundedTensorSpec([1], tf.float32, -1.0, 1.0)
    model = DynamicsLearningAlgorithm(
        obs_spec,
        act_spec,
        ensemble_ctor=lambda i, o: EnsembleNetwork(
            i, o, ensemble_size=3, hidden_layers=(32, 32)
        ),
    )
    optimizer = tf_keras.optimizers.Adam(3e-3)
    rng = np.random.RandomState(0)

    def batch(n=256):
        s = rng.uniform(-1, 1, size=(n, 2)).astype(np.float32)
        a = rng.uniform(-1, 1, size=(n, 1)).astype(np.float32)
        nxt = s + 0.1 * np.concatenate([s[:, 1:] + a, a], 1)
        return tf.constant(s), tf.constant(a), tf.constant(nxt)

    @tf.function
    def train(s, a, nxt):
        model.update_statistics(s, a)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model.prediction_loss(s, a, nxt))
            loss += model.bound_penalty()
        variables = model.trainable_variables
        optimizer.apply_gradients(
            zip(tape.gradient(loss, variables), variables)
        )
        return loss

    s, a, nxt = batch(512)

    def error():
        inputs = [tf.tile(x[None], [3, 1, 1]) for x in (s, a)]
        predicted = model.predict_next(*inputs, sample=False)
        return float(tf.reduce_mean(tf.abs(predicted - nxt[None])))

    before = error()
    losses = [float(train(*batch())) for _ in range(1000)]
    assert losses[-1] < losses[0] - 3.0  # the NLL falls as variance shrinks
    # The deltas are ~0.1 in size: the mean error is a fraction of them.
    assert error() < 0.1 * before and error() < 0.01, (before, error())


def test_reward_estimation_learns_a_reward():
    tf.random.set_seed(2)
    estimator = RewardEstimationAlgorithm(OBS, ACT, hidden_layers=(32,))
    optimizer = tf_keras.optimizers.Adam(1e-2)
    s = tf.random.uniform([256, 1], -1, 1)
    a = tf.random.uniform([256, 1], -1, 1)
    r = _reward(s, a)

    @tf.function
    def train():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(estimator.prediction_loss(s, a, r))
        variables = estimator.trainable_variables
        optimizer.apply_gradients(
            zip(tape.gradient(loss, variables), variables)
        )
        return loss

    first = float(train())
    for _ in range(300):
        last = float(train())
    assert last < 0.05 * first and last < 0.01


def test_pendulum_reward_equals_the_environments():
    env = suite_tf.load('Pendulum-v1', 8, seed=3)
    time_step = env.reset()
    rng = np.random.RandomState(0)
    for _ in range(20):
        action = tf.constant(rng.uniform(-2.0, 2.0, size=(8, 1)), tf.float32)
        expected = pendulum_reward(time_step.observation, action)
        time_step = env.step(action)
        np.testing.assert_allclose(
            time_step.reward, expected, rtol=1e-5, atol=1e-5
        )


def _time_step(obs):
    batch = obs.shape[0]
    return TimeStep(
        step_type=tf.fill([batch], StepType.MID),
        reward=tf.zeros([batch]),
        discount=tf.ones([batch]),
        observation=obs,
        prev_action=tf.zeros([batch, 1]),
        env_id=tf.range(batch),
    )


def test_rollout_is_random_first_then_planned():
    tf.random.set_seed(4)
    planner = lambda spec: CEMPlanner(
        spec,
        horizon=2,
        population=50,  # noqa
        num_elites=5,
        iterations=3,
    )
    alg = MbrlAlgorithm(
        OBS,
        ACT,
        planner_ctor=planner,
        reward_fn=_reward,
        num_random_steps=6,
        dynamics_ctor=lambda o, a: DynamicsLearningAlgorithm(
            o,
            a,
            ensemble_ctor=lambda i, n: EnsembleNetwork(
                i, n, ensemble_size=1, hidden_layers=(4,)
            ),
        ),
    )
    obs = tf.constant([[0.5], [-0.5], [0.2]])
    first = alg.rollout(_time_step(obs), ()).action.numpy()
    second = alg.rollout(_time_step(obs), ()).action.numpy()
    assert int(alg.rollout_owned_variables()[0].numpy()) == 6
    assert np.all(np.abs(first) <= 1) and np.all(np.abs(second) <= 1)
    assert not np.allclose(first, second)  # uniform draws
    # From the 7th step on: the planner's action (the untrained model is
    # the same in rollout and predict; both plan with the same seed).
    tf.random.set_seed(5)
    planned = alg.rollout(_time_step(obs), ()).action.numpy()
    tf.random.set_seed(5)
    predicted = alg.predict(_time_step(obs), ()).action.numpy()
    np.testing.assert_allclose(planned, predicted)


def test_bad_specs_are_one_clear_error():
    discrete = specs.BoundedTensorSpec([], tf.int64, 0, 2)
    with pytest.raises(ValueError, match='action_spec must be one float'):
        MbrlAlgorithm(OBS, discrete, reward_fn=_reward)
    image = specs.TensorSpec([4, 4, 3], tf.float32)
    with pytest.raises(ValueError, match='observation_spec must be one'):
        MbrlAlgorithm(image, ACT, reward_fn=_reward)
    unbounded = specs.BoundedTensorSpec([1], tf.float32, -np.inf, np.inf)
    with pytest.raises(ValueError, match='must be bounded'):
        MbrlAlgorithm(OBS, unbounded, reward_fn=_reward)
    with pytest.raises(ValueError, match='multiple of the ensemble size'):
        MbrlAlgorithm(
            OBS,
            ACT,
            reward_fn=_reward,
            planner_ctor=lambda s: CEMPlanner(s, population=7, num_elites=2),
        )
    with pytest.raises(ValueError, match='num_elites'):
        CEMPlanner(ACT, population=10, num_elites=20)
