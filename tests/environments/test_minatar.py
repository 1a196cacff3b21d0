"""MinAtar in TF ops (suite_minatar) against the ``minatar`` package.

Parity: MinAtar draws from one ``numpy.random.RandomState`` shared by the
sticky actions and the game. Philox cannot reproduce numpy's Mersenne
Twister draw for draw, so each test replaces that ``RandomState`` by
``_Replay``, which serves per call (``reset`` or ``act``) a row of
pre-drawn uniform numbers, and feeds the same row to
``MinAtarDynamics.initial_state``/``transition``: ``rand()`` returns the
numbers as they are, ``randint(n)`` ``floor(u * n)`` in float32 (as the TF
games compute it). The uniforms lie on the 2^-24 grid of the Philox floats,
so comparisons such as ``u < 0.1`` agree in float32 and float64.
"""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.data_structures import StepType
from alf_rl.environments import suite_minatar

try:  # a test-only dependency (make install-test installs it)
    from minatar import environment as minatar_environment
except ImportError:
    minatar_environment = None
_needs_minatar = pytest.mark.skipif(
    minatar_environment is None, reason='needs the minatar package'
)

_GAMES = {
    'Breakout': 'breakout',
    'Freeway': 'freeway',
    'Asterix': 'asterix',
    'SpaceInvaders': 'space_invaders',
    'Seaquest': 'seaquest',
}


class _Replay(object):
    """Stands in for MinAtar's ``RandomState``: serves ``row`` in order."""

    def __init__(self):
        self.row = np.zeros([0], np.float32)
        self.used = 0

    def serve(self, row):
        self.row, self.used = row, 0

    def _take(self, size):
        n = 1 if size is None else int(np.prod(size))
        assert self.used + n <= len(self.row), 'more draws than planned'
        u = self.row[self.used : self.used + n]
        self.used += n
        return u[0] if size is None else u.reshape(size)

    def rand(self, *size):
        return np.float64(self._take(size or None))

    def randint(self, low, high=None, size=None):
        low, high = (0, low) if high is None else (low, high)
        u = self._take(size)
        return (
            np.floor(np.float32(u) * np.float32(high - low)).astype(np.int64)
            + low
        )


def _uniforms(rng, shape):
    """float32 uniforms on the 2^-24 grid."""
    return (rng.randint(0, 2**24, size=shape) * 2.0**-24).astype(np.float32)


def _minatar(game, replay):
    env = minatar_environment.Environment(game)
    env.random = replay
    env.env.random = replay
    return env


def _minatar_run(title, seed, steps, minimal, dynamics):
    """MinAtar's trajectory under seeded actions and draws.

    Returns numpy arrays: actions [T] (indices into the action set), step
    draws [T, K], reset draws [T + 1, R] (row 0 for the first reset, row
    t + 1 used when step t terminates), observations [T, 10, 10, C] (before
    each step), rewards [T], terminals [T].
    """
    replay = _Replay()
    env = _minatar(_GAMES[title], replay)
    rng = np.random.RandomState(seed)
    actions = env.minimal_action_set() if minimal else list(range(6))
    # Freeway rewards only crossings: lean upwards to see some.
    p = np.ones(len(actions))
    if title == 'Freeway':
        p[actions.index(2)] = 3 * len(actions)
    a = rng.choice(len(actions), size=steps, p=p / p.sum())
    draws = _uniforms(rng, [steps, dynamics.num_step_draws])
    resets = _uniforms(rng, [steps + 1, max(dynamics.num_reset_draws, 1)])
    replay.serve(resets[0])
    env.reset()
    observations, rewards, terminals = [], [], []
    for t in range(steps):
        observations.append(env.state())
        replay.serve(draws[t])
        reward, terminal = env.act(actions[a[t]])
        rewards.append(reward)
        terminals.append(terminal)
        if terminal:
            replay.serve(resets[t + 1])
            env.reset()
    return (
        a,
        draws,
        resets[:, : dynamics.num_reset_draws],
        np.array(observations),
        np.array(rewards, np.float32),
        np.array(terminals),
    )


