"""The value family: DqnAlgorithm with C51, QR-DQN and IQN value
distributions, noisy heads and Rainbow's parts."""

import functools

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms.dqn_algorithm import DqnAlgorithm
from alf_rl.algorithms.value_distributions import (
    CategoricalValues,
    ImplicitQuantileValues,
    QuantileValues,
    ScalarValues,
)
from alf_rl.data_structures import StepType, make_experience
from alf_rl.environments.suite_unittest import PolicyUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.networks import QNetwork, QRnnNetwork
from alf_rl.networks.noisy import without_noise
from alf_rl.networks.distributional_q_networks import (
    CategoricalQNetwork,
    DistributionalQNetwork,
    ImplicitQuantileQNetwork,
    QuantileQNetwork,
)
from alf_rl.ops import distributions as dist_ops
from alf_rl.utils.common import set_random_seed

HIDDEN = dict(fc_layer_params=(16,))

#: name -> (network ctor, value distribution)
FAMILY = {
    'c51': (
        functools.partial(CategoricalQNetwork, num_atoms=11, **HIDDEN),
        lambda: CategoricalValues(11, -2.0, 2.0),
    ),
    'qr': (
        functools.partial(QuantileQNetwork, num_quantiles=8, **HIDDEN),
        lambda: QuantileValues(8),
    ),
    'iqn': (
        functools.partial(ImplicitQuantileQNetwork, embedding_dim=8, **HIDDEN),
        lambda: ImplicitQuantileValues(6, 5, 4),
    ),
    # Rainbow's parts on C51: dueling and noisy streams, no ε.
    'rainbow': (
        functools.partial(
            CategoricalQNetwork,
            num_atoms=11,
            dueling=True,
            noisy=True,
            head_fc_layer_params=(8,),
            **HIDDEN,
        ),
        lambda: CategoricalValues(11, -2.0, 2.0),
    ),
}


#: The family and plain DQN (scalar values), for the learning test.
WITH_DQN = dict(
    FAMILY, dqn=(functools.partial(QNetwork, **HIDDEN), ScalarValues)
)


def _make(name, env, **kwargs):
    net, values = WITH_DQN[name]
    kwargs.setdefault('optimizer', tf_keras.optimizers.Adam(1e-2))
    if name == 'rainbow':
        kwargs.setdefault('epsilon_greedy', 0.0)
    return DqnAlgorithm(
        env.observation_spec(),
        env.action_spec(),
        q_network_ctor=net,
        value_distribution=values(),
        **kwargs,
    )


def _collect(alg, env, time_step, num_steps, policy=None):
    policy = policy or alg.rollout
    exps = []
    for _ in range(num_steps):
        step = policy(time_step, ())
        exps.append(
            make_experience(
                time_step,
                step._replace(
                    info=dist_ops.distributions_to_params(step.info)
                ),
                (),
            )
        )
        time_step = env.step(step.action)
    exp = tf.nest.map_structure(lambda *x: tf.stack(x), *exps)
    return exp._replace(state=()), time_step


@pytest.mark.parametrize('name', sorted(FAMILY))
def test_training_on_a_fixed_batch_lowers_the_loss(name):
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(8, 5))
    alg = _make(name, env, target_update_period=1000, gamma=0.5)
    exp, _ = _collect(alg, env, env.reset(), 6)
    before = [v.numpy().copy() for v in alg.trainable_variables]
    first = alg.train(exp, mini_batch_length=3)
    assert np.isfinite(first.loss.numpy())
    # The priority source is the (non-negative) distributional loss.
    assert np.all(first.extra.td_error.numpy() >= 0)
    for b, v in zip(before, alg.trainable_variables):
        assert np.any(b != v.numpy()), v.name
    losses = [
        float(alg.train(exp, mini_batch_length=3).loss) for _ in range(15)
    ]
    # Fresh fractions (IQN) and noise make single losses noisy: compare
    # averages. (C51's cross-entropy stays above the target's entropy.)
    assert np.mean(losses[-3:]) < 0.9 * float(first.loss), losses


@pytest.mark.parametrize('name', sorted(FAMILY))
def test_info_shapes_and_greedy_action_is_argmax_of_mean(name):
    set_random_seed(1)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 5))
    alg = _make(name, env)
    exp, _ = _collect(alg, env, env.reset(), 1)
    exp = tf.nest.map_structure(lambda x: x[0], exp)
    info = alg.train_step(exp, ()).info
    n = {'c51': 11, 'rainbow': 11, 'qr': 8, 'iqn': 6}[name]
    n_target = 5 if name == 'iqn' else n
    assert info.q_value.shape == (4, n)
    assert info.target_value.shape == (4, n_target)
    if name in ('c51', 'rainbow'):
        np.testing.assert_allclose(
            info.target_value.numpy().sum(-1), np.ones(4), rtol=1e-5
        )
    if name == 'iqn':
        assert info.tau.shape == (4, 6)
        # predict: the K = 4 midpoint fractions.
        tau = tf.constant([[0.125, 0.375, 0.625, 0.875]] * 4)
        values, _ = alg._q_network(exp.observation, tau=tau)
        mean = tf.reduce_mean(values, -1)
    else:
        # predict: noisy heads with their mean weights.
        with without_noise([alg._q_network]):
            values, _ = alg._q_network(exp.observation)
        mean = alg._distribution.mean(values)
    np.testing.assert_array_equal(
        alg.predict(exp, ()).action, tf.argmax(mean, -1)
    )
    assert mean.shape == (4, 2)


