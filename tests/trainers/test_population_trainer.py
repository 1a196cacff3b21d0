"""Many seeds in one graph: each seed equals its one-seed run.

Compiled without XLA (``jit_compile=False``) but in one test: the XLA
compile of an iteration takes seconds to tens of seconds on a loaded
2-core machine, and the population axis is the same either way.
"""

import functools
import os

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.algorithms.population_ppo import (
    PopulationPPO,
    clip_per_member,
    per_member_normalize,
)
from alf_rl.environments import population, suite_minatar, suite_tf
from alf_rl.networks.population_network import PopulationMLP
from alf_rl.trainers.population_trainer import PopulationTrainer

# Tiny: 4 envs x 8 steps per seed, mini-batches of 16, 2 epochs.
_KW = dict(
    num_envs=4,
    unroll_length=8,
    mini_batch_size=16,
    num_epochs=2,
    jit_compile=False,
)
# Float tolerance of "equal to the one-seed run": the batched matmul of P
# members rounds differently from that of one member (measured: at most
# 6e-8 after 4 iterations); nothing else differs between the runs (the same
# stateless random numbers, the same environments).
_ATOL = 1e-5


def _weights(trainer: PopulationTrainer, k: int) -> list:
    return [v.numpy()[k] for v in trainer.algorithm.trainable_variables]


def test_three_seeds_equal_three_single_seed_runs() -> None:
    seeds = [3, 7, 11]
    pop = PopulationTrainer(seeds, **_KW)
    for _ in range(3):
        stats = pop.run_iteration()
    assert stats['loss'].shape == (3,)
    # Distinct seeds: distinct agents.
    assert not np.allclose(_weights(pop, 0)[0], _weights(pop, 1)[0])
    for k, seed in enumerate(seeds):
        one = PopulationTrainer([seed], **_KW)
        for _ in range(3):
            one_stats = one.run_iteration()
        for a, b in zip(_weights(pop, k), _weights(one, 0)):
            np.testing.assert_allclose(a, b, atol=_ATOL)
        for name in ('loss', 'average_return', 'grad_norm'):
            np.testing.assert_allclose(
                stats[name][k], one_stats[name][0], rtol=1e-4, atol=_ATOL
            )
        np.testing.assert_array_equal(
            pop.num_episodes.numpy()[k], one.num_episodes.numpy()[0]
        )


def test_minatar_options_seeds_equal_one_seed_runs() -> None:
    # ppo_minatar_breakout.gin's entropy bonus and value clipping, on its
    # game with sticky actions and a time limit.
    kw = dict(
        _KW,
        env_name='MinAtar/Breakout-v1',
        max_episode_steps=6,
        env_options=dict(sticky_action_prob=0.3),
        algorithm_ctor=functools.partial(
            PopulationPPO, entropy_regularization=0.01, value_clipping=0.2
        ),
    )
    seeds = [2, 5]
    pop = PopulationTrainer(seeds, **kw)
    for _ in range(2):
        stats = pop.run_iteration()
    assert np.all(stats['neg_entropy'] < 0)
    assert np.all(pop.num_episodes.numpy() > 0)
    assert not np.allclose(_weights(pop, 0)[0], _weights(pop, 1)[0])
    for k, seed in enumerate(seeds):
        one = PopulationTrainer([seed], **kw)
        for _ in range(2):
            one_stats = one.run_iteration()
        for a, b in zip(_weights(pop, k), _weights(one, 0)):
            np.testing.assert_allclose(a, b, atol=_ATOL)
        for name in ('loss', 'neg_entropy', 'td_loss', 'grad_norm'):
            np.testing.assert_allclose(
                stats[name][k], one_stats[name][0], rtol=1e-4, atol=_ATOL
            )
        np.testing.assert_array_equal(
            pop.num_episodes.numpy()[k], one.num_episodes.numpy()[0]
        )


def test_mini_batches_have_a_static_size() -> None:
    # A mini-batch cut by a dynamic slice has an unknown size, which XLA
    # bounds by the whole index row: every update then ran on ~20x the
    # rows (the XLA iteration took 0.88 s instead of 0.025 s).
    pop = PopulationTrainer([0, 1], **_KW)
    shapes = []
    update = pop.algorithm.update

    def spy(batch):
        shapes.append(batch.observation.shape.as_list())
        return update(batch)

    pop.algorithm.update = spy
    pop.run_iteration()
    assert shapes and all(s[:2] == [2, 16] for s in shapes)


