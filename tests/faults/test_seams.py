"""Seams: a collector that starts over leaves a MID step followed by FIRST.

A resumed run with Python environments (their state is not saved) and a
restarted worker start new episodes without ending the old ones, so replay
and in-graph trajectories hold ``[.., MID, FIRST, ..]``. There is no
transition across that seam: returns stop there, the step before it
bootstraps from its own value, and its loss is masked, as at a time limit.
"""

import numpy as np
import tensorflow as tf

from alf_rl.data_structures import StepType
from alf_rl.drivers.on_policy_driver import OnPolicyDriver
from alf_rl.environments.suite_unittest import ValueUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.environments.utils import create_environment
from alf_rl.ops import value_ops
from alf_rl.ops.masks import cut_seams
from alf_rl.ops.td_targets import n_step_returns, one_step_td_target
from alf_rl.algorithms import ActorCriticAlgorithm, DqnAlgorithm
from alf_rl.networks import QNetwork
from alf_rl.trainers import OffPolicyTrainer, TrainerConfig
from alf_rl.utils.common import valid_step_mask

from small_algorithms import small_actor_critic

F, M, L = int(StepType.FIRST), int(StepType.MID), int(StepType.LAST)
GAMMA = 0.9

# One environment's stream after a resume: episode A (steps 0-2) is cut
# off at MID step 2, episode B starts at step 3.
SEAM = np.array([[F], [M], [M], [F], [M], [M]], np.int32)
R = np.array([[0.0], [1.0], [2.0], [0.0], [4.0], [5.0]], np.float32)
V = np.array([[10.0], [20.0], [30.0], [40.0], [50.0], [60.0]], np.float32)
D = np.ones_like(R)


def test_cut_seams_marks_the_step_before_first_as_last():
    np.testing.assert_array_equal(
        cut_seams(SEAM).numpy()[:, 0], [F, M, L, F, M, M]
    )
    np.testing.assert_array_equal(
        valid_step_mask(cut_seams(SEAM)).numpy(),
        [[1.0], [1.0], [0.0], [1.0], [1.0], [1.0]],
    )
    # A single row, and a FIRST row 0 (nothing before it), stay as they are.
    np.testing.assert_array_equal(cut_seams([[F, M]]).numpy(), [[F, M]])


def test_cut_seams_is_the_identity_on_streams_without_seams():
    rng = np.random.RandomState(0)
    st = rng.choice([M, M, M, L], size=(40, 6)).astype(np.int32)
    st[0] = rng.choice([F, M], size=6)
    for t in range(1, 40):  # FIRST exactly after LAST
        st[t][st[t - 1] == L] = F
    np.testing.assert_array_equal(cut_seams(st).numpy(), st)


def test_discounted_and_n_step_returns_stop_at_a_seam():
    # G_2 = v_2 (cut); G_1 = r_2 + g v_2; G_0 = r_1 + g G_1. Episode B:
    # G_4 = r_5 + g v_5; G_3 = r_4 + g G_4.
    g2 = 30.0
    g1 = 2.0 + GAMMA * g2
    g0 = 1.0 + GAMMA * g1
    g4 = 5.0 + GAMMA * 60.0
    g3 = 4.0 + GAMMA * g4
    expected = np.array([[g0], [g1], [g2], [g3], [g4]], np.float32)
    got = value_ops.discounted_return(R, V, SEAM, GAMMA * D)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
    got = n_step_returns(R, D, SEAM, V, GAMMA)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
    # Bootstrapping across the seam would give G_2 = r_3 + g G_3 instead.
    assert abs(got.numpy()[2, 0] - (0.0 + GAMMA * g3)) > 1.0


def test_gae_is_zero_at_a_seam_and_the_step_before_bootstraps_from_it():
    lam = 0.8
    adv, ret = value_ops.advantages_and_returns(R, V, SEAM, GAMMA * D, lam)
    adv = adv.numpy()[:, 0]
    assert adv[2] == 0.0
    np.testing.assert_allclose(ret.numpy()[2, 0], 30.0)
    delta1 = 2.0 + GAMMA * 30.0 - 20.0  # r_2 + g v_2 - v_1
    np.testing.assert_allclose(adv[1], delta1, rtol=1e-6)
    delta0 = 1.0 + GAMMA * 20.0 - 10.0
    np.testing.assert_allclose(
        adv[0], delta0 + lam * GAMMA * delta1, rtol=1e-6
    )
    # Nothing of episode B reaches episode A.
    changed = value_ops.generalized_advantage_estimation(
        R + np.array([[0.0]] * 3 + [[9.0]] * 3, np.float32),
        V + np.array([[0.0]] * 3 + [[7.0]] * 3, np.float32),
        SEAM,
        GAMMA * D,
        lam,
    )
    np.testing.assert_array_equal(changed.numpy()[:3, 0], adv[:3])


def test_one_step_td_loss_across_a_seam_is_masked():
    # The one-step target of row 2 would bootstrap from episode B's FIRST
    # step; the replay and on-policy mask drops it, as at a LAST step.
    target = one_step_td_target(R[1:], D[1:], V[1:], GAMMA).numpy()[:, 0]
    np.testing.assert_allclose(target[1], 2.0 + GAMMA * 30.0)  # row 1: kept
    mask = valid_step_mask(cut_seams(SEAM)).numpy()[:-1, 0]
    np.testing.assert_array_equal(mask, [1.0, 1.0, 0.0, 1.0, 1.0])


