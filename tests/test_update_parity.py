"""benchmarks/update_parity.py: what the two update-parity scripts share."""

import os
import sys

import numpy as np

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_ROOT, 'benchmarks'))

import update_parity  # noqa: E402
from alf_rl.data_structures import StepType  # noqa: E402


def _transitions():
    return dict(
        obs=np.arange(6, dtype=np.float32).reshape(3, 2),
        next_obs=np.arange(6, 12, dtype=np.float32).reshape(3, 2),
        action=np.array([2, 0, 1], np.int64),
        reward=np.array([1.0, -1.0, 0.5], np.float32),
        done=np.array([0.0, 1.0, 0.0], np.float32),
    )


def test_one_step_experience_puts_the_next_step_in_row_1():
    exp = update_parity.one_step_experience(_transitions())
    np.testing.assert_array_equal(
        exp.step_type.numpy(),
        [[StepType.MID] * 3, [StepType.MID, StepType.LAST, StepType.MID]],
    )
    np.testing.assert_array_equal(exp.reward.numpy()[1], [1.0, -1.0, 0.5])
    np.testing.assert_array_equal(exp.reward.numpy()[0], [0, 0, 0])
    np.testing.assert_array_equal(exp.discount.numpy(), [[1, 1, 1], [1, 0, 1]])
    assert exp.observation.shape == (2, 3, 2)
    np.testing.assert_array_equal(exp.observation.numpy()[1, 0], [6, 7])
    np.testing.assert_array_equal(exp.action.numpy(), [[2, 0, 1], [0, 0, 0]])
    assert exp.prev_action.dtype == exp.action.dtype
    assert exp.prev_action.shape == (2, 3)


def test_save_updates_saves_the_weights_around_each_update(tmp_path, capsys):
    w = [np.zeros(2, np.float32)]
    seen = []

    def train(exp):
        seen.append(exp.reward.numpy()[1].sum())
        w[0] = w[0] + 1.0

    out = str(tmp_path / 'p.npz')
    update_parity.save_updates(
        out,
        train,
        lambda: [[w[0].copy()]],
        ['net'],
        [_transitions(), _transitions()],
        seed=3,
    )
    assert capsys.readouterr().out.strip() == 'wrote %s (2 updates)' % out
    data = np.load(out)
    assert int(data['seed']) == 3
    np.testing.assert_array_equal(data['init/net/0'], [0, 0])
    np.testing.assert_array_equal(data['update0/net/0'], [1, 1])
    np.testing.assert_array_equal(data['update1/net/0'], [2, 2])
    np.testing.assert_allclose(seen, [0.5, 0.5])


def test_compare_row_is_the_distance_relative_to_the_reference_move():
    init = {'a/0': np.zeros(2), 'b/0': np.ones(1)}
    theirs = {'a/0': np.array([3.0, 4.0]), 'b/0': np.ones(1)}
    data = {'update0/a/0': np.array([3.0, 4.5]), 'update0/b/0': np.zeros(1)}
    row = update_parity.compare_row('SB3', theirs, init, data, 0, ['a', 'b'])
    # |(0, -0.5)| / |(3, 4)| = 0.1; b did not move: its difference itself.
    assert row == (
        '  update 1: |SB3 - ours| / |SB3 - initial|: '
        'a 0.1000, b 1.0e+00 (unchanged)'
    )
    assert update_parity.norm([np.array([3.0]), np.array([4.0])]) == 5.0


def test_make_parser_gives_both_sides_their_options():
    parser, ours = update_parity.make_parser('d', 'x.gin', 'help', 'SB3')
    ours.add_argument('--own', type=int, default=1)
    args = parser.parse_args(['ours', '--out', 'o.npz', '--own', '2'])
    assert (args.side, args.out, args.updates, args.seed) == (
        'ours',
        'o.npz',
        6,
        0,
    )
    assert (args.gin_file, args.own) == ('x.gin', 2)
    args = parser.parse_args(['sb3', '--data', 'o.npz'])
    assert (args.side, args.data) == ('sb3', 'o.npz')


def test_train_on_feeds_the_samples_to_one_update():
    class Buffer(object):
        def sample(self, *args, **kwargs):
            raise AssertionError('the replay buffer was sampled')

    class Model(object):
        replay_buffer = Buffer()
        trained = []

        def train(self, gradient_steps, batch_size):
            self.trained.append(
                (
                    self.replay_buffer.sample(batch_size),
                    gradient_steps,
                    batch_size,
                )
            )

    model = Model()
    update_parity.train_on(model, 'samples', 3)
    assert model.trained == [('samples', 1, 3)]
