"""Exported policies (SavedModel, TFLite and, with the ``[onnx]`` extra,
ONNX) against the in-library policy.

One tiny algorithm per policy kind (hidden layer of 8, untrained: the
export must reproduce whatever the weights are), exported once per module
(TFLite conversion takes seconds). Kinds: categorical (PPO with a nested
observation and a fitted observation normalizer), discrete SAC, normal
(PPO), tanh-normal (SAC), deterministic actors (DDPG, TD3), Q-argmax (DQN),
LSTM (PPO with recurrent actor and value networks), and three ``Agent``s:
PPO behind a convolutional encoder of uint8 images (the Atari layout), PPO
with a ``SkillGenerator`` whose skill is a state input (SavedModel and
TFLite), and the same with a generator that may change goals at any step
(its draw stays in the policy: SavedModel only).
"""

import functools
import importlib.util
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp
import tf_keras

from alf_rl import specs
from alf_rl.algorithms import (Agent, DdpgAlgorithm, DqnAlgorithm,
                               PPOAlgorithm, PPOLoss, SacAlgorithm,
                               SkillGenerator, Td3Algorithm)
from alf_rl.data_structures import StepType, TimeStep
from alf_rl.export import (LoadedPolicy, action_distribution, export_policy,
                           noise_kinds, output_paths, sample_with_noise)
from alf_rl.networks import (ActorDistributionNetwork,
                             CategoricalProjectionNetwork,
                             ActorDistributionRnnNetwork, ActorNetwork,
                             CriticNetwork, EncodingNetwork,
                             NormalProjectionNetwork,
                             QNetwork, ValueNetwork, ValueRnnNetwork)
from alf_rl.utils.common import set_random_seed
from alf_rl.utils.normalizers import StreamingMeanVarNormalizer

# ONNX exports are checked where the [onnx] extra is installed.
HAVE_ONNX = all(importlib.util.find_spec(m) for m in ('tf2onnx',
                                                      'onnxruntime'))
HIDDEN = (8, )
BATCH = 7
DISCRETE = specs.BoundedTensorSpec([], tf.int64, 0, 2)
CONTINUOUS = specs.BoundedTensorSpec([2], tf.float32, -2.0, 1.0)
FLAT_OBS = specs.TensorSpec([4], tf.float32)
NESTED_OBS = {'pos': specs.TensorSpec([3], tf.float32),
              'vel': specs.TensorSpec([2], tf.float32)}
IMAGE_OBS = specs.BoundedTensorSpec([10, 10, 2], tf.uint8, 0, 255)
NUM_SKILLS = 3


def _ppo(obs, act, recurrent=False, normalizer=False):
    actor = functools.partial(
        ActorDistributionRnnNetwork if recurrent else ActorDistributionNetwork,
        **(dict(lstm_size=(6, )) if recurrent else dict(
            fc_layer_params=HIDDEN)),
        discrete_projection_net_ctor=functools.partial(
            CategoricalProjectionNetwork, init_output_scale=1.0),
        continuous_projection_net_ctor=functools.partial(
            NormalProjectionNetwork, init_output_scale=1.0))
    value = functools.partial(ValueRnnNetwork if recurrent else ValueNetwork,
                              **(dict(lstm_size=(6, )) if recurrent else
                                 dict(fc_layer_params=HIDDEN)))
    return PPOAlgorithm(
        obs, act, actor_network_ctor=actor, value_network_ctor=value,
        loss=PPOLoss(),
        observation_normalizer_ctor=(StreamingMeanVarNormalizer
                                     if normalizer else None))


def _sac(obs, act):
    discrete = act.dtype.is_integer
    actor = functools.partial(
        ActorDistributionNetwork, fc_layer_params=HIDDEN,
        continuous_projection_net_ctor=functools.partial(
            NormalProjectionNetwork, scale_distribution=True,
            state_dependent_std=True, init_output_scale=1.0))
    critic = (functools.partial(QNetwork, fc_layer_params=HIDDEN) if discrete
              else functools.partial(CriticNetwork,
                                     joint_fc_layer_params=HIDDEN))
    return SacAlgorithm(obs, act, actor_network_ctor=actor,
                        critic_network_ctor=critic)


