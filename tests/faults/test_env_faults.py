"""Environment faults and bad environment settings, as a user meets them.

Each test asserts the message a user reads and that nothing on disk was
lost (the checkpoints written before the fault are still there), and that
no worker process is left behind.

- a stopped (SIGSTOP) or hung worker: ``ParallelPyEnvironment``'s
  ``step_timeout`` names the environment, the worker's pid and the wait;
- NaN observations in ``check_finite`` mode, named with field and env index
  (numpy environments and in-graph ``suite_tf`` ones);
- discrete actions outside the spec refused at the environment boundary;
  continuous ones clipped, with the clipped fraction summarized and a strict
  mode that refuses a policy whose mean leaves the bounds;
- wrong-type ``create_environment`` arguments refused with the binding.

Module-level imports stay free of TensorFlow: worker processes unpickle the
hanging loader below by value (cloudpickle), not by importing this module.
"""

import functools
import os
import signal
import sys
import time

import numpy as np
import pytest

from alf_rl.environments import suite_gym
from alf_rl.environments.parallel_environment import ParallelPyEnvironment


def _cart_pole_constructors(n):
    return [
        functools.partial(suite_gym.load, 'CartPole-v1', seed=20 + i,
                          env_id=i) for i in range(n)
    ]


def _ended(process):
    """Waits (bounded) for a worker process; True once it has exited and
    was reaped, so no zombie or orphan is left behind."""
    try:
        process.wait(timeout=10)
    except Exception:
        return False
    try:
        os.kill(process.pid, 0)
    except ProcessLookupError:
        return True
    return False


def _checkpoint_steps(root_dir):
    ckpt = os.path.join(root_dir, 'ckpt')
    if not os.path.isdir(ckpt):
        return set()
    return {
        int(name[len('ckpt-'):]) for name in os.listdir(ckpt)
        if name.startswith('ckpt-') and name[len('ckpt-'):].isdigit()
        and os.path.exists(os.path.join(ckpt, name, 'ckpt.index'))
    }


# ---------------------------------------------------------------- point 5
def test_stopped_worker_times_out_naming_env_pid_and_wait():
    env = ParallelPyEnvironment(_cart_pole_constructors(3), step_timeout=1.0)
    processes = [w.process for w in env._workers]
    stopped = env.pids[1]
    try:
        env.reset()
        os.kill(stopped, signal.SIGSTOP)
        start = time.monotonic()
        with pytest.raises(RuntimeError) as raised:
            env.step(np.array([0, 1, 0], np.int64))
        waited = time.monotonic() - start
        message = str(raised.value)
        assert message.startswith(
            "ParallelPyEnvironment: the worker of environment 1 (pid %d, "
            "constructor functools.partial(" % stopped)
        assert "CartPole-v1" in message
        assert "did not answer step within 1 s (waited 1." in message
        assert "stopped (SIGSTOP?)" in message
        assert "every worker was shut down" in message
        assert "create_environment.step_timeout" in message
        assert 1.0 <= waited < 8.0
        # The stopped worker was killed, the others stopped politely.
        assert all(_ended(p) for p in processes)
        assert processes[1].returncode == -signal.SIGKILL
        assert processes[0].returncode == 0 and processes[2].returncode == 0
        with pytest.raises(RuntimeError, match=r"cannot be used after a "
                           r"worker did not answer: .*environment 1"):
            env.reset()
    finally:
        env.close()
    assert all(_ended(p) for p in processes)


def test_step_timeout_none_waits_and_bad_values_are_refused():
    with pytest.raises(ValueError, match=r"step_timeout must be a number of "
                       r"seconds > 0 or None, got '5'"):
        ParallelPyEnvironment(_cart_pole_constructors(1), step_timeout='5')
    with pytest.raises(ValueError, match=r"start_timeout must be a number "
                       r"of seconds > 0, got 0"):
        ParallelPyEnvironment(_cart_pole_constructors(1), start_timeout=0)
    env = ParallelPyEnvironment(_cart_pole_constructors(1),
                                step_timeout=None)
    try:
        assert env.step_timeout is None
        assert env.reset().observation.shape == (1, 4)
    finally:
        env.close()
    env = ParallelPyEnvironment(_cart_pole_constructors(1))
    try:
        assert env.step_timeout == 60.0  # the documented default
    finally:
        env.close()