def test_the_iteration_is_traced_once_and_creates_no_variables() -> None:
    # Adam's slots exist before the first call (a function that creates
    # variables on its first call is traced twice), and the iteration
    # needs no autograph conversion.
    pop = PopulationTrainer([0, 1], **_KW)
    before = len(pop.algorithm.optimizer.variables())
    assert before == 1 + 2 * len(pop.algorithm.trainable_variables)
    for _ in range(2):
        pop.run_iteration()
    assert pop._iterate.experimental_get_tracing_count() == 1
    assert len(pop.algorithm.optimizer.variables()) == before


def test_xla_iteration_equals_the_plain_graph() -> None:
    plain = PopulationTrainer([3, 7], **_KW)
    xla = PopulationTrainer([3, 7], **dict(_KW, jit_compile=True))
    for _ in range(2):
        plain_stats = plain.run_iteration()
        xla_stats = xla.run_iteration()
    for k in range(2):
        for a, b in zip(_weights(plain, k), _weights(xla, k)):
            np.testing.assert_allclose(a, b, atol=1e-4)
    np.testing.assert_allclose(
        plain_stats['average_return'], xla_stats['average_return'], rtol=1e-5
    )


def test_population_rows_equal_suite_tf_seeded_env() -> None:
    env = population.load('CartPole-v1', [5, 9], 3)
    refs = [suite_tf.load('CartPole-v1', 3, seed=s) for s in (5, 9)]
    first = env.reset()
    for ref in refs:
        ref.reset()
    actions = np.random.RandomState(0).randint(0, 2, size=(30, 6))
    for t in range(30):
        step = env.step(tf.constant(actions[t], tf.int64))
        for k, ref in enumerate(refs):
            ref_step = ref.step(
                tf.constant(actions[t, 3 * k : 3 * k + 3], tf.int64)
            )
            np.testing.assert_array_equal(
                step.observation.numpy()[3 * k : 3 * k + 3],
                ref_step.observation,
            )
            np.testing.assert_array_equal(
                step.step_type.numpy()[3 * k : 3 * k + 3], ref_step.step_type
            )
    assert first.observation.shape == (6, 4)


def test_checkpoint_resume_is_exact(tmp_path: str) -> None:
    root = os.path.join(str(tmp_path), 'run')
    straight = PopulationTrainer([1, 2], **_KW)
    for _ in range(3):
        expected = straight.run_iteration()
    first = PopulationTrainer([1, 2], root_dir=root, **_KW)
    first.train(2, checkpoint_interval=1)
    resumed = PopulationTrainer([1, 2], root_dir=root, **_KW)
    got = resumed.train(3)
    assert int(resumed.iteration.numpy()) == 3
    for a, b in zip(
        straight.algorithm.trainable_variables,
        resumed.algorithm.trainable_variables,
    ):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(expected['loss'], got['loss'])
    # Per-seed summaries.
    events = os.listdir(os.path.join(root, 'train'))
    tags = set()
    for name in events:
        for event in tf.compat.v1.train.summary_iterator(
            os.path.join(root, 'train', name)
        ):
            tags.update(v.tag for v in event.summary.value)
    assert {'seed_1/Metrics/AverageReturn', 'seed_2/loss/loss'} <= tags


def test_population_mlp_member_equals_its_own_mlp() -> None:
    both = PopulationMLP([4, 8], 3, 2, (5,))
    alone = PopulationMLP([8], 3, 2, (5,))
    x = tf.random.stateless_normal([2, 6, 3], [0, 1])
    np.testing.assert_allclose(both(x)[1], alone(x[1:])[0], atol=1e-6)
    # Glorot-uniform bound sqrt(6 / (3 + 5)).
    assert np.abs(both.kernels[0].numpy()).max() <= np.sqrt(6 / 8)


