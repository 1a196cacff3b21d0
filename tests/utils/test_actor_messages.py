"""The actor/learner hand-off: MessageQueue and ActorFailedError."""

import threading

import pytest

from alf_rl.utils.actor_messages import (ActorFailedError, MessageQueue,
                                         describe_actor, one_line_error)


def test_messages_in_order_and_a_failure_wins():
    stop = threading.Event()
    q = MessageQueue(2, stop)
    assert q.put('a') and q.put('b')
    assert q.qsize() == 2
    assert q.get(1.0, lambda: '') == 'a'
    q.fail(ActorFailedError('actor 1 (environment 1) failed: boom', 1))
    with pytest.raises(ActorFailedError, match='actor 1') as info:
        q.get(1.0, lambda: '')
    assert info.value.actor_index == 1


def test_put_gives_up_when_stopped_and_get_times_out_in_one_line():
    stop = threading.Event()
    q = MessageQueue(1, stop)
    assert q.put('a')
    threading.Timer(0.2, stop.set).start()
    assert not q.put('b')  # full until the pool closed
    q.get(1.0, lambda: '')
    with pytest.raises(ActorFailedError) as info:
        q.get(0.1, lambda: '2 actors running')
    assert str(info.value) == ('no actor sent experience for 0 s (2 actors '
                               'running); an environment may hang')
    assert info.value.actor_index == -1


def test_descriptions():
    assert describe_actor(2, 2) == 'actor 2 (environments 4-5)'
    assert describe_actor(0, 1) == 'actor 0 (environment 0)'
    assert one_line_error(RuntimeError('a\n\n  last line  \n')) == (
        'RuntimeError: last line')


def test_a_suspension_of_the_process_does_not_time_out_the_wait(monkeypatch):
    """A process stopped for 10 minutes (Ctrl-Z) while the learner waits:
    the gap counts as 2 s of the 5 s timeout, and the message that comes
    after waking is returned (it timed out at once before)."""
    import time

    from alf_rl.utils import stop_request

    real, calls = time.monotonic, [0]

    def monotonic():
        calls[0] += 1
        return real() + (600.0 if calls[0] > 1 else 0.0)

    monkeypatch.setattr(stop_request.time, 'monotonic', monotonic)
    q = MessageQueue(1, threading.Event())
    threading.Timer(0.3, q.put, args=('late',)).start()
    assert q.get(5.0, lambda: '1 actor running') == 'late'