def hanging_cart_pole(env_name, seed, env_id, max_episode_steps=None,
                      hang_env=1, hang_after=30):
    """``env_load_fn``: CartPole whose environment ``hang_env`` sleeps for
    an hour in its ``hang_after``-th step (a stuck simulator)."""
    kwargs = ({} if max_episode_steps is None else
              dict(max_episode_steps=max_episode_steps))
    env = suite_gym.load(env_name, seed=seed, env_id=env_id, **kwargs)
    if env_id == hang_env:
        flat_step, count = env._flat_step, [0]

        def _step(action):
            count[0] += 1
            if count[0] >= hang_after:
                time.sleep(3600)
            return flat_step(action)

        env._flat_step = _step
    return env


def _small_actor_critic(observation_spec, action_spec):
    from small_algorithms import small_actor_critic
    return small_actor_critic(observation_spec, action_spec)


def _trainer(root_dir, env, algorithm_ctor=_small_actor_critic,
             num_iterations=6, unroll_length=4):
    from alf_rl.trainers import OnPolicyTrainer, TrainerConfig
    config = TrainerConfig(root_dir=root_dir,
                           algorithm_ctor=algorithm_ctor,
                           num_iterations=num_iterations,
                           unroll_length=unroll_length,
                           random_seed=1,
                           checkpoint_interval=1,
                           summary_interval=1,
                           iterations_per_call=1)
    return OnPolicyTrainer(config, env=env)


def test_hung_worker_stops_training_keeps_checkpoints_and_leaves_no_process(
        tmp_path):
    import cloudpickle
    from alf_rl.environments import create_environment
    from alf_rl.trainers.errors import EnvironmentStepError
    # Workers get the loader by value: they need not import this module.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    root = str(tmp_path)
    # 4 steps per iteration: env 1 hangs in its 10th step (iteration 3).
    trainer = _trainer(root, lambda seed: create_environment(
        'CartPole-v1', 2, seed=seed, use_subprocess=True, step_timeout=1.0,
        env_load_fn=functools.partial(hanging_cart_pole, hang_after=10)))
    processes = [w.process for w in trainer.env.pyenv._workers]
    hung_pid = processes[1].pid
    try:
        with pytest.raises(EnvironmentStepError) as raised:
            trainer.train()
    finally:
        trainer.close()
    message = str(raised.value)
    assert message.startswith("training stopped at iteration 3: "
                              "ParallelPyEnvironment: the worker of "
                              "environment 1 (pid %d, " % hung_pid)
    assert "did not answer step within 1 s (waited" in message
    assert all(_ended(p) for p in processes)
    # Nothing on disk was lost: the checkpoints of iterations 1 and 2.
    assert {1, 2} <= _checkpoint_steps(root)


# ---------------------------------------------------------------- point 7: NaN
def _nan_policy_env(batch_size, nan_at_step, nan_env, seed=0):
    from alf_rl.environments.suite_unittest import PolicyUnittestEnv

    class _NaNAt(PolicyUnittestEnv):
        """Observation element 1 of env ``nan_env`` is NaN at one step."""

        def __init__(self):
            super().__init__(batch_size, 6, obs_dim=2, seed=seed)
            self.calls = 0

        def _step(self, action):
            time_step = super()._step(action)
            self.calls += 1
            if self.calls == nan_at_step:
                observation = time_step.observation.copy()
                observation[nan_env, 1] = np.nan
                time_step = time_step._replace(observation=observation)
            return time_step

    return _NaNAt()


def test_nan_observation_is_named_with_field_and_env_index():
    import tensorflow as tf
    from alf_rl.environments.tf_environment import TFPyEnvironment
    env = TFPyEnvironment(_nan_policy_env(3, nan_at_step=2, nan_env=2),
                          check_finite=True)
    assert env.check_finite
    env.reset()
    env.step(tf.constant([0, 1, 0], tf.int64))
    with pytest.raises(ValueError) as raised:
        env.step(tf.constant([0, 1, 0], tf.int64))
    assert str(raised.value) == (
        "observation: NaN at env 2, element (1,) in the environment's step "
        "output (1 of 6 values non-finite; found by check_finite) -- the "
        "environment returned a non-finite observation")
    # On by default; check_finite=False opts out and passes the NaN on.
    assert TFPyEnvironment(_nan_policy_env(3, 1, 0)).check_finite
    env = TFPyEnvironment(_nan_policy_env(3, nan_at_step=1, nan_env=0),
                          check_finite=False)
    assert not env.check_finite
    env.reset()
    observation = env.step(tf.constant([0, 1, 0], tf.int64)).observation
    assert np.isnan(observation.numpy()[0, 1])