def _ddpg(obs, act, cls=DdpgAlgorithm):
    return cls(obs, act, actor_optimizer=tf_keras.optimizers.Adam(),
               critic_optimizer=tf_keras.optimizers.Adam(),
               actor_network_ctor=functools.partial(ActorNetwork,
                                                    fc_layer_params=HIDDEN),
               critic_network_ctor=functools.partial(
                   CriticNetwork, joint_fc_layer_params=HIDDEN))


def _dqn(obs, act):
    return DqnAlgorithm(obs, act, q_network_ctor=functools.partial(
        QNetwork, fc_layer_params=HIDDEN))


def _rl_ppo(observation_spec, action_spec):
    return _ppo(observation_spec, action_spec)


def _agent_with_encoder(obs, act):
    encoder = functools.partial(EncodingNetwork,
                                conv_layer_params=((4, 3, 2), ),
                                fc_layer_params=HIDDEN)
    return Agent(obs, act, rl_algorithm_ctor=_rl_ppo,
                 encoding_network_ctor=encoder)


def _agent_with_skills(obs, act):
    return Agent(obs, act, rl_algorithm_ctor=_rl_ppo,
                 goal_generator=SkillGenerator(num_skills=NUM_SKILLS))


class _AnyStepSkills(SkillGenerator):
    """Skills as a generator that may change them at any step: the
    exported policy must run its draw (random ops TFLite lacks)."""
    changes_goal_only_at_first = False


def _agent_with_any_step_goals(obs, act):
    return Agent(obs, act, rl_algorithm_ctor=_rl_ppo,
                 goal_generator=_AnyStepSkills(num_skills=NUM_SKILLS))


# name: (builder, observation spec, action spec, stochastic exportable,
#        convert to TFLite)
KINDS = {
    'categorical': (functools.partial(_ppo, normalizer=True), NESTED_OBS,
                    DISCRETE, True, True),
    'discrete_sac': (_sac, FLAT_OBS, DISCRETE, True, False),
    'normal': (_ppo, FLAT_OBS, CONTINUOUS, True, True),
    'tanh_normal': (_sac, FLAT_OBS, CONTINUOUS, True, True),
    'ddpg': (_ddpg, FLAT_OBS, CONTINUOUS, False, True),
    'td3': (functools.partial(_ddpg, cls=Td3Algorithm), FLAT_OBS, CONTINUOUS,
            False, False),
    'dqn': (_dqn, FLAT_OBS, DISCRETE, False, True),
    'lstm': (functools.partial(_ppo, recurrent=True), FLAT_OBS, DISCRETE,
             False, True),
    'agent_encoder': (_agent_with_encoder, IMAGE_OBS, DISCRETE, True, True),
    'agent_skills': (_agent_with_skills, FLAT_OBS, CONTINUOUS, True, True),
    'agent_any_step_goals': (_agent_with_any_step_goals, FLAT_OBS,
                             CONTINUOUS, False, False),
}


def _observations(obs_spec, seed, batch=BATCH):
    rng = np.random.RandomState(seed)

    def sample(s):
        shape = [batch] + s.shape.as_list()
        if s.dtype == tf.uint8:
            return rng.randint(0, 256, size=shape).astype(np.uint8)
        return (3 * rng.randn(*shape) + 1).astype(np.float32)

    return tf.nest.map_structure(sample, obs_spec)


def _flat_inputs(obs):
    if isinstance(obs, dict):
        return {'observation_' + k: v for k, v in obs.items()}
    return {'observation': obs}


def _time_step(alg, obs):
    batch = tf.nest.flatten(obs)[0].shape[0]
    return TimeStep(step_type=tf.fill([batch], StepType.MID),
                    reward=tf.zeros([batch]), discount=tf.ones([batch]),
                    observation=tf.nest.map_structure(tf.constant, obs),
                    prev_action=specs.zeros_from_spec(alg.action_spec,
                                                      [batch]),
                    env_id=tf.zeros([batch], tf.int32))


