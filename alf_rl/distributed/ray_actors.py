"""Ray actors: rollout workers in other processes and on other machines.

``RayActorPool`` is the actor pool of ``AsyncOffPolicyTrainer(actors='ray')``
(the ``ActorPool`` protocol, as ``ThreadActorPool``): each actor is a Ray actor
process that parses the learner's gin config, builds its own B
environments and a copy of the algorithm (TensorFlow is imported there,
with its start-up notices silenced) and runs a ``RolloutWorker``. Ray is
the engine (the ``[dist]`` extra): scheduling, the object store, restarts.
Importing this module does not import Ray.

Data flow:

- weights, learner -> actors: ``publish`` keeps the newest; a collector
  thread ``ray.put``s it once per broadcast (at most one every
  ``RayConfig.broadcast_interval_secs``) and passes the same object
  reference with every actor's next request; an actor fetches it only when
  its version changed.
- experience, actors -> learner: one unroll request is in flight per actor;
  the collector ``ray.wait``s on them and moves each ``ActorMessage``
  (numpy nests, [K, B, ...]) into a bounded queue. While the queue is full
  it requests nothing more (backpressure), so at most ``queue_size +
  num_actors`` messages exist.

Faults: an actor process that dies (crash, out of memory, its node lost)
is restarted by Ray (``RayConfig.max_restarts``, which re-runs its
constructor); the pool counts it (``ray/actor_restarts``), hands the
restarted actor the newest weights and the rollout-owned values of its
last message, and goes on. One more death than ``max_restarts`` for the
same actor, an actor that cannot start (e.g. a gin or environment error in
its constructor), or an exception raised by an actor's environment stop
training with an ``ActorFailedError`` naming the actor.

Configuration (gin, ``RayConfig``), e.g. to run ``sac_pendulum.gin`` on
four Ray actors of a local Ray instance::

    TrainerConfig.trainer = @AsyncOffPolicyTrainer
    AsyncOffPolicyTrainer.actors = 'ray'
    AsyncOffPolicyTrainer.num_actors = 4

and ``RayConfig.address = 'auto'`` to use a cluster started with ``ray
start`` (see ``docs/distributed.md``).
"""

import dataclasses
import os
import pickle
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence

import gin
import numpy as np

from alf_rl.distributed.ray_actor_states import ActorStates, WeightBroadcast
from alf_rl.utils.actor_messages import (ActorFailedError, MessageQueue,
                                         describe_actor, one_line_error)
from alf_rl.utils.actor_pool import ActorPool
from alf_rl.utils.quiet_stderr import notices_dropped
from alf_rl.utils.worker_config import WorkerConfig

if TYPE_CHECKING:  # for annotations; imported where used (TensorFlow)
    from alf_rl.drivers.rollout_worker import ActorMessage

# Seconds to wait for actors to build their environments and policies
# (TensorFlow import and tracing: ~10-20 s each on a busy 2-core machine).
_START_TIMEOUT = 600.0
# Seconds each actor gets to close its environments at ``close()``.
_CLOSE_TIMEOUT = 10.0
# Seconds between requests to an actor that Ray is restarting.
_RETRY_SECS = 0.5


def _import_ray() -> Any:
    """``import ray``, or one line saying how to install it."""
    try:
        import ray
    except ImportError as e:
        raise ImportError(
            "Ray actors need Ray: pip install alf_rl[dist] (%s)" % e) from e
    return ray


