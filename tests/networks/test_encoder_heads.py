"""Heads composed from an encoder: ``encoding_network_ctor`` and the encoder
arguments passed through the head, errors, copies, gin, variable names."""

import functools

import gin
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl import networks
from alf_rl.networks import (ActorDistributionNetwork,
                             ActorDistributionRnnNetwork, ActorNetwork,
                             EncoderHead, EncodingNetwork, LSTMEncodingNetwork,
                             QNetwork, ValueNetwork, ValueRnnNetwork)
from alf_rl.specs import BoundedTensorSpec, sample_spec_nest, zeros_from_spec
from alf_rl.utils.common import set_random_seed

OBS_SPEC = {'pos': tf.TensorSpec((3, )), 'flag': tf.TensorSpec(())}
ACTION_SPEC = {
    'discrete': BoundedTensorSpec((), tf.int64, 2, 5),
    'continuous': BoundedTensorSpec((2, ), tf.float32, [-1., 0.], [1., 5.]),
}
Q_ACTION_SPEC = BoundedTensorSpec((), tf.int64, 0, 3)


def _obs(outer_dims, seed=1):
    return sample_spec_nest(OBS_SPEC, outer_dims, seed=seed)


def _seeded(ctor):
    # Not tf_keras.utils.set_random_seed: it switches tf_keras initializers
    # to a Python seed generator for the rest of the process.
    set_random_seed(0)
    return ctor()


def _names(net):
    return sorted(v.name for v in net.variables)


def test_every_head_is_an_encoder_head():
    heads = [
        ActorDistributionNetwork(OBS_SPEC, ACTION_SPEC),
        ActorDistributionRnnNetwork(OBS_SPEC, ACTION_SPEC),
        ValueNetwork(OBS_SPEC),
        ValueRnnNetwork(OBS_SPEC),
        QNetwork(OBS_SPEC, Q_ACTION_SPEC),
        ActorNetwork(OBS_SPEC, ACTION_SPEC['continuous']),
    ]
    for net in heads:
        assert isinstance(net, EncoderHead)
        assert isinstance(net.encoder, networks.Network)
        assert net.state_spec == net.encoder.state_spec
    assert [type(h.encoder) for h in heads] == [
        EncodingNetwork, LSTMEncodingNetwork, EncodingNetwork,
        LSTMEncodingNetwork, EncodingNetwork, EncodingNetwork
    ]


def test_default_encoders_and_variable_names_are_kept(tmp_path):
    """The names (and so the variables' checkpoint paths) of the heads are
    those of the separate classes they replace."""
    value = ValueNetwork(OBS_SPEC)
    assert _names(value) == sorted([
        'ValueNetwork/encoder/fc0/kernel:0', 'ValueNetwork/encoder/fc0/bias:0',
        'ValueNetwork/encoder/fc1/kernel:0', 'ValueNetwork/encoder/fc1/bias:0',
        'ValueNetwork/encoder/last/kernel:0', 'ValueNetwork/encoder/last/bias:0'
    ])
    assert [v.shape.as_list() for v in value.encoder._fc_layers[0].weights
            ] == [[4, 64], [64]]
    actor = ActorNetwork(OBS_SPEC, ACTION_SPEC['continuous'])
    assert [l.units for l in actor.encoder._fc_layers] == [256, 256, 2]
    rnn = ValueRnnNetwork(OBS_SPEC)
    assert 'ValueRnnNetwork/encoder/lstm0/recurrent_kernel:0' in _names(rnn)
    assert rnn.state_spec == ((tf.TensorSpec([32]), tf.TensorSpec([32])), )
    path = tf.train.Checkpoint(net=value).save(str(tmp_path / 'ckpt'))
    keys = {k for k, _ in tf.train.list_variables(path)}
    assert 'net/_encoder/_fc_layers/2/kernel/.ATTRIBUTES/VARIABLE_VALUE' in keys


