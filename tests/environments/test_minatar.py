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

minatar_environment = pytest.importorskip('minatar.environment')

_GAMES = {
    'Breakout': 'breakout',
    'Freeway': 'freeway',
    'Asterix': 'asterix',
    'SpaceInvaders': 'space_invaders',
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
        u = self.row[self.used:self.used + n]
        self.used += n
        return u[0] if size is None else u.reshape(size)

    def rand(self, *size):
        return np.float64(self._take(size or None))

    def randint(self, low, high=None, size=None):
        low, high = (0, low) if high is None else (low, high)
        u = self._take(size)
        return (np.floor(np.float32(u) * np.float32(high - low)).astype(
            np.int64) + low)


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
    actions = (env.minimal_action_set() if minimal else list(range(6)))
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
    return (a, draws, resets[:, :dynamics.num_reset_draws],
            np.array(observations), np.array(rewards, np.float32),
            np.array(terminals))


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
        state = {k: tf.where(tf.reshape(terminal, [-1] + [1] * (
            v.shape.rank - 1)), fresh[k], v) for k, v in state.items()}
        return state, observation, reward, terminal

    @tf.function(jit_compile=True)
    def run():
        b = actions.shape[1]
        state = dynamics.initial_state(resets[0], tf.zeros([b], tf.int32))
        first = (state, dynamics.observation(state), tf.zeros([b]),
                 tf.zeros([b], tf.bool))
        return tf.scan(body, (actions, draws, resets[1:]),
                       initializer=first)[1:]

    return run()


def _check_parity(title, minimal, seeds, steps):
    """Asserts equality over ``seeds`` (a batch); returns (episodes,
    total reward) of MinAtar's runs."""
    dynamics = suite_minatar.load('MinAtar/%s-v%d' % (title, minimal),
                                  1).dynamics
    runs = [_minatar_run(title, s, steps, minimal, dynamics) for s in seeds]
    a, d, r, obs, rew, term = [np.stack(x, axis=1) for x in zip(*runs)]
    tf_obs, tf_rew, tf_term = _tf_run(dynamics, tf.constant(a, tf.int64),
                                      tf.constant(d), tf.constant(r))
    for t in range(steps):
        np.testing.assert_array_equal(tf_obs[t].numpy(), obs[t],
                                      err_msg='%s step %d' % (title, t))
        np.testing.assert_array_equal(tf_rew[t].numpy(), rew[t])
        np.testing.assert_array_equal(tf_term[t].numpy(), term[t])
    return int(term.sum()), float(rew.sum())


@pytest.mark.parametrize('title', sorted(_GAMES))
@pytest.mark.parametrize('minimal', [0, 1])
def test_games_match_minatar_step_for_step(title, minimal):
    steps = {'Freeway': 2600}.get(title, 500)
    episodes, total = _check_parity(title, minimal, [0, 1, 2], steps)
    # The runs cover episode ends and rewards, not just the first frames.
    assert episodes >= 1 and total > 0, (episodes, total)
