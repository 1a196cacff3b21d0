"""``ActorPool`` conformance: the thread and Ray pools declare the protocol
and implement every member with the protocol's signature; the driver
refuses a pool that lacks one, naming it."""

import inspect

import pytest

from alf_rl.distributed.ray_actors import RayActorPool
from alf_rl.drivers.async_off_policy_driver import (AsyncOffPolicyDriver,
                                                    ThreadActorPool)
from alf_rl.utils.actor_pool import ACTOR_POOL_MEMBERS, ActorPool

_POOLS = [ThreadActorPool, RayActorPool]


def test_members_list_is_the_protocols():
    declared = {name for name, value in vars(ActorPool).items()
                if not name.startswith('_') and
                (callable(value) or isinstance(value, property))}
    assert declared == set(ACTOR_POOL_MEMBERS)


@pytest.mark.parametrize('pool', _POOLS, ids=lambda c: c.__name__)
def test_pool_declares_and_implements_the_protocol(pool):
    assert ActorPool in pool.__mro__  # declared, not only structural
    for name in ACTOR_POOL_MEMBERS:
        expected = inspect.getattr_static(ActorPool, name)
        actual = inspect.getattr_static(pool, name)
        assert actual is not expected, '%s.%s not implemented' % (
            pool.__name__, name)
        if isinstance(expected, property):
            assert isinstance(actual, property), name
            expected, actual = expected.fget, actual.fget
        want, got = inspect.signature(expected), inspect.signature(actual)
        assert list(got.parameters) == list(want.parameters), name
        assert (getattr(got.return_annotation, '__name__',
                        got.return_annotation) ==
                getattr(want.return_annotation, '__name__',
                        want.return_annotation)), name


def test_a_thread_pool_instance_is_an_actor_pool():
    class _Worker(object):
        batch_size = 3

    pool = ThreadActorPool([_Worker(), _Worker()], queue_size=1)
    assert isinstance(pool, ActorPool)
    assert (pool.num_actors, pool.batch_size) == (2, 3)
    assert pool.stats() == {'async/queue_size': 0.0}


def test_the_driver_refuses_a_pool_without_the_protocol_naming_what_lacks():
    class _Half(object):
        num_actors = 1
        batch_size = 1

        def get(self, timeout):
            return None

    with pytest.raises(TypeError, match=r'AsyncOffPolicyDriver: pool .* is '
                       r'not an ActorPool \(missing: start, publish, stats, '
                       r'close\)'):
        AsyncOffPolicyDriver(algorithm=None, pool=_Half(),
                             iteration_length=4)
