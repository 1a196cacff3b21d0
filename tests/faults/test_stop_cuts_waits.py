"""The first Ctrl-C ends a run promptly even while something it waits for
hangs: an in-process environment, a subprocess worker, or actors that send
no experience. Each wait gives up ``STOP_GRACE_SECONDS`` after the stop
request instead of at its own (minute-long) timeout."""

import os
import signal
import threading
import time

import numpy as np
import pytest

from alf_rl.environments.parallel_environment import ParallelPyEnvironment
from alf_rl.utils import stop_request
from alf_rl.utils.actor_messages import ActorFailedError, MessageQueue
from alf_rl.utils.stop_request import (
    STOP_GRACE_SECONDS,
    WaitCancelled,
    announce_stop,
    STOPPED,
    TIMED_OUT,
    clear_stop,
    cut_short,
    wait_outcome,
)

from test_env_step_timeout import _batch, start_hanging_run
from test_env_faults import _cart_pole_constructors


@pytest.fixture(autouse=True)
def _no_stop_left():
    clear_stop()
    yield
    clear_stop()


def test_cut_short_counts_the_grace_from_the_later_of_request_and_start():
    assert not cut_short(0.0, now=1e9)  # nothing requested
    announce_stop()
    requested = stop_request._REQUESTED_AT[0]
    announce_stop()  # the first request counts
    assert stop_request._REQUESTED_AT == [requested]
    assert not cut_short(0.0, now=requested + STOP_GRACE_SECONDS - 0.01)
    assert cut_short(0.0, now=requested + STOP_GRACE_SECONDS)
    later = requested + 10.0  # a wait that began after the request
    assert not cut_short(later, now=later + STOP_GRACE_SECONDS - 0.01)
    assert cut_short(later, now=later + STOP_GRACE_SECONDS)
    clear_stop()
    assert not cut_short(0.0, now=1e9)


def test_wait_outcome_puts_the_own_timeout_before_the_stop_request():
    assert wait_outcome(0.0, 5.0, now=4.9) is None
    assert wait_outcome(0.0, 5.0, now=5.0) == TIMED_OUT
    assert wait_outcome(0.0, None, now=1e9) is None  # no limit, no stop
    announce_stop()
    requested = stop_request._REQUESTED_AT[0]
    grace_end = requested + STOP_GRACE_SECONDS
    assert wait_outcome(0.0, None, now=grace_end - 0.01) is None
    assert wait_outcome(0.0, None, now=grace_end) == STOPPED
    # both due: the wait's own timeout names the error
    assert wait_outcome(0.0, 1.0, now=grace_end) == TIMED_OUT


def test_a_hung_in_process_step_ends_soon_after_a_stop_request():
    env = _batch(step_timeout=60.0, hang_after=2)
    env.reset()
    env.step(np.array([0, 1]))
    announce_stop()
    start = time.monotonic()
    with pytest.raises(Exception) as raised:
        env.step(np.array([0, 1]))  # environment 1 hangs in its 2nd step
    waited = time.monotonic() - start
    assert type(raised.value).__name__ == 'EnvironmentTimeoutError'
    assert str(raised.value) == (
        "environment 1 (CartPole-v1) did not finish its step within 3 s of "
        "the request to stop; it is not stepped again"
    )
    assert STOP_GRACE_SECONDS <= waited < 30.0


def test_a_hung_worker_is_shut_down_soon_after_a_stop_request():
    env = ParallelPyEnvironment(_cart_pole_constructors(2), step_timeout=60.0)
    processes = [w.process for w in env._workers]
    try:
        env.reset()
        os.kill(env.pids[1], signal.SIGSTOP)
        announce_stop()
        start = time.monotonic()
        with pytest.raises(RuntimeError) as raised:
            env.step(np.array([0, 1], np.int64))
        waited = time.monotonic() - start
        message = str(raised.value)
        assert message.startswith(
            "ParallelPyEnvironment: the worker of environment 1 (pid %d, "
            % processes[1].pid
        )
        assert "did not answer step within 3 s of the request to stop " in (
            message
        )
        assert STOP_GRACE_SECONDS <= waited < 30.0
    finally:
        env.close()
    assert all(p.poll() is not None for p in processes)


def test_the_learner_stops_waiting_for_actors_after_a_stop_request():
    queue = MessageQueue(4, threading.Event())
    announce_stop()
    start = time.monotonic()
    with pytest.raises(
        WaitCancelled,
        match=r"^no actor sent experience "
        r"within 3 s of the request to stop \(2 actors\)$",
    ):
        queue.get(300.0, lambda: '2 actors')
    assert STOP_GRACE_SECONDS <= time.monotonic() - start < 30.0
    # An actor's failure during a stop ends the wait the same way; without
    # a stop it is raised as it is.
    queue.fail(ActorFailedError('actor 1 (environment 1) failed', 1))
    with pytest.raises(WaitCancelled, match=r'actor 1 \(environment 1\)'):
        queue.get(300.0, lambda: '2 actors')
    clear_stop()
    with pytest.raises(ActorFailedError, match='actor 1'):
        queue.get(300.0, lambda: '2 actors')


def test_first_ctrl_c_ends_alf_train_while_an_environment_hangs(tmp_path):
    """One Ctrl-C, default step timeout (60 s): the run ends within a few
    seconds with exit 130, naming the environment; checkpoints stay."""
    root = tmp_path / 'run'
    proc = start_hanging_run(tmp_path, ['TrainerConfig.checkpoint_interval=1'])
    try:
        proc.send_signal(signal.SIGINT)
        start = time.monotonic()
        out, err = proc.communicate(timeout=50)  # well below the 60 s
        waited = time.monotonic() - start
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (out, err)
    last = err.strip().splitlines()[-1]
    assert last.startswith(
        'alf-train: interrupted: training stopped at iteration '
    ), err
    assert (
        'environment 1 (CartPole-v1) did not finish its step within 3 s '
        'of the request to stop' in last
    ), err
    assert 'Traceback' not in err
    print('Ctrl-C to exit: %.1f s' % waited)
    assert waited < 45.0
    assert any(n.startswith('ckpt-') for n in os.listdir(root / 'ckpt'))
