"""Asynchronous actor-learner training: actors step, the learner trains.

Actors (``RolloutWorker``s, each with its own B environments and a copy
of the policy) keep stepping with the newest weights the learner
published while the learner trains. Their ``ActorMessage``s (K steps of
B environments, and the weights' version) reach the learner through a
bounded queue: an actor whose message does not fit waits, so actors never
run more than ``queue_size`` messages ahead.

An actor pool is where the actors run; each declares the ``ActorPool``
protocol (``alf_rl.utils.actor_pool``: ``num_actors``, ``batch_size``,
``start``, ``publish``, ``get``, ``stats``, ``close``):
- ``ThreadActorPool`` (here): threads of the learner's process. The
  environments of an actor step in the thread (``BatchedPyEnvironment``)
  or in subprocesses (``ParallelPyEnvironment``, spawned: nothing forks a
  process that has TensorFlow); TensorFlow and the subprocess pipes
  release the GIL, so actors and the learner overlap.
- ``alf_rl.distributed.ray_actors.RayActorPool``: Ray actors, on other
  processes and machines.

``AsyncOffPolicyDriver`` is the learner's side: it takes a message, folds
each of its K/T iterations of T steps into the metrics, the normalizers'
statistics and the replay buffer exactly as the synchronous driver does
per step, calls the training function, and publishes the new weights.

Policy lag: a message collected with version v and trained on at learner
version u has lag u - v (learner updates, i.e. iterations). A message
whose lag exceeds ``max_policy_lag`` is not trained on: its steps still
count (metrics, normalizer statistics, the replay buffer) but its
iterations do not run (``async/dropped_messages``); the lags of the
messages trained on are reported (``async/policy_lag_mean``, ``..._max``).
Off-policy methods do not need the data to come from the current policy;
PPO corrects by its ratio to the behaviour policy stored in the
experience; A2C by ``ActorCriticLoss(off_policy_correction='vtrace')``.
"""

import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from alf_rl.data_structures import LossInfo, experience_to_time_step
from alf_rl.drivers.driver import continue_condition
from alf_rl.drivers.rollout_worker import (ActorMessage, RolloutWorker,
                                           publishable_variables, snapshot)
from alf_rl.metrics import default_metrics
from alf_rl.utils.actor_messages import (ActorFailedError, MessageQueue,
                                         describe_actor, one_line_error)
from alf_rl.utils.actor_pool import ACTOR_POOL_MEMBERS, ActorPool
from alf_rl.utils.common import loop_traced_once
from alf_rl.utils.nest import Nest


