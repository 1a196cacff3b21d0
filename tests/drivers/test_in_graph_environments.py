"""In-graph (suite_tf) environments end to end: ``create_environment``'s
'tf' backend, drivers with no Python callback in their graphs, XLA-compiled
iterations (metrics, NaN check), the one-time replay's full read, and the
trainers with ``jit_compile`` on suite_tf.

Counting environment with exact numbers: CartPole with
``max_episode_steps=k`` small enough that no pole can fall (after 4 steps
from gymnasium's initial states |theta| <= 0.1 < 0.21 whatever the actions),
so every episode is FIRST + k transitions, the last one a truncating LAST,
and the step after it is a reset (FIRST, not a transition).
"""

import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms import ActorCriticAlgorithm, ActorCriticLoss
from alf_rl.bin.train import parse_gin, train
from alf_rl.data_structures import StepType
from alf_rl.drivers import OnPolicyDriver
from alf_rl.drivers.off_policy_driver import SyncOffPolicyDriver
from alf_rl.environments import suite_tf
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.environments.utils import create_environment
from alf_rl.metrics import default_metrics
from alf_rl.networks import ActorDistributionNetwork, ValueNetwork
from alf_rl.replay import OnetimeExperienceReplayer
from alf_rl.replay.replay_buffer import ReplayBuffer
from alf_rl.trainers import OnPolicyTrainer, TrainerConfig
from alf_rl.trainers.errors import TrainingError
from alf_rl.utils.common import set_random_seed

EXAMPLES = os.path.join(os.path.dirname(__file__), '..', '..', 'examples')
AC_GIN = os.path.join(EXAMPLES, 'ac_cart_pole.gin')
PPO_TF_GIN = os.path.join(EXAMPLES, 'ppo_tf_cart_pole.gin')
PYTHON_OPS = {'PyFunc', 'PyFuncStateless', 'EagerPyFunc', 'NumpyFunction'}
FIRST, LAST = int(StepType.FIRST), int(StepType.LAST)
# Tiny runs of the example files (2 iterations, 8-unit networks).
TINY = [
    'TrainerConfig.num_iterations=2',
    'TrainerConfig.num_env_steps=0',
    'TrainerConfig.evaluate=False',
    'TrainerConfig.summary_interval=1',
    'ActorDistributionNetwork.fc_layer_params=(8,)',
    'ValueNetwork.fc_layer_params=(8,)',
]


# ---------------------------------------------------------------- helpers
def _ac(env, algorithm_cls=ActorCriticAlgorithm, seed=0):
    """A tiny actor-critic for ``env``."""
    set_random_seed(seed)
    return algorithm_cls(
        env.observation_spec(),
        env.action_spec(),
        actor_network_ctor=lambda o, a: ActorDistributionNetwork(
            o, a, fc_layer_params=(8, )),
        value_network_ctor=lambda o: ValueNetwork(o, fc_layer_params=(8, )),
        loss=ActorCriticLoss(),
        optimizer=tf_keras.optimizers.Adam(1e-3))


