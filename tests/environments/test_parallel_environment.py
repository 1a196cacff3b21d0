"""ParallelPyEnvironment: equal to in-process, clean close, dead workers.

Every wait on a worker polls with a timeout and checks the process, so none
of these tests can hang on a dead worker.
"""

import functools
import os
import signal
import sys
import time

import numpy as np
import pytest

from alf_rl.environments import suite_gym
from alf_rl.environments.batched_environment import BatchedPyEnvironment
from alf_rl.environments.parallel_environment import ParallelPyEnvironment


def _constructors(n, max_episode_steps=4):
    return [
        functools.partial(suite_gym.load, 'CartPole-v1',
                          max_episode_steps=max_episode_steps, seed=20 + i,
                          env_id=i) for i in range(n)
    ]


@pytest.fixture(scope='module')
def parallel_env():
    env = ParallelPyEnvironment(_constructors(2))
    yield env
    env.close()


def test_parallel_equals_in_process(parallel_env):
    local = BatchedPyEnvironment([c() for c in _constructors(2)])
    assert parallel_env.batch_size == 2 and parallel_env.batched
    assert parallel_env.observation_spec() == local.observation_spec()
    assert parallel_env.action_spec() == local.action_spec()
    rng = np.random.RandomState(1)
    pairs = [(parallel_env.reset(), local.reset())]
    for _ in range(10):
        action = rng.randint(0, 2, size=2).astype(np.int64)
        pairs.append((parallel_env.step(action), local.step(action)))
    for p, q in pairs:
        for field in p._fields:
            a, b = getattr(p, field), getattr(q, field)
            np.testing.assert_array_equal(a, b, err_msg=field)
            assert a.dtype == b.dtype, field
    assert [p.step_type.tolist() for p, _ in pairs[:6]] == [
        [0, 0], [1, 1], [1, 1], [1, 1], [2, 2], [0, 0]]
    assert pairs[-1][0].env_id.tolist() == [0, 1]


def test_workers_do_not_import_tensorflow(parallel_env):
    assert parallel_env.call(0, lambda env: 'tensorflow' in sys.modules) \
        is False
    assert parallel_env.call(1, lambda env, k: env.env_id * k, 10) == 10


def test_worker_exception_comes_back_with_traceback(parallel_env):
    parallel_env.reset()
    with pytest.raises(RuntimeError) as info:
        parallel_env.step(np.array([7, 0], np.int64))  # invalid for CartPole
    message = str(info.value)
    assert 'environment 0' in message
    assert 'AssertionError' in message and 'worker traceback' in message
    assert 'cartpole.py' in message
    # The workers are still alive, and the replies of environment 1 were
    # drained: the next calls get their own answers.
    ts = parallel_env.reset()
    assert ts.step_type.tolist() == [0, 0]
    ts = parallel_env.step(np.array([1, 1], np.int64))
    assert ts.step_type.tolist() == [1, 1]
    assert ts.prev_action.tolist() == [1, 1]
    assert parallel_env.render() is None  # no render_mode


def test_killed_worker_raises_quickly_naming_env():
    env = ParallelPyEnvironment(_constructors(2))
    try:
        env.reset()
        os.kill(env.pids[1], signal.SIGKILL)
        start = time.time()
        with pytest.raises(RuntimeError,
                           match=r"environment 1 \(pid \d+, constructor "
                           r"functools.partial.*CartPole-v1.*\) died with "
                           r"exit code -9 \(killed by SIGKILL\)"):
            env.step(np.array([0, 1], np.int64))
        assert time.time() - start < 10
        with pytest.raises(RuntimeError, match=r"cannot be used after a "
                           r"worker died.*environment 1"):
            env.reset()
    finally:
        env.close()


def test_worker_exit_is_reported_with_code_and_close_is_clean():
    env = ParallelPyEnvironment(_constructors(2), start_serially=True)
    env.reset()
    with pytest.raises(RuntimeError, match=r"environment 0 .* exited with "
                       r"exit code 3 during call"):
        env.call(0, lambda e: os._exit(3))
    processes = [w.process for w in env._workers]
    env.close()
    env.close()
    assert processes[0].returncode == 3
    assert processes[1].returncode == 0  # stopped politely
    with pytest.raises(RuntimeError, match='closed'):
        env.reset()


def test_bad_constructor_fails_in_the_parent():
    with pytest.raises(ValueError, match=r"unknown gymnasium environment id "
                       r"'Nope-v0'"):
        ParallelPyEnvironment([functools.partial(suite_gym.load, 'Nope-v0')])
    with pytest.raises(ValueError, match='at least one'):
        ParallelPyEnvironment([])


def test_garbage_collected_environment_stops_its_workers():
    import gc
    env = ParallelPyEnvironment(_constructors(1))
    process = env._workers[0].process
    del env
    gc.collect()
    assert process.wait(timeout=10) == 0
