"""Tests for ActorNetwork: bounds, shapes, nests, copy, gradients, errors."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl import networks
from alf_rl.networks import ActorNetwork
from alf_rl.specs import BoundedTensorSpec, sample_spec_nest

OBS_SPEC = tf.TensorSpec((3, ))
NESTED_ACTION_SPEC = {
    'a': BoundedTensorSpec((2, ), tf.float32, [-1., 0.], [1., 5.]),
    'b': BoundedTensorSpec((), tf.float32, -2., 2.),
    'c': BoundedTensorSpec((2, 2), tf.float64, 0., 1.),
}


def _check_bounds(actions, spec, outer_dims):
    for a, s in zip(tf.nest.flatten(actions), tf.nest.flatten(spec)):
        assert a.dtype == s.dtype
        assert a.shape == outer_dims + s.shape.as_list()
        assert np.all(a.numpy() >= s.minimum) and np.all(
            a.numpy() <= s.maximum)


@pytest.mark.parametrize('outer_dims', [[4], [3, 4]])
def test_nested_actions_in_bounds_with_right_shapes(outer_dims):
    net = ActorNetwork(OBS_SPEC, NESTED_ACTION_SPEC, fc_layer_params=(8, ))
    obs = sample_spec_nest(OBS_SPEC, outer_dims, seed=1)
    actions, state = net(obs)
    assert state == ()
    _check_bounds(actions, NESTED_ACTION_SPEC, outer_dims)
    # Saturated outputs (huge inputs) stay inside the bounds too.
    net._encoder._fc_layers[-1].kernel.assign(
        1e3 * tf.ones_like(net._encoder._fc_layers[-1].kernel))
    actions, _ = net(100. * tf.ones(outer_dims + [3]))
    _check_bounds(actions, NESTED_ACTION_SPEC, outer_dims)
    np.testing.assert_allclose(actions['a'].numpy().reshape(-1, 2)[0],
                               [1., 5.])
    # [T, B] equals the flattened batch
    # (both with the saturated weights; ``actions`` above came from other
    # inputs).
    if len(outer_dims) == 2:
        actions, _ = net(obs)
        flat, _ = net(tf.reshape(obs, [12, 3]))
        np.testing.assert_allclose(tf.reshape(actions['b'], [12]),
                                   flat['b'])


def test_initial_actions_near_the_middle_of_the_range():
    spec = BoundedTensorSpec((2, ), tf.float32, [-2., 0.], [2., 10.])
    net = ActorNetwork(OBS_SPEC, spec)
    action, _ = net(sample_spec_nest(OBS_SPEC, [16], seed=2))
    # U(-3e-3, 3e-3) last layer: tanh(x) ~ 0, so a ~ (min + max) / 2.
    np.testing.assert_allclose(action.numpy().mean(0), [0., 5.], atol=0.2)


def test_copy_has_fresh_variables_and_same_config():
    net = ActorNetwork(OBS_SPEC, NESTED_ACTION_SPEC, fc_layer_params=(8, 6),
                       name='actor')
    target = net.copy(name='target_actor')
    assert type(target) is ActorNetwork and target.name == 'target_actor'
    v1, v2 = net.trainable_variables, target.trainable_variables
    assert len(v1) == len(v2) == 6
    assert [v.shape for v in v1] == [v.shape for v in v2]
    assert not {id(v) for v in v1} & {id(v) for v in v2}
    assert any(not np.allclose(a, b) for a, b in zip(v1, v2)
               if 'kernel' in a.name)
    assert networks.ActorNetwork is ActorNetwork
    assert 'ActorNetwork' in networks.__all__


def test_gradients_reach_every_variable():
    net = ActorNetwork(OBS_SPEC, NESTED_ACTION_SPEC, fc_layer_params=(8, ))
    obs = sample_spec_nest(OBS_SPEC, [5], seed=3)
    with tf.GradientTape() as tape:
        actions, _ = net(obs)
        loss = tf.add_n([
            tf.reduce_sum(tf.cast(a, tf.float32))
            for a in tf.nest.flatten(actions)
        ])
    grads = tape.gradient(loss, net.trainable_variables)
    assert all(g is not None and np.any(g.numpy() != 0) for g in grads)


def test_rejects_discrete_and_unbounded_actions():
    with pytest.raises(ValueError, match=r"action_spec\['d'\].*float dtype"):
        ActorNetwork(OBS_SPEC,
                     {'d': BoundedTensorSpec((), tf.int64, 0, 3)})
    with pytest.raises(ValueError, match='action_spec.*BoundedTensorSpec'):
        ActorNetwork(OBS_SPEC, tf.TensorSpec((2, )))
    with pytest.raises(ValueError, match='finite action bounds'):
        ActorNetwork(OBS_SPEC,
                     BoundedTensorSpec((1, ), tf.float32, -np.inf, 1.))