def test_nan_observation_stops_training_naming_it_and_keeps_checkpoints(
        tmp_path):
    from alf_rl.environments.tf_environment import TFPyEnvironment
    from alf_rl.trainers.errors import EnvironmentStepError
    root = str(tmp_path)
    # 4 steps per iteration: the 10th step is in iteration 3.
    trainer = _trainer(root, lambda seed: TFPyEnvironment(
        _nan_policy_env(2, nan_at_step=10, nan_env=1, seed=seed),
        check_finite=True))
    try:
        with pytest.raises(EnvironmentStepError) as raised:
            trainer.train()
    finally:
        trainer.close()
    assert str(raised.value).startswith(
        "training stopped at iteration 3: observation: NaN at env 1, "
        "element (1,) in the environment's step output")
    assert {1, 2} <= _checkpoint_steps(root)


def test_nan_check_of_an_in_graph_environment_names_field_and_env():
    import tensorflow as tf
    from alf_rl.environments import create_environment
    env = create_environment('Pendulum-v1', 3, seed=1, backend='tf',
                             check_finite=True)
    assert env.check_finite and env.in_graph  # an in-graph check
    from alf_rl.environments.tf_environment import failed_finite_check
    step = tf.function(env.step, autograph=False)
    env.reset()
    step(tf.zeros([3, 1]))
    state = env._state.numpy()
    state[1, 0] = np.inf
    env._state.assign(state)
    with pytest.raises(tf.errors.OpError) as raised:
        step(tf.zeros([3, 1]))
    found = str(failed_finite_check(raised.value))
    assert found.startswith(
        "observation: NaN/Inf at env 1 in the step output of Pendulum-v1 "
        "(found by check_finite)") or found.startswith(
            "reward: NaN/Inf at env 1 in the step output of Pendulum-v1")
    assert create_environment('Pendulum-v1', 3, seed=1,
                              backend='tf').check_finite


# ----------------------------------------------- point 7: create_environment
@pytest.mark.parametrize('argument, value, expected', [
    ('num_parallel_environments', 2.5, 'an int >= 1'),
    ('num_parallel_environments', '2', 'an int >= 1'),
    ('num_parallel_environments', True, 'an int >= 1'),
    ('seed', 1.5, 'an int or None'),
    ('use_subprocess', 'yes', r'a bool \(True/False\)'),
    ('check_finite', 1, r'a bool \(True/False\)'),
    ('max_episode_steps', 200.0, 'an int or None'),
    ('step_timeout', -1, 'a number of seconds > 0 or None'),
    ('step_timeout', '60', 'a number of seconds > 0 or None'),
])
def test_create_environment_refuses_wrong_types(argument, value, expected):
    from alf_rl.environments import create_environment
    with pytest.raises(TypeError, match=r"^create_environment.%s: expected "
                       r"%s, got %s \(%s\)" %
                       (argument, expected, repr(value).replace('.', r'\.'),
                        type(value).__name__)):
        create_environment('CartPole-v1', **{argument: value})


def test_wrong_type_from_gin_names_the_binding():
    import gin
    from alf_rl.environments import create_environment
    gin.parse_config(['create_environment.num_parallel_environments = 2.5'])
    with pytest.raises(TypeError, match=r"create_environment.num_parallel_"
                       r"environments: expected an int >= 1, got 2.5 "
                       r"\(float\)"):
        create_environment()
    gin.clear_config()
    gin.parse_config(['create_environment.step_timeout = 2.5',
                      'create_environment.check_finite = True',
                      'create_environment.num_parallel_environments = 2',
                      'create_environment.use_subprocess = True'])
    env = create_environment()
    try:
        assert env.pyenv.step_timeout == 2.5 and env.check_finite
        assert env.batch_size == 2
    finally:
        env.close()


# ---------------------------------------------------------------- point 6
def _action_six_actor_critic(observation_spec, action_spec):
    """An actor-critic whose (mistaken) rollout returns action 6 for env 0
    of a 0/1 discrete spec."""
    import tensorflow as tf
    algorithm = _small_actor_critic(observation_spec, action_spec)

    class _ActionSix(type(algorithm)):

        def rollout(self, time_step, state):
            step = super().rollout(time_step, state)
            action = tf.tensor_scatter_nd_update(
                step.action, [[0]], tf.constant([6], step.action.dtype))
            return step._replace(action=action)

    algorithm.__class__ = _ActionSix
    return algorithm


