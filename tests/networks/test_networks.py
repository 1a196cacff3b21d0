"""Tests for alf_rl.networks: shapes, bounds, dtypes, copies, gradients."""

import functools

import numpy as np
import pytest
import tensorflow as tf

from alf_rl import networks
from alf_rl.ops import distributions as dist_ops
from alf_rl.specs import BoundedTensorSpec, clip_to_spec, sample_spec_nest

IMAGE_SPEC = BoundedTensorSpec((12, 12, 3), tf.uint8, 0, 255)
NESTED_OBS_SPEC = {'pos': tf.TensorSpec((3, )), 'flag': tf.TensorSpec(())}
ACTION_SPEC = {
    'discrete': BoundedTensorSpec((), tf.int64, 2, 5),
    'multi': BoundedTensorSpec((2, ), tf.int32, [0, -1], [1, 3]),
    'continuous': BoundedTensorSpec((2, ), tf.float32, [-1., 0.], [1., 5.]),
}
SQUASHED = functools.partial(networks.NormalProjectionNetwork,
                             scale_distribution=True,
                             state_dependent_std=True)


def _obs(spec, outer_dims, seed=1):
    return sample_spec_nest(spec, outer_dims, seed=seed)


def _check_in_bounds(actions, spec):
    for a, s in zip(tf.nest.flatten(actions), tf.nest.flatten(spec)):
        assert a.dtype == s.dtype
        assert np.all(a.numpy() >= s.minimum), (a, s)
        assert np.all(a.numpy() <= s.maximum), (a, s)


@pytest.mark.parametrize('outer_dims', [[3], [3, 5]])
def test_encoding_network_shapes_nested(outer_dims):
    net = networks.EncodingNetwork(NESTED_OBS_SPEC, fc_layer_params=(8, 6))
    out, state = net(_obs(NESTED_OBS_SPEC, outer_dims))
    assert out.shape == outer_dims + [6] and state == ()
    assert net.output_size == 6 and net.output_spec.shape == [6]
    assert net.state_spec == ()
    # 2 dense layers, kernel + bias each; input size 3 + 1
    assert sorted(tuple(v.shape) for v in net.trainable_variables) == [
        (4, 8), (6, ), (8, ), (8, 6)
    ]


def test_encoding_network_uint8_image_conv():
    net = networks.EncodingNetwork(IMAGE_SPEC,
                                   conv_layer_params=[(4, 3, 2), (2, 3, 1)],
                                   fc_layer_params=(5, ))
    assert len(net.trainable_variables) == 6
    image = tf.cast(_obs(IMAGE_SPEC, [3, 2]), tf.uint8)
    out, _ = net(image)
    assert out.shape == [3, 2, 5]
    # [T, B] is the same as the flattened batch
    flat_out, _ = net(tf.reshape(image, [6, 12, 12, 3]))
    np.testing.assert_allclose(tf.reshape(out, [6, 5]), flat_out, rtol=1e-5,
                               atol=1e-6)
    # scaling: a constant-255 image equals a constant-1.0 float image
    fnet = networks.EncodingNetwork(tf.TensorSpec((12, 12, 3)),
                                    conv_layer_params=[(4, 3, 2), (2, 3, 1)],
                                    fc_layer_params=(5, ))
    for v, w in zip(fnet.trainable_variables, net.trainable_variables):
        v.assign(w)
    np.testing.assert_allclose(
        net(tf.fill([1, 12, 12, 3], tf.constant(255, tf.uint8)))[0],
        fnet(tf.ones([1, 12, 12, 3]))[0], rtol=1e-5)


def test_encoding_network_rejects_bad_config_and_input():
    with pytest.raises(ValueError, match='no observation leaf is an'):
        networks.EncodingNetwork(NESTED_OBS_SPEC, conv_layer_params=[(4, 3,
                                                                      1)])
    net = networks.EncodingNetwork(NESTED_OBS_SPEC)
    with pytest.raises(ValueError, match=r"observation\['pos'\]"):
        net({'pos': tf.zeros([2, 4]), 'flag': tf.zeros([2])})


@pytest.mark.parametrize('outer_dims', [[3], [3, 5]])
def test_value_network_shapes(outer_dims):
    obs_spec = dict(NESTED_OBS_SPEC, image=IMAGE_SPEC)
    net = networks.ValueNetwork(obs_spec, fc_layer_params=(8, ),
                                conv_layer_params=[(2, 3, 2)])
    value, state = net(_obs(obs_spec, outer_dims))
    assert value.shape == outer_dims and value.dtype == tf.float32
    assert state == ()
    # conv (2) + fc (2) + last (2)
    assert len(net.trainable_variables) == 6