class Exported(object):
    """One kind: its algorithm and exported (greedy and stochastic)
    artifacts, loaded."""

    def __init__(self, name, tmp):
        builder, obs_spec, act_spec, stochastic, tflite = KINDS[name]
        # Python, numpy and TF: with tf.random.set_seed alone the initial
        # weights differed between processes (a flaky near-constant policy).
        set_random_seed(1)
        self.alg = builder(obs_spec, act_spec)
        self.obs_spec = obs_spec
        if name == 'categorical':
            # Non-trivial normalizer statistics, to be folded in.
            self.alg._observation_normalizer.update(
                tf.nest.map_structure(tf.constant,
                                      _observations(obs_spec, 99, 50)))
        fmt = 'both' if tflite else 'saved_model'
        out = str(tmp / name)
        export_policy(self.alg, out, fmt)
        paths = output_paths(out, fmt)
        self.saved = LoadedPolicy(paths[0])
        self.tflite = LoadedPolicy(paths[1]) if tflite else None
        self.onnx = self._onnx(out) if tflite else None
        self.stochastic = self.stochastic_tflite = None
        self.stochastic_onnx = None
        if stochastic:
            out = str(tmp / (name + '_stochastic'))
            export_policy(self.alg, out, fmt, stochastic=True)
            paths = output_paths(out, fmt)
            self.stochastic = LoadedPolicy(paths[0])
            if tflite:
                self.stochastic_tflite = LoadedPolicy(paths[1])
                self.stochastic_onnx = self._onnx(out, stochastic=True)

    def _onnx(self, out, stochastic=False):
        if not HAVE_ONNX:
            return None
        paths = export_policy(self.alg, out, 'onnx', stochastic=stochastic)
        assert paths[0] == out + '.onnx'
        return LoadedPolicy(paths[0])

    @property
    def numpy_runtimes(self):
        """The loaded TFLite and ONNX greedy policies (where exported)."""
        return [p for p in (self.tflite, self.onnx) if p is not None]

    @functools.cached_property
    def predict(self):
        alg = self.alg
        return tf.function(lambda ts, state: alg.predict(
            alg.transform_timestep(ts), state))


@pytest.fixture(scope='module')
def exported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('export')
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = Exported(name, tmp)
        return cache[name]

    return get


@pytest.mark.parametrize('kind', sorted(KINDS))
def test_greedy_export_equals_predict(exported, kind):
    e = exported(kind)
    obs = _observations(e.obs_spec, 0)
    state = e.alg.get_initial_predict_state(BATCH)
    expected = e.predict(_time_step(e.alg, obs), state).action
    inputs = dict(_flat_inputs(obs), **e.saved.initial_state(BATCH))
    got = e.saved(**inputs)['action'].numpy()
    assert got.dtype == expected.dtype.as_numpy_dtype
    np.testing.assert_array_equal(got, expected.numpy())
    for runtime in e.numpy_runtimes:
        lite = runtime(**inputs)['action']
        assert lite.dtype == got.dtype and lite.shape == got.shape
        if got.dtype.kind == 'f':
            np.testing.assert_allclose(lite, got, rtol=0, atol=1e-5)
        else:
            np.testing.assert_array_equal(lite, got)
    # Not trivially constant: actions differ across observations (over
    # many of them: a small random network may pick one discrete action
    # for a few).
    wide = dict(_flat_inputs(_observations(e.obs_spec, 1, batch=256)),
                **e.saved.initial_state(256))
    actions = e.saved(**wide)['action'].numpy()
    assert len(np.unique(actions.reshape(256, -1), axis=0)) > 1


def test_normalizer_is_folded_in(exported):
    e = exported('categorical')
    obs = _observations(e.obs_spec, 3)
    alg = e.alg
    # Without normalization the logits differ: the export must have used it.
    raw = alg.actor_network(tf.nest.map_structure(tf.constant, obs),
                            state=())[0].logits_parameter()
    normalized = alg.actor_network(
        alg.transform_timestep(_time_step(alg, obs)).observation,
        state=())[0].logits_parameter()
    assert np.abs(raw - normalized).max() > 1e-3
    np.testing.assert_array_equal(
        e.saved(**_flat_inputs(obs))['action'].numpy(),
        np.argmax(normalized.numpy(), -1))


def _noise(policy, seed):
    rng = np.random.RandomState(seed)
    return {n: (rng.gumbel(size=[BATCH] + shape) if n.startswith('gumbel')
                else rng.randn(BATCH, *shape)).astype(np.float32)
            for n, shape in policy.noise_inputs}


@pytest.mark.parametrize('kind', ['categorical', 'discrete_sac', 'normal',
                                  'tanh_normal', 'agent_encoder',
                                  'agent_skills'])