class _ScaledLossAC(ActorCriticAlgorithm):
    """Actor-critic whose loss is multiplied by ``loss_scale`` (a variable,
    so setting it to NaN poisons an already traced iteration)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.loss_scale = tf.Variable(1.0, trainable=False, name='scale')

    def calc_loss(self, training_info):
        loss_info = super().calc_loss(training_info)
        return loss_info._replace(loss=loss_info.loss * self.loss_scale)


def _counting_env(batch_size, episode_steps=4, seed=0):
    """suite_tf CartPole whose episodes all have ``episode_steps``
    transitions (see the module docstring)."""
    return suite_tf.load('CartPole-v1', batch_size, seed=seed,
                         max_episode_steps=episode_steps)


def _expected_counts(step_calls, episode_steps):
    """(transitions, episodes) of one counting env after ``step_calls``
    ``env.step`` calls following a reset: cycles of ``episode_steps``
    transitions then one reset step."""
    cycles, rem = divmod(step_calls, episode_steps + 1)
    return (cycles * episode_steps + rem,
            cycles + (1 if rem == episode_steps else 0))


def _metric_values(metrics):
    return {m.name: float(m.result()) for m in metrics}


def _op_types(graph_def):
    """Op types of a graph and of every function in its library (loop
    bodies, called tf.functions)."""
    ops = {n.op for n in graph_def.node}
    for function in graph_def.library.function:
        ops |= {n.op for n in function.node_def}
    return ops


def _xla_functions(graph_def):
    """Names of the library functions marked for XLA compilation."""
    return [
        f.signature.name for f in graph_def.library.function
        if f.attr['_XlaMustCompile'].b
    ]


def _gym_env(batch_size, seed=0):
    return create_environment('CartPole-v1', batch_size, seed=seed)


def _tf_env(batch_size, seed=0):
    return create_environment('CartPole-v1', batch_size, seed=seed,
                              backend='tf')


def _on_policy_graph_def(env, jit_compile=False):
    alg = _ac(env)
    driver = OnPolicyDriver(env, alg, train_interval=3,
                            jit_compile=jit_compile)
    driver.run()
    concrete = driver._run_fn.get_concrete_function(
        driver._time_step, driver._policy_state, tf.constant(1, tf.int32))
    return concrete.graph.as_graph_def()


def _run_and_train_graph_def(driver, num_steps):
    """The graph of ``driver.run_and_train`` as traced by its first call."""
    concrete = driver._run_and_train_fn.get_concrete_function(
        driver._time_step, driver._policy_state, tf.constant(1, tf.int32),
        tf.constant(num_steps, tf.int32))
    return concrete.graph.as_graph_def()


# ------------------------------------------------ 1. create_environment
def test_create_environment_tf_backend_matches_gym_specs():
    env = create_environment('CartPole-v1', 3, seed=5, backend='tf')
    gym_env = _gym_env(3)
    assert isinstance(env, suite_tf.TFDynamicsEnvironment)
    assert env.in_graph and not gym_env.in_graph
    assert isinstance(gym_env, TFPyEnvironment)
    assert env.batch_size == 3 and env.seed == 5
    assert env.max_episode_steps == 500  # gymnasium's CartPole-v1 limit
    assert env.time_step_spec() == gym_env.time_step_spec()
    assert env.action_spec() == gym_env.action_spec()
    assert env.observation_spec() == gym_env.observation_spec()
    time_step = env.step(tf.constant([0, 1, 1], tf.int64))
    assert time_step.observation.shape == [3, 4]
    np.testing.assert_array_equal(time_step.env_id, [0, 1, 2])
    # max_episode_steps reaches suite_tf.
    short = create_environment('Pendulum-v1', 2, seed=0, backend='tf',
                               max_episode_steps=7)
    assert short.max_episode_steps == 7 and short.batch_size == 2
    assert short.action_spec() == create_environment(
        'Pendulum-v1', 1, seed=0).action_spec()


def test_create_environment_rejects_bad_tf_backend_arguments():
    with pytest.raises(ValueError, match="backend.*'jax'"):
        create_environment('CartPole-v1', 2, backend='jax')
    with pytest.raises(ValueError, match='use_subprocess=True'):
        create_environment('CartPole-v1', 2, use_subprocess=True,
                           backend='tf')
    # A real gymnasium id that suite_tf does not implement.
    with pytest.raises(ValueError, match="'LunarLander-v3'.*CartPole-v1"):
        create_environment('LunarLander-v3', 2, backend='tf')
    with pytest.raises(ValueError, match="'NoSuchEnv-v0'"):
        create_environment('NoSuchEnv-v0', 2, backend='tf')
    with pytest.raises(ValueError, match='env_load_fn=my_loader'):

        def my_loader(*args, **kwargs):
            raise AssertionError('must not be called')

        create_environment('CartPole-v1', 2, env_load_fn=my_loader,
                           backend='tf')


def test_gin_backend_tf_trains_ac_cart_pole(tmp_path):
    # 4 envs x 4 steps x 2 iterations, episodes of 3 transitions.
    bindings = TINY + [
        "create_environment.backend='tf'",
        'create_environment.num_parallel_environments=4',
        'create_environment.max_episode_steps=3',
        'TrainerConfig.unroll_length=4',
    ]
    result = train(str(tmp_path), [AC_GIN], bindings)
    assert result['iterations'] == 2
    transitions, episodes = _expected_counts(8, 3)
    assert result['Metrics/EnvironmentSteps'] == 4 * transitions == 24
    assert result['Metrics/NumberOfEpisodes'] == 4 * episodes == 8
    assert result['Metrics/AverageReturn'] == pytest.approx(3.0)
    assert result['Metrics/AverageEpisodeLength'] == pytest.approx(3.0)
    assert 0 < result['first_iteration_secs'] <= result['train_secs']
    with open(os.path.join(str(tmp_path), 'config.gin')) as f:
        assert "create_environment.backend = 'tf'" in f.read()
    # TrainerConfig.jit_compile reaches the OnPolicyTrainer's driver (built,
    # not run: running would add an XLA compilation to this file's time).
    # train() ran in a gin configuration of its own: bind the same here.
    parse_gin([AC_GIN], bindings)
    trainer = OnPolicyTrainer(
        TrainerConfig(root_dir=str(tmp_path / 'jit'), jit_compile=True))
    try:
        assert trainer.env.in_graph and trainer._driver.jit_compiled
    finally:
        trainer.close()


# ------------------------------------- 2. no Python callbacks in graphs
def test_on_policy_iteration_graph_of_gym_env_has_python_callback():
    # The check in test_a2c_iterations_... would find a callback if there
    # were one, and a TFPyEnvironment's driver is never XLA-compiled.
    graph_def = _on_policy_graph_def(_gym_env(2), jit_compile=True)
    assert _op_types(graph_def) & PYTHON_OPS
    assert not _xla_functions(graph_def)


def test_run_and_train_graph_of_gym_env_has_python_callback():
    # The suite_tf counterpart (no callback) is checked on the PPO trainer's
    # driver in test_ppo_tf_cart_pole_trains_then_stops_on_nan_loss.
    env = _gym_env(2)
    alg = _ac(env)
    replayer = OnetimeExperienceReplayer(alg.prepare_off_policy_specs(2), 2,
                                         max_length=3)
    driver = SyncOffPolicyDriver(env, alg, replayer, jit_compile=True)
    assert not driver.jit_compiled
    size = driver.run_and_train(3, lambda: replayer.buffer.total_size)
    assert int(size) == 6
    graph_def = _run_and_train_graph_def(driver, 3)
    ops = _op_types(graph_def)
    assert ops & {'While', 'StatelessWhile'}
    assert ops & PYTHON_OPS
    assert not _xla_functions(graph_def)


# --------------------------------------------------------- 3. XLA runs
def test_jit_compiled_only_for_in_graph_envs():
    tf_env, gym_env = _tf_env(2), _gym_env(2)
    alg = _ac(tf_env)
    assert OnPolicyDriver(tf_env, alg, jit_compile=True).jit_compiled
    assert not OnPolicyDriver(gym_env, alg, jit_compile=True).jit_compiled
    assert not OnPolicyDriver(tf_env, alg).jit_compiled
    assert not OnPolicyDriver(tf_env, alg, jit_compile=True,
                              use_tf_functions=False).jit_compiled
    replayer = OnetimeExperienceReplayer(alg.prepare_off_policy_specs(2), 2,
                                         max_length=2)
    assert SyncOffPolicyDriver(tf_env, alg, replayer,
                               jit_compile=True).jit_compiled
    assert not SyncOffPolicyDriver(gym_env, alg, replayer,
                                   jit_compile=True).jit_compiled


@pytest.mark.parametrize('jit_compile', [False, True])
def test_a2c_iterations_count_exactly_and_stop_on_nan_loss(jit_compile):
    batch_size, train_interval, iterations = 3, 3, 4
    env = _counting_env(batch_size, episode_steps=4)
    alg = _ac(env, algorithm_cls=_ScaledLossAC)
    driver = OnPolicyDriver(env, alg, train_interval=train_interval,
                            jit_compile=jit_compile)
    assert driver.jit_compiled == jit_compile
    assert driver.env_steps_per_iteration == batch_size * train_interval
    initial = [v.numpy().copy() for v in alg.trainable_variables]
    for _ in range(iterations):
        loss_info = driver.run()
        assert np.isfinite(float(loss_info.loss))
    assert driver.num_traces == 1
    # The traced iteration: the env in the graph, no Python callback, and
    # under jit_compile an XLA-marked function holding the loop.
    graph_def = driver._run_fn.get_concrete_function(
        driver._time_step, driver._policy_state,
        tf.constant(1, tf.int32)).graph.as_graph_def()
    ops = _op_types(graph_def)
    assert not ops & PYTHON_OPS
    assert ops & {'While', 'StatelessWhile'}
    assert 'StatelessRandomUniformFullIntV2' in ops
    assert bool(_xla_functions(graph_def)) == jit_compile
    # 12 step calls per env: 2 cycles of 4 transitions + reset, 2 more.
    transitions, episodes = _expected_counts(iterations * train_interval, 4)
    assert (transitions, episodes) == (10, 2)
    values = _metric_values(driver.metrics)
    assert values['EnvironmentSteps'] == batch_size * transitions
    assert values['NumberOfEpisodes'] == batch_size * episodes
    assert values['AverageReturn'] == pytest.approx(4.0)  # 1 per step
    assert values['AverageEpisodeLength'] == pytest.approx(4.0)
    # Training happened (every variable moved).
    for b, v in zip(initial, alg.trainable_variables):
        assert not np.allclose(b, v.numpy()), v.name

    # 4. A NaN loss in the traced (compiled) iteration stops it.
    alg.loss_scale.assign(np.nan)
    before = [v.numpy().copy() for v in alg.trainable_variables]
    message = ('loss of ActorCriticAlgorithm \\(XLA-compiled iteration\\)'
               if jit_compile else
               'loss of ActorCriticAlgorithm \\(components')
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        driver.run()
    assert driver.num_traces == 1
    changed = [
        not np.array_equal(b, v.numpy())
        for b, v in zip(before, alg.trainable_variables)
    ]
    # Without XLA CheckNumerics runs before the update; XLA drops it, so
    # the (NaN) update was applied before the check outside the cluster.
    assert any(changed) == jit_compile


def _random_actions(spec, batch_size, seed):
    """Actions from ``suite_tf.stateless_uniform`` (the same under XLA)."""
    if spec.dtype.is_integer:
        n = int(spec.maximum) + 1
        return tf.cast(suite_tf.stateless_uniform([batch_size], seed, 0, n),
                       spec.dtype)
    return suite_tf.stateless_uniform([batch_size] + spec.shape.as_list(),
                                      seed, spec.minimum, spec.maximum)


def _metrics_rollout(name, batch_size, num_steps, max_episode_steps,
                     jit_compile):
    """Random-action rollout of a fresh suite_tf env under (maybe) XLA with
    the default metrics updated in the loop; returns the metric values and
    the [T, B] step types and rewards."""
    env = suite_tf.load(name, batch_size, seed=3,
                        max_episode_steps=max_episode_steps)
    metrics = default_metrics(batch_size)
    spec = env.action_spec()

    @tf.function(jit_compile=jit_compile, autograph=False)
    def rollout():

        def body(i, step_types, rewards):
            action = _random_actions(spec, batch_size,
                                     tf.stack([tf.constant(17), i]))
            time_step = env.step(action)
            for metric in metrics:
                metric(time_step)
            return (i + 1, step_types.write(i, time_step.step_type),
                    rewards.write(i, time_step.reward))

        _, step_types, rewards = tf.while_loop(
            lambda i, *_: i < num_steps, body,
            (tf.constant(0), tf.TensorArray(tf.int32, num_steps),
             tf.TensorArray(tf.float32, num_steps)))
        return step_types.stack(), rewards.stack()

    time_step = env.reset()
    for metric in metrics:
        metric(time_step)
    step_types, rewards = rollout()
    return _metric_values(metrics), step_types.numpy(), rewards.numpy()


def _numpy_metrics(step_types, rewards, buffer_size=10):
    """The default metrics recomputed from the [T, B] steps (module doc of
    alf_rl.metrics: episodes end in batch order on a step)."""
    total = np.zeros(step_types.shape[1])
    length = np.zeros(step_types.shape[1])
    returns, lengths, env_steps = [], [], 0
    for types_t, rewards_t in zip(step_types, rewards):
        for b, (step_type, reward) in enumerate(zip(types_t, rewards_t)):
            if step_type == FIRST:
                total[b] = length[b] = 0
                continue
            env_steps += 1
            total[b] += reward
            length[b] += 1
            if step_type == LAST:
                returns.append(total[b])
                lengths.append(length[b])
    return {
        'EnvironmentSteps': env_steps,
        'NumberOfEpisodes': len(returns),
        'AverageReturn': np.mean(returns[-buffer_size:]),
        'AverageEpisodeLength': np.mean(lengths[-buffer_size:]),
    }


@pytest.mark.parametrize('name,max_episode_steps', [('CartPole-v1', None),
                                                    ('Pendulum-v1', 23)])
def test_metrics_under_xla_equal_plain_for_same_seed(name,
                                                     max_episode_steps):
    plain, plain_types, plain_rewards = _metrics_rollout(
        name, 12, 90, max_episode_steps, jit_compile=False)
    xla, xla_types, xla_rewards = _metrics_rollout(
        name, 12, 90, max_episode_steps, jit_compile=True)
    expected = _numpy_metrics(plain_types, plain_rewards)
    # Many episodes, several ending on the same step in different envs.
    assert expected['NumberOfEpisodes'] >= 24
    assert max((plain_types == LAST).sum(axis=1)) >= 2
    for key, value in expected.items():
        assert plain[key] == pytest.approx(value, rel=1e-5), key
    np.testing.assert_array_equal(plain_types, xla_types)
    np.testing.assert_allclose(plain_rewards, xla_rewards, rtol=1e-4,
                               atol=1e-5)
    assert xla['EnvironmentSteps'] == plain['EnvironmentSteps']
    assert xla['NumberOfEpisodes'] == plain['NumberOfEpisodes']
    for key in ('AverageReturn', 'AverageEpisodeLength'):
        assert xla[key] == pytest.approx(plain[key], rel=1e-4), key


# ----------------------------------------------------- 5. one-time replay
_SPEC = {
    'x': tf.TensorSpec([2], tf.float32),
    'n': tf.TensorSpec((), tf.int64),
}


def _step(cycle, t, num_envs, env_ids=None):
    """One step of ``num_envs`` envs, rows in ``env_ids`` order; every value
    encodes (cycle, t, env)."""
    env_ids = np.arange(num_envs) if env_ids is None else np.asarray(env_ids)
    code = 100 * cycle + 10 * t + env_ids
    return {
        'x': tf.constant(np.stack([code, -code], -1), tf.float32),
        'n': tf.constant(code, tf.int64),
    }, tf.constant(env_ids, tf.int32)


def _assert_nest_equal(a, b):
    tf.nest.assert_same_structure(a, b)
    for x, y in zip(tf.nest.flatten(a), tf.nest.flatten(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_read_full_equals_gather_all_over_clear_cycles():
    buffer = ReplayBuffer(_SPEC, num_environments=3, capacity=12)
    assert buffer.max_length == 4
    for cycle in range(4):
        for t in range(4):
            # Rows in a different env order every step.
            batch, env_ids = _step(cycle, t, 3, np.roll([0, 1, 2], t))
            buffer.add_batch(batch, env_ids)
        np.testing.assert_array_equal(buffer.start_positions, [4 * cycle] * 3)
        np.testing.assert_array_equal(buffer.end_positions,
                                      [4 * cycle + 4] * 3)
        full = buffer.read_full()
        _assert_nest_equal(full, buffer.gather_all())
        # Time-major [T, E]: step t of env e at [t, e].
        code = 100 * cycle + 10 * np.arange(4)[:, None] + np.arange(3)[None,
                                                                        :]
        np.testing.assert_array_equal(full['n'], code)
        np.testing.assert_array_equal(full['x'][..., 1], -code)
        buffer.clear()
        assert int(buffer.total_size) == 0


def test_read_full_after_wrap_around_without_clear():
    buffer = ReplayBuffer(_SPEC, num_environments=2, capacity=6)
    for t in range(6):  # positions 0..5 in rings of 3: slots hold 3..5
        buffer.add_batch(*_step(0, t, 2))
    full = buffer.read_full()
    _assert_nest_equal(full, buffer.gather_all())
    np.testing.assert_array_equal(full['n'][:, 0], [30, 40, 50])


def test_read_full_rejects_a_buffer_that_is_not_full():
    buffer = ReplayBuffer(_SPEC, num_environments=2, capacity=8)
    with pytest.raises(tf.errors.InvalidArgumentError, match='read_full'):
        buffer.read_full()  # empty
    for t in range(3):
        buffer.add_batch(*_step(0, t, 2))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r'max_length=4 .*\[3 3\]'):
        buffer.read_full()
    buffer.add_batch(*_step(0, 3, 2, env_ids=[0]))  # env 1 still holds 3
    with pytest.raises(tf.errors.InvalidArgumentError, match=r'\[4 3\]'):
        buffer.read_full()
    # 4 steps each but not from slot 0: gather_all reads them, read_full
    # would return them rotated, so it refuses.
    buffer.add_batch(*_step(0, 3, 2, env_ids=[1]))
    buffer.clear()
    buffer.add_batch(*_step(1, 0, 2))
    buffer.clear()  # start = 5
    for t in range(4):
        buffer.add_batch(*_step(2, t, 2))
    np.testing.assert_array_equal(buffer.current_size, [4, 4])
    assert buffer.gather_all()['n'].shape == [4, 2]
    with pytest.raises(tf.errors.InvalidArgumentError, match='read_full'):
        buffer.read_full()


def test_replay_all_full_under_xla():
    replayer = OnetimeExperienceReplayer(_SPEC, num_envs=3, max_length=2)
    replay = tf.function(lambda: replayer.replay_all(full=True),
                         jit_compile=True, autograph=False)
    observe = tf.function(replayer.observe, autograph=False)
    for cycle in range(3):
        for t in range(2):
            observe(_step(cycle, t, 3)[0])
        np.testing.assert_array_equal(replayer.buffer.current_size, [2] * 3)
        exp = replay()
        assert exp['x'].shape == [2, 3, 2]
        code = 100 * cycle + 10 * np.arange(2)[:, None] + np.arange(3)[None,
                                                                        :]
        np.testing.assert_array_equal(exp['n'], code)
        np.testing.assert_array_equal(exp['x'][..., 0], code)
        # Cleared: the next iteration starts empty.
        np.testing.assert_array_equal(replayer.buffer.current_size, [0] * 3)
    assert replay.experimental_get_tracing_count() == 1


# ---------------------------------------------- 6. PPO through a trainer
@pytest.mark.parametrize('jit_compile', [False, True])
def test_ppo_tf_cart_pole_trains_then_stops_on_nan_loss(jit_compile,
                                                        tmp_path):
    params = TINY + [
        'create_environment.num_parallel_environments=8',
        'create_environment.max_episode_steps=3',
        'TrainerConfig.unroll_length=4',
        # One update on the whole batch: XLA compiles it in a third of the
        # time of mini-batch epochs (those run in test_examples).
        'TrainerConfig.mini_batch_size=32',
        'TrainerConfig.num_updates_per_train_step=1',
        'TrainerConfig.jit_compile=%s' % jit_compile,
    ]
    parse_gin([PPO_TF_GIN], params, str(tmp_path))
    config = TrainerConfig()
    trainer = config.trainer(config)
    try:
        env, driver = trainer.env, trainer._driver
        assert isinstance(driver, SyncOffPolicyDriver)
        assert env.in_graph and env.batch_size == 8
        assert driver.jit_compiled == jit_compile
        variables = trainer.algorithm.trainable_variables
        before = [v.numpy().copy() for v in variables]
        result = trainer.train()
        assert result['iterations'] == 2
        # 8 envs x 4 steps x 2 iterations, episodes of 3 transitions.
        transitions, episodes = _expected_counts(8, 3)
        assert result['Metrics/EnvironmentSteps'] == 8 * transitions == 48
        assert result['Metrics/NumberOfEpisodes'] == 8 * episodes == 16
        assert result['Metrics/AverageReturn'] == pytest.approx(3.0)
        assert 0 < result['first_iteration_secs'] <= result['train_secs']
        assert all(np.all(np.isfinite(v.numpy())) for v in variables)
        assert any(not np.allclose(b, v.numpy())
                   for b, v in zip(before, variables))
        # 2. Collection and the PPO epochs in one graph, no Python callback,
        # XLA-compiled under jit_compile.
        graph_def = _run_and_train_graph_def(driver, 4)
        ops = _op_types(graph_def)
        assert not ops & PYTHON_OPS
        assert ops & {'While', 'StatelessWhile'}
        assert bool(_xla_functions(graph_def)) == jit_compile

        # 4. A third iteration with a NaN model stops with a clear error.
        # (NaN observations would not do: TF's CPU ReLU maps NaN to 0.)
        for v in variables:
            v.assign(tf.fill(v.shape, np.nan))
        # Continue in this process without restoring ckpt-2 over them.
        trainer._checkpointer.restore = lambda **kwargs: None
        config.num_iterations = 3
        message = ('loss of PPOAlgorithm \\(XLA-compiled iteration\\).*'
                   'XLA-compiled update was already applied'
                   if jit_compile else
                   'loss of PPOAlgorithm \\(components.*'
                   'no update was applied')
        with pytest.raises(TrainingError,
                           match='iteration 3: non-finite loss .*' +
                           message):
            trainer.train()
        assert int(trainer._iteration.numpy()) == 2
        # The model of iteration 2 computed the NaN loss: its checkpoint
        # is set aside (kept), so that no rerun resumes from it.
        assert trainer._checkpointer.checkpoints() == []
        assert 'ckpt-2.non_finite' in os.listdir(
            trainer._checkpointer.directory)
    finally:
        trainer.close()