def test_rnn_variant_equals_head_with_lstm_encoder():
    """``ValueRnnNetwork`` is ``ValueNetwork`` with an LSTM encoder: same
    variables in the same order, same seeded values, same outputs."""
    kwargs = dict(input_fc_layer_params=(8, ), lstm_size=(5, ))
    rnn = _seeded(lambda: ValueRnnNetwork(OBS_SPEC, **kwargs))
    head = _seeded(lambda: ValueNetwork(
        OBS_SPEC, encoding_network_ctor=LSTMEncodingNetwork,
        name='ValueRnnNetwork', **kwargs))
    assert [v.name for v in rnn.variables] == [v.name for v in head.variables]
    for a, b in zip(rnn.variables, head.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    state = zeros_from_spec(rnn.state_spec, [3])
    v1, s1 = rnn(_obs([3]), state)
    v2, s2 = head(_obs([3]), state)
    np.testing.assert_array_equal(v1.numpy(), v2.numpy())
    assert v1.shape == [3]
    tf.nest.map_structure(np.testing.assert_array_equal, s1, s2)

    actor_rnn = _seeded(
        lambda: ActorDistributionRnnNetwork(OBS_SPEC, ACTION_SPEC, **kwargs))
    actor = _seeded(lambda: ActorDistributionNetwork(
        OBS_SPEC, ACTION_SPEC, encoding_network_ctor=LSTMEncodingNetwork,
        name='ActorDistributionRnnNetwork', **kwargs))
    d1, _ = actor_rnn(_obs([3]), zeros_from_spec(actor.state_spec, [3]))
    d2, _ = actor(_obs([3]), zeros_from_spec(actor.state_spec, [3]))
    np.testing.assert_array_equal(d1['continuous'].mean().numpy(),
                                  d2['continuous'].mean().numpy())


def test_recurrent_q_network_and_actor_network():
    """Any head takes a recurrent encoder; its state is the encoder's."""
    q = QNetwork(OBS_SPEC, Q_ACTION_SPEC,
                 encoding_network_ctor=LSTMEncodingNetwork, lstm_size=4,
                 dueling=True)
    assert q.state_spec == ((tf.TensorSpec([4]), tf.TensorSpec([4])), )
    values, state = q(_obs([2]), zeros_from_spec(q.state_spec, [2]))
    assert values.shape == [2, 4]
    _, state2 = q(_obs([2]), state)
    assert not np.allclose(state[0][0], state2[0][0])
    actor = ActorNetwork(OBS_SPEC, ACTION_SPEC['continuous'],
                         encoding_network_ctor=LSTMEncodingNetwork)
    action, _ = actor(_obs([2]), zeros_from_spec(actor.state_spec, [2]))
    assert action.shape == [2, 2]
    assert np.all(action.numpy() >= [-1., 0.])
    assert np.all(action.numpy() <= [1., 5.])
    with pytest.raises(ValueError, match='ActorNetwork/encoder: RNN'):
        actor(_obs([3, 2]), zeros_from_spec(actor.state_spec, [2]))


def test_encoder_arguments_pass_through_the_head():
    net = ValueNetwork(OBS_SPEC, fc_layer_params=(5, 3),
                       activation=tf.nn.tanh, kernel_initializer='zeros')
    assert [l.units for l in net.encoder._fc_layers] == [5, 3, 1]
    assert net.encoder._fc_layers[0].activation is tf.nn.tanh
    # kernel_initializer reaches every kernel, the value unit's too.
    for layer in net.encoder._fc_layers:
        np.testing.assert_array_equal(layer.kernel.numpy(), 0.)
    q = QNetwork(OBS_SPEC, Q_ACTION_SPEC, fc_layer_params=(6, ),
                 kernel_initializer='ones', dueling=True)
    np.testing.assert_array_equal(q._value_head._fc_layers[0].kernel, 1.)
    np.testing.assert_array_equal(q._advantage_head._fc_layers[0].kernel,
                                  1.)


def test_last_kernel_initializer_defaults_to_kernel_initializer():
    enc = EncodingNetwork(OBS_SPEC, fc_layer_params=(3, ),
                          kernel_initializer='ones', last_layer_size=2)
    np.testing.assert_array_equal(enc._fc_layers[-1].kernel, 1.)
    enc = EncodingNetwork(OBS_SPEC, fc_layer_params=(3, ),
                          kernel_initializer='ones', last_layer_size=2,
                          last_kernel_initializer='zeros')
    np.testing.assert_array_equal(enc._fc_layers[0].kernel, 1.)
    np.testing.assert_array_equal(enc._fc_layers[-1].kernel, 0.)


def test_copy_keeps_encoder_arguments():
    net = ActorDistributionNetwork(OBS_SPEC, ACTION_SPEC,
                                   fc_layer_params=(7, ),
                                   activation=tf.nn.tanh, name='actor')
    target = net.copy(name='target')
    assert type(target) is ActorDistributionNetwork
    assert target.name == 'target'
    assert [l.units for l in target.encoder._fc_layers] == [7]
    assert target.encoder._fc_layers[0].activation is tf.nn.tanh
    for a, b in zip(target.variables, net.variables):
        a.assign(b)
    obs = _obs([4])
    np.testing.assert_allclose(target(obs)[0]['continuous'].mean(),
                               net(obs)[0]['continuous'].mean())
    rnn = ValueRnnNetwork(OBS_SPEC, lstm_size=(3, 2))
    assert rnn.copy().state_spec == rnn.state_spec


def test_bad_encoder_arguments_raise():
    with pytest.raises(TypeError,
                       match="ValueNetwork: encoding_network_ctor "
                       ".*no argument fc_layer_parms"):
        ValueNetwork(OBS_SPEC, fc_layer_parms=(3, ))
    with pytest.raises(TypeError, match="no argument fc_layer_params.*"
                       "lstm_size"):
        ValueRnnNetwork(OBS_SPEC, fc_layer_params=(3, ))
    with pytest.raises(TypeError, match="ValueNetwork: last_layer_size is "
                       "set by the head"):
        ValueNetwork(OBS_SPEC, last_layer_size=3)
    with pytest.raises(TypeError, match="must return an alf_rl Network, got "
                       "Dense"):
        ValueNetwork(OBS_SPEC,
                     encoding_network_ctor=lambda spec, name, **kw: tf_keras.
                     layers.Dense(1))


def test_gin_configures_the_encoder_through_the_head():
    gin.clear_config()
    try:
        gin.parse_config(
            'ValueNetwork.fc_layer_params = (5,)\n'
            'ValueNetwork.activation = "tanh"\n'
            'actor/ActorDistributionNetwork.encoding_network_ctor = '
            '@LSTMEncodingNetwork\n'
            'actor/ActorDistributionNetwork.lstm_size = (3,)\n')
        value = ValueNetwork(OBS_SPEC)
        assert [l.units for l in value.encoder._fc_layers] == [5, 1]
        with gin.config_scope('actor'):
            actor = ActorDistributionNetwork(OBS_SPEC, ACTION_SPEC)
        assert isinstance(actor.encoder, LSTMEncodingNetwork)
        assert actor.state_spec == ((tf.TensorSpec([3]),
                                     tf.TensorSpec([3])), )
        # Unscoped, the head keeps its feed-forward default.
        plain = ActorDistributionNetwork(OBS_SPEC, ACTION_SPEC)
        assert plain.state_spec == ()
        # A bound parameter of one head does not leak into another head
        # class sharing its body.
        rnn_value = ValueRnnNetwork(OBS_SPEC, lstm_size=2)
        assert isinstance(rnn_value.encoder, LSTMEncodingNetwork)
    finally:
        gin.clear_config()


def test_partial_ctor_defaults_are_overridden_by_arguments():
    ctor = functools.partial(EncodingNetwork, fc_layer_params=(9, ))
    net = ValueNetwork(OBS_SPEC, encoding_network_ctor=ctor)
    assert [l.units for l in net.encoder._fc_layers] == [9, 1]
    net = ValueNetwork(OBS_SPEC, encoding_network_ctor=ctor,
                       fc_layer_params=(2, ))
    assert [l.units for l in net.encoder._fc_layers] == [2, 1]
