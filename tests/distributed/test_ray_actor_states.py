"""The learner-side actor bookkeeping of the Ray pool (no Ray needed)."""

import pytest

from alf_rl.distributed.ray_actor_states import ActorStates, WeightBroadcast
from alf_rl.utils.actor_messages import ActorFailedError


def test_a_death_counts_once_and_a_restart_resends_the_owned_values():
    states = ActorStates(2, batch_size=3, max_restarts=1)
    states.start([7])
    assert states.request(0) == [7] and states.request(0) is None
    states.received(0, [9])
    states.unavailable(0, RuntimeError('gone'))
    states.unavailable(0, RuntimeError('still gone'))
    assert states.deaths == [1, 0] and states.restarts == 1
    assert states.alive == [False, True]
    assert states.request(0) == [9]


def test_a_hang_is_one_restart_then_fails_naming_the_actor():
    states = ActorStates(1, batch_size=3, max_restarts=1)
    states.start([0])
    states.request(0)
    assert not states.waited_too_long(0, states.requested[0] + 100, 5.0)
    states.received(0, [1])
    assert states.waited_too_long(0, states.requested[0] + 5.0, 5.0)
    assert not states.waited_too_long(0, states.requested[0] + 100, None)
    states.hung(0, 6.0, 5.0)
    assert states.deaths == [1] and states.request(0) == [1]
    with pytest.raises(ActorFailedError, match='sent no experience for 6 s'):
        states.hung(0, 6.0, 5.0)


def test_weights_are_put_once_per_interval():
    puts = []
    broadcast = WeightBroadcast(lambda w: puts.append(w) or len(puts),
                                interval_secs=3600.0)
    broadcast.publish(1, [1.0])
    assert broadcast.current() == (1, 1)
    broadcast.publish(2, [2.0])
    assert broadcast.current() == (1, 1)  # within the interval
    assert broadcast.count == 1 and len(puts) == 1
