"""Finite by construction (issue 26, findings 1 and 9).

Finding 1: an environment returning NaN observations silently turned a SAC
model's weights, target networks and optimizer slots into NaN, the
checkpoints too, and resume, ``alf-play`` and ``alf-export`` went ahead.
Finding 9: SAC with learning rate 1e30 wrote ckpt-1 from a model whose
actions are NaN, and the message advised resuming from it. Now:

- environment outputs are checked by default: a NaN observation stops
  training naming the leaf, the environment and the iteration, and no
  checkpoint holds NaN;
- a save from NaN/Inf values (here: a replay buffer) writes nothing and
  names the variable;
- a checkpoint holding NaN is refused on restore (training, ``alf-play``,
  ``alf-export``) in one line naming the tensor;
- a non-finite update is never applied;
- the 1e30 learning rate leaves no resumable checkpoint of the NaN model.

Runs are tiny (8-unit networks, a few iterations, 2 environments).
"""

import functools
import os
import sys
import textwrap

import gin
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms import SacAlgorithm
from alf_rl.networks import (
    ActorDistributionNetwork,
    CriticNetwork,
    NormalProjectionNetwork,
)
from alf_rl.trainers import OffPolicyTrainer, OnPolicyTrainer, TrainerConfig
from alf_rl.trainers.checkpoints import RunCheckpoints
from alf_rl.trainers.config import CheckpointConfig
from alf_rl.trainers.errors import (
    EnvironmentStepError,
    NonFiniteLossError,
    NonFiniteModelError,
    NonFiniteUpdateError,
)
from alf_rl.utils.checkpoint import NonFiniteStateError
from alf_rl.utils.checkpoint_contents import read_back
from small_algorithms import small_actor_critic

_USER_MODULE = textwrap.dedent('''
    """A user's environment module (as --module_path provides it)."""
    import gymnasium
    import numpy as np

    from alf_rl.environments import suite_gym


    class NanObservation(gymnasium.Wrapper):
        """Observation element 2 is NaN from the ``nan_from``-th step on."""

        def __init__(self, env, nan_from):
            super().__init__(env)
            self.steps, self.nan_from = 0, nan_from

        def step(self, action):
            observation, *rest = self.env.step(action)
            self.steps += 1
            if self.steps >= self.nan_from:
                observation = observation.copy()
                observation[2] = np.nan
            return (observation, *rest)


    def nan_pendulum(env_name, seed=0, env_id=0, nan_from=10 ** 9,
                     **kwargs):
        """Pendulum whose environment 1 turns NaN at step ``nan_from``."""
        wrappers = [lambda e: NanObservation(e, nan_from)] if env_id == 1 \\
            else []
        return suite_gym.load(env_name, seed=seed, env_id=env_id,
                              gym_env_wrappers=wrappers, **kwargs)
''')


@pytest.fixture(scope='module')
def user_envs(tmp_path_factory):
    """The user module ``nan_envs``, imported from its own directory."""
    directory = tmp_path_factory.mktemp('modules')
    (directory / 'nan_envs.py').write_text(_USER_MODULE)
    sys.path.insert(0, str(directory))
    import nan_envs

    yield nan_envs
    sys.path.remove(str(directory))


def _steps_on_disk(root):
    ckpt = os.path.join(str(root), 'ckpt')
    return sorted(
        int(n[5:])
        for n in os.listdir(ckpt)
        if n.startswith('ckpt-') and n[5:].isdigit()
    )


def _all_finite(root):
    """Every checkpoint of the run reads back with finite values."""
    for step in _steps_on_disk(root):
        found = read_back(
            os.path.join(str(root), 'ckpt', 'ckpt-%d' % step, 'ckpt')
        )
        assert found == (None, None, None), (step, found)


# ------------------------------------------------------------- finding 1
def test_nan_observation_of_a_user_env_stops_training_naming_the_leaf(
    tmp_path, user_envs
):
    from alf_rl.environments import create_environment

    root = tmp_path / 'run'
    config = TrainerConfig(
        root_dir=str(root),
        algorithm_ctor=(small_actor_critic),
        num_iterations=6,
        unroll_length=4,
        random_seed=1,
        checkpoint_interval=1,
        summary_interval=1,
        iterations_per_call=1,
        progress_interval_secs=1000.0,
    )
    # 4 steps per iteration: env 1's 10th step (after its reset) is in
    # iteration 3. check_finite is on by default.
    trainer = OnPolicyTrainer(
        config,
        env=lambda seed: create_environment(
            'Pendulum-v1',
            2,
            seed=seed,
            env_load_fn=functools.partial(user_envs.nan_pendulum, nan_from=10),
        ),
    )
    try:
        with pytest.raises(EnvironmentStepError) as raised:
            trainer.train()
    finally:
        trainer.close()
    assert str(raised.value).startswith(
        "training stopped at iteration 3: observation: NaN at env 1, element "
        "(2,) in the step output of Pendulum-v1 (1 of 6 values non-finite; "
        "found by check_finite) -- the environment returned a non-finite "
        "observation. The checkpoint of iteration 2 ("
    )
    assert _steps_on_disk(root) == [1, 2]
    _all_finite(root)


