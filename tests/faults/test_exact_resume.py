"""A run split into two commands equals the uninterrupted run.

Issue 12, point 3. Each split run is two ``Trainer`` instances on one
``root_dir`` (as two ``alf-train`` commands would be): N/2 iterations, then a
resume to N. With environments whose state is checkpointed (``suite_tf``,
``suite_unittest``) every checkpointed value, every loss and every metric
equals the straight run's, with several iterations per compiled call. With a
gymnasium environment (state not saveable) the episodes restart at the
resume while the random numbers, the replay buffer, the normalizers and the
counters continue exactly. Evaluation draws from its own generator, so it
does not change a seeded training run.
"""

import functools
import glob
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms import (ActorCriticAlgorithm, DqnAlgorithm,
                               SacAlgorithm)
from alf_rl.data_structures import StepType
from alf_rl.drivers.evaluation_driver import EvaluationDriver
from alf_rl.environments import suite_tf
from alf_rl.environments.suite_unittest import (PolicyUnittestEnv,
                                                RNNPolicyUnittestEnv)
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.environments.utils import create_environment
from alf_rl.networks import (ActorDistributionNetwork,
                             ActorDistributionRnnNetwork, CriticNetwork,
                             NormalProjectionNetwork, QNetwork, ValueNetwork,
                             ValueRnnNetwork)
from alf_rl.trainers import OffPolicyTrainer, OnPolicyTrainer, TrainerConfig
from alf_rl.utils.common import (NestState, make_stateless_seed,
                                 set_random_seed, using_global_generator)
from alf_rl.utils.normalizers import StreamingMeanVarNormalizer

SEED = 3
N = 8  # iterations of the straight run; the split run stops at N // 2


# ---------------------------------------------------------------- helpers
def _a2c(observation_spec, action_spec, recurrent=False):
    if recurrent:
        actor = functools.partial(ActorDistributionRnnNetwork,
                                  input_fc_layer_params=(8, ),
                                  lstm_size=(4, ))
        value = functools.partial(ValueRnnNetwork,
                                  input_fc_layer_params=(8, ),
                                  lstm_size=(4, ))
    else:
        actor = functools.partial(ActorDistributionNetwork,
                                  fc_layer_params=(8, ))
        value = functools.partial(ValueNetwork, fc_layer_params=(8, ))
    return ActorCriticAlgorithm(
        observation_spec, action_spec,
        actor_network_ctor=actor,
        value_network_ctor=value,
        optimizer=tf_keras.optimizers.Adam(1e-2),
        observation_normalizer_ctor=StreamingMeanVarNormalizer)


def _sac(observation_spec, action_spec):
    return SacAlgorithm(
        observation_spec, action_spec,
        actor_network_ctor=functools.partial(
            ActorDistributionNetwork,
            fc_layer_params=(8, ),
            continuous_projection_net_ctor=functools.partial(
                NormalProjectionNetwork,
                scale_distribution=True,
                state_dependent_std=True)),
        critic_network_ctor=functools.partial(CriticNetwork,
                                              joint_fc_layer_params=(8, )),
        actor_optimizer=tf_keras.optimizers.Adam(1e-2),
        critic_optimizer=tf_keras.optimizers.Adam(1e-2),
        alpha_optimizer=tf_keras.optimizers.Adam(1e-2),
        target_entropy=-1.0)


def _dqn(observation_spec, action_spec, eval_epsilon_greedy=0.0):
    return DqnAlgorithm(
        observation_spec, action_spec,
        q_network_ctor=lambda o, a: QNetwork(o, a, fc_layer_params=(8, )),
        epsilon_greedy=0.3,
        eval_epsilon_greedy=eval_epsilon_greedy,
        target_update_period=2,
        optimizer=tf_keras.optimizers.Adam(1e-2),
        observation_normalizer_ctor=StreamingMeanVarNormalizer)


def _cart_pole_tf(seed, batch_size=2):
    # Short episodes: the runs cross episode ends and auto-resets.
    return suite_tf.load('CartPole-v1', batch_size, seed=seed,
                         max_episode_steps=7)


def _pendulum_tf(seed):
    return suite_tf.load('Pendulum-v1', 2, seed=seed, max_episode_steps=7)


def _rnn_unittest(seed):
    # Episodes of 5 steps, unroll 4: checkpoints fall inside episodes, with
    # a non-zero LSTM state to carry over.
    return TFPyEnvironment(RNNPolicyUnittestEnv(2, 5, seed=seed, gap=2))


def _cart_pole_gym(seed):
    return create_environment('CartPole-v1', num_parallel_environments=2,
                              seed=seed, max_episode_steps=7)