@pytest.mark.parametrize('projection', ['normal', 'squashed'])
@pytest.mark.parametrize('outer_dims', [[3], [3, 5]])
def test_actor_distribution_network_bounds_and_dtypes(outer_dims, projection):
    kwargs = {} if projection == 'normal' else dict(
        continuous_projection_net_ctor=SQUASHED)
    net = networks.ActorDistributionNetwork(NESTED_OBS_SPEC, ACTION_SPEC,
                                            fc_layer_params=(16, ), **kwargs)
    dists, state = net(_obs(NESTED_OBS_SPEC, outer_dims))
    assert state == () and net.state_spec == ()
    for seed in range(3):
        actions = dist_ops.sample_action_distribution(dists, seed=seed)
        for a, s in zip(tf.nest.flatten(actions),
                        tf.nest.flatten(ACTION_SPEC)):
            assert a.shape == outer_dims + s.shape.as_list()
        if projection == 'normal':
            # An unsquashed normal can leave the bounds; clip for the env.
            _check_in_bounds(
                dict(actions, continuous=clip_to_spec(
                    actions['continuous'], ACTION_SPEC['continuous'])),
                ACTION_SPEC)
        else:
            _check_in_bounds(actions, ACTION_SPEC)
        lp = dist_ops.log_prob(dists, actions)
        assert lp.shape == outer_dims and np.all(np.isfinite(lp.numpy()))
    _check_in_bounds(dist_ops.mode(dists), ACTION_SPEC)
    assert dist_ops.entropy(dists, seed=1).shape == outer_dims


def test_discrete_actions_cover_the_range():
    net = networks.ActorDistributionNetwork(
        NESTED_OBS_SPEC, ACTION_SPEC['multi'], fc_layer_params=(4, ))
    dists, _ = net(_obs(NESTED_OBS_SPEC, [2000]))
    a = dist_ops.sample_action_distribution(dists, seed=5).numpy()
    # element 0 in [0, 1], element 1 in [-1, 3]; the small logits init makes
    # the policy near uniform, so every value shows up.
    assert set(a[:, 0]) == {0, 1} and set(a[:, 1]) == {-1, 0, 1, 2, 3}
    probs = tf.nn.softmax(dists.distribution.distribution.logits).numpy()
    np.testing.assert_allclose(probs[:, 1], 0.2, atol=0.05)
    np.testing.assert_allclose(probs[:, 0, 2:], 0., atol=1e-12)  # masked


def test_normal_projection_init_std_and_mean():
    spec = BoundedTensorSpec((3, ), tf.float32, -2., 4.)
    for std_transform in ('softplus', 'exp'):
        proj = networks.NormalProjectionNetwork(
            5, spec, init_std=0.7, std_transform=std_transform)
        d = proj(tf.random.normal([4, 5]))
        np.testing.assert_allclose(d.distribution.scale, 0.7, rtol=1e-5)
        # mean squashed into the bounds, near their middle at init
        np.testing.assert_allclose(d.mean(), 1., atol=0.3)
    with pytest.raises(ValueError, match='finite bounds'):
        networks.NormalProjectionNetwork(5, tf.TensorSpec((2, )),
                                         scale_distribution=True)


def test_actor_network_rejects_unbounded_discrete():
    with pytest.raises(ValueError, match=r"action_spec\['a'\]"):
        networks.ActorDistributionNetwork(
            NESTED_OBS_SPEC, {'a': tf.TensorSpec((), tf.int64)})


def test_copy_gives_fresh_variables_same_shapes():
    net = networks.ActorDistributionNetwork(IMAGE_SPEC, ACTION_SPEC,
                                            conv_layer_params=[(2, 3, 2)],
                                            fc_layer_params=(8, ),
                                            name='actor')
    target = net.copy(name='target_actor')
    assert type(target) is type(net) and target.name == 'target_actor'
    v1, v2 = net.trainable_variables, target.trainable_variables
    # conv 2 + fc 2 + normal (mean 2 + std 1) + two categoricals 2 * 2
    assert len(v1) == len(v2) == 11
    assert [v.shape for v in v1] == [v.shape for v in v2]
    assert not {id(v) for v in v1} & {id(v) for v in v2}
    kernels = [(a, b) for a, b in zip(v1, v2) if 'kernel' in a.name]
    assert any(not np.allclose(a, b) for a, b in kernels)


def test_gradients_flow_to_every_variable():
    net = networks.ActorDistributionNetwork(
        NESTED_OBS_SPEC, ACTION_SPEC, fc_layer_params=(8, ),
        continuous_projection_net_ctor=SQUASHED)
    obs = _obs(NESTED_OBS_SPEC, [4])
    dists, _ = net(obs)
    actions = dist_ops.sample_action_distribution(dists, seed=2)
    spec = dist_ops.extract_spec(dists)
    with tf.GradientTape() as tape:
        dists, _ = net(obs)
        params = dist_ops.distributions_to_params(dists)
        rebuilt = dist_ops.params_to_distributions(params, spec)
        loss = -tf.reduce_mean(dist_ops.log_prob(rebuilt, actions))
    grads = tape.gradient(loss, net.trainable_variables)
    for g, v in zip(grads, net.trainable_variables):
        assert g is not None, v.name
        assert np.any(g.numpy() != 0), v.name