class _RestartingEnv(ValueUnittestEnv):
    """Starts a new episode (FIRST) after ``restart_after`` steps without
    ending the current one, as a restarted worker does."""

    def __init__(self, restart_after: int):
        super().__init__(batch_size=2, episode_length=50)
        self._calls = 0
        self._restart_after = restart_after

    def _step(self, action):
        self._calls += 1
        if self._calls == self._restart_after:
            return self._reset()
        return super()._step(action)


class _Recording(ActorCriticAlgorithm):
    """Records the step types ``calc_loss`` sees (eager only)."""

    seen = []

    def calc_loss(self, training_info):
        _Recording.seen.append(training_info.step_type.numpy())
        return super().calc_loss(training_info)


def test_on_policy_driver_cuts_a_seam_inside_an_iteration():
    env = TFPyEnvironment(_RestartingEnv(restart_after=4))
    alg = small_actor_critic(
        env.observation_spec(), env.action_spec(), algorithm_class=_Recording
    )
    driver = OnPolicyDriver(env, alg, train_interval=6, use_tf_functions=False)
    _Recording.seen.clear()
    driver.run()
    # Steps: reset (row 0, FIRST), 3 MIDs, the restart's FIRST at row 4.
    step_type = _Recording.seen[-1][:, 0]
    np.testing.assert_array_equal(step_type[:6], [F, M, M, L, F, M])


def _dqn(observation_spec, action_spec):
    import tf_keras

    return DqnAlgorithm(
        observation_spec,
        action_spec,
        q_network_ctor=lambda o, a: QNetwork(o, a, fc_layer_params=(8,)),
        epsilon_greedy=0.3,
        target_update_period=2,
        optimizer=tf_keras.optimizers.Adam(1e-2),
    )


def _gym_cart_pole(seed):
    return create_environment(
        'CartPole-v1',
        num_parallel_environments=2,
        seed=seed,
        max_episode_steps=200,
    )


def _trainer(root, num_iterations):
    return OffPolicyTrainer(
        TrainerConfig(
            root_dir=root,
            algorithm_ctor=_dqn,
            num_iterations=num_iterations,
            random_seed=3,
            unroll_length=2,
            initial_collect_steps=8,
            mini_batch_size=4,
            mini_batch_length=2,
            replay_buffer_capacity=400,
            iterations_per_call=4,
            summary_interval=4,
            checkpoint_interval=4,
            progress_interval_secs=1e6,
        ),
        env=_gym_cart_pole,
    )


def _rows(experience, start, stop, env):
    """Rows ``start:stop`` of environment ``env``: a [T, 1] window."""
    return tf.nest.map_structure(
        lambda x: x[start:stop, env : env + 1], experience
    )


def test_resumed_python_environment_run_leaves_a_seam_that_replay_cuts(
    tmp_path,
):
    root = str(tmp_path / 'run')
    # Two commands: 4 iterations, then a resume to 8.
    trainer = _trainer(root, 4)
    try:
        trainer.train()
    finally:
        trainer.close()
    trainer = _trainer(root, 8)
    try:
        trainer.train()
        stored = trainer._replayer.buffer.gather_all()
        algorithm = trainer._algorithm
        # The seam: 8 initial steps / 2 envs = 4 rows, then 2 per
        # iteration; the resumed command starts every env with FIRST.
        row = 4 + 2 * 4
        step_type = stored.step_type.numpy()
        assert (step_type[row] == F).all()
        seam_envs = np.flatnonzero(step_type[row - 1] == M)
        assert seam_envs.size, step_type[row - 1]
        b = int(seam_envs[0])
        # A window of just the seam transition [MID, FIRST]: its only
        # trained row is cut, so the update's TD loss is exactly 0 (it
        # was 17.1 when the target bootstrapped across the seam).
        assert (
            float(algorithm.train(_rows(stored, row - 1, row + 1, b)).loss)
            == 0.0
        )
        # The transition before it is trained as usual.
        assert (
            float(algorithm.train(_rows(stored, row - 2, row, b)).loss) > 0.0
        )
    finally:
        trainer.close()


def test_a_restarted_rollout_worker_starts_with_first_leaving_a_seam():
    # Ray restarts an actor by running its constructor again: a new
    # RolloutWorker over new environments, whose first unroll starts with
    # FIRST while the learner's last steps of those env_ids were MID.
    from alf_rl.drivers.rollout_worker import RolloutWorker

    def _worker():
        env = TFPyEnvironment(ValueUnittestEnv(2, 50))
        alg = _dqn(env.observation_spec(), env.action_spec())
        return RolloutWorker(env, alg, 0, unroll_length=3, seed=1)

    before = _worker().unroll().experience.step_type.numpy()
    after = _worker().unroll().experience.step_type.numpy()
    stream = np.concatenate([before, after])  # one actor's env_ids
    np.testing.assert_array_equal(stream[:, 0], [F, M, M, F, M, M])
    np.testing.assert_array_equal(
        cut_seams(stream).numpy()[:, 0], [F, M, L, F, M, M]
    )