_OFF_POLICY = dict(unroll_length=2, initial_collect_steps=8,
                   mini_batch_size=4, mini_batch_length=2,
                   replay_buffer_capacity=400)


def _train(root, algorithm_ctor, env, num_iterations, off_policy=False,
           **config):
    """Trains to ``num_iterations`` on ``root`` (resuming what is there)."""
    eval_env = config.pop('eval_env_factory', None)
    kwargs = dict(root_dir=root, algorithm_ctor=algorithm_ctor,
                  num_iterations=num_iterations, random_seed=SEED,
                  unroll_length=4, iterations_per_call=4,
                  summary_interval=4, checkpoint_interval=4,
                  progress_interval_secs=1e6)
    if off_policy:
        kwargs.update(_OFF_POLICY)
    kwargs.update(config)
    trainer_cls = OffPolicyTrainer if off_policy else OnPolicyTrainer
    trainer = trainer_cls(TrainerConfig(**kwargs), env=env,
                          eval_env=eval_env)
    try:
        return trainer.train()
    finally:
        trainer.close()


def _events(root):
    """{tag: [(step, value)]} of ``root/train``, without timings."""
    result = {}
    for path in sorted(glob.glob(os.path.join(root, 'train', 'events.*'))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for v in event.summary.value:
                if v.tag.startswith('time/'):
                    continue
                result.setdefault(v.tag, []).append(
                    (event.step, float(tf.make_ndarray(v.tensor))))
    return {tag: sorted(values) for tag, values in result.items()}


def _checkpoint(root, iteration):
    """{key: value} of every tensor in ``root``'s checkpoint."""
    reader = tf.train.load_checkpoint(
        os.path.join(root, 'ckpt', 'ckpt-%d' % iteration, 'ckpt'))
    return {
        key: reader.get_tensor(key)
        for key in reader.get_variable_to_shape_map()
        if key != '_CHECKPOINTABLE_OBJECT_GRAPH'
    }


def _assert_same_values(a, b, skip=()):
    keys = sorted(k for k in a if not k.startswith(skip))
    assert keys == sorted(k for k in b if not k.startswith(skip))
    for key in keys:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def _metrics(result):
    return {k: v for k, v in result.items() if k.startswith('Metrics/')}


def _straight_and_split(tmp_path, algorithm_ctor, env, **config):
    straight, split = str(tmp_path / 'straight'), str(tmp_path / 'split')
    result = _train(straight, algorithm_ctor, env, N, **config)
    half = _train(split, algorithm_ctor, env, N // 2, **config)
    assert half['iterations'] == N // 2
    resumed = _train(split, algorithm_ctor, env, N, **config)
    assert resumed['iterations'] == N
    return (straight, result), (split, resumed)


def _assert_split_equals_straight(straight, split):
    (root_a, result_a), (root_b, result_b) = straight, split
    state = _checkpoint(root_a, N)
    # The run's state includes the generator, the environment and the
    # driver's last time step (and the replay buffer off-policy).
    assert any(k.startswith('rng/') for k in state)
    assert any(k.startswith('env_state/') for k in state)
    assert any(k.startswith('driver_state/') for k in state)
    _assert_same_values(state, _checkpoint(root_b, N))
    events_a, events_b = _events(root_a), _events(root_b)
    assert any(tag.startswith('loss/') for tag in events_a)
    assert events_a == events_b
    assert [s for s, _ in events_a['Metrics/EnvironmentSteps']] == [4, 8]
    assert _metrics(result_a) == _metrics(result_b)
    assert result_a['Metrics/NumberOfEpisodes'] > 0


# ------------------------------------------------------- exact resumes
@pytest.mark.parametrize('env, recurrent', [(_cart_pole_tf, False),
                                            (_rnn_unittest, True)],
                         ids=['suite_tf_cart_pole', 'suite_unittest_rnn'])
def test_on_policy_split_run_equals_straight_run(tmp_path, env, recurrent):
    straight, split = _straight_and_split(
        tmp_path, functools.partial(_a2c, recurrent=recurrent), env)
    _assert_split_equals_straight(straight, split)


def test_off_policy_split_run_equals_straight_run(tmp_path):
    straight, split = _straight_and_split(tmp_path, _sac, _pendulum_tf,
                                          off_policy=True)
    _assert_split_equals_straight(straight, split)
    assert any(k.startswith('replayer/') for k in _checkpoint(split[0], N))


# -------------------------------------------- python (gymnasium) envs
def test_python_environment_restarts_episodes_and_continues_the_rest(
        tmp_path):
    straight, split = str(tmp_path / 'straight'), str(tmp_path / 'split')
    train = functools.partial(_train, algorithm_ctor=_dqn,
                              env=_cart_pole_gym, off_policy=True)
    result = train(straight, num_iterations=N)
    train(split, num_iterations=N // 2)
    saved = _checkpoint(split, N // 2)
    # gymnasium's state is not saved: no environment or driver state.
    assert not any(k.startswith(('env_state/', 'driver_state/'))
                   for k in saved)
    # A resume restores everything that is saved, bit for bit (the second
    # command is already done: it restores and writes ckpt-4 again).
    train(split, num_iterations=N // 2)
    _assert_same_values(saved, _checkpoint(split, N // 2))

    trainer = OffPolicyTrainer(
        TrainerConfig(root_dir=split, algorithm_ctor=_dqn, num_iterations=N,
                      random_seed=SEED, iterations_per_call=4,
                      summary_interval=4,
                      checkpoint_interval=4, progress_interval_secs=1e6,
                      **_OFF_POLICY),
        env=_cart_pole_gym)
    try:
        resumed = trainer.train()
        stored = trainer._replayer.buffer.gather_all()
    finally:
        trainer.close()
    # Episodes restart: the first step stored after the resume is FIRST in
    # every environment (the initial collection stored 8 steps / 2 envs = 4
    # rows, then each iteration unroll_length rows).
    row = 4 + _OFF_POLICY['unroll_length'] * (N // 2)
    step_type = stored.step_type.numpy()  # [S, B]
    assert (step_type[row] == StepType.FIRST).all()
    assert step_type.shape[0] > row
    assert resumed['iterations'] == N
    # The rest continues as in the straight run: the same random numbers
    # (the generators advance by the draws, not by what the environment
    # returns), the same number of updates of the normalizer and of
    # replayed batches, the same counters.
    a, b = _checkpoint(straight, N), _checkpoint(split, N)
    for key in a:
        if key.startswith(('rng/', 'eval_rng/', 'iteration/')) or (
                key.startswith('replayer/') and '_generator' in key) or (
                    'count' in key.lower() and 'normalizer' in key.lower()):
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert any(k.startswith('rng/') for k in a)
    assert any('normalizer' in k.lower() and 'count' in k.lower() for k in a)
    assert result['iterations'] == resumed['iterations']


# ---------------------------------------------------- the generator
def test_restored_generator_reaches_compiled_functions(tmp_path):
    set_random_seed(11)
    generator = tf.random.get_global_generator()
    draw = tf.function(make_stateless_seed)
    draw()  # traced now: the function captured this generator
    checkpoint = tf.train.Checkpoint(rng=generator)
    path = checkpoint.write(str(tmp_path / 'rng'))
    expected = [draw().numpy() for _ in range(3)]
    checkpoint.read(path).assert_consumed()
    assert [list(draw().numpy()) for _ in range(3)] == [
        list(x) for x in expected]
    checkpoint.read(path).assert_consumed()
    assert list(make_stateless_seed().numpy()) == list(expected[0])


def test_using_global_generator_swaps_and_restores(tmp_path):
    set_random_seed(12)
    training = tf.random.get_global_generator()
    own = tf.random.Generator.from_seed(5)
    state = training.state.numpy()
    with using_global_generator(own):
        draw = tf.function(make_stateless_seed)
        draw()  # traced inside: keeps drawing from `own`
    assert tf.random.get_global_generator() is training
    draw()
    np.testing.assert_array_equal(training.state.numpy(), state)
    with pytest.raises(TypeError, match='expected a tf.random.Generator, '
                       'got int'):
        with using_global_generator(5):
            pass
    with pytest.raises(RuntimeError):
        with using_global_generator(own):
            raise RuntimeError('boom')
    assert tf.random.get_global_generator() is training


def test_nest_state_saves_the_nest_or_nothing(tmp_path):
    spec = (tf.TensorSpec([2], tf.float32), tf.TensorSpec([2, 1], tf.int32))
    held = {'value': None}
    state = NestState(spec, lambda: held['value'],
                      lambda v: held.update(value=v))
    checkpoint = tf.train.Checkpoint(state=state)
    empty = checkpoint.write(str(tmp_path / 'empty'))
    held['value'] = (tf.constant([1., 2.]), tf.constant([[3], [4]]))
    full = checkpoint.write(str(tmp_path / 'full'))
    held['value'] = None
    checkpoint.read(empty).assert_consumed()
    assert held['value'] is None
    checkpoint.read(full).assert_consumed()
    assert held['value'][0].numpy().tolist() == [1., 2.]
    assert held['value'][1].numpy().tolist() == [[3], [4]]


# ------------------------------------------------ environment states
def _time_steps(env, actions):
    return [tf.nest.map_structure(lambda x: x.numpy(), env.step(a))
            for a in actions]


def _assert_same_time_steps(a, b):
    for x, y in zip(a, b):
        for u, v in zip(tf.nest.flatten(x), tf.nest.flatten(y)):
            np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize('make_env', [
    lambda: _cart_pole_tf(4, batch_size=3),
    lambda: TFPyEnvironment(RNNPolicyUnittestEnv(3, 4, seed=4, gap=1)),
    lambda: TFPyEnvironment(PolicyUnittestEnv(3, 4, seed=4)),
], ids=['suite_tf', 'rnn_unittest', 'policy_unittest'])
def test_environment_state_round_trip(tmp_path, make_env):
    env = make_env()
    actions = [tf.constant([i % 2, 1, 0], tf.int64) for i in range(9)]
    env.reset()
    _time_steps(env, actions[:5])  # into the second episode
    checkpoint = tf.train.Checkpoint(env=env.checkpoint_state())
    path = checkpoint.write(str(tmp_path / 'env'))
    expected = _time_steps(env, actions)
    # A fresh environment (as in a new process) continues from the state.
    other = make_env()
    tf.train.Checkpoint(env=other.checkpoint_state()).read(
        path).assert_consumed()
    _assert_same_time_steps(_time_steps(other, actions), expected)
    assert other.checkpoint_state() is other.checkpoint_state()


def test_gymnasium_environment_has_no_checkpoint_state():
    env = _cart_pole_gym(0)
    try:
        assert env.checkpoint_state() is None
    finally:
        env.close()


def test_unittest_set_state_rejects_another_shape():
    state = PolicyUnittestEnv(3, 4, obs_dim=2)
    state.reset()
    with pytest.raises(ValueError, match=r'saved observations have shape '
                       r'\[3, 2\], this environment\'s \[2, 2\]'):
        PolicyUnittestEnv(2, 4, obs_dim=2).set_state(state.get_state())


# ------------------------------------------------------- evaluation
def _dqn_run(root, evaluate):
    config = dict(evaluate=evaluate, eval_interval=2, num_eval_episodes=2,
                  summary_interval=2, checkpoint_interval=2,
                  eval_env_factory=functools.partial(_cart_pole_tf,
                                                     batch_size=2))
    return _train(root, functools.partial(_dqn, eval_epsilon_greedy=0.1),
                  _cart_pole_tf, 4, off_policy=True, **config)


def test_evaluation_does_not_change_seeded_dqn_training(tmp_path):
    with_eval = _dqn_run(str(tmp_path / 'eval'), True)
    without = _dqn_run(str(tmp_path / 'no_eval'), False)
    assert 'eval/Metrics/AverageReturn' in with_eval
    assert _metrics(with_eval) == _metrics(without)
    assert _events(str(tmp_path / 'eval')) == _events(
        str(tmp_path / 'no_eval'))
    # Everything but the evaluation's own generator is the same.
    a, b = _checkpoint(str(tmp_path / 'eval'), 4), _checkpoint(
        str(tmp_path / 'no_eval'), 4)
    _assert_same_values(a, b, skip=('eval_rng/', ))
    assert any(k.startswith('eval_rng/') for k in a)


def test_evaluation_driver_draws_from_its_own_generator():
    set_random_seed(13)
    env = _cart_pole_tf(1)
    alg = _dqn(env.observation_spec(), env.action_spec(),
               eval_epsilon_greedy=0.5)
    training = tf.random.get_global_generator()
    before = training.state.numpy()
    driver = EvaluationDriver(env, alg, max_steps=5)
    own_before = driver.generator.state.numpy()
    driver.run()
    driver.run()
    np.testing.assert_array_equal(training.state.numpy(), before)
    assert tf.random.get_global_generator() is training
    assert not np.array_equal(driver.generator.state.numpy(), own_before)
    # The seed is fixed by the run's seed (derived, not drawn).
    set_random_seed(13)
    fresh = EvaluationDriver(env, alg).generator.state.numpy()
    set_random_seed(13)
    np.testing.assert_array_equal(
        EvaluationDriver(env, alg).generator.state.numpy(), fresh)
    set_random_seed(14)
    assert not np.array_equal(
        EvaluationDriver(env, alg).generator.state.numpy(), fresh)
    with pytest.raises(TypeError, match='seed must be an int or None, got '
                       "'x'"):
        EvaluationDriver(env, alg, seed='x')