@gin.configurable
class RayConfig(object):
    """Where and how the Ray actors run.

    Args:
        address: None: start a local Ray instance in this process (shut
            down when training ends); ``'auto'``: connect to the cluster
            ``ray start`` started on this machine; ``'host:port'``: connect
            to that cluster's head node. If Ray is already initialized in
            this process (``ray.init`` called by the user) that instance is
            used and left running.
        num_cpus: logical CPUs of a local instance (None: the machine's
            cores, or ``num_actors * num_cpus_per_actor`` if more: actors
            mostly wait on their environments).
        num_cpus_per_actor: Ray CPUs each actor reserves (0.5 packs two per
            CPU); also its TensorFlow intra-op threads (at least 1).
        object_store_memory: bytes of a local instance's object store (Ray's
            default takes 30% of memory; weights and messages need little).
            A cluster's nodes set theirs with ``ray start
            --object-store-memory``.
        max_restarts: how many times Ray restarts one actor whose process
            died; one death more stops training.
        broadcast_interval_secs: at most one ``ray.put`` of new weights per
            this many seconds (0: every request carries the newest).
        include_dashboard: start Ray's dashboard with a local instance.
        unroll_timeout_secs: seconds an actor that already sent a message
            since it (re)started may take for its next one; past it the
            actor is taken as hung (a stuck environment): one warning line
            names it, it is killed and Ray restarts it (a restart counted
            against ``max_restarts``) while the other actors go on. None:
            no limit (the learner's ``message_timeout`` still applies when
            no actor sends anything).
    Raises:
        TypeError, ValueError: a setting of the wrong type or range.
    """

    def __init__(self,
                 address: Optional[str] = None,
                 num_cpus: Optional[int] = None,
                 num_cpus_per_actor: float = 1.0,
                 object_store_memory: int = 200 * 1024 * 1024,
                 max_restarts: int = 3,
                 broadcast_interval_secs: float = 0.0,
                 include_dashboard: bool = False,
                 unroll_timeout_secs: Optional[float] = 120.0):
        if address is not None and not isinstance(address, str):
            raise TypeError("RayConfig.address: expected None, 'auto' or "
                            "'host:port', got %r" % (address, ))
        for name, value, low in (('num_cpus', num_cpus or 1, 1),
                                 ('num_cpus_per_actor', num_cpus_per_actor,
                                  0),
                                 ('object_store_memory', object_store_memory,
                                  1),
                                 ('max_restarts', max_restarts, 0),
                                 ('broadcast_interval_secs',
                                  broadcast_interval_secs, 0)):
            if isinstance(value, bool) or not isinstance(value,
                                                         (int, float)):
                raise TypeError("RayConfig.%s: expected a number, got %r" %
                                (name, value))
            if value < low:
                raise ValueError("RayConfig.%s must be >= %s, got %r" %
                                 (name, low, value))
        if unroll_timeout_secs is not None and (
                isinstance(unroll_timeout_secs, bool) or
                not isinstance(unroll_timeout_secs, (int, float)) or
                not unroll_timeout_secs > 0):
            raise ValueError("RayConfig.unroll_timeout_secs: expected a "
                             "number of seconds > 0 or None, got %r" %
                             (unroll_timeout_secs, ))
        self.address = address
        self.num_cpus = num_cpus
        self.num_cpus_per_actor = float(num_cpus_per_actor)
        self.object_store_memory = int(object_store_memory)
        self.max_restarts = int(max_restarts)
        self.broadcast_interval_secs = float(broadcast_interval_secs)
        self.include_dashboard = bool(include_dashboard)
        self.unroll_timeout_secs = (None if unroll_timeout_secs is None else
                                    float(unroll_timeout_secs))


def _connect(config: RayConfig, cpus_needed: float) -> bool:
    """Starts or connects to Ray as ``config`` says; True if this call did
    (then ``ray.shutdown()`` undoes it). Raises ``ValueError`` when the
    cluster has fewer CPUs than the actors reserve (they would wait for
    ever)."""
    ray = _import_ray()
    started = False
    if not ray.is_initialized():
        # Read when Ray starts; a cluster's nodes take theirs from
        # `ray start --disable-usage-stats` or their own environment.
        os.environ.setdefault('RAY_USAGE_STATS_ENABLED', '0')
        if config.address is None:
            cpus = config.num_cpus or max(os.cpu_count() or 1,
                                          int(np.ceil(cpus_needed)))
            ray.init(address='local', num_cpus=cpus,
                     object_store_memory=config.object_store_memory,
                     include_dashboard=config.include_dashboard)
        else:
            ray.init(address=config.address)
        started = True
    available = ray.cluster_resources().get('CPU', 0.0)
    if available < cpus_needed:
        if started:
            ray.shutdown()
        raise ValueError(
            "RayConfig: the Ray cluster has %g CPUs, the actors reserve %g "
            "(num_actors x RayConfig.num_cpus_per_actor): add nodes, or "
            "lower num_cpus_per_actor (0.5 packs two actors per CPU)" %
            (available, cpus_needed))
    return started