class ThreadActorPool(ActorPool):
    """Actors as threads of the learner's process (an ``ActorPool``).

    Args:
        workers: one ``RolloutWorker`` per actor (actor i is
            ``workers[i]``), all with the same batch size.
        queue_size: messages that may wait for the learner (>= 1).
    Raises:
        ValueError: no workers, batch sizes differ, or ``queue_size`` < 1.
    """

    def __init__(self, workers: Sequence[RolloutWorker], queue_size: int):
        if not workers:
            raise ValueError("ThreadActorPool: needs at least one worker")
        sizes = sorted({w.batch_size for w in workers})
        if len(sizes) != 1:
            raise ValueError("ThreadActorPool: workers have different "
                             "batch sizes %s" % sizes)
        if int(queue_size) < 1:
            raise ValueError("ThreadActorPool: queue_size must be >= 1, "
                             "got %r" % (queue_size, ))
        self._workers = list(workers)
        self._stop = threading.Event()
        self._queue = MessageQueue(queue_size, self._stop)
        self._lock = threading.Lock()
        self._latest = None  # (version, weights)
        self._threads = []

    @property
    def num_actors(self) -> int:
        """The number of actors."""
        return len(self._workers)

    @property
    def batch_size(self) -> int:
        """B, environments per actor."""
        return self._workers[0].batch_size

    def start(self, version: int, weights: List[Any],
              rollout_owned: List[Any]) -> None:
        """Loads the weights into every worker and starts the threads.

        Args:
            version: the learner's version of ``weights``.
            weights: ``snapshot(publishable_variables(learner))``.
            rollout_owned: the learner's values of the rollout-owned
                variables (a resumed run's actors continue from them).
        """
        self._latest = (version, weights)
        for worker in self._workers:
            worker.set_weights(version, weights, rollout_owned)
            thread = threading.Thread(target=self._run, args=(worker, ),
                                      name='alf_rl-actor-%d' %
                                      worker.actor_index,
                                      daemon=True)
            thread.start()
            self._threads.append(thread)

    def publish(self, version: int, weights: List[Any]) -> None:
        """Makes ``weights`` the newest: each actor loads them before its
        next unroll.

        Args:
            version: the learner's version (update count) of ``weights``.
            weights: immutable tensors (``snapshot``) in
                ``publishable_variables`` order.
        """
        with self._lock:
            self._latest = (version, weights)

    def _run(self, worker):
        try:
            while not self._stop.is_set():
                with self._lock:
                    version, weights = self._latest
                if version != worker.policy_version:
                    worker.set_weights(version, weights)
                if not self._queue.put(worker.unroll()):
                    return
        except Exception as e:  # reported to the learner, which raises
            if not self._stop.is_set():
                self._queue.fail(ActorFailedError(
                    '%s failed: %s' % (describe_actor(
                        worker.actor_index, worker.batch_size),
                                       one_line_error(worker.env.last_error
                                                      or e)),
                    worker.actor_index, worker.env.last_error))

    def get(self, timeout: float) -> ActorMessage:
        """The next message of any actor.

        Args:
            timeout: seconds to wait for one.
        Raises:
            ActorFailedError: an actor failed (naming it and its
                environments), or none sent a message within ``timeout``.
        """
        return self._queue.get(timeout, lambda: '%d actors running' % sum(
            t.is_alive() for t in self._threads))

    def stats(self) -> Dict[str, float]:
        """Pool summaries: ``{'async/queue_size': messages waiting}``."""
        return {'async/queue_size': float(self._queue.qsize())}

    def close(self) -> None:
        """Stops the threads (each finishes its unroll) and closes every
        worker's environments."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)
        self._threads = []
        for worker in self._workers:
            worker.close()


class AsyncOffPolicyDriver(object):
    """The learner's side of asynchronous training.

    Args:
        algorithm: the learner's algorithm (optimizers built).
        pool: an ``ActorPool`` (``ThreadActorPool``, ``RayActorPool`` or
            a user's).
        iteration_length: T, steps per environment per iteration (the
            trainer's ``unroll_length``); a message holds K = ``k * T``.
        replayer: the replayer of ``num_actors * B`` environments that
            every iteration's steps are written to (off-policy), or None
            (on-policy: the training function gets the steps).
        max_policy_lag: drop messages older than this many learner updates.
        message_timeout: seconds to wait for a message before failing.
        metrics: metrics over all ``num_actors * B`` environments
            (default: the standard four).
        use_tf_functions: compile the learner's processing of a message.
    Raises:
        TypeError: ``pool`` lacks a member of ``ActorPool`` (named).
    """

    def __init__(self,
                 algorithm: Any,
                 pool: ActorPool,
                 iteration_length: int,
                 replayer: Optional[Any] = None,
                 max_policy_lag: int = 100,
                 message_timeout: float = 300.0,
                 metrics: Optional[List[Any]] = None,
                 use_tf_functions: bool = True):
        if not isinstance(pool, ActorPool):
            missing = [name for name in ACTOR_POOL_MEMBERS
                       if not hasattr(pool, name)]
            raise TypeError("AsyncOffPolicyDriver: pool %r is not an "
                            "ActorPool (missing: %s)" %
                            (pool, ', '.join(missing)))
        self._algorithm = algorithm
        self._pool = pool
        self._length = int(iteration_length)
        self._replayer = replayer
        self._max_lag = int(max_policy_lag)
        self._timeout = float(message_timeout)
        num_envs = pool.num_actors * pool.batch_size
        self._metrics = (default_metrics(num_envs)
                         if metrics is None else list(metrics))
        self._use_tf_functions = use_tf_functions
        self._published = publishable_variables(algorithm)
        self._owned = list(algorithm.rollout_owned_variables())
        self._version = 0
        self._started = False
        self._message = None  # the message being trained on
        self._next = 0  # its next iteration
        self._lags = []
        self._dropped = 0
        self._process_fns = {}

    @property
    def metrics(self) -> List[Any]:
        """The learner's metrics over all actors' environments."""
        return self._metrics

    @property
    def started(self) -> bool:
        """Whether ``start`` ran (the actors are stepping)."""
        return self._started

    @property
    def pool(self) -> ActorPool:
        """The actor pool."""
        return self._pool

    def start(self, version: int) -> None:
        """Starts the actors with the learner's current weights.

        Args:
            version: the learner's update count (its iteration; a resumed
                run's continues).
        """
        self._version = int(version)
        self._pool.start(self._version, snapshot(self._published),
                         snapshot(self._owned))
        self._started = True

    def _take_message(self):
        """The next message within the lag bound. Older ones are folded in
        without training (their steps count: metrics, statistics, replay)
        and counted in ``async/dropped_messages``."""
        while True:
            message = self._pool.get(self._timeout)
            lag = self._version - int(message.policy_version)
            if lag <= self._max_lag:
                self._lags.append(lag)
                return message
            self._dropped += 1
            iterations = _num_steps(message.experience) // self._length
            self._process_fn(None, None, True)(
                message.experience, tf.constant(0, tf.int32),
                tf.constant(iterations, tf.int32))
            self._after_message(message)

    def run_iterations(
            self, num_iterations: int,
            train_fn: Callable[[Nest], LossInfo],
            stop_fn: Optional[Callable[[], tf.Tensor]] = None,
            observe_only: bool = False) -> Tuple[Any, int]:
        """Trains up to ``num_iterations`` iterations from the actors'
        messages (those left in the current message first).

        Args:
            num_iterations: the most iterations (>= 1).
            train_fn: ``(steps) -> reduced LossInfo``, called once per
                iteration with that iteration's steps, time-major [T, B,
                ...] of one actor (on-policy training uses them; replay
                training samples its buffer instead). Fixed at first call.
            stop_fn: ``() -> scalar bool``, checked after every iteration.
            observe_only: fold the steps in without training (collection
                before the first update); returns ``(None, iterations)``.
        Returns:
            ``(loss_info, iterations_done)`` like the synchronous driver.
        Raises:
            ActorFailedError: an actor failed or none sent experience.
        """
        if not self._started:
            self.start(self._version)
        if self._message is None:
            self._message = self._take_message()
            self._next = 0
        exp = self._message.experience
        available = _num_steps(exp) // self._length - self._next
        count = min(int(num_iterations), available)
        fn = self._process_fn(train_fn, stop_fn, observe_only)
        result, done = fn(exp, tf.constant(self._next, tf.int32),
                          tf.constant(count, tf.int32))
        done = int(done)
        self._next += done
        if self._next * self._length >= _num_steps(exp):
            self._after_message(self._message)
        if not observe_only:
            self._version += done
            self._pool.publish(self._version, snapshot(self._published))
        return result, done

    def _after_message(self, message):
        for variable, value in zip(self._owned, message.rollout_owned):
            variable.assign(value)
        self._message = None

    def _process_fn(self, train_fn, stop_fn, observe_only):
        key = bool(observe_only)
        if key not in self._process_fns:
            fn = self._make_process_fn(train_fn, stop_fn, observe_only)
            self._process_fns[key] = (tf.function(fn, autograph=False)
                                      if self._use_tf_functions else fn)
        return self._process_fns[key]

    def _make_process_fn(self, train_fn, stop_fn, observe_only):
        length = self._length

        def _process(exp, start, count):

            def _iteration(i, carry):
                steps = tf.range((start + i) * length,
                                 (start + i + 1) * length)
                rows = tf.nest.map_structure(
                    lambda x: tf.ensure_shape(
                        tf.gather(x, steps), [length] + x.shape[1:]), exp)
                self._observe(rows)
                if observe_only:
                    return carry, tf.constant(0)
                with tf.control_dependencies(tf.nest.flatten(rows)):
                    return carry, train_fn(rows)

            _, result, done = loop_traced_once(
                _iteration, (), count,
                keep_going=None if observe_only else continue_condition(stop_fn))
            return result, done

        return _process

    def _observe(self, rows):
        """Folds [T, B] steps into the metrics, the normalizers'
        statistics and the replay buffer, step by step in time order (as
        the synchronous driver does while stepping)."""

        def _body(t, token):
            exp = tf.nest.map_structure(lambda x: x[t], rows)
            time_step = experience_to_time_step(exp)
            ops = [m(time_step, env_ids=exp.env_id) for m in self._metrics]
            transformed = self._algorithm.transform_timestep(
                time_step, update_normalizers=True)
            ops += tf.nest.flatten(transformed)
            if self._replayer is not None:
                ops.append(self._replayer.observe(exp))
            with tf.control_dependencies([o for o in ops if o is not None]):
                return t + 1, tf.identity(token)

        tf.while_loop(lambda t, _: t < self._length, _body,
                      (tf.constant(0), tf.constant(0)))

    def stats(self) -> Dict[str, float]:
        """Summaries since the last call: the policy lag of the messages
        used (mean, max), messages dropped as too old, and the pool's."""
        result = dict(self._pool.stats())
        if self._lags:
            result['async/policy_lag_mean'] = float(np.mean(self._lags))
            result['async/policy_lag_max'] = float(np.max(self._lags))
        result['async/dropped_messages'] = float(self._dropped)
        self._lags = []
        return result

    def close(self) -> None:
        """Stops the actors."""
        self._pool.close()


def _num_steps(exp):
    """K, the steps per environment of a [K, B, ...] message."""
    return int(tf.nest.flatten(exp)[0].shape[0])
