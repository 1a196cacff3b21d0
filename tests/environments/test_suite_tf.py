"""suite_tf: TF-op classic control against gymnasium, step for step."""

import math

import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from alf_rl.data_structures import StepType
from alf_rl.environments import suite_gym, suite_tf
from alf_rl.environments.batched_environment import BatchedPyEnvironment
from alf_rl.environments.tf_environment import TFPyEnvironment

NAMES = suite_tf.SUPPORTED_ENVIRONMENTS
FIRST, MID, LAST = int(StepType.FIRST), int(StepType.MID), int(StepType.LAST)

# For each id: a random action for gymnasium (continuous ones also outside
# the bounds, to check the clipping), and a random state over the whole
# region the dynamics can reach (walls, goals, thresholds included).
_ACTIONS = {
    'CartPole-v1': lambda rng: int(rng.randint(2)),
    'Pendulum-v1': lambda rng: rng.uniform(-3, 3, [1]).astype(np.float32),
    'MountainCar-v0': lambda rng: int(rng.randint(3)),
    'MountainCarContinuous-v0':
    lambda rng: rng.uniform(-1.5, 1.5, [1]).astype(np.float32),
    'Acrobot-v1': lambda rng: int(rng.randint(3)),
}
_WIDE_STATES = {
    'CartPole-v1': ([-2.4, -3, -0.21, -3], [2.4, 3, 0.21, 3]),
    'Pendulum-v1': ([-10, -8], [10, 8]),
    'MountainCar-v0': ([-1.2, -0.07], [0.6, 0.07]),
    'MountainCarContinuous-v0': ([-1.2, -0.07], [0.6, 0.07]),
    'Acrobot-v1': ([-math.pi, -math.pi, -4 * math.pi, -9 * math.pi],
                   [math.pi, math.pi, 4 * math.pi, 9 * math.pi]),
}
# Initial-state bounds of gymnasium's reset.
_INITIAL_BOUNDS = {
    'CartPole-v1': ([-0.05] * 4, [0.05] * 4),
    'Pendulum-v1': ([-math.pi, -1], [math.pi, 1]),
    'MountainCar-v0': ([-0.6, 0], [-0.4, 0]),
    'MountainCarContinuous-v0': ([-0.6, 0], [-0.4, 0]),
    'Acrobot-v1': ([-0.1] * 4, [0.1] * 4),
}


def _gym_transitions(name, num_episode_steps=400, num_wide_states=300,
                     seed=0):
    """One-step transitions of gymnasium's env, from its own states.

    Half come from random-action episodes (reset on termination or at the
    time limit), half from random states over the reachable region.

    Returns:
        dict of numpy arrays: state [N, d] float32 (what was fed to
        gymnasium), action [N, ...], next_state [N, d], observation [N, ...],
        reward [N], terminated [N] bool.
    """
    rng = np.random.RandomState(seed)
    env = gymnasium.make(name).unwrapped
    limit = gymnasium.spec(name).max_episode_steps
    env.reset(seed=seed)
    rows = []

    def step(action):
        # Feed gymnasium a float32-representable state so both sides start
        # from the same numbers.
        state = np.asarray(env.state, np.float32)
        env.state = state.astype(np.float64)
        observation, reward, terminated, _, _ = env.step(action)
        rows.append((state, action, np.asarray(env.state, np.float64),
                     observation, reward, terminated))
        return terminated

    t = 0
    for _ in range(num_episode_steps):
        t += 1
        if step(_ACTIONS[name](rng)) or t >= limit:
            env.reset()
            t = 0
    low, high = _WIDE_STATES[name]
    for _ in range(num_wide_states):
        env.reset()  # clears CartPole's steps_beyond_terminated
        env.state = rng.uniform(low, high).astype(np.float32).astype(
            np.float64)
        step(_ACTIONS[name](rng))
    columns = list(zip(*rows))
    names = ('state', 'action', 'next_state', 'observation', 'reward',
             'terminated')
    result = {k: np.array(v) for k, v in zip(names, columns)}
    result['terminated'] = result['terminated'].astype(bool)
    return result


def _angle_difference(a, b):
    return (a - b + np.pi) % (2 * np.pi) - np.pi


