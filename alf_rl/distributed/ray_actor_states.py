"""The learner-side bookkeeping of ``RayActorPool``'s actors.

``ActorStates`` follows each actor through its lifecycle (alive, restarting
after a death or a hang, dead for good) with the rollout-owned values it
must restart from; ``WeightBroadcast`` holds the newest published weights
and puts them into Ray's object store at most once per broadcast interval.
Neither talks to Ray's actors; ``alf_rl.distributed.ray_actors`` does.
"""

import logging
import threading
import time
from typing import Any, Callable, List, Optional, Tuple

import numpy as np

from alf_rl.utils.actor_messages import (ActorFailedError, describe_actor,
                                         one_line_error)


class ActorStates(object):
    """Per-actor state of a Ray actor pool: alive or restarting, deaths,
    whether it sent a message since it (re)started, when it was last asked,
    and its rollout-owned values (of its last message; to send with its
    next request after a restart).

    Args:
        num_actors: actors in the pool.
        batch_size: B, environments per actor (for messages).
        max_restarts: restarts Ray gives each actor
            (``RayConfig.max_restarts``).
    """

    def __init__(self, num_actors: int, batch_size: int, max_restarts: int):
        self._batch = batch_size
        self._max_restarts = max_restarts
        self.deaths = [0] * num_actors
        self.alive = [False] * num_actors
        self.owned: List[Any] = [None] * num_actors  # of the last message
        self.push_owned: List[Any] = [None] * num_actors  # for next request
        self.requested = [0.0] * num_actors  # time of the last request
        # Whether each actor sent a message since it (re)started.
        self.delivered = [False] * num_actors
        self.restarts = 0  # over all actors

    def start(self, owned: List[np.ndarray]) -> None:
        """Every actor alive, starting from the learner's rollout-owned
        values ``owned``."""
        n = len(self.alive)
        self.owned = [owned] * n
        self.push_owned = [owned] * n
        self.alive = [True] * n

    def request(self, index: int) -> Any:
        """Records a request to actor ``index`` now; returns the
        rollout-owned values to send with it (None: none to push)."""
        owned, self.push_owned[index] = self.push_owned[index], None
        self.requested[index] = time.time()
        return owned

    def received(self, index: int, rollout_owned: Any) -> None:
        """Actor ``index`` sent a message with these rollout-owned
        values."""
        self.owned[index] = rollout_owned
        self.alive[index] = self.delivered[index] = True

    def waited_too_long(self, index: int, now: float,
                        timeout: Optional[float]) -> bool:
        """Whether actor ``index``'s request is older than ``timeout``
        seconds, once it has sent a message since it (re)started (the
        first unroll also traces)."""
        return (timeout is not None and self.delivered[index]
                and now - self.requested[index] >= timeout)

    def hung(self, index: int, waited: float, timeout: float) -> None:
        """Records that actor ``index`` sent nothing for ``waited`` s (the
        caller kills it; Ray restarts it).

        Raises:
            ActorFailedError: the hang is one more than ``max_restarts``.
        """
        where = describe_actor(index, self._batch)
        if self.deaths[index] >= self._max_restarts:
            raise ActorFailedError(
                "%s sent no experience for %.0f s "
                "(RayConfig.unroll_timeout_secs=%g): its environment "
                "may hang; Ray restarts it no more "
                "(RayConfig.max_restarts=%d)" %
                (where, waited, timeout, self._max_restarts), index)
        self.push_owned[index] = self.owned[index]
        self.alive[index] = self.delivered[index] = False
        self.deaths[index] += 1
        self.restarts += 1
        logging.warning(
            "%s sent no experience for %.0f s (RayConfig."
            "unroll_timeout_secs=%g): its environment may hang; killed, "
            "Ray restarts it (restart %d, RayConfig.max_restarts=%d)",
            where, waited, timeout, self.deaths[index], self._max_restarts)

    def died(self, index: int, error: Any) -> ActorFailedError:
        """The ``ActorFailedError`` of actor ``index``, dead for good
        (``error``: Ray's ``ActorDiedError``)."""
        where = describe_actor(index, self._batch)
        if error.actor_init_failed:
            return ActorFailedError(
                '%s could not start: %s' % (where, one_line_error(error)), index)
        return ActorFailedError(
            "%s: its process died and Ray restarts it no more "
            "(RayConfig.max_restarts=%d, restarted %d times); %s" %
            (where, self._max_restarts, self.deaths[index],
             one_line_error(error)), index)

    def unavailable(self, index: int, error: BaseException) -> None:
        """Actor ``index``'s call failed because its process died (Ray
        restarts it) or while it is restarting: counts the death once."""
        # The restarted actor starts from scratch: its next request carries
        # its last message's rollout-owned values, and it loads the
        # weights (its version is unset).
        self.push_owned[index] = self.owned[index]
        self.delivered[index] = False
        if not self.alive[index]:
            return  # still restarting
        self.alive[index] = False
        self.deaths[index] += 1
        self.restarts += 1
        logging.warning(
            "%s: its process died or is unreachable (%s); Ray restarts it "
            "(restart %d, RayConfig.max_restarts=%d)",
            describe_actor(index, self._batch), one_line_error(error),
            self.deaths[index], self._max_restarts)


class WeightBroadcast(object):
    """The newest published weights, put into Ray's object store once per
    broadcast interval (not once per request).

    Args:
        put: ``ray.put``.
        interval_secs: least seconds between two puts
            (``RayConfig.broadcast_interval_secs``).
    """

    def __init__(self, put: Callable[[Any], Any], interval_secs: float):
        self._put = put
        self._interval = interval_secs
        self._lock = threading.Lock()
        self._latest: Optional[Tuple[int, List[Any]]] = None
        self._sent: Tuple[Any, Any, float] = (None, None, 0.0)
        self.count = 0  # puts since the pool's last ``stats()``

    def publish(self, version: int, weights: List[Any]) -> None:
        """Makes ``weights`` (of the learner's ``version``) the newest."""
        with self._lock:
            self._latest = (int(version), weights)

    def current(self) -> Tuple[Any, Any]:
        """``(version, ObjectRef)`` of the weights to send: the newest,
        put into the object store once per broadcast interval."""
        with self._lock:
            assert self._latest is not None, 'publish before current'
            version, weights = self._latest
        sent, ref, when = self._sent
        now = time.time()
        if version != sent and (ref is None
                                or now - when >= self._interval):
            ref = self._put([np.asarray(w) for w in weights])
            self._sent = (version, ref, now)
            self.count += 1
            sent = version
        return sent, ref