def _runtime_env(config: RayConfig,
                 worker_config: WorkerConfig) -> Dict[str, Any]:
    """The actors' environment variables: ``worker_config.module_paths``
    and this process's ``PYTHONPATH`` (user modules, e.g. a test's or a
    script's, importable on this machine's actors before the actor's
    pickled code is loaded), TensorFlow quiet and with one intra-op thread
    per reserved CPU."""
    paths = list(worker_config.module_paths)
    paths += [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep)
              if p and p not in paths]
    threads = str(max(1, int(np.ceil(config.num_cpus_per_actor))))
    env_vars = {
        'PYTHONPATH': os.pathsep.join(dict.fromkeys(paths)),
        'TF_CPP_MIN_LOG_LEVEL': os.environ.get('TF_CPP_MIN_LOG_LEVEL', '3'),
        'TF_NUM_INTEROP_THREADS': os.environ.get('TF_NUM_INTEROP_THREADS',
                                                 '1'),
        'TF_NUM_INTRAOP_THREADS': os.environ.get('TF_NUM_INTRAOP_THREADS',
                                                 threads),
    }
    return {'env_vars': env_vars}


#: The module an actor imports before parsing the learner's gin text when
#: the caller names none: it registers every configurable of alf_rl.
ALL_CONFIGURABLES = 'alf_rl.configurables'


def _import_tensorflow_quietly() -> None:
    """Imports TensorFlow and TFP and starts TensorFlow's runtime (device
    discovery and the first op print CUDA notices) with the notices
    dropped; then TensorFlow's and absl's Python loggers at ERROR/WARNING."""
    with notices_dropped():
        # TFP first: imported after TensorFlow it loads its experimental
        # package eagerly (slower start-up; see alf_rl.bin.quiet).
        import tensorflow_probability  # noqa: F401
        import tensorflow as tf
        tf.config.list_physical_devices()
        tf.constant(0)
    tf.get_logger().setLevel('ERROR')
    from absl import logging as absl_logging
    absl_logging.set_verbosity(absl_logging.WARNING)


class _ActorFailure(object):
    """What an actor returns instead of a message when its unroll raised:
    the error's one-line text and, if it pickles, the error itself."""

    def __init__(self, text: str, error: Optional[BaseException]):
        self.text = text
        self.error = error