def _tf_run(dynamics, actions, draws, resets):
    """The TF dynamics over the same [T, B] actions and draws, resetting
    where MinAtar does: observations [T, B, ...], rewards, terminals [T,
    B]."""

    def body(carry, inputs):
        state = carry[0]
        a, d, r = inputs
        observation = dynamics.observation(state)
        state, reward, terminal = dynamics.transition(state, a, d)
        fresh = dynamics.initial_state(r, state['last_action'])
        state = {
            k: tf.where(
                tf.reshape(terminal, [-1] + [1] * (v.shape.rank - 1)),
                fresh[k],
                v,
            )
            for k, v in state.items()
        }
        return state, observation, reward, terminal

    @tf.function(jit_compile=True)
    def run():
        b = actions.shape[1]
        state = dynamics.initial_state(resets[0], tf.zeros([b], tf.int32))
        first = (
            state,
            dynamics.observation(state),
            tf.zeros([b]),
            tf.zeros([b], tf.bool),
        )
        return tf.scan(body, (actions, draws, resets[1:]), initializer=first)[
            1:
        ]

    return run()


def _check_parity(title, minimal, seeds, steps):
    """Asserts equality over ``seeds`` (a batch); returns (episodes,
    total reward) of MinAtar's runs."""
    dynamics = suite_minatar.load(
        'MinAtar/%s-v%d' % (title, minimal), 1
    ).dynamics
    runs = [_minatar_run(title, s, steps, minimal, dynamics) for s in seeds]
    a, d, r, obs, rew, term = [np.stack(x, axis=1) for x in zip(*runs)]
    tf_obs, tf_rew, tf_term = _tf_run(
        dynamics, tf.constant(a, tf.int64), tf.constant(d), tf.constant(r)
    )
    for t in range(steps):
        np.testing.assert_array_equal(
            tf_obs[t].numpy(), obs[t], err_msg='%s step %d' % (title, t)
        )
        np.testing.assert_array_equal(tf_rew[t].numpy(), rew[t])
        np.testing.assert_array_equal(tf_term[t].numpy(), term[t])
    return int(term.sum()), float(rew.sum())


@_needs_minatar
@pytest.mark.parametrize('title', sorted(_GAMES))
@pytest.mark.parametrize('minimal', [0, 1])
def test_games_match_minatar_step_for_step(title, minimal):
    steps = {'Freeway': 2600}.get(title, 500)
    episodes, total = _check_parity(title, minimal, [0, 1, 2], steps)
    # The runs cover episode ends and rewards, not just the first frames.
    assert episodes >= 1 and total > 0, (episodes, total)


@pytest.mark.parametrize(
    'title,channels,minimal',
    [
        ('Breakout', 4, 3),
        ('Freeway', 7, 3),
        ('Asterix', 4, 5),
        ('SpaceInvaders', 6, 4),
        ('Seaquest', 10, 6),
    ],
)
def test_specs_and_reset_observation(title, channels, minimal):
    for version, num_actions in ((0, 6), (1, minimal)):
        env = suite_minatar.load(
            'MinAtar/%s-v%d' % (title, version), 3, seed=0
        )
        spec = env.observation_spec()
        assert spec.shape == (10, 10, channels) and spec.dtype == tf.bool
        assert env.action_spec().dtype == tf.int64
        assert int(env.action_spec().maximum) == num_actions - 1
        time_step = env.reset()
        assert time_step.observation.shape == (3, 10, 10, channels)
        assert time_step.observation.dtype == tf.bool
        # Channel 0 is the player's: one cell in every start frame.
        np.testing.assert_array_equal(
            time_step.observation.numpy()[..., 0].sum(axis=(1, 2)), 1
        )
    if minatar_environment is not None:
        env = minatar_environment.Environment(_GAMES[title])
        assert env.minimal_action_set() == list(
            suite_minatar.GAMES[title].minimal_actions
        )


