"""Tests for the recurrent networks: shapes, memory, state reset, copy,
construction-time variables, one step per call, gin."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl import networks
from alf_rl.ops import distributions as dist_ops
from alf_rl.specs import BoundedTensorSpec, sample_spec_nest, zeros_from_spec
from alf_rl.utils.common import reset_state_if_necessary

OBS_SPEC = {'pos': tf.TensorSpec((3, )), 'flag': tf.TensorSpec(())}
ACTION_SPEC = {
    'discrete': BoundedTensorSpec((), tf.int64, 2, 5),
    'continuous': BoundedTensorSpec((2, ), tf.float32, [-1., 0.], [1., 5.]),
}


def _obs(outer_dims, seed=1):
    return sample_spec_nest(OBS_SPEC, outer_dims, seed=seed)


def _state_shapes(state):
    return [s.shape.as_list() for s in tf.nest.flatten(state)]


def _nets(lstm_size=(6, 5)):
    return [
        networks.ActorDistributionRnnNetwork(OBS_SPEC, ACTION_SPEC,
                                             input_fc_layer_params=(8, ),
                                             lstm_size=lstm_size,
                                             output_fc_layer_params=(7, )),
        networks.ValueRnnNetwork(OBS_SPEC, input_fc_layer_params=(8, ),
                                 lstm_size=lstm_size),
    ]


def test_state_spec_is_h_c_per_layer():
    actor, value = _nets()
    for net in (actor, value):
        assert net.state_spec == (
            (tf.TensorSpec([6]), tf.TensorSpec([6])),
            (tf.TensorSpec([5]), tf.TensorSpec([5])),
        )
    single = networks.ValueRnnNetwork(OBS_SPEC, lstm_size=4)
    assert single.state_spec == ((tf.TensorSpec([4]), tf.TensorSpec([4])), )


def test_output_and_state_shapes():
    actor, value = _nets()
    state = zeros_from_spec(actor.state_spec, [4])
    dists, new_state = actor(_obs([4]), state)
    actions = dist_ops.sample_action_distribution(dists, seed=3)
    assert actions['discrete'].shape == [4]
    assert actions['continuous'].shape == [4, 2]
    assert dist_ops.log_prob(dists, actions).shape == [4]
    tf.nest.assert_same_structure(new_state, actor.state_spec)
    assert _state_shapes(new_state) == [[4, 6], [4, 6], [4, 5], [4, 5]]
    v, v_state = value(_obs([4]), zeros_from_spec(value.state_spec, [4]))
    assert v.shape == [4]
    assert _state_shapes(v_state) == [[4, 6], [4, 6], [4, 5], [4, 5]]


def test_empty_state_means_zero_state():
    _, value = _nets()
    obs = _obs([3])
    v0, s0 = value(obs)
    v1, s1 = value(obs, zeros_from_spec(value.state_spec, [3]))
    np.testing.assert_allclose(v0, v1)
    for a, b in zip(tf.nest.flatten(s0), tf.nest.flatten(s1)):
        np.testing.assert_allclose(a, b)


def test_state_changes_output():
    """Memory: the same observation gives different outputs after different
    histories or states."""
    actor, value = _nets()
    zero_obs = tf.nest.map_structure(tf.zeros_like, _obs([2]))
    state = zeros_from_spec(value.state_spec, [2])
    v_first, state = value(zero_obs, state)
    _, state = value(_obs([2], seed=5), state)
    v_after, state = value(zero_obs, state)
    assert not np.allclose(v_first, v_after)
    # Same observation, different state -> different distributions.
    obs = _obs([2], seed=7)
    d0, a_state = actor(obs, zeros_from_spec(actor.state_spec, [2]))
    d1, _ = actor(obs, a_state)
    assert not np.allclose(d0['continuous'].mean(), d1['continuous'].mean())
    assert not np.allclose(d0['discrete'].distribution.logits_parameter(),
                           d1['discrete'].distribution.logits_parameter())


def test_state_reset_at_first_matches_fresh_state():
    """Rows reset by ``reset_state_if_necessary`` behave like a new episode;
    the other rows keep their memory."""
    _, value = _nets()
    obs = _obs([3])
    state = zeros_from_spec(value.state_spec, [3])
    fresh_v, _ = value(obs, state)
    for seed in (2, 3):
        _, state = value(_obs([3], seed=seed), state)
    is_first = tf.constant([True, False, True])
    reset = reset_state_if_necessary(
        state, zeros_from_spec(value.state_spec, [3]), is_first)
    for s in tf.nest.flatten(reset):
        np.testing.assert_array_equal(s.numpy()[[0, 2]], 0.)
        assert np.any(s.numpy()[1] != 0.)
    v, _ = value(obs, reset)
    np.testing.assert_allclose(v.numpy()[[0, 2]], fresh_v.numpy()[[0, 2]],
                               rtol=1e-6)
    assert not np.isclose(v.numpy()[1], fresh_v.numpy()[1])


def test_time_major_input_raises():
    for net in _nets():
        state = zeros_from_spec(net.state_spec, [3])
        with pytest.raises(ValueError, match='one step at a time'):
            net(_obs([5, 3]), state)


def test_bad_lstm_size_raises():
    with pytest.raises(ValueError, match='lstm_size'):
        networks.ValueRnnNetwork(OBS_SPEC, lstm_size=())


def test_variables_exist_after_construction():
    actor, value = _nets()
    # actor: input fc 2 + 2 LSTMs x 3 + output fc 2 + categorical 2
    #        + normal (mean 2 + std 1); value: fc 2 + LSTMs 6 + last 2.
    assert len(actor.trainable_variables) == 15
    assert len(value.trainable_variables) == 10
    assert any('lstm1' in v.name and 'recurrent_kernel' in v.name
               for v in actor.trainable_variables)
    before = [len(n.variables) for n in (actor, value)]
    created = []

    @tf.function
    def run(obs, a_state, v_state):
        with tf.variable_creator_scope(
                lambda next_creator, **kw: created.append(kw) or next_creator(
                    **kw)):
            d, a_state = actor(obs, a_state)
            v, v_state = value(obs, v_state)
            return dist_ops.sample_action_distribution(d), v, a_state

    _, v, a_state = run(_obs([3]), zeros_from_spec(actor.state_spec, [3]),
                        zeros_from_spec(value.state_spec, [3]))
    assert created == []
    assert [len(n.variables) for n in (actor, value)] == before
    assert v.shape == [3]


def test_gradients_flow_through_time():
    """The loss at the last step reaches every variable through the state,
    including the recurrent kernels."""
    _, value = _nets()
    obs = [_obs([4], seed=s) for s in range(3)]
    with tf.GradientTape() as tape:
        state = zeros_from_spec(value.state_spec, [4])
        for o in obs:
            v, state = value(o, state)
        loss = tf.reduce_sum(v**2)
    grads = tape.gradient(loss, value.trainable_variables)
    for g, var in zip(grads, value.trainable_variables):
        assert g is not None and np.any(g.numpy() != 0), var.name
    # The first observation influences the last output only via the state.
    with tf.GradientTape() as tape:
        tape.watch(obs[0]['pos'])
        state = zeros_from_spec(value.state_spec, [4])
        for o in obs:
            v, state = value(o, state)
    assert np.any(tape.gradient(v, obs[0]['pos']).numpy() != 0)


def test_copy_gives_fresh_variables_same_config():
    for net in _nets():
        target = net.copy(name='target')
        assert type(target) is type(net) and target.name == 'target'
        assert target.state_spec == net.state_spec
        v1, v2 = net.trainable_variables, target.trainable_variables
        assert [v.shape for v in v1] == [v.shape for v in v2]
        assert not {id(v) for v in v1} & {id(v) for v in v2}
        kernels = [(a, b) for a, b in zip(v1, v2) if 'kernel' in a.name]
        assert any(not np.allclose(a, b) for a, b in kernels)
        out, _ = target(_obs([2]), zeros_from_spec(target.state_spec, [2]))


def test_gin_configures_lstm_size():
    import gin
    gin.clear_config()
    try:
        gin.parse_config('ValueRnnNetwork.lstm_size = (3,)\n'
                         'ActorDistributionRnnNetwork.lstm_size = 2')
        value = networks.ValueRnnNetwork(OBS_SPEC)
        actor = networks.ActorDistributionRnnNetwork(OBS_SPEC, ACTION_SPEC)
        assert _state_shapes(zeros_from_spec(value.state_spec, [1])) == [
            [1, 3], [1, 3]]
        assert _state_shapes(zeros_from_spec(actor.state_spec, [1])) == [
            [1, 2], [1, 2]]
    finally:
        gin.clear_config()