class _RolloutActor(object):
    """A ``RolloutWorker`` in a Ray actor process (``ray.remote`` of this
    class is made in ``RayActorPool``).

    Args:
        setup: ``actor_index``, ``env_seed``, ``worker_seed``,
            ``unroll_length``, ``use_tf_functions``, ``worker_config`` (a
            ``WorkerConfig``: applied before anything is built) and
            ``code``: ``(algorithm_ctor, env_factory)`` pickled by the
            learner (unpickling imports their modules, and so TensorFlow,
            which must come after the quiet import here).
    """

    def __init__(self, setup: Dict[str, Any]):
        _import_tensorflow_quietly()
        from alf_rl.drivers.rollout_worker import RolloutWorker
        from alf_rl.environments.utils import create_environment
        setup['worker_config'].apply()
        algorithm_ctor, factory = pickle.loads(setup['code'])
        seed = setup['env_seed']
        env = (create_environment(seed=seed) if factory is None else
               factory(seed))
        algorithm = algorithm_ctor(observation_spec=env.observation_spec(),
                                   action_spec=env.action_spec())
        self._worker = RolloutWorker(env, algorithm, setup['actor_index'],
                                     setup['unroll_length'],
                                     setup['worker_seed'],
                                     setup['use_tf_functions'])

    def describe(self) -> Dict[str, Any]:
        """Its variables' signature, batch size and where it runs."""
        return dict(self.where(),
                    signature=self._worker.variable_signature(),
                    batch_size=self._worker.batch_size)

    def where(self) -> Dict[str, Any]:
        """``{'pid', 'node_id', 'hostname'}`` of this actor's process."""
        import ray
        return {'pid': os.getpid(),
                'node_id': ray.get_runtime_context().get_node_id(),
                'hostname': socket.gethostname()}

    def unroll(self, version: int, weights_ref: List[Any],
               rollout_owned: Optional[List[np.ndarray]]) -> Any:
        """Loads the weights if their version changed (or rollout-owned
        values are given: after a start or restart), then unrolls.

        Args:
            version: the learner's version of the weights.
            weights_ref: ``[ObjectRef]`` of the weights (in a list so that
                Ray does not fetch them for every call).
            rollout_owned: values of the rollout-owned variables, or None.
        Returns:
            ``ActorMessage`` of numpy arrays, or ``_ActorFailure`` when the
            environment (or the policy) raised.
        """
        import ray
        worker = self._worker
        try:
            if version != worker.policy_version or rollout_owned is not None:
                worker.set_weights(version, ray.get(weights_ref[0]),
                                   rollout_owned)
            return worker.unroll(as_numpy=True)
        except Exception as e:  # reported to the learner, which stops
            error = worker.env.last_error or e
            try:
                pickle.dumps(error)
            except Exception:
                error = None
            return _ActorFailure(one_line_error(worker.env.last_error or e),
                                 error)

    def close(self) -> None:
        """Closes the environments."""
        self._worker.close()


def _pickled(algorithm_ctor: Callable[..., Any],
             env_factory: Optional[Callable[[int], Any]]) -> bytes:
    """``(algorithm_ctor, env_factory)`` pickled with Ray's cloudpickle
    (functions of ``__main__`` and lambdas by value, others by module and
    name). Raises ``TypeError`` naming what does not pickle."""
    from ray import cloudpickle
    for name, value in (('algorithm_ctor', algorithm_ctor),
                        ('env_factory', env_factory)):
        try:
            cloudpickle.dumps(value)
        except Exception as e:
            raise TypeError(
                "RayActorPool: %s %r cannot be sent to Ray actors (%s); use "
                "a module-level function or class" %
                (name, value, one_line_error(e))) from e
    return cloudpickle.dumps((algorithm_ctor, env_factory))


def _actor_config(worker_config: Optional[WorkerConfig]) -> WorkerConfig:
    """``worker_config`` (None: ``WorkerConfig.capture()``) with
    ``ALL_CONFIGURABLES`` first among its modules."""
    worker_config = worker_config or WorkerConfig.capture()
    if ALL_CONFIGURABLES in worker_config.modules:
        return worker_config
    return dataclasses.replace(
        worker_config, modules=(ALL_CONFIGURABLES, ) + worker_config.modules)


def _check_counts(**counts: int) -> None:
    """Raises ``ValueError`` naming the first of ``counts`` below 1."""
    for name, value in counts.items():
        if int(value) < 1:
            raise ValueError("RayActorPool: %s must be >= 1, got %r" %
                             (name, value))


def _wait_for_start(ray: Any, index: int, batch_size: int, ref: Any) -> Any:
    """``ray.get(ref)`` of actor ``index``'s first answer (its
    ``describe``), or an ``ActorFailedError`` naming it: it could not start
    (one line of why) or did not within ``_START_TIMEOUT``."""
    try:
        return ray.get(ref, timeout=_START_TIMEOUT)
    except ray.exceptions.GetTimeoutError:
        raise ActorFailedError(
            "%s did not start within %.0f s (is the cluster short of "
            "CPUs or memory? see `ray status`)" %
            (describe_actor(index, batch_size), _START_TIMEOUT),
            index) from None
    except ray.exceptions.RayActorError as e:
        raise ActorFailedError(
            "%s could not start: %s" % (describe_actor(index, batch_size),
                                        one_line_error(e)), index) from e