@_needs_minatar
def test_breakout_start_frame_is_minatar_s():
    env = suite_minatar.load('MinAtar/Breakout-v1', 64, seed=3)
    frames = env.reset().observation.numpy()
    game = minatar_environment.Environment('breakout')
    starts = []
    for seed in range(20):
        game.seed(seed)
        game.reset()
        starts.append(game.state())
    for frame in frames:
        assert any((frame == s).all() for s in starts)
    # Both of MinAtar's starts (ball at the left or right wall) occur.
    assert len({int(f[3, 0, 1]) for f in frames}) == 2


def test_sticky_actions_repeat_with_probability_0_1():
    env = suite_minatar.load('MinAtar/Breakout-v0', 2048, seed=5)
    env.reset()
    repeats, trials = 0, 0
    for _ in range(10):
        last = env.game_state()['last_action'].numpy()
        action = (last + 1) % 6  # always differs from the last action
        time_step = env.step(tf.constant(action, tf.int64))
        executed = env.game_state()['last_action'].numpy()
        stepped = time_step.step_type.numpy() != StepType.FIRST
        repeats += int((executed == last)[stepped].sum())
        trials += int(stepped.sum())
        np.testing.assert_array_equal(
            executed[stepped] == last[stepped],
            executed[stepped] != action[stepped],
        )
    # 20k Bernoulli(0.1) trials: standard deviation 0.002.
    assert abs(repeats / trials - 0.1) < 0.01, repeats / trials


def test_auto_reset_and_step_types():
    env = suite_minatar.load('MinAtar/Breakout-v1', 16, seed=1)
    env.reset()
    start = suite_minatar.load('MinAtar/Breakout-v1', 1, seed=0)
    start_bricks = start.reset().observation.numpy()[0, :, :, 3]
    saw_reset = False
    previous = env.reset()
    for _ in range(80):
        time_step = env.step(tf.zeros([16], tf.int64))
        was_last = previous.step_type.numpy() == StepType.LAST
        first = time_step.step_type.numpy() == StepType.FIRST
        np.testing.assert_array_equal(first, was_last)
        last = time_step.step_type.numpy() == StepType.LAST
        np.testing.assert_array_equal(time_step.discount.numpy()[last], 0.0)
        if first.any():
            saw_reset = True
            obs = time_step.observation.numpy()[first]
            assert (obs[:, :, :, 3] == start_bricks).all()
            assert (obs[:, 9, 4, 0]).all()  # the paddle back at column 4
            np.testing.assert_array_equal(time_step.reward.numpy()[first], 0)
            np.testing.assert_array_equal(
                time_step.prev_action.numpy()[first], 0
            )
        previous = time_step
    assert saw_reset


def test_time_limit_truncates_with_discount_1():
    env = suite_minatar.load(
        'MinAtar/SpaceInvaders-v1', 2, seed=0, max_episode_steps=5
    )
    env.reset()
    types = [env.step(tf.zeros([2], tf.int64)) for _ in range(7)]
    assert [int(t.step_type[0]) for t in types] == [1, 1, 1, 1, 2, 0, 1]
    assert float(types[4].discount[0]) == 1.0


def test_batch_rows_are_independent():
    def run(actions_row_1):
        env = suite_minatar.load('MinAtar/Asterix-v0', 4, seed=7)
        env.reset()
        outputs = []
        for t in range(30):
            a = np.array([t % 5, actions_row_1[t], (t * 7) % 6, 3])
            outputs.append(env.step(tf.constant(a, tf.int64)))
        return outputs

    rng = np.random.RandomState(0)
    first = run(rng.randint(6, size=30))
    second = run(rng.randint(6, size=30))
    differs = False
    for x, y in zip(first, second):
        for row in (0, 2, 3):
            np.testing.assert_array_equal(
                x.observation[row], y.observation[row]
            )
            assert x.reward[row] == y.reward[row]
        differs |= not np.array_equal(x.observation[1], y.observation[1])
    assert differs


@pytest.mark.parametrize('title', sorted(_GAMES))
def test_step_under_jit_equals_eager(title):
    def rollout(step):
        env = suite_minatar.load('MinAtar/%s-v0' % title, 8, seed=11)
        env.reset()
        run = step(env)
        out = [
            run(tf.constant((np.arange(8) + t) % 6, tf.int64))
            for t in range(12)
        ]
        return [
            (o.observation.numpy(), o.reward.numpy(), o.step_type.numpy())
            for o in out
        ]

    eager = rollout(lambda env: env.step)
    compiled = rollout(lambda env: tf.function(env.step, jit_compile=True))
    for x, y in zip(eager, compiled):
        for a, b in zip(x, y):
            np.testing.assert_array_equal(a, b)