def test_noisy_predict_uses_the_mean_weights_whatever_the_noise():
    """Rainbow's greedy policy (predict: evaluation, export) is the mean
    weights' argmax, the same under every noise sample, eagerly and
    compiled; the rollout's actions follow the noise."""
    set_random_seed(4)
    env = TFPyEnvironment(PolicyUnittestEnv(64, 5))
    alg = _make('rainbow', env)
    online = alg._q_network
    # Larger σ than initialized, so that the noise decides actions.
    for layer in online.noisy_layers:
        layer.kernel_sigma.assign(10.0 * layer.kernel_sigma)
        layer.bias_sigma.assign(10.0 * layer.bias_sigma)
    ts = env.reset()
    compiled = tf.function(lambda ts: alg.predict(ts, ()).action)
    zeroed = []
    for layer in online.noisy_layers:
        zeroed += [
            (v, v.numpy()) for v in (layer.epsilon_in, layer.epsilon_out)
        ]
        layer.epsilon_in.assign(tf.zeros_like(layer.epsilon_in))
        layer.epsilon_out.assign(tf.zeros_like(layer.epsilon_out))
    # With the noise variables at zero the noisy weights are the means.
    mean_action = alg._to_action(
        tf.argmax(
            alg._distribution.mean(online(ts.observation)[0]),
            -1,
            output_type=tf.int32,
        )
    ).numpy()
    for v, value in zeroed:
        v.assign(value)
    noisy_actions = []
    for _ in range(4):
        online.resample_noise()
        np.testing.assert_array_equal(alg.predict(ts, ()).action, mean_action)
        np.testing.assert_array_equal(compiled(ts), mean_action)
        noisy_actions.append(
            tf.argmax(
                alg._distribution.mean(online(ts.observation)[0]), -1
            ).numpy()
        )
    # The noise does change the noisy network's greedy actions.
    assert any(np.any(a != noisy_actions[0]) for a in noisy_actions[1:])
    assert all(layer.noisy for layer in online.noisy_layers)


def test_categorical_mean_is_expectation_over_atoms():
    values = CategoricalValues(3, -1.0, 1.0)
    log_p = tf.math.log(tf.constant([[[0.5, 0.5, 0.0], [0.1, 0.2, 0.7]]]))
    np.testing.assert_allclose(values.mean(log_p), [[-0.5, 0.6]], rtol=1e-6)


def _noise(net):
    return [
        v.numpy().copy()
        for layer in net.noisy_layers
        for v in (layer.epsilon_in, layer.epsilon_out)
    ]


def _changed(before, after):
    return all(np.any(b != a) for b, a in zip(before, after))


@pytest.mark.parametrize(
    'events', [('rollout', 'update'), ('update',), ('rollout',), ()]
)
def test_noise_resampled_as_configured(events):
    set_random_seed(2)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 5))
    alg = _make('rainbow', env, noise_resampling=events)
    online, target = alg._q_network, alg._target_q_network.network
    assert len(online.noisy_layers) == 4  # 2 streams x (hidden, output)
    noise = _noise(online)
    ts = env.reset()
    a1 = alg.predict(ts, ()).action
    # predict keeps the noise: same action, same noise.
    np.testing.assert_array_equal(alg.predict(ts, ()).action, a1)
    assert not _changed(noise, _noise(online))
    exp, _ = _collect(alg, env, ts, 4)
    assert _changed(noise, _noise(online)) == ('rollout' in events)
    owned = alg.rollout_owned_variables()
    assert len(owned) == (9 if 'rollout' in events else 1)
    noise, target_noise = _noise(online), _noise(target)
    alg.train(exp, mini_batch_length=2)
    assert _changed(noise, _noise(online)) == ('update' in events)
    assert _changed(target_noise, _noise(target)) == ('update' in events)


def test_noisy_scalar_head_with_scalar_values():
    set_random_seed(3)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 5))
    alg = DqnAlgorithm(
        env.observation_spec(),
        env.action_spec(),
        q_network_ctor=functools.partial(
            DistributionalQNetwork, noisy=True, **HIDDEN
        ),
        optimizer=tf_keras.optimizers.Adam(1e-2),
    )
    exp, _ = _collect(alg, env, env.reset(), 4)
    assert np.isfinite(alg.train(exp).loss.numpy())