def test_stochastic_export_equals_library_sample(exported, kind):
    e = exported(kind)
    alg = e.alg
    obs = _observations(e.obs_spec, 1)
    noise = _noise(e.stochastic, 2)
    assert [n for n, _ in e.stochastic.noise_inputs] == (
        ['gumbel'] if alg.action_spec.dtype.is_integer else ['eps'])
    dist, _ = action_distribution(
        alg, alg.transform_timestep(_time_step(alg, obs)).observation,
        alg.get_initial_predict_state(BATCH))
    expected = specs.cast_and_clip_to_spec(
        sample_with_noise(dist, [tf.constant(noise[n]) for n in noise]),
        alg.action_spec).numpy()
    inputs = dict(_flat_inputs(obs), **e.saved.initial_state(BATCH))
    got = e.stochastic(**inputs, **noise)['action'].numpy()
    if got.dtype.kind == 'f':
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, expected)
    greedy = e.saved(**inputs)['action'].numpy()
    assert not np.array_equal(got, greedy)  # the noise is used
    for runtime in (e.stochastic_tflite, e.stochastic_onnx):
        if runtime is not None:
            lite = runtime(**inputs, **noise)['action']
            np.testing.assert_allclose(lite, got, rtol=0, atol=1e-5)


@pytest.mark.parametrize('kind', ['normal', 'tanh_normal'])
def test_eps_noise_gives_tfp_sample_of_same_draw(exported, kind):
    # TFP samples a (transformed) normal as bijector(loc + scale * eps),
    # eps = stateless_normal(shape, seed): the same draw as noise gives the
    # same action.
    e = exported(kind)
    alg = e.alg
    obs = _observations(e.obs_spec, 4)
    dist, _ = action_distribution(
        alg, alg.transform_timestep(_time_step(alg, obs)).observation, ())
    seed = tf.constant([5, 6], tf.int32)
    eps = tf.random.stateless_normal([BATCH, 2], seed)
    np.testing.assert_allclose(sample_with_noise(dist, [eps]),
                               dist.sample(seed=seed), rtol=1e-6, atol=1e-6)


def test_gumbel_max_samples_the_categorical():
    logits = tf.constant([[0.0, 1.0, -1.0, 2.0]])
    dist = tfp.distributions.Categorical(logits=logits)
    assert noise_kinds([dist]) == ['gumbel']
    rng = np.random.RandomState(0)
    n = 20000
    gumbel = rng.gumbel(size=(n, 4)).astype(np.float32)
    samples = sample_with_noise(
        tfp.distributions.Categorical(logits=tf.tile(logits, [n, 1])),
        [tf.constant(gumbel)]).numpy()
    freq = np.bincount(samples, minlength=4) / n
    probs = tf.nn.softmax(logits)[0].numpy()
    # 4 standard errors of a frequency at n = 20000 is <= 0.014.
    np.testing.assert_allclose(freq, probs, atol=0.014)


def test_recurrent_state_carried_equals_library(exported):
    e = exported('lstm')
    runtimes = e.numpy_runtimes
    assert e.saved.state_names and all(
        r.state_names == e.saved.state_names for r in runtimes)
    alg = e.alg
    state = alg.get_initial_predict_state(BATCH)
    saved_state = e.saved.initial_state(BATCH)
    lite_states = [r.initial_state(BATCH) for r in runtimes]
    assert all(np.all(v == 0) and v.shape[0] == BATCH
               for states in [saved_state] + lite_states
               for v in states.values())
    for t in range(6):
        obs = _observations(e.obs_spec, 10 + t)
        step = e.predict(_time_step(alg, obs), state)
        state = step.state
        out = e.saved(**_flat_inputs(obs), **saved_state)
        saved_state = {n: out[n].numpy() for n in e.saved.state_names}
        np.testing.assert_array_equal(out['action'], step.action)
        flat = tf.nest.flatten(state)
        for name, value in zip(e.saved.state_names, flat):
            np.testing.assert_array_equal(saved_state[name], value)
        for i, runtime in enumerate(runtimes):
            lite = runtime(**_flat_inputs(obs), **lite_states[i])
            lite_states[i] = {n: lite[n] for n in runtime.state_names}
            np.testing.assert_array_equal(lite['action'], step.action)
            for name, value in zip(runtime.state_names, flat):
                np.testing.assert_allclose(lite_states[i][name], value,
                                           atol=1e-5)
    # The state matters: from the zero state the same observation gives
    # another next state than from the carried one.
    assert e.saved.state_names == ['state_actor_0_0', 'state_actor_0_1']
    obs = _flat_inputs(_observations(e.obs_spec, 15))
    fresh = e.saved(**obs, **e.saved.initial_state(BATCH))
    carried = e.saved(**obs, **saved_state)
    assert np.abs(fresh['state_actor_0_0'] -
                  carried['state_actor_0_0']).max() > 1e-3