def test_tf_function_creates_no_variables():
    obs_spec = dict(NESTED_OBS_SPEC, image=IMAGE_SPEC)
    nets = [
        networks.ActorDistributionNetwork(obs_spec, ACTION_SPEC,
                                          conv_layer_params=[(2, 3, 2)],
                                          continuous_projection_net_ctor=
                                          SQUASHED),
        networks.ValueNetwork(obs_spec, conv_layer_params=[(2, 3, 2)]),
        networks.QNetwork(obs_spec, ACTION_SPEC['discrete']),
        networks.CriticNetwork((obs_spec, ACTION_SPEC['continuous']),
                               joint_fc_layer_params=(8, )),
    ]
    before = [len(n.variables) for n in nets]
    obs = _obs(obs_spec, [3])
    obs['image'] = tf.cast(obs['image'], tf.uint8)
    created = []

    @tf.function
    def run(obs, action):
        with tf.variable_creator_scope(
                lambda next_creator, **kw: created.append(kw) or next_creator(
                    **kw)):
            d, _ = nets[0](obs)
            a = dist_ops.sample_action_distribution(d)
            return (a, nets[1](obs)[0], nets[2](obs)[0], nets[3](
                (obs, action))[0])

    a, v, q, c = run(obs, tf.zeros([3, 2]))
    assert created == []
    assert [len(n.variables) for n in nets] == before
    assert v.shape == [3] and q.shape == [3, 4] and c.shape == [3]


@pytest.mark.parametrize('outer_dims', [[3], [3, 5]])
def test_critic_and_q_network_shapes(outer_dims):
    q_net = networks.QNetwork(NESTED_OBS_SPEC, ACTION_SPEC['discrete'],
                              fc_layer_params=(8, ))
    assert q_net.num_actions == 4
    q, _ = q_net(_obs(NESTED_OBS_SPEC, outer_dims))
    assert q.shape == outer_dims + [4]
    critic = networks.CriticNetwork(
        (NESTED_OBS_SPEC, ACTION_SPEC['continuous']),
        observation_fc_layer_params=(8, ), action_fc_layer_params=(4, ),
        joint_fc_layer_params=(8, ))
    inputs = _obs((NESTED_OBS_SPEC, ACTION_SPEC['continuous']), outer_dims)
    value, _ = critic(inputs)
    assert value.shape == outer_dims
    assert len(critic.trainable_variables) == 8
    assert len(critic.copy().trainable_variables) == 8


def test_gin_binding_selects_squashed_projection():
    import gin
    gin.clear_config()
    try:
        gin.parse_config(
            'NormalProjectionNetwork.scale_distribution = True\n'
            'ActorDistributionNetwork.fc_layer_params = (5,)')
        net = networks.ActorDistributionNetwork(
            NESTED_OBS_SPEC, ACTION_SPEC['continuous'])
        dist, _ = net(_obs(NESTED_OBS_SPEC, [2]))
        assert 'TransformedDistribution' in type(dist).__name__
        assert any(v.shape == (4, 5) for v in net.trainable_variables)
    finally:
        gin.clear_config()


def test_checkpoint_round_trip(tmp_path):
    net = networks.ActorDistributionNetwork(NESTED_OBS_SPEC, ACTION_SPEC,
                                            fc_layer_params=(8, ))
    other = net.copy()
    path = tf.train.Checkpoint(net=net).save(str(tmp_path / 'ckpt'))
    tf.train.Checkpoint(net=other).restore(path).assert_consumed()
    obs = _obs(NESTED_OBS_SPEC, [3])
    np.testing.assert_allclose(
        dist_ops.mode(net(obs)[0])['continuous'],
        dist_ops.mode(other(obs)[0])['continuous'])
    np.testing.assert_allclose(
        net(obs)[0]['discrete'].distribution.logits,
        other(obs)[0]['discrete'].distribution.logits)


def test_multi_binary_int8_action():
    spec = BoundedTensorSpec((3, ), tf.int8, 0, 1)
    net = networks.ActorDistributionNetwork(NESTED_OBS_SPEC, spec,
                                            fc_layer_params=())
    dist, _ = net(_obs(NESTED_OBS_SPEC, [50]))
    a = dist_ops.sample_action_distribution(dist, seed=1)
    assert a.dtype == tf.int64  # TFP's Categorical has no int8 dtype
    a8 = dist_ops.cast_to_spec(a, spec)
    _check_in_bounds(a8, spec)
    np.testing.assert_allclose(dist_ops.log_prob(dist, a8),
                               dist_ops.log_prob(dist, a))
    assert dist_ops.log_prob(dist, a).shape == [50]