@pytest.mark.parametrize(
    'net,values,match',
    [
        (QNetwork, CategoricalValues(11), 'expects a Q network with 11'),
        (
            functools.partial(CategoricalQNetwork, num_atoms=5),
            CategoricalValues(11),
            'with 11 outputs per action, got 5',
        ),
        (
            functools.partial(QuantileQNetwork, num_quantiles=4),
            ScalarValues(),
            'with None outputs',
        ),
        (QuantileQNetwork, ImplicitQuantileValues(), 'needs an Implicit'),
        (ImplicitQuantileQNetwork, QuantileValues(), 'needs fractions tau'),
    ],
)
def test_network_and_values_must_fit(net, values, match):
    env = TFPyEnvironment(PolicyUnittestEnv(2, 5))
    with pytest.raises(ValueError, match=match):
        DqnAlgorithm(
            env.observation_spec(),
            env.action_spec(),
            q_network_ctor=net,
            value_distribution=values,
        )


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match='v_min < v_max'):
        CategoricalValues(11, 1.0, -1.0)
    with pytest.raises(ValueError, match='kappa >= 0'):
        QuantileValues(8, kappa=-1.0)
    env = TFPyEnvironment(PolicyUnittestEnv(2, 5))
    with pytest.raises(ValueError, match='noise_resampling must name'):
        DqnAlgorithm(
            env.observation_spec(),
            env.action_spec(),
            noise_resampling=('step',),
        )


def _copy_weights(source, dest):
    for net in ('_q_network', '_target_q_network'):
        for s, d in zip(
            getattr(source, net).variables, getattr(dest, net).variables
        ):
            d.assign(s)


@pytest.mark.parametrize('name', ['dqn', 'c51', 'qr'])
def test_first_row_fold_gives_row_zeros_loss(name):
    """loss_rows='first' trains row 0 on the same n-step target as 'all'
    (its priority, row 0's loss, is equal) from a 2-row unroll."""
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(16, 5))
    every = _make(name, env, gamma=0.9, epsilon_greedy=0.5)
    first = _make(name, env, gamma=0.9, epsilon_greedy=0.5, loss_rows='first')
    _copy_weights(every, first)
    exp, _ = _collect(every, env, env.reset(), 9)
    # Windows of 4 steps starting mid-episode, LAST steps inside.
    exp = tf.nest.map_structure(lambda x: x[3:7], exp)
    assert (exp.step_type.numpy()[1:3] == StepType.LAST).any()
    rows = first.training_rows(exp)
    assert rows.step_type.shape == (2, 16)
    assert every.training_rows(exp) is exp
    _, p_every = every.train_with_priority(exp)
    _, p_first = first.train_with_priority(exp)
    np.testing.assert_allclose(p_first, p_every, rtol=1e-5, atol=1e-6)
    assert float(tf.reduce_max(p_first)) > 0.0


def test_first_row_fold_refuses_bad_settings():
    env = TFPyEnvironment(PolicyUnittestEnv(2, 5))
    with pytest.raises(ValueError, match="loss_rows must be 'all' or"):
        _make('dqn', env, loss_rows='middle')
    with pytest.raises(ValueError, match='needs a feed-forward Q network'):
        DqnAlgorithm(
            env.observation_spec(),
            env.action_spec(),
            q_network_ctor=lambda o, a: QRnnNetwork(o, a, lstm_size=(4,)),
            use_rollout_state=True,
            loss_rows='first',
        )


@pytest.mark.parametrize('name', ['dqn', 'c51', 'qr', 'iqn'])
def test_learns_policy_unittest_env(name):
    """Copy-the-observation task: greedy reward -> 1 within seconds."""
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(16, 6))
    alg = _make(
        name,
        env,
        gamma=0.9,
        epsilon_greedy=(1.0, 0.1),
        epsilon_decay_steps=30,
        target_update_period=5,
    )
    alg.prepare_off_policy_specs(16)
    rollout = tf.function(alg.rollout, autograph=False)
    # One traced update (tracing dominates this test), called 4 times per
    # iteration on a random half of the 32 fresh two-step sequences.
    train = tf.function(
        lambda exp: alg.train(exp, mini_batch_size=16, mini_batch_length=2),
        autograph=False,
    )
    time_step = env.reset()
    for _ in range(50 if name == 'dqn' else 40):
        exp, time_step = _collect(alg, env, time_step, 4, rollout)
        for _ in range(4):
            train(exp)
    exp, _ = _collect(alg, env, env.reset(), 12, alg.predict)
    rewards = exp.reward.numpy()
    valid = exp.step_type.numpy() != StepType.FIRST
    assert rewards[valid].mean() >= 0.95


@pytest.mark.parametrize(
    'ctor, arg, match',
    [
        (CategoricalQNetwork, dict(num_atoms=1), 'num_atoms must be >= 2'),
        (
            QuantileQNetwork,
            dict(num_quantiles=0),
            'num_quantiles must be >= 1',
        ),
        (
            ImplicitQuantileQNetwork,
            dict(embedding_dim=0),
            'embedding_dim must be >= 1',
        ),
    ],
)
def test_head_arguments_out_of_range_raise(ctor, arg, match):
    env = TFPyEnvironment(PolicyUnittestEnv(2, 5))
    with pytest.raises(ValueError, match=match):
        ctor(env.observation_spec(), env.action_spec(), **arg)
