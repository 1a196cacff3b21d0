"""``ActorPool``: the interface every actor pool of asynchronous training
provides (``AsyncOffPolicyDriver`` uses nothing else).

Two pools declare it: ``ThreadActorPool`` (threads of the learner's
process, ``alf_rl.drivers.async_off_policy_driver``) and ``RayActorPool``
(Ray actors, ``alf_rl.distributed.ray_actors``). A pool of one's own (e.g.
actors on another engine) subclasses ``ActorPool`` and implements its
members; ``isinstance(pool, ActorPool)`` checks that they are there.

Pure Python (no TensorFlow): a Ray actor process imports the Ray pool's
module before it imports TensorFlow quietly.
"""

from typing import (Any, Dict, List, Protocol,
                    runtime_checkable)

# An ``alf_rl.drivers.ActorMessage`` (drivers sit above utils, and this
# module must not import TensorFlow).
ActorMessage = Any

#: The members ``ActorPool`` declares (errors name the missing ones).
ACTOR_POOL_MEMBERS = ('num_actors', 'batch_size', 'start', 'publish', 'get',
                      'stats', 'close')


@runtime_checkable
class ActorPool(Protocol):
    """Where the actors of asynchronous training run.

    Each actor owns B environments and a copy of the policy; it unrolls K
    steps of them with the newest weights the learner published and
    sends the learner an ``ActorMessage`` (experience [B, K, ...] numpy or
    tensors, the weights' version, its rollout-owned values) through a
    bounded queue.
    """

    @property
    def num_actors(self) -> int:
        """The number of actors."""
        ...

    @property
    def batch_size(self) -> int:
        """B, environments per actor (the same for every actor)."""
        ...

    def start(self, version: int, weights: List[Any],
              rollout_owned: List[Any]) -> None:
        """Starts the actors with the learner's weights.

        Args:
            version: the learner's version (update count) of ``weights``.
            weights: ``snapshot(publishable_variables(learner))``.
            rollout_owned: the learner's values of the rollout-owned
                variables (a resumed run's actors continue from them).
        """
        ...

    def publish(self, version: int, weights: List[Any]) -> None:
        """Makes ``weights`` the newest: the actors load them before their
        next unroll.

        Args:
            version: the learner's version of ``weights``.
            weights: in ``publishable_variables`` order.
        """
        ...

    def get(self, timeout: float) -> 'ActorMessage':
        """The next ``ActorMessage`` of any actor.

        Args:
            timeout: seconds to wait for one.
        Raises:
            ActorFailedError: an actor failed (naming it and its
                environments), or none sent a message within ``timeout``.
        """
        ...

    def stats(self) -> Dict[str, float]:
        """Summaries of the pool since the last call (at least
        ``'async/queue_size'``: messages waiting)."""
        ...

    def close(self) -> None:
        """Stops the actors and closes their environments; safe to call
        twice."""
        ...