def test_nan_observation_of_an_in_graph_env_is_named_in_training(tmp_path):
    from alf_rl.environments import suite_tf
    from alf_rl.environments.suite_tf import PendulumDynamics

    class _NanAt(PendulumDynamics):
        """Pendulum whose observation turns NaN once its speed is high
        (cos and sin stay within 1)."""

        def observation(self, state):
            obs = super().observation(state)
            return tf.where(tf.abs(obs) > 1.5, np.nan, obs)

    env = suite_tf.TFDynamicsEnvironment(_NanAt(), 2, seed=0)
    env.check_finite, env.env_name = True, 'NanPendulum'
    step = tf.function(env.step, autograph=False)
    env.reset()
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        for _ in range(200):
            step(tf.fill([2, 1], 2.0))
    from alf_rl.trainers.errors import training_error_from

    error = training_error_from(raised.value, 7)
    assert isinstance(error, EnvironmentStepError)
    assert str(error).startswith(
        "training stopped at iteration 7: observation: NaN/Inf at env "
    )
    assert str(error).endswith(
        "in the step output of NanPendulum (found by check_finite) -- the "
        "environment returned a non-finite observation"
    )


def test_a_replay_buffer_with_nan_is_never_checkpointed(tmp_path):
    from alf_rl.replay.replay_buffer import ReplayBuffer

    spec = {'reward': tf.TensorSpec([], tf.float32)}
    replay = ReplayBuffer(spec, 2, 8)
    iteration = tf.Variable(0, dtype=tf.int64)
    checkpoints = RunCheckpoints(
        str(tmp_path),
        CheckpointConfig(checkpoint_max_to_keep=3),
        iteration,
        replay_buffer=replay,
    )
    with checkpoints.locked():
        replay.add_batch(
            {'reward': tf.constant([1.0, 2.0])}, tf.constant([0, 1])
        )
        iteration.assign(1)
        checkpoints.save(1)
        replay.add_batch(
            {'reward': tf.constant([3.0, np.nan])}, tf.constant([0, 1])
        )
        iteration.assign(2)
        with pytest.raises(NonFiniteModelError) as raised:
            checkpoints.save(2)
    message = str(raised.value)
    assert message.startswith('training stopped at iteration 2: ')
    assert raised.value.variable.startswith('ReplayBuffer/')
    assert message.endswith(
        'holds NaN/Inf values, so no checkpoint was written; to resume from '
        'ckpt-1, the newest earlier checkpoint whose values are finite, '
        'rerun with --from_checkpoint 1 (TrainerConfig.from_checkpoint; the '
        'newer ones are set aside, nothing deleted).'
    )
    assert _steps_on_disk(tmp_path) == [1]
    _all_finite(tmp_path)


def _poisoned_run(tmp_path):
    """A run directory of ``ac_cart_pole.gin`` (2 iterations, both
    checkpointed) whose ckpt-2 was rewritten with a NaN actor kernel."""
    import alf_rl.configurables  # noqa: F401
    from alf_rl.runs.restore import restore_run

    root = str(tmp_path / 'run')
    gin.clear_config()
    try:
        gin.parse_config_files_and_bindings(
            [
                os.path.join(
                    os.path.dirname(__file__),
                    '..',
                    '..',
                    'examples',
                    'ac_cart_pole.gin',
                )
            ],
            [
                'TrainerConfig.num_iterations=2',
                'TrainerConfig.checkpoint_interval=1',
                'TrainerConfig.evaluate=False',
                "TrainerConfig.root_dir='%s'" % root,
                'create_environment.num_parallel_environments=2',
            ],
        )
        trainer = OnPolicyTrainer(TrainerConfig())
        try:
            trainer.train()
        finally:
            trainer.close()
        gin.clear_config()
        env, algorithm = restore_run(root)
        env.close()
    finally:
        gin.clear_config()
    kernel = next(v for v in algorithm.variables if 'kernel' in v.name)
    kernel.assign(tf.fill(kernel.shape, np.nan))
    prefix = os.path.join(root, 'ckpt', 'ckpt-2', 'ckpt')
    tf.train.Checkpoint(algorithm=algorithm).write(prefix)
    return root, prefix


