"""An in-process environment that hangs ends the run: a step timeout.

``BatchedPyEnvironment`` (``create_environment(use_subprocess=False)``)
steps its environments on a watchdog thread with
``create_environment.step_timeout`` (60 s by default), as subprocess
workers are. The error names the environment; a second Ctrl-C of
``alf-train`` aborts at once while the environment hangs.
"""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from alf_rl.environments import suite_gym
from alf_rl.environments.batched_environment import (
    BatchedPyEnvironment,
    EnvironmentTimeoutError,
)


def hanging_cart_pole(env_name, seed, env_id, hang_env=1, hang_after=3):
    """``env_load_fn``: CartPole whose environment ``hang_env`` waits for
    ever in its ``hang_after``-th step."""
    env = suite_gym.load(env_name, seed=seed, env_id=env_id)
    if env_id == hang_env:
        flat_step, count = env._flat_step, [0]

        def _step(action):
            count[0] += 1
            if count[0] >= hang_after:
                threading.Event().wait()
            return flat_step(action)

        env._flat_step = _step
    return env


def _batch(step_timeout, hang_after=3):
    return BatchedPyEnvironment(
        [
            hanging_cart_pole(
                'CartPole-v1', seed=i, env_id=i, hang_after=hang_after
            )
            for i in range(2)
        ],
        step_timeout=step_timeout,
    )


def test_hung_step_raises_naming_the_environment_and_the_timeout():
    env = _batch(step_timeout=1)
    env.reset()
    action = [0, 1]
    env.step(action)
    env.step(action)
    with pytest.raises(EnvironmentTimeoutError) as raised:
        env.step(action)
    assert str(raised.value) == (
        "environment 1 (CartPole-v1) did not finish its step within 1 s "
        "(create_environment.step_timeout; None waits for ever); it is not "
        "stepped again"
    )
    # Later calls fail at once with the same line; close does not wait for
    # the hung environment.
    with pytest.raises(EnvironmentTimeoutError, match='environment 1 '):
        env.step(action)
    env.close()


def test_environment_errors_still_come_through_the_watchdog():
    env = _batch(step_timeout=30)
    env.reset()
    thread = env._watchdog._thread
    assert thread.name == 'alf_rl-env-watchdog' and thread.is_alive()
    with pytest.raises(ValueError):
        env.step(['not', 'actions'])
    # Closing the batch ends its thread.
    env.close()
    thread.join(timeout=10)
    assert not thread.is_alive()


def test_no_timeout_steps_in_the_calling_thread():
    threads = []
    env = _batch(step_timeout=None, hang_after=100)
    inner = env.envs[0]._flat_step

    def _recording(action):
        threads.append(threading.current_thread())
        return inner(action)

    env._flat_steps[0] = _recording
    env.reset()
    env.step([0, 1])
    assert threads == [threading.current_thread()]
    assert env.step_timeout is None
    for bad in (0, -1, 'soon', True):
        with pytest.raises(
            ValueError,
            match='step_timeout must be a number of seconds > 0 or None, got',
        ):
            BatchedPyEnvironment(env.envs, step_timeout=bad)


def test_hung_in_process_environment_stops_training(tmp_path):
    import functools

    from alf_rl.environments import create_environment
    from alf_rl.trainers import OnPolicyTrainer, TrainerConfig
    from small_algorithms import small_actor_critic, training_error_message

    root = str(tmp_path)
    # 4 steps per iteration: env 1 hangs in its 10th step (iteration 3).
    trainer = OnPolicyTrainer(
        TrainerConfig(
            root_dir=root,
            algorithm_ctor=small_actor_critic,
            num_iterations=6,
            unroll_length=4,
            random_seed=1,
            checkpoint_interval=1,
            summary_interval=1,
            iterations_per_call=1,
        ),
        env=lambda seed: create_environment(
            'CartPole-v1',
            2,
            seed=seed,
            step_timeout=1.0,
            env_load_fn=functools.partial(hanging_cart_pole, hang_after=10),
        ),
    )
    assert training_error_message(trainer).startswith(
        "training stopped at iteration 3: environment 1 (CartPole-v1) did "
        "not finish its step within 1 s (create_environment.step_timeout; "
        "None waits for ever); it is not stepped again. The checkpoint of "
        "iteration 2 "
    )
    assert os.path.isdir(os.path.join(root, 'ckpt', 'ckpt-2'))


