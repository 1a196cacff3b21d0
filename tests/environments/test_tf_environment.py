"""TFPyEnvironment: one numpy_function per call, static shapes, checks."""

import numpy as np
import pytest
import tensorflow as tf

from alf_rl.data_structures import StepType, TimeStep
from alf_rl.environments import suite_gym
from alf_rl.environments.batched_environment import BatchedPyEnvironment
from alf_rl.environments.gym_wrapper import GymWrapper
from alf_rl.environments.py_environment import PyEnvironment
from alf_rl.environments.suite_unittest import (PolicyUnittestEnv,
                                                ValueUnittestEnv)
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.specs import BoundedTensorSpec


def _cartpole_env(b=3, max_episode_steps=5):
    return TFPyEnvironment(
        BatchedPyEnvironment([
            suite_gym.load('CartPole-v1', seed=i, env_id=i,
                           max_episode_steps=max_episode_steps)
            for i in range(b)
        ]))


def _count_py_funcs(graph_def):
    """numpy_function ops in the graph and in each library function."""
    is_py = lambda op: op in ('PyFunc', 'PyFuncStateless')
    top = sum(is_py(n.op) for n in graph_def.node)
    per_function = {
        f.signature.name: sum(is_py(n.op) for n in f.node_def)
        for f in graph_def.library.function
    }
    return top, per_function


def test_one_numpy_function_per_call_and_static_shapes():
    env = _cartpole_env(b=3)

    @tf.function
    def one_step(action):
        return env.step(action)

    graph = one_step.get_concrete_function(
        tf.TensorSpec([3], tf.int64)).graph
    top, _ = _count_py_funcs(graph.as_graph_def())
    assert top == 1
    ts = one_step.get_concrete_function(tf.TensorSpec([3], tf.int64))\
        .structured_outputs
    assert ts.step_type.shape == (3, ) and ts.step_type.dtype == tf.int32
    assert ts.observation.shape == (3, 4)
    assert ts.prev_action.shape == (3, ) and ts.prev_action.dtype == tf.int64
    assert ts.env_id.shape == (3, )


def test_while_loop_in_tf_function_matches_eager():
    env = _cartpole_env(b=3, max_episode_steps=4)
    actions = tf.constant(np.random.RandomState(0).randint(0, 2, (9, 3)),
                          tf.int64)

    @tf.function
    def run():
        ts = env.reset()
        ta = tf.TensorArray(tf.float32, size=9)
        types = tf.TensorArray(tf.int32, size=9)

        def body(i, ts, ta, types):
            ts = env.step(actions[i])
            return (i + 1, ts, ta.write(i, ts.observation),
                    types.write(i, ts.step_type))

        _, ts, ta, types = tf.while_loop(lambda i, *_: i < 9, body,
                                         (0, ts, ta, types))
        return ta.stack(), types.stack()

    obs, types = run()
    graph_def = run.get_concrete_function().graph.as_graph_def()
    top, per_function = _count_py_funcs(graph_def)
    assert top == 1  # reset
    bodies = [n for n in per_function if 'body' in n]
    assert bodies and all(per_function[n] == 1 for n in bodies)
    assert obs.shape == (9, 3, 4)
    assert types.numpy()[:, 0].tolist() == [1, 1, 1, 2, 0, 1, 1, 1, 2]

    # Same numbers eagerly, from fresh identically seeded environments.
    eager = _cartpole_env(b=3, max_episode_steps=4)
    eager.reset()
    for i in range(9):
        ts = eager.step(actions[i])
        np.testing.assert_array_equal(ts.observation.numpy(), obs[i])
    assert isinstance(ts.observation, tf.Tensor)


def test_nested_observation_and_action_round_trip(nested_env_cls):
    env = TFPyEnvironment(
        BatchedPyEnvironment([GymWrapper(nested_env_cls(), env_id=i)
                              for i in range(2)]))
    action = (tf.constant([1, 3], tf.int64),
              tf.constant([[0.5, -0.5], [1.0, 2.0]], tf.float32))

    @tf.function
    def go():
        first = env.reset()
        return first, env.step(action)

    first, ts = go()
    assert first.step_type.numpy().tolist() == [StepType.FIRST] * 2
    assert ts.reward.numpy().tolist() == [1.0, 3.0]
    assert ts.observation['image'].dtype == tf.uint8
    assert ts.observation['image'].shape == (2, 4, 4, 3)
    np.testing.assert_array_equal(ts.observation['image'].numpy(), 1)
    assert ts.observation['mb'].dtype == tf.int8
    assert ts.observation['md'].numpy().tolist() == [[1, 1], [1, 1]]
    assert ts.observation['tup'][1].dtype == tf.float64
    np.testing.assert_array_equal(ts.observation['tup'][1].numpy(), -0.5)
    assert ts.prev_action[0].numpy().tolist() == [1, 3]
    np.testing.assert_array_equal(ts.prev_action[1].numpy(),
                                  action[1].numpy())