def test_per_member_ops_against_numpy() -> None:
    x = np.array([[1.0, 2.0, 3.0, 100.0], [4.0, 4.0, 8.0, 0.0]], np.float32)
    mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], np.float32)
    got = per_member_normalize(tf.constant(x), tf.constant(mask)).numpy()
    for k in range(2):
        valid = x[k][mask[k] == 1]
        np.testing.assert_allclose(
            got[k], (x[k] - valid.mean()) / (valid.std() + 1e-8), rtol=1e-5
        )
    grads = [tf.constant([[3.0], [0.3]]), tf.constant([[[4.0]], [[0.4]]])]
    clipped, norms = clip_per_member(grads, 1.0)
    np.testing.assert_allclose(norms.numpy(), [5.0, 0.5], rtol=1e-6)
    # Member 0 (norm 5) scaled to norm 1; member 1 (norm 0.5) untouched.
    np.testing.assert_allclose(clipped[0].numpy(), [[0.6], [0.3]], rtol=1e-6)
    np.testing.assert_allclose(
        clipped[1].numpy()[:, 0, 0], [0.8, 0.4], rtol=1e-6
    )


def test_bad_arguments_rejected() -> None:
    with pytest.raises(ValueError, match='distinct'):
        PopulationMLP([1, 1], 3, 2)
    with pytest.raises(ValueError, match='mini_batch_size'):
        PopulationTrainer([0], num_envs=4, unroll_length=8, mini_batch_size=5)
    with pytest.raises(ValueError, match='discrete actions'):
        PopulationTrainer(
            [0],
            env_name='Pendulum-v1',
            num_envs=2,
            unroll_length=4,
            mini_batch_size=8,
        )


@pytest.mark.parametrize('sticky', [0.5, 0.0])
def test_population_minatar_rows_equal_suite_minatar_seeded_games(
    sticky: float,
) -> None:
    name = 'MinAtar/Breakout-v1'
    env = population.load(
        name, [5, 9], 3, max_episode_steps=7, sticky_action_prob=sticky
    )
    refs = [
        suite_minatar.load(
            name, 3, seed=s, max_episode_steps=7, sticky_action_prob=sticky
        )
        for s in (5, 9)
    ]
    first = env.reset()
    for k, ref in enumerate(refs):
        np.testing.assert_array_equal(
            first.observation.numpy()[3 * k : 3 * k + 3],
            ref.reset().observation,
        )
    actions = np.random.RandomState(0).randint(0, 3, size=(20, 6))
    kinds, differs = set(), False
    for t in range(20):
        step = env.step(tf.constant(actions[t], tf.int64))
        kinds.update(step.step_type.numpy().tolist())
        obs = step.observation.numpy()
        differs = differs or not np.array_equal(obs[:3], obs[3:])
        for k, ref in enumerate(refs):
            ref_step = ref.step(
                tf.constant(actions[t, 3 * k : 3 * k + 3], tf.int64)
            )
            for field in ('observation', 'step_type', 'reward', 'discount'):
                np.testing.assert_array_equal(
                    getattr(step, field).numpy()[3 * k : 3 * k + 3],
                    getattr(ref_step, field),
                )
    # The time limit of 7 steps truncated episodes (LAST, then FIRST).
    assert kinds == {0, 1, 2}
    # Distinct seeds: distinct games.
    assert differs
    assert first.observation.shape == (6, 10, 10, 4)


def _summary_steps(root: str, tag: str) -> list:
    steps = []
    for name in sorted(os.listdir(os.path.join(root, 'train'))):
        for event in tf.compat.v1.train.summary_iterator(
            os.path.join(root, 'train', name)
        ):
            if any(v.tag == tag for v in event.summary.value):
                steps.append(event.step)
    return steps


def test_the_last_iteration_is_summarised_and_checkpointed(
    tmp_path: str,
) -> None:
    # A budget that is not a multiple of the intervals, then a stop request.
    root = os.path.join(str(tmp_path), 'run')
    trainer = PopulationTrainer([1, 2], root_dir=root, **_KW)
    trainer.train(3, summary_interval=2, checkpoint_interval=2)
    steps = _summary_steps(root, 'seed_1/Metrics/AverageReturn')
    per_seed = 4 * 8
    assert steps == [2 * per_seed, 3 * per_seed]
    assert tf.train.latest_checkpoint(os.path.join(root, 'ckpt')).endswith(
        '-3'
    )
    resumed = PopulationTrainer([1, 2], root_dir=root, **_KW)
    resumed.train(10, summary_interval=5, should_stop=lambda: True)
    assert int(resumed.iteration.numpy()) == 4
    assert _summary_steps(root, 'seed_2/Metrics/AverageReturn')[-1] == (
        4 * per_seed
    )
    assert tf.train.latest_checkpoint(os.path.join(root, 'ckpt')).endswith(
        '-4'
    )