USER_MODULE = '''
"""A user's module: CartPole whose environment 1 hangs in step 20."""
import threading

import gin

from alf_rl.environments import suite_gym


@gin.configurable
def hanging_load(env_name, seed, env_id, **kwargs):
    env = suite_gym.load(env_name, seed=seed, env_id=env_id, **kwargs)
    if env_id == 1:
        flat_step, count = env._flat_step, [0]

        def _step(action):
            count[0] += 1
            if count[0] >= 20:
                open(env_name_file(), 'w').close()
                threading.Event().wait()
            return flat_step(action)

        env._flat_step = _step
    return env


def env_name_file():
    import os
    return os.path.join(os.environ['HANG_DIR'], 'hanging')
'''


def start_hanging_run(tmp_path, gin_params):
    """Starts ``alf-train`` (ac_cart_pole, no evaluation) with the user
    module above and ``--gin_param``s ``gin_params``; returns the process
    once environment 1 hangs (output piped, text)."""
    with open(tmp_path / 'hang_env.py', 'w') as f:
        f.write(textwrap.dedent(USER_MODULE))
    with open(tmp_path / 'hang.gin', 'w') as f:
        f.write(
            'import hang_env\ncreate_environment.env_load_fn = @hanging_load\n'
        )
    example = os.path.join(
        os.path.dirname(__file__), '..', '..', 'examples', 'ac_cart_pole.gin'
    )
    cmd = [
        sys.executable,
        '-m',
        'alf_rl.bin.train',
        '--gin_file',
        example,
        '--gin_file',
        str(tmp_path / 'hang.gin'),
        '--root_dir',
        str(tmp_path / 'run'),
        '--module_path',
        str(tmp_path),
    ]
    for param in ['TrainerConfig.evaluate=False'] + list(gin_params):
        cmd += ['--gin_param', param]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, HANG_DIR=str(tmp_path)),
    )
    hanging = tmp_path / 'hanging'
    deadline = time.time() + 180
    while (
        not hanging.exists()
        and proc.poll() is None
        and (time.time() < deadline)
    ):
        time.sleep(0.2)
    if not hanging.exists():
        proc.kill()
        raise AssertionError(proc.communicate(timeout=5))
    return proc


def test_second_ctrl_c_aborts_while_an_environment_hangs(tmp_path):
    proc = start_hanging_run(
        tmp_path, ['create_environment.step_timeout=None']
    )
    try:
        proc.send_signal(signal.SIGINT)
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (out, err)
    assert 'Ctrl-C again: aborting at once' in err


def test_awake_clock_leaves_out_a_suspension(monkeypatch):
    from alf_rl.utils import stop_request

    now = [100.0]
    monkeypatch.setattr(stop_request.time, 'monotonic', lambda: now[0])
    clock = stop_request.AwakeClock(max_gap=2.0)
    now[0] += 0.2
    assert clock.now() == pytest.approx(100.2)
    now[0] += 600.0  # suspended: counts as max_gap
    assert clock.now() == pytest.approx(102.2)
    now[0] += 0.2
    assert clock.now() == pytest.approx(102.4)
    # The timeout counts the awake time only; the stop grace is real time.
    assert stop_request.wait_outcome(clock.started, 3.0, clock=clock) is None
    assert stop_request.wait_outcome(clock.started, 3.0) == 'timed out'


_SUSPENDED_CHILD = textwrap.dedent('''
    import sys, time
    from alf_rl.environments import suite_gym
    from alf_rl.environments.batched_environment import BatchedPyEnvironment

    def slow(env_id):
        env = suite_gym.load('CartPole-v1', seed=env_id, env_id=env_id)
        flat_step = env._flat_step

        def _step(action):
            # 0.1 s of CPU: a step suspended half-way needs CPU after it.
            start = time.process_time()
            while time.process_time() - start < 0.1:
                pass
            return flat_step(action)

        env._flat_step = _step
        return env

    env = BatchedPyEnvironment([slow(0)], step_timeout=4)
    env.reset()
    print('stepping', flush=True)
    for _ in range(30):
        env.step([0])
    print('done', flush=True)
''')


def test_a_suspended_process_does_not_time_out_its_environment():
    """SIGSTOP (Ctrl-Z) for longer than step_timeout, then SIGCONT: the
    steps go on (the suspended seconds are not counted); before, the first
    step after waking timed out although the environment was never slow."""
    child = subprocess.Popen(
        [sys.executable, '-c', _SUSPENDED_CHILD],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == 'stepping'
        time.sleep(1.0)
        os.kill(child.pid, signal.SIGSTOP)
        time.sleep(5.0)
        os.kill(child.pid, signal.SIGCONT)
        out, _ = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, out
    assert out.strip().endswith('done'), out