def test_out_of_bounds_discrete_action_names_value_and_env():
    env = _cartpole_env(b=2)
    env.reset()
    with pytest.raises(ValueError,
                       match=r"action: value 3 at env 1 outside action_spec "
                       r"bounds \[0, 1\]"):
        env.step(tf.constant([0, 3], tf.int64))
    assert isinstance(env.last_error, ValueError)

    @tf.function
    def step(a):
        return env.step(a)

    env.last_error = None
    with pytest.raises(tf.errors.OpError, match='value 3 at env 1'):
        step(tf.constant([0, 3], tf.int64))
    assert 'value 3 at env 1' in str(env.last_error)


def test_continuous_action_nan_and_bounds():
    env = TFPyEnvironment(PolicyUnittestEnv(2, 3, action_type='continuous'))
    env.reset()
    with pytest.raises(ValueError, match=r"value NaN at env 0, element "
                       r"\(0,\) outside action_spec bounds \[0.0, 1.0\]"):
        env.step(tf.constant([[np.nan], [0.5]], tf.float32))
    with pytest.raises(ValueError, match=r"value 1.5 at env 1"):
        env.step(tf.constant([[0.5], [1.5]], tf.float32))
    ts = env.step(tf.constant([[0.5], [1.0]], tf.float32))
    assert ts.step_type.numpy().tolist() == [1, 1]


def test_wrong_action_shape_or_kind_is_rejected():
    env = TFPyEnvironment(ValueUnittestEnv(3, 4))
    env.reset()
    with pytest.raises(ValueError, match=r"action: expected batch size 3"):
        env.step(tf.constant([0, 1], tf.int64))
    with pytest.raises(ValueError, match=r"action: expected \[B\] int64 "
                       r"from action_spec, got \[3, 1\]"):
        env.step(tf.constant([[0], [1], [1]], tf.int64))
    with pytest.raises(ValueError, match=r"action: expected int64 .* got "
                       r"float32"):
        env.step(tf.constant([0., 1., 1.]))
    # int32 -> int64 is cast.
    ts = env.step(tf.constant([0, 1, 1], tf.int32))
    assert ts.prev_action.dtype == tf.int64
    # Dynamic batch size inside a graph is caught by the callback.
    step = tf.function(env.step,
                       input_signature=[tf.TensorSpec([None], tf.int64)])
    with pytest.raises(tf.errors.OpError, match=r"action: expected \[B=3\] "
                       r"int64 from action_spec, got \[2\]"):
        step(tf.constant([0, 1], tf.int64))


class _BadObservationEnv(PyEnvironment):
    """Batched env whose observation['pos'] has an extra dimension."""

    def __init__(self, pos_shape, pos_dtype=np.float32):
        self._shape, self._dtype = pos_shape, pos_dtype

    @property
    def batched(self):
        return True

    @property
    def batch_size(self):
        return 2

    def observation_spec(self):
        return {
            'pos': BoundedTensorSpec((3, ), tf.float32, -1, 1),
            'vel': BoundedTensorSpec((), tf.float32, -1, 1)
        }

    def action_spec(self):
        return BoundedTensorSpec((), tf.int64, 0, 1)

    def _time_step(self, step_type):
        return TimeStep(step_type=np.full(2, step_type, np.int32),
                        reward=np.zeros(2, np.float32),
                        discount=np.ones(2, np.float32),
                        observation={
                            'pos': np.zeros(self._shape, self._dtype),
                            'vel': np.zeros(2, np.float32)
                        },
                        prev_action=np.zeros(2, np.int64),
                        env_id=np.arange(2, dtype=np.int32))

    def _reset(self):
        return self._time_step(0)

    def _step(self, action):
        return self._time_step(1)


def test_observation_mismatch_names_the_path():
    env = TFPyEnvironment(_BadObservationEnv((2, 1, 3)))
    with pytest.raises(ValueError, match=r"observation\['pos'\]: expected "
                       r"\[B, 3\] float32 from observation_spec, got "
                       r"\[2, 1, 3\] float32"):
        env.reset()

    @tf.function
    def reset():
        return env.reset()

    with pytest.raises(tf.errors.OpError, match=r"observation\['pos'\]"):
        reset()
    assert "observation['pos']" in str(env.last_error)


def test_observation_float64_is_cast_and_int_refused():
    env = TFPyEnvironment(_BadObservationEnv((2, 3), np.float64))
    ts = env.reset()
    assert ts.observation['pos'].dtype == tf.float32
    env = TFPyEnvironment(_BadObservationEnv((2, 3), np.int64))
    with pytest.raises(ValueError, match=r"observation\['pos'\]: expected "
                       r"\[B, 3\] float32 .* got \[2, 3\] int64"):
        env.reset()


def test_unbatched_py_env_is_wrapped_and_properties():
    env = TFPyEnvironment(suite_gym.load('CartPole-v1', seed=0))
    assert env.batch_size == 1 and env.batched
    assert isinstance(env.pyenv, BatchedPyEnvironment)
    assert env.observation_spec().shape == (4, )
    assert env.time_step_spec().reward == tf.TensorSpec((), tf.float32)
    ts = env.reset()
    assert ts.observation.shape == (1, 4)
    assert env.render() is None
    with env:
        pass
    assert env.pyenv._closed