def test_a_checkpoint_holding_nan_is_refused_by_play_export_and_resume(
    tmp_path,
):
    from alf_rl.bin.export import export
    from alf_rl.runs.restore import restore_run

    root, prefix = _poisoned_run(tmp_path)
    advice = (
        'ckpt-1 is the newest earlier one with finite values: resume '
        'training from it with alf-train --from_checkpoint 1'
    )
    for restore in (
        lambda: restore_run(root),  # what alf-play does
        lambda: export(root, str(tmp_path / 'out')),
    ):
        gin.clear_config()
        with pytest.raises(NonFiniteStateError) as raised:
            restore()
        message = str(raised.value)
        assert message.startswith(
            'checkpoint %s holds NaN values in algorithm/' % prefix
        )
        assert message.endswith('/kernel; refusing to restore it: ' + advice)
        assert '\n' not in message
    gin.clear_config()
    assert not os.path.exists(str(tmp_path / 'out'))
    # The trainer's resume refuses it too (it is kept, not moved aside).
    iteration = tf.Variable(0, dtype=tf.int64)
    checkpoints = RunCheckpoints(root, CheckpointConfig(), iteration)
    with checkpoints.locked():
        with pytest.raises(NonFiniteStateError) as raised:
            checkpoints.restore()
    assert str(raised.value).endswith(
        '/kernel; refusing to restore it: to resume from ckpt-1, the newest '
        'earlier checkpoint whose values are finite, rerun with '
        '--from_checkpoint 1 (TrainerConfig.from_checkpoint; the newer ones '
        'are set aside, nothing deleted)'
    )
    assert _steps_on_disk(root) == [1, 2]


# ------------------------------------------------------------- finding 9
def _sac(observation_spec, action_spec, learning_rate):
    def adam():
        return tf_keras.optimizers.Adam(learning_rate)

    return SacAlgorithm(
        observation_spec,
        action_spec,
        actor_network_ctor=functools.partial(
            ActorDistributionNetwork,
            fc_layer_params=(8,),
            continuous_projection_net_ctor=functools.partial(
                NormalProjectionNetwork,
                scale_distribution=True,
                state_dependent_std=True,
            ),
        ),
        critic_network_ctor=functools.partial(
            CriticNetwork, joint_fc_layer_params=(8,)
        ),
        actor_optimizer=adam(),
        critic_optimizer=adam(),
        alpha_optimizer=adam(),
        target_entropy=-1.0,
    )


def test_sac_with_learning_rate_1e30_leaves_no_checkpoint_to_resume(tmp_path):
    from alf_rl.environments import create_environment

    root = tmp_path / 'run'
    config = TrainerConfig(
        root_dir=str(root),
        num_iterations=20,
        unroll_length=1,
        algorithm_ctor=functools.partial(_sac, learning_rate=1e30),
        initial_collect_steps=16,
        mini_batch_size=8,
        mini_batch_length=2,
        replay_buffer_capacity=100,
        checkpoint_interval=1,
        iterations_per_call=1,
        random_seed=0,
        progress_interval_secs=1000.0,
    )
    trainer = OffPolicyTrainer(
        config,
        env=lambda seed: create_environment('Pendulum-v1', 2, seed=seed),
    )
    try:
        # A NaN action, or a NaN loss first: either shows the model of
        # iteration 1 computes NaN.
        with pytest.raises(
            (EnvironmentStepError, NonFiniteLossError)
        ) as raised:
            trainer.train()
    finally:
        trainer.close()
    message = str(raised.value)
    assert message.startswith('training stopped at iteration 2: ')
    assert (
        'No checkpoint was written: the model that produced it computes '
        'NaN/Inf, so its checkpoint ckpt-1 was set aside as '
        'ckpt-1.non_finite (kept, not resumed from); no earlier '
        'checkpoint with finite values is kept: to start over, rerun '
        'with --fresh_start'
    ) in message
    assert 'rerun the same command' not in message
    # Nothing a rerun would resume from.
    assert sorted(os.listdir(root / 'ckpt')) == ['ckpt-1.non_finite']


def test_a_non_finite_update_is_never_applied():
    from alf_rl.utils.gradient_application import (
        GradientApplication,
        apply_if_finite,
    )
    from alf_rl.trainers.errors import training_error_from

    v = tf.Variable([1.0, 2.0], name='w')
    u = tf.Variable([3.0], name='u')
    optimizer = tf_keras.optimizers.SGD(0.5)

    @tf.function
    def update(g):
        apply_if_finite(
            GradientApplication(),
            optimizer,
            [(tf.ones([1]), u), (g, v)],
            'Owner',
        )

    update(tf.constant([1.0, 1.0]))
    np.testing.assert_allclose(v.numpy(), [0.5, 1.5])
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        update(tf.constant([np.inf, 1.0]))
    np.testing.assert_allclose(v.numpy(), [0.5, 1.5])  # not applied
    np.testing.assert_allclose(u.numpy(), [2.5])
    error = training_error_from(raised.value, 5)
    assert isinstance(error, NonFiniteUpdateError)
    assert (error.owner, error.variable) == ('Owner', 'w:0')
    assert str(error) == (
        'training stopped at iteration 5: non-finite update of Owner: the '
        'gradient of w:0 holds NaN/Inf values; not applied.'
    )
    # XLA compiles the check away (and it is not built there): the loss
    # check after the call and the checkpoint check catch what follows.
    from alf_rl.utils import gradient_application

    @tf.function(jit_compile=True)
    def in_xla():
        return tf.constant(gradient_application._in_xla())

    assert bool(in_xla()) and not gradient_application._in_xla()