def _create_actors(ray: Any, config: RayConfig, num_actors: int,
                   common: Dict[str, Any], run_seed: int) -> List[Any]:
    """Starts ``num_actors`` Ray actors of ``_RolloutActor`` (restartable,
    ``config``'s CPUs each); ``common`` is their shared setup, actor i gets
    ``make_worker_seed(run_seed, i)`` (its environments: ``run_seed`` for
    actor 0). Returns the actor handles."""
    from alf_rl.drivers.rollout_worker import make_worker_seed
    cls = ray.remote(_RolloutActor)
    runtime_env = _runtime_env(config, common['worker_config'])
    options = dict(num_cpus=config.num_cpus_per_actor,
                   max_restarts=config.max_restarts,
                   max_task_retries=0,
                   runtime_env=runtime_env)
    actors = []
    for i in range(num_actors):
        seed = make_worker_seed(run_seed, i)
        setup = dict(common, actor_index=i, worker_seed=seed,
                     env_seed=run_seed if i == 0 else seed)
        actors.append(cls.options(**options).remote(setup))
    return actors


class RayActorPool(ActorPool):
    """Actors as Ray actors (see the module docstring); an ``ActorPool``.

    Created by ``AsyncOffPolicyTrainer(actors='ray')``; starts (or connects
    to) Ray and creates the actors at once, so that they build their
    environments and policies while the learner builds its own.

    Args:
        num_actors: actors, each with its own B environments.
        unroll_length: K, steps per environment per message.
        run_seed: the run's seed: actor 0's environments get it, actor i's
            ``make_worker_seed(run_seed, i)`` (as thread actors).
        algorithm_ctor: the learner's algorithm constructor
            (``(observation_spec=, action_spec=) -> RLAlgorithm``); it must
            pickle (a module-level function or class, or gin's).
        env_factory: ``(seed) -> TFEnvironment`` that pickles, or None: the
            gin-configured ``create_environment(seed=...)``.
        batch_size: B the learner expects of every actor.
        queue_size: messages that may wait for the learner (>= 1).
        learner_variables: ``(name, shape, dtype name)`` of the learner's
            published variables; every actor's must match.
        use_tf_functions: compile the actors' unrolls.
        config: where and how to run; None: ``RayConfig()`` (gin).
        worker_config: what every actor applies before it builds anything:
            the learner's gin text and module paths (the caller passes
            ``WorkerConfig.capture(module_paths)``); the actors also import
            ``alf_rl.configurables`` first, so every configurable the text
            names is registered. None: this process's configuration now
            (``WorkerConfig.capture()``).
    Raises:
        ImportError: Ray is not installed.
        TypeError: ``algorithm_ctor`` or ``env_factory`` does not pickle.
        ValueError: a setting out of range, or a cluster with too few CPUs.
    """

    def __init__(self,
                 num_actors: int,
                 unroll_length: int,
                 run_seed: int,
                 algorithm_ctor: Callable[..., Any],
                 env_factory: Optional[Callable[[int], Any]],
                 batch_size: int,
                 queue_size: int,
                 learner_variables: Sequence[tuple],
                 use_tf_functions: bool = True,
                 config: Optional[RayConfig] = None,
                 worker_config: Optional[WorkerConfig] = None):
        _check_counts(num_actors=num_actors, unroll_length=unroll_length,
                      batch_size=batch_size, queue_size=queue_size)
        if env_factory is not None and not callable(env_factory):
            raise TypeError("RayActorPool: env_factory must be a (seed) -> "
                            "TFEnvironment factory or None, got %r" %
                            (env_factory, ))
        self._config = config or RayConfig()
        self._ray = _import_ray()
        self._batch = int(batch_size)
        self._learner_variables = list(learner_variables)
        self._stop = threading.Event()
        self._queue = MessageQueue(queue_size, self._stop)
        self._weights = WeightBroadcast(
            self._ray.put, self._config.broadcast_interval_secs)
        self._thread = None
        self._fetch_seconds = []
        n = self._num_actors = int(num_actors)
        self._actors = []
        self._started_ray = _connect(
            self._config, n * self._config.num_cpus_per_actor)
        try:
            self._actors = _create_actors(self._ray, self._config, n, dict(
                unroll_length=int(unroll_length),
                code=_pickled(algorithm_ctor, env_factory),
                use_tf_functions=bool(use_tf_functions),
                worker_config=_actor_config(worker_config)), int(run_seed))
        except BaseException:
            self.close()
            raise
        self._states = ActorStates(n, self._batch,
                                   self._config.max_restarts)

    @property
    def num_actors(self) -> int:
        """The number of actors."""
        return self._num_actors

    @property
    def batch_size(self) -> int:
        """B, environments per actor."""
        return self._batch

    def start(self, version: int, weights: List[Any],
              rollout_owned: List[Any]) -> None:
        """Waits for the actors to be built, checks their variables against
        the learner's and starts collecting.

        Args:
            version: the learner's version of ``weights``.
            weights: ``snapshot(publishable_variables(learner))``.
            rollout_owned: the learner's values of the rollout-owned
                variables (a resumed run's actors continue from them).
        Raises:
            ActorFailedError: an actor could not start (its constructor
                raised: one line of why) or did not within 10 minutes.
            ValueError: an actor's variables or batch size differ from the
                learner's.
        """
        from alf_rl.drivers.rollout_worker import check_same_variables
        infos = [_wait_for_start(self._ray, i, self._batch,
                                 a.describe.remote())
                 for i, a in enumerate(self._actors)]
        for i, info in enumerate(infos):
            where = describe_actor(i, self._batch)
            check_same_variables(self._learner_variables, info['signature'],
                                 where)
            if info['batch_size'] != self._batch:
                raise ValueError(
                    "%s: has %d environments, the learner expects %d: build "
                    "them with the same create_environment settings" %
                    (where, info['batch_size'], self._batch))
        self._states.start([np.asarray(x) for x in rollout_owned])
        self.publish(version, weights)
        self._thread = threading.Thread(target=self._collect,
                                        name='alf_rl-ray-collector',
                                        daemon=True)
        self._thread.start()

    def publish(self, version: int, weights: List[Any]) -> None:
        """Makes ``weights`` the newest; they reach the actors with their
        next requests (one ``ray.put`` per broadcast).

        Args:
            version: the learner's version (update count) of ``weights``.
            weights: immutable tensors (``snapshot``) or arrays in
                ``publishable_variables`` order.
        """
        self._weights.publish(version, weights)

    def _request(self, index):
        version, ref = self._weights.current()
        owned = self._states.request(index)
        return self._actors[index].unroll.remote(version, [ref], owned)

    def _drop_hung(self, pending, retry):
        """Kills the actors whose request is older than
        ``RayConfig.unroll_timeout_secs`` (once they have sent a message
        since they (re)started: the first unroll also traces); Ray restarts
        them and they are asked again. Raises ``ActorFailedError`` for one
        hang more than ``max_restarts``."""
        timeout = self._config.unroll_timeout_secs
        now = time.time()
        for ref, index in list(pending.items()):
            if not self._states.waited_too_long(index, now, timeout):
                continue
            if self._ray.wait([ref], timeout=0)[0]:
                continue  # its message came while the queue was full
            del pending[ref]
            self._states.hung(index, now - self._states.requested[index],
                              timeout)
            self._ray.kill(self._actors[index], no_restart=False)
            retry[index] = now + _RETRY_SECS

    def _collect(self):
        """The collector thread: one request in flight per actor; each
        message into the queue, then that actor's next request (an actor
        that is restarting is asked again every ``_RETRY_SECS``)."""
        ray = self._ray
        pending = {}  # ObjectRef -> actor index
        retry = {i: 0.0 for i in range(self.num_actors)}  # index -> when
        try:
            while not self._stop.is_set():
                for index, when in list(retry.items()):
                    if time.time() >= when:
                        del retry[index]
                        pending[self._request(index)] = index
                self._drop_hung(pending, retry)
                if not pending:
                    time.sleep(0.05)
                    continue
                ready, _ = ray.wait(list(pending), num_returns=1,
                                    timeout=0.1)
                for ref in ready:
                    index = pending.pop(ref)
                    message = self._fetch(index, ref)
                    if message is None:
                        retry[index] = time.time() + _RETRY_SECS
                    elif self._queue.put(message):
                        pending[self._request(index)] = index
                    else:
                        return
        except ActorFailedError as e:
            self._queue.fail(e)
        except Exception as e:  # a Ray failure of the learner's side
            if not self._stop.is_set():
                self._queue.fail(ActorFailedError(
                    "the Ray actor pool failed: %s" % one_line_error(e), -1, e))

    def _fetch(self, index, ref):
        """The message ``ref`` holds, or None when its actor is unavailable
        (restarting). Raises ``ActorFailedError`` for an environment error
        or an actor Ray will not restart."""
        ray = self._ray
        begin = time.time()
        try:
            result = ray.get(ref)
        except ray.exceptions.ActorDiedError as e:
            raise self._states.died(index, e) from e
        except ray.exceptions.RayActorError as e:
            self._states.unavailable(index, e)
            return None
        self._fetch_seconds.append(time.time() - begin)
        if isinstance(result, _ActorFailure):
            raise ActorFailedError(
                '%s failed: %s' % (describe_actor(index, self._batch),
                                   result.text), index, result.error)
        self._states.received(index, result.rollout_owned)
        return result

    def get(self, timeout: float) -> 'ActorMessage':
        """The next message of any actor.

        Args:
            timeout: seconds to wait for one.
        Returns:
            ``ActorMessage`` whose experience is a numpy nest [K, B, ...].
        Raises:
            ActorFailedError: an actor failed (naming it and its
                environments), or none sent a message within ``timeout``.
        """
        return self._queue.get(timeout, lambda: '%d of %d Ray actors alive'
                               % (sum(self._states.alive), self.num_actors))

    def stats(self) -> Dict[str, float]:
        """Pool summaries: messages waiting (``async/queue_size``), actor
        restarts so far, actors alive (not waiting for a restart), weight
        broadcasts and mean seconds of ``ray.get`` per message since the
        last call."""
        fetch, self._fetch_seconds = self._fetch_seconds, []
        broadcasts, self._weights.count = self._weights.count, 0
        result = {
            'async/queue_size': float(self._queue.qsize()),
            'ray/actor_restarts': float(self._states.restarts),
            'ray/actors_alive': float(sum(self._states.alive)),
            'ray/weight_broadcasts': float(broadcasts),
        }
        if fetch:
            result['ray/fetch_seconds_mean'] = float(np.mean(fetch))
        return result

    def actor_nodes(self, timeout: float = 120.0) -> List[Dict[str, Any]]:
        """Where each actor runs now.

        Args:
            timeout: seconds to wait (an actor answers after its current
                unroll; one that Ray is restarting, once it is up again).
        Returns:
            one ``{'pid', 'node_id', 'hostname'}`` per actor, in order.
        Raises:
            ray.exceptions.RayActorError: an actor is dead, or still
                unavailable after ``timeout``.
        """
        ray = self._ray
        deadline = time.time() + timeout
        while True:
            try:
                return ray.get([a.where.remote() for a in self._actors],
                               timeout=timeout)
            except ray.exceptions.ActorUnavailableError:
                if time.time() > deadline:
                    raise
                time.sleep(_RETRY_SECS)

    def close(self) -> None:
        """Stops collecting, lets each actor close its environments (10 s
        at most), kills the actors and, if this pool started (or connected
        to) Ray, ``ray.shutdown()``. Safe to call twice."""
        ray = self._ray
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
            self._thread = None
        if self._actors and ray.is_initialized():
            closing = [a.close.remote() for a in self._actors]
            ray.wait(closing, num_returns=len(closing),
                     timeout=_CLOSE_TIMEOUT)
            for actor in self._actors:
                ray.kill(actor, no_restart=True)
        self._actors = []
        if self._started_ray and ray.is_initialized():
            ray.shutdown()
        self._started_ray = False