@pytest.mark.parametrize('kind', ['ddpg', 'dqn'])
def test_stochastic_export_of_greedy_policy_is_refused(exported, kind,
                                                       tmp_path):
    e = exported(kind)
    with pytest.raises(ValueError, match='without --stochastic'):
        export_policy(e.alg, str(tmp_path / 'p'), 'saved_model',
                      stochastic=True)


def test_output_paths_and_bad_format():
    assert output_paths('/a/p', 'both') == ['/a/p', '/a/p.tflite']
    assert output_paths('/a/p.tflite', 'tflite') == ['/a/p.tflite']
    assert output_paths('/a/p.tflite', 'saved_model') == ['/a/p']
    assert output_paths('/a/p', 'onnx') == ['/a/p.onnx']
    assert output_paths('/a/p.onnx', 'onnx') == ['/a/p.onnx']
    with pytest.raises(ValueError, match="--format must be one of"):
        output_paths('/a/p', 'pb')


def test_loading_a_missing_or_foreign_path_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match='no such file'):
        LoadedPolicy(str(tmp_path / 'nope'))
    with pytest.raises(ValueError, match='without saved_model.pb'):
        LoadedPolicy(str(tmp_path))


def test_agent_skill_is_a_state_input(exported):
    # A skill policy leaves with its skill as the ``state_goal`` input: the
    # one-hot skill fed there is the one the RL policy is conditioned on
    # (and comes back unchanged: exported steps are MID steps).
    e = exported('agent_skills')
    alg = e.alg
    assert e.saved.state_names == ['state_goal']
    obs = _observations(e.obs_spec, 6)
    actions = []
    for k in range(NUM_SKILLS):
        skill = np.eye(NUM_SKILLS, dtype=np.float32)[[k] * BATCH]
        state = alg.get_initial_predict_state(BATCH)._replace(
            goal=tf.constant(skill))
        expected = e.predict(_time_step(alg, obs), state).action.numpy()
        out = e.saved(**_flat_inputs(obs), state_goal=skill)
        np.testing.assert_array_equal(out['action'], expected)
        np.testing.assert_array_equal(out['state_goal'], skill)
        lite = e.tflite(**_flat_inputs(obs), state_goal=skill)
        np.testing.assert_allclose(lite['action'], expected, rtol=0,
                                   atol=1e-5)
        np.testing.assert_array_equal(lite['state_goal'], skill)
        actions.append(expected)
    assert np.abs(actions[0] - actions[1]).max() > 1e-4


def test_goal_drawn_at_any_step_is_not_tflite_convertible(exported,
                                                          tmp_path, capfd):
    # A goal generator that may change goals at any step runs in the
    # exported policy, and its draw uses random ops outside TFLite's
    # builtins: one line that names them and the way out, without the
    # converter's diagnostics on stderr; with 'both' the SavedModel stays.
    alg = exported('agent_any_step_goals').alg
    capfd.readouterr()
    with pytest.raises(ValueError) as raised:
        export_policy(alg, str(tmp_path / 'p'), 'tflite')
    message = str(raised.value)
    assert '\n' not in message and len(message) < 600
    assert '--format saved_model' in message
    assert "TFLite's builtins cannot run tf." in message
    assert 'neither a custom op' not in capfd.readouterr().err
    with pytest.raises(ValueError, match='wrote the SavedModel .*/q, but'):
        export_policy(alg, str(tmp_path / 'q'), 'both')
    assert os.path.isfile(str(tmp_path / 'q' / 'saved_model.pb'))


def test_agent_encoder_export_reads_uint8_images(exported):
    e = exported('agent_encoder')
    assert e.saved.input_spec('observation') == ([10, 10, 2],
                                                 np.dtype(np.uint8))
    assert e.saved.state_names == []