def test_load_errors_and_suite_tf_registration():
    with pytest.raises(ValueError, match="'MinAtar/Pong-v0'.*Breakout-v0"):
        suite_minatar.load('MinAtar/Pong-v0', 1)
    with pytest.raises(ValueError, match='batch_size must be an int >= 1'):
        suite_minatar.load('MinAtar/Breakout-v0', 0)
    with pytest.raises(ValueError, match='sticky_action_prob'):
        suite_minatar.load('MinAtar/Breakout-v0', 1, sticky_action_prob=2.0)
    env = suite_minatar.load('MinAtar/Breakout-v1', 2, seed=0)
    env.reset()
    with pytest.raises(ValueError, match='value 3 at env 1'):
        env.step(tf.constant([0, 3], tf.int64))
    from alf_rl.environments import suite_tf

    env = suite_tf.load('MinAtar/Freeway-v1', 2, seed=0)
    assert isinstance(env, suite_minatar.MinAtarEnvironment)
    assert env.observation_spec().shape == (10, 10, 7)


def test_checkpoint_restores_games_exactly(tmp_path):
    env = suite_minatar.load('MinAtar/Seaquest-v0', 4, seed=2)
    env.reset()
    actions = [
        tf.constant([t % 6, 5, 2, (t * 5) % 6], tf.int64) for t in range(16)
    ]
    for a in actions[:6]:
        env.step(a)
    checkpoint = tf.train.Checkpoint(env=env.checkpoint_state())
    path = checkpoint.save(str(tmp_path / 'env'))
    first = [env.step(a) for a in actions[6:]]
    checkpoint.restore(path)
    second = [env.step(a) for a in actions[6:]]
    for x, y in zip(first, second):
        np.testing.assert_array_equal(x.observation, y.observation)
        np.testing.assert_array_equal(x.reward, y.reward)
        np.testing.assert_array_equal(x.step_type, y.step_type)


def test_sticky_action_prob_from_gin_through_create_environment():
    import gin

    from alf_rl.environments.utils import create_environment
    from alf_rl.runs.binding_checks import check_bindings

    gin.parse_config('suite_minatar.load.sticky_action_prob = 0.0')
    env = create_environment('MinAtar/Breakout-v0', 512, seed=3, backend='tf')
    assert env.dynamics.sticky_action_prob == 0.0
    env.reset()
    for _ in range(5):
        last = env.game_state()['last_action'].numpy()
        action = (last + 1) % 6  # a repeat would show as executed == last
        time_step = env.step(tf.constant(action, tf.int64))
        stepped = time_step.step_type.numpy() != StepType.FIRST
        executed = env.game_state()['last_action'].numpy()
        np.testing.assert_array_equal(executed[stepped], action[stepped])
    gin.clear_config()
    assert (
        suite_minatar.load(
            'MinAtar/Breakout-v0', 1
        ).dynamics.sticky_action_prob
        == 0.1
    )
    # A bad value: one line naming it (out of range at load, a non-number
    # already in the binding check before anything is built).
    gin.parse_config('suite_minatar.load.sticky_action_prob = 1.5')
    with pytest.raises(
        ValueError,
        match=r'^sticky_action_prob must be a number in \[0, 1\].*got 1\.5',
    ):
        create_environment('MinAtar/Breakout-v1', 2, backend='tf')
    gin.clear_config()
    gin.parse_config("suite_minatar.load.sticky_action_prob = 'none'")
    with pytest.raises(
        ValueError,
        match=r"load\.sticky_action_prob: expected a number, got 'none'",
    ):
        check_bindings()
    with pytest.raises(
        ValueError, match='sticky_action_prob must be a number'
    ):
        suite_minatar.load('MinAtar/Breakout-v1', 1, sticky_action_prob=True)