@pytest.mark.parametrize('name', NAMES)
def test_transition_matches_gymnasium(name):
    data = _gym_transitions(name)
    dynamics = suite_tf.load(name, 1, seed=0).dynamics
    next_state, observation, reward, terminated = dynamics.transition(
        tf.constant(data['state']), tf.constant(data['action']))
    assert next_state.dtype == tf.float32 and reward.dtype == tf.float32
    assert terminated.dtype == tf.bool
    next_state = next_state.numpy()
    want = data['next_state']
    if name == 'Acrobot-v1':
        # An angle wrapped at +pi on one side may be -pi on the other.
        np.testing.assert_allclose(
            _angle_difference(next_state[:, :2], want[:, :2]), 0, atol=1e-4)
        np.testing.assert_allclose(next_state[:, 2:], want[:, 2:], rtol=1e-4,
                                   atol=1e-4)
    else:
        np.testing.assert_allclose(next_state, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(observation.numpy(), data['observation'],
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(reward.numpy(), data['reward'], rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_array_equal(terminated.numpy(), data['terminated'])
    # The samples reach the interesting branches.
    if name != 'Pendulum-v1':
        assert 0 < data['terminated'].sum() < len(data['terminated'])


@pytest.mark.parametrize('name', NAMES)
def test_observation_at_reset_matches_gymnasium(name):
    env = gymnasium.make(name).unwrapped
    dynamics = suite_tf.load(name, 1, seed=0).dynamics
    for seed in range(5):
        observation, _ = env.reset(seed=seed)
        state = np.asarray(env.state, np.float32)[None]
        np.testing.assert_allclose(
            dynamics.observation(tf.constant(state)).numpy()[0], observation,
            rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize('name', NAMES)
def test_initial_state_distribution(name):
    dynamics = suite_tf.load(name, 1, seed=0).dynamics
    state = dynamics.initial_state(2000, tf.constant([1, 2], tf.int32))
    assert state.shape == (2000, dynamics.state_dim)
    assert state.dtype == tf.float32
    state = state.numpy()
    low, high = map(np.array, _INITIAL_BOUNDS[name])
    assert np.all(state >= low) and np.all(state <= high)
    spread = high - low
    # Uniform over the box: the extremes are near its edges.
    np.testing.assert_allclose(state.min(0), low, atol=0.01 * spread.max())
    np.testing.assert_allclose(state.max(0), high, atol=0.01 * spread.max())
    same = dynamics.initial_state(2000, tf.constant([1, 2], tf.int32))
    np.testing.assert_array_equal(same.numpy(), state)


def test_stateless_uniform_is_the_same_with_xla():
    def draw(seed):
        return suite_tf.stateless_uniform([1000, 2], seed, [-1.0, 5.0],
                                          [1.0, 6.0])

    seed = tf.constant([3, 4], tf.int64)  # an argument: not constant-folded
    plain = tf.function(draw, autograph=False)(seed).numpy()
    xla = tf.function(draw, jit_compile=True, autograph=False)(seed).numpy()
    np.testing.assert_array_equal(plain, xla)
    np.testing.assert_array_equal(draw(tf.constant([3, 4], tf.int32)), plain)
    assert np.all(plain >= [-1, 5]) and np.all(plain < [1, 6])
    np.testing.assert_allclose(plain.mean(0), [0, 5.5], atol=0.05)
    for other in ([3, 5], [2, 4]):
        assert not np.any(draw(tf.constant(other)).numpy() == plain)


@pytest.mark.parametrize('name', NAMES)
def test_specs_equal_tf_py_environment(name):
    py_env = TFPyEnvironment(suite_gym.load(name))
    env = suite_tf.load(name, 2, seed=0)
    assert env.time_step_spec() == py_env.time_step_spec()
    assert env.action_spec() == py_env.action_spec()
    assert env.observation_spec() == py_env.observation_spec()
    for ours, theirs in zip(tf.nest.flatten(env.time_step_spec()),
                            tf.nest.flatten(py_env.time_step_spec())):
        assert (type(ours), ours.dtype, ours.shape, ours.name) == (
            type(theirs), theirs.dtype, theirs.shape, theirs.name)
        if hasattr(ours, 'minimum'):
            np.testing.assert_array_equal(ours.minimum, theirs.minimum)
            np.testing.assert_array_equal(ours.maximum, theirs.maximum)
            assert ours.minimum.dtype == theirs.minimum.dtype
    assert env.max_episode_steps == gymnasium.spec(name).max_episode_steps
    py_env.close()


def test_unknown_name_lists_supported_ones():
    with pytest.raises(ValueError, match="'CartPole-v0'.*CartPole-v1, "
                       "Pendulum-v1, MountainCar-v0, "
                       "MountainCarContinuous-v0, Acrobot-v1 and DeepSea-N, PointMass"):
        suite_tf.load('CartPole-v0', 2)


def test_bad_arguments():
    with pytest.raises(ValueError, match='batch_size'):
        suite_tf.load('CartPole-v1', 0)
    with pytest.raises(ValueError, match='seed'):
        suite_tf.load('CartPole-v1', 2, seed=1.5)
    with pytest.raises(ValueError, match='max_episode_steps'):
        suite_tf.load('CartPole-v1', 2, max_episode_steps='10')


def _rollout(env, actions, graph=False):
    """Steps ``env`` through [T, B, ...] actions.

    Args:
        env: a ``TFEnvironment``.
        actions: [T, B, ...] numpy actions.
        graph: run all T steps in one ``tf.function`` (pays off for long
            rollouts: tracing costs about as much as 50 eager steps).

    Returns:
        ``TimeStep`` of [T, B, ...] numpy arrays.
    """
    if not graph:
        steps = [env.step(tf.constant(a)) for a in actions]
        return tf.nest.map_structure(
            lambda *x: np.stack([t.numpy() for t in x]), *steps)
    spec = env.time_step_spec()

    @tf.function(autograph=False)  # autograph's first use costs seconds
    def run(actions):
        num_steps = actions.shape[0]

        def body(t, arrays):
            ts = env.step(actions[t])
            return t + 1, tf.nest.map_structure(lambda a, x: a.write(t, x),
                                                arrays, ts)

        arrays = tf.nest.map_structure(
            lambda s: tf.TensorArray(s.dtype, num_steps), spec)
        _, arrays = tf.while_loop(lambda t, _: t < num_steps, body,
                                  (tf.constant(0), arrays))
        return tf.nest.map_structure(lambda a: a.stack(), arrays)

    return tf.nest.map_structure(lambda x: x.numpy(),
                                 run(tf.constant(actions)))


def test_reset_time_step():
    env = suite_tf.load('Pendulum-v1', 3, seed=0)
    for reset in (env.reset, tf.function(env.reset, autograph=False)):
        ts = reset()
        np.testing.assert_array_equal(ts.step_type, [FIRST] * 3)
        np.testing.assert_array_equal(ts.reward, np.zeros(3, np.float32))
        np.testing.assert_array_equal(ts.discount, np.ones(3, np.float32))
        np.testing.assert_array_equal(ts.prev_action, np.zeros((3, 1)))
        np.testing.assert_array_equal(ts.env_id, [0, 1, 2])
        assert ts.observation.shape == (3, 3)
        assert ts.prev_action.dtype == tf.float32
        assert ts.step_type.dtype == tf.int32 and ts.env_id.dtype == tf.int32


def test_step_before_reset_resets_every_environment():
    env = suite_tf.load('CartPole-v1', 3, seed=0)
    ts = env.step(tf.constant([1, 1, 1], tf.int64))
    np.testing.assert_array_equal(ts.step_type, [FIRST] * 3)
    np.testing.assert_array_equal(ts.prev_action, [0, 0, 0])
    assert np.all(np.abs(ts.observation.numpy()) <= 0.05)


def test_cartpole_constant_action_episodes_match_gymnasium():
    """Whole episodes: same length as gymnasium's from the same start."""
    b = 4
    env = suite_tf.load('CartPole-v1', b, seed=3)
    first = env.reset().observation.numpy()
    ts = _rollout(env, np.ones((30, b), np.int64))
    gym_env = gymnasium.make('CartPole-v1').unwrapped
    for i in range(b):
        gym_env.reset(seed=0)
        gym_env.state = first[i].astype(np.float64)
        length, terminated = 0, False
        while not terminated:
            _, _, terminated, _, _ = gym_env.step(1)
            length += 1
        # ts[t] is the (t + 1)-th step after reset.
        step_type = ts.step_type[:, i]
        assert step_type[length - 1] == LAST
        assert np.all(step_type[:length - 1] == MID)
        assert ts.discount[length - 1, i] == 0.0
        assert np.all(ts.discount[:length - 1, i] == 1.0)
        np.testing.assert_array_equal(ts.reward[:length, i], 1.0)
        # Auto-reset: the action row is ignored, a fresh episode starts.
        assert step_type[length] == FIRST
        assert ts.reward[length, i] == 0.0 and ts.discount[length, i] == 1.0
        assert ts.prev_action[length, i] == 0
        assert np.all(ts.prev_action[:length, i] == 1)
        assert np.all(np.abs(ts.observation[length, i]) <= 0.05)
        assert step_type[length + 1] == MID


def test_pendulum_truncates_at_200_like_tf_py_environment():
    b = 2
    env = suite_tf.load('Pendulum-v1', b, seed=0)
    py_env = TFPyEnvironment(
        BatchedPyEnvironment([
            suite_gym.load('Pendulum-v1', seed=i, env_id=i) for i in range(b)
        ]))
    actions = np.random.RandomState(0).uniform(-2, 2, (401, b, 1)).astype(
        np.float32)
    ts = _rollout(env, actions, graph=True)
    py_ts = _rollout(py_env, actions)
    for field in ('step_type', 'discount', 'env_id'):
        np.testing.assert_array_equal(getattr(ts, field),
                                      getattr(py_ts, field), err_msg=field)
    first = ts.step_type == FIRST
    np.testing.assert_array_equal(ts.reward[first], py_ts.reward[first])
    np.testing.assert_array_equal(ts.prev_action, py_ts.prev_action)
    # A step before reset resets; ts[t] is then step t of the episode, the
    # FIRST of each auto-reset being step 0 of the next one.
    np.testing.assert_array_equal(ts.step_type[[0, 201]], FIRST)
    np.testing.assert_array_equal(ts.step_type[[200]], LAST)
    assert (ts.step_type == MID).sum() == (401 - 3) * b
    np.testing.assert_array_equal(ts.discount, 1.0)
    assert np.all(ts.reward[1:200] < 0)
    py_env.close()


def test_max_episode_steps_override():
    env = suite_tf.load('CartPole-v1', 2, seed=0, max_episode_steps=5)
    assert env.max_episode_steps == 5
    env.reset()
    actions = np.tile([[0], [1]], (9, 2)).astype(np.int64)  # [18, 2]
    ts = _rollout(env, actions)
    # After reset: 4 MIDs and a LAST (a time limit: discount 1), FIRST, ...
    want = [MID] * 4 + [LAST] + [FIRST] + [MID] * 4 + [LAST] + [FIRST] + \
        [MID] * 4 + [LAST] + [FIRST]
    np.testing.assert_array_equal(ts.step_type, np.tile(want, (2, 1)).T)
    np.testing.assert_array_equal(ts.discount, 1.0)
    assert suite_tf.load('MountainCar-v0', 2,
                         max_episode_steps=-1).max_episode_steps is None
    env = suite_tf.load('MountainCar-v0', 2, seed=0, max_episode_steps=0)
    assert env.max_episode_steps is None
    env.reset()
    # No push never reaches the goal: past gymnasium's 200 steps, all MID.
    ts = _rollout(env, np.ones((300, 2), np.int64), graph=True)
    np.testing.assert_array_equal(ts.step_type, MID)


def test_termination_at_the_time_limit_has_discount_zero():
    def episode(max_episode_steps):
        env = suite_tf.load('CartPole-v1', 1, seed=5,
                            max_episode_steps=max_episode_steps)
        env.reset()
        return _rollout(env, np.ones((20, 1), np.int64))

    ts = episode(0)
    length = int(np.argmax(ts.step_type[:, 0] == LAST)) + 1
    assert ts.discount[length - 1, 0] == 0.0
    both = episode(length)  # terminates and truncates on the same step
    np.testing.assert_array_equal(both.step_type[:length + 1],
                                  ts.step_type[:length + 1])
    assert both.discount[length - 1, 0] == 0.0
    truncated = episode(length - 1)
    assert truncated.step_type[length - 2, 0] == LAST
    assert truncated.discount[length - 2, 0] == 1.0
    assert truncated.step_type[length - 1, 0] == FIRST


def test_same_seed_reproduces_and_environments_differ():
    actions = np.random.RandomState(0).randint(0, 2, (22, 4)).astype(np.int64)

    def run(seed):
        env = suite_tf.load('CartPole-v1', 4, seed=seed, max_episode_steps=10)
        first = env.reset().observation.numpy()
        return first, _rollout(env, actions)

    first, ts = run(7)
    first_again, ts_again = run(7)
    np.testing.assert_array_equal(first, first_again)
    for a, b in zip(tf.nest.flatten(ts), tf.nest.flatten(ts_again)):
        np.testing.assert_array_equal(a, b)
    other, _ = run(8)
    assert not np.any(first == other)
    # Every environment starts elsewhere, at reset and at the auto-resets.
    assert len(np.unique(first[:, 0])) == 4
    np.testing.assert_array_equal(ts.step_type[[10, 21]], FIRST)
    assert len(np.unique(ts.observation[10, :, 0])) == 4
    assert not np.any(ts.observation[10] == ts.observation[21])
    assert not np.any(ts.observation[10] == first)


def test_action_checks():
    env = suite_tf.load('CartPole-v1', 3, seed=0)
    env.reset()
    with pytest.raises(ValueError, match='batch size 3'):
        env.step(tf.constant([1, 0], tf.int64))
    with pytest.raises(ValueError, match='expected int64'):
        env.step(tf.constant([1., 0., 1.]))
    with pytest.raises(ValueError, match='value 2 at env 1 outside'):
        env.step(tf.constant([1, 2, 0], tf.int64))
    ts = env.step(tf.constant([1, 0, 1], tf.int32))  # int32 -> int64
    assert ts.prev_action.dtype == tf.int64
    env = suite_tf.load('Pendulum-v1', 2, seed=0)
    with pytest.raises(ValueError, match=r'nan at env 0'):
        env.step(tf.constant([[np.nan], [0.]], tf.float32))
    with pytest.raises(ValueError, match='action'):
        env.step(tf.constant([0., 0.], tf.float32))  # missing [B, 1]
    with pytest.raises(ValueError, match='batch size 2'):
        tf.function(env.step, autograph=False)(tf.zeros([3, 1]))


def _python_op_types(graph_def):
    ops = {n.op for n in graph_def.node}
    for function in graph_def.library.function:
        ops |= {n.op for n in function.node_def}
    return ops


def _random_rollout(env, num_steps, jit_compile):
    """A tf.function: ``num_steps`` random-action steps in a while_loop.

    Returns [num_steps, B] step types, the summed reward and the final
    observation.
    """
    spec = env.action_spec()
    b = env.batch_size

    @tf.function(jit_compile=jit_compile, autograph=False)
    def rollout():
        def body(i, step_types):
            # suite_tf.stateless_uniform: the same numbers with XLA.
            seed = tf.stack([tf.constant(11), i])
            if spec.dtype.is_integer:  # (Python, at trace time)
                n = int(spec.maximum) + 1
                action = tf.cast(
                    suite_tf.stateless_uniform([b], seed, 0, n), tf.int64)
            else:
                action = suite_tf.stateless_uniform(
                    [b] + spec.shape.as_list(), seed, -1.0, 1.0)
            ts = env.step(action)
            return i + 1, step_types.write(i, ts.step_type)

        _, step_types = tf.while_loop(
            lambda i, _: i < num_steps, body,
            (tf.constant(0), tf.TensorArray(tf.int32, num_steps)))
        return step_types.stack(), env.step(
            tf.zeros([b] + spec.shape.as_list(), spec.dtype)).observation

    return rollout


def test_rollout_graph_has_no_python_functions():
    env = suite_tf.load('Pendulum-v1', 2, seed=0)
    graph = _random_rollout(env, 5, False).get_concrete_function().graph
    ops = _python_op_types(graph.as_graph_def())
    assert not ops & {'PyFunc', 'PyFuncStateless', 'EagerPyFunc',
                      'NumpyFunction'}
    # The loop body (a library function) was looked at.
    assert ops & {'While', 'StatelessWhile'}
    assert 'StatelessRandomUniformFullIntV2' in ops and 'Cos' in ops


@pytest.mark.parametrize('name,batch_size', [('CartPole-v1', 24),
                                             ('Pendulum-v1', 3)])
def test_jit_compiled_while_loop_matches_plain(name, batch_size):
    results = []
    for jit_compile in (False, True):
        env = suite_tf.load(name, batch_size, seed=1, max_episode_steps=30)
        env.reset()
        step_types, observation = _random_rollout(env, 100, jit_compile)()
        results.append((step_types.numpy(), observation.numpy()))
    (plain_types, plain_obs), (jit_types, jit_obs) = results
    assert (plain_types == LAST).sum() >= batch_size * 3
    np.testing.assert_array_equal(plain_types, jit_types)
    np.testing.assert_allclose(plain_obs, jit_obs, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize('name', NAMES)
def test_render_draws_environment_zero_as_gymnasium(name):
    pytest.importorskip('pygame')
    env = suite_tf.load(name, 2, seed=0)
    env.reset()
    env.step(tf.constant(env.action_spec().minimum[None].repeat(2, 0)))
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    gym_env = gymnasium.make(name, render_mode='rgb_array')
    gym_env.reset(seed=0)
    gym_env.unwrapped.state = env.physical_state.numpy()[0].astype(np.float64)
    if hasattr(gym_env.unwrapped, 'last_u'):
        gym_env.unwrapped.last_u = None
    np.testing.assert_array_equal(frame, gym_env.render())
    gym_env.close()
    env.close()