def test_discrete_action_out_of_bounds_is_refused_at_the_environment(
        tmp_path):
    from alf_rl.environments.suite_unittest import PolicyUnittestEnv
    from alf_rl.environments.tf_environment import TFPyEnvironment
    from alf_rl.trainers.errors import EnvironmentStepError
    root = str(tmp_path)
    trainer = _trainer(
        root, lambda seed: TFPyEnvironment(PolicyUnittestEnv(2, 6,
                                                             seed=seed)),
        algorithm_ctor=_action_six_actor_critic)
    try:
        with pytest.raises(EnvironmentStepError) as raised:
            trainer.train()
    finally:
        trainer.close()
    assert str(raised.value).startswith(
        "training stopped at iteration 1: action: value 6 at env 0 outside "
        "action_spec bounds [0, 1] (1 of 2 values out of bounds) -- check "
        "the policy's output or clip it to the spec")
    # It failed in the first iteration: no checkpoint of a later one.
    assert _checkpoint_steps(root) <= {0}


def test_env_action_clips_continuous_and_passes_discrete_unchanged():
    import tensorflow as tf
    from alf_rl.algorithms import PPOAlgorithm
    from alf_rl.networks import ActorDistributionNetwork, ValueNetwork
    from alf_rl.specs import BoundedTensorSpec, TensorSpec
    observation_spec = TensorSpec((2, ), tf.float32)
    action_spec = {
        'move': BoundedTensorSpec((), tf.int64, 0, 1),
        'force': BoundedTensorSpec((2, ), tf.float32, -1, 1),
    }
    algorithm = PPOAlgorithm(
        observation_spec, action_spec,
        actor_network_ctor=functools.partial(ActorDistributionNetwork,
                                             fc_layer_params=(4, )),
        value_network_ctor=functools.partial(ValueNetwork,
                                             fc_layer_params=(4, )))
    env_action = algorithm.env_action({
        'move': tf.constant([6, 1], tf.int32),
        'force': tf.constant([[1.5, -0.5], [-3., 0.]]),
    })
    assert env_action['move'].dtype == tf.int64
    assert env_action['move'].numpy().tolist() == [6, 1]
    np.testing.assert_array_equal(env_action['force'].numpy(),
                                  [[1., -0.5], [-1., 0.]])


def _continuous_actor_critic(observation_spec, action_spec,
                             strict_action_bounds=None, mean_bias=None):
    import tf_keras
    from alf_rl.algorithms import ActorCriticAlgorithm
    from alf_rl.networks import (ActorDistributionNetwork,
                                 NormalProjectionNetwork, ValueNetwork)
    algorithm = ActorCriticAlgorithm(
        observation_spec, action_spec,
        actor_network_ctor=functools.partial(
            ActorDistributionNetwork, fc_layer_params=(8, ),
            continuous_projection_net_ctor=functools.partial(
                NormalProjectionNetwork, mean_transform=None)),
        value_network_ctor=functools.partial(ValueNetwork,
                                             fc_layer_params=(8, )),
        optimizer=tf_keras.optimizers.Adam(1e-3),
        strict_action_bounds=strict_action_bounds)
    if mean_bias is not None:
        _set_mean_bias(algorithm, mean_bias)
    return algorithm


def _set_mean_bias(algorithm, value):
    """Moves the actor's (unsquashed) mean by setting its output bias."""
    biases = [
        v for v in algorithm.actor_network.trainable_variables
        if 'bias' in v.name and v.shape.as_list() == [1]
    ]
    assert len(biases) == 1, [v.name for v in
                              algorithm.actor_network.trainable_variables]
    biases[0].assign([value])


def test_clipped_fraction_of_continuous_actions_is_summarized():
    import tensorflow as tf
    from alf_rl.specs import BoundedTensorSpec, TensorSpec
    algorithm = _continuous_actor_critic(
        TensorSpec((2, ), tf.float32),
        BoundedTensorSpec((2, ), tf.float32, 0., 1.))
    # [T=2, B=3, 2]: a step counts as clipped if any element is outside.
    action = tf.constant([[[0.5, 0.5], [1.5, 0.5], [0., 1.]],
                          [[-0.1, 0.2], [0.3, 0.4], [2., -2.]]])
    np.testing.assert_array_equal(
        algorithm._clipped_fraction(action).numpy(),
        [[0., 1., 0.], [1., 0., 1.]])


def test_clipped_fraction_reaches_the_loss_summaries(tmp_path):
    from alf_rl.environments.suite_unittest import PolicyUnittestEnv
    from alf_rl.environments.tf_environment import TFPyEnvironment
    root = str(tmp_path)
    # Mean far above the [0, 1] bounds: (nearly) every sample is clipped.
    trainer = _trainer(
        root, lambda seed: TFPyEnvironment(PolicyUnittestEnv(
            2, 6, action_type='continuous', seed=seed)),
        algorithm_ctor=functools.partial(_continuous_actor_critic,
                                         mean_bias=5.0),
        num_iterations=2)
    try:
        assert trainer.train()['iterations'] == 2
    finally:
        trainer.close()
    # What TensorBoard shows: one value per iteration, all steps clipped.
    assert _scalars(os.path.join(root, 'train'),
                    'loss/action_clipped_fraction') == {1: 1.0, 2: 1.0}
    assert {1, 2} <= _checkpoint_steps(root)


def _scalars(log_dir, tag):
    """{step: value} of a scalar summary in the event files of a dir."""
    import tensorflow as tf
    values = {}
    for name in sorted(os.listdir(log_dir)):
        for event in tf.compat.v1.train.summary_iterator(
                os.path.join(log_dir, name)):
            for value in event.summary.value:
                if value.tag == tag:
                    values[event.step] = float(tf.make_ndarray(value.tensor))
    return values


def test_strict_action_bounds_refuses_a_mean_far_outside(tmp_path):
    from alf_rl.environments.suite_unittest import PolicyUnittestEnv
    from alf_rl.environments.tf_environment import TFPyEnvironment
    root = str(tmp_path)
    trainer = _trainer(
        root, lambda seed: TFPyEnvironment(PolicyUnittestEnv(
            2, 6, action_type='continuous', seed=seed)),
        algorithm_ctor=functools.partial(_continuous_actor_critic,
                                         strict_action_bounds=0.5,
                                         mean_bias=5.0),
        num_iterations=2)
    try:
        with pytest.raises(ValueError) as raised:
            trainer.train()
    finally:
        trainer.close()
    message = str(raised.value)
    assert '\n' not in message
    assert message.startswith(
        "ActorCriticAlgorithm.strict_action_bounds=0.5: the policy's mean "
        "action left its bounds (0, 1) by more than 0.5 x their range, i.e. "
        "(-0.5, 1.5) -- fix the actor's output (e.g. squash it with tanh) "
        "or set strict_action_bounds=None to clip silently; first mean "
        "outside, its env index, envs outside: ")
    # The mean (about 5: the bias) of env 0; both envs are outside.
    mean, env_index, envs_outside = message.rsplit(': ', 1)[1].split(', ')
    assert abs(float(mean) - 5.0) < 0.1
    assert (env_index, envs_outside) == ('0', '2')


def test_strict_action_bounds_accepts_a_mean_within_the_margin(tmp_path):
    import tensorflow as tf
    from alf_rl.specs import BoundedTensorSpec, TensorSpec
    with pytest.raises(ValueError, match=r"strict_action_bounds: expected "
                       r"None or a margin >= 0 .*got -1"):
        _continuous_actor_critic(TensorSpec((2, ), tf.float32),
                                 BoundedTensorSpec((1, ), tf.float32, 0., 1.),
                                 strict_action_bounds=-1)
    from alf_rl.environments.suite_unittest import PolicyUnittestEnv
    from alf_rl.environments.tf_environment import TFPyEnvironment
    trainer = _trainer(
        str(tmp_path), lambda seed: TFPyEnvironment(PolicyUnittestEnv(
            2, 6, action_type='continuous', seed=seed)),
        algorithm_ctor=functools.partial(_continuous_actor_critic,
                                         strict_action_bounds=0.5,
                                         mean_bias=1.4),
        num_iterations=2)
    try:
        assert trainer.train()['iterations'] == 2
    finally:
        trainer.close()


def test_failed_check_message_parses_graph_and_eager_asserts():
    import tensorflow as tf
    from alf_rl.drivers.driver import failed_check_message

    def _check(x):
        check = tf.debugging.Assert(
            x < 1.0, ['alf_rl: x (0, 1) too big:', x, tf.constant(3)])
        with tf.control_dependencies([check]):
            return tf.identity(x)

    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        tf.function(_check, autograph=False)(tf.constant(2.5))
    assert failed_check_message(raised.value) == 'x (0, 1) too big: 2.5, 3'
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        _check(tf.constant(2.5))
    assert failed_check_message(raised.value) == 'x (0, 1) too big: 2.5, 3'
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        tf.debugging.Assert(tf.constant(2.5) < 1.0, ['other check'])
    assert failed_check_message(raised.value) is None
