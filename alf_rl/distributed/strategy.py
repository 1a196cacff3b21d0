"""A ``tf.distribute`` learner: the strategy of ``TrainerConfig.strategy``.

What is distributed: the learner's update. In ``OffPolicyTrainer`` (replay
training, and on-policy methods trained from replay with
``clear_replay_buffer=True``) each worker's mini-batch of ``b`` sequences
is split into equal slices, one per replica of that worker; every replica
runs the algorithm's update (``train_step`` unroll, ``calc_loss``,
gradients) on its slice; losses are reduced over valid steps globally (a
cross-replica sum of ``m_t x_t`` over a cross-replica sum of ``m_t``,
``alf_rl.ops.masks``) and gradients summed across replicas before
clipping, so the replicas compute the update one device computes on the
global batch, the N workers' mini-batches together. ``OnPolicyTrainer``
runs each iteration (rollout and update under one tape) inside
``strategy.run`` on the one replica of each worker
(``run_on_replica``). Networks, optimizers and the algorithm's other
variables are mirrored (one copy per replica, kept equal: initial values
are broadcast from worker 0 and every update applies the same summed
gradients).

Collection is each worker's own. With ``'multi_worker_mirrored'`` every
worker (process, ``TF_CONFIG``) runs the whole trainer: weights are
initialized from the run's seed (and broadcast from worker 0), but worker
*i* > 0 collects with ``worker_seed(seed, i)`` (``seed_worker``): the
global generator (action sampling) is reseeded with it once the
algorithm is built, and the trainer seeds its environments, replay
sampler and evaluation environments from it. So N workers collect N
times the experience of one per update, each from its own episodes, and
every worker's metrics count its own environment steps. Each worker needs
its own ``root_dir`` and a fixed ``TrainerConfig.iterations_per_call``
(workers must run the same number of updates per compiled call), and
stops by ``num_iterations`` only (each worker counts its own episodes'
steps: ``num_env_steps`` could stop one worker an iteration before the
others, which would then wait in the next all-reduce).
Observation and reward normalizers are updated from each worker's own
experience, so their statistics differ between workers (the trained
weights and optimizer slots do not). With ``'mirrored'`` over several
local devices the one process collects once, on the default device.

Strategies (``TrainerConfig.strategy``):

- ``None``: one device, no strategy (the default; the numbers of a run
  without distribution, unchanged).
- ``'mirrored'``: ``tf.distribute.MirroredStrategy`` over the local GPUs,
  or, with ``num_logical_cpu_devices = N``, over N logical CPU devices
  (for testing the distributed path on a machine without GPUs).
- ``'multi_worker_mirrored'``: ``tf.distribute.MultiWorkerMirroredStrategy``
  across the processes ``TF_CONFIG`` lists.

A strategy is created once per process, before TensorFlow runs any op
(logical devices and collective ops cannot be configured later):
``alf-train`` creates it right after parsing gin; a Python program
builds its ``Trainer`` (which calls ``create_strategy``) before running
TensorFlow ops, or calls ``create_strategy`` first thing.
"""

import contextlib
from typing import Any, Callable, Dict, Iterator, List, Optional

import tensorflow as tf

from alf_rl.utils.gradient_application import (GradientApplication,
                                               GradsAndVars,
                                               applying_gradients,
                                               no_aggregation_kwarg)

#: The values of ``TrainerConfig.strategy`` besides None.
STRATEGY_NAMES = ('mirrored', 'multi_worker_mirrored')

_CREATED: Dict[Any, tf.distribute.Strategy] = {}


def create_strategy(name: Optional[str],
                    num_logical_cpu_devices: int = 0
                    ) -> Optional[tf.distribute.Strategy]:
    """The process's strategy ``name``, created on the first call.

    Args:
        name: None, ``'mirrored'`` or ``'multi_worker_mirrored'``.
        num_logical_cpu_devices: with ``'mirrored'``, split the first
            physical CPU into this many logical devices and mirror over
            them (0: mirror over the GPUs, or the one CPU without GPUs).
    Returns:
        None for ``name=None``; else the strategy (the same object on every
        call with the same arguments).
    Raises:
        ValueError: an unknown name; ``num_logical_cpu_devices`` < 0 or
            given without ``'mirrored'``; another strategy already
            created in this process; or TensorFlow already initialized
            when the strategy needs to configure it (one line saying to
            create the strategy first).
    """
    if name is not None and name not in STRATEGY_NAMES:
        raise ValueError("TrainerConfig.strategy: expected None or one of %s,"
                         " got %r" % (', '.join(map(repr, STRATEGY_NAMES)),
                                      name))
    if num_logical_cpu_devices < 0 or (num_logical_cpu_devices
                                       and name != 'mirrored'):
        raise ValueError(
            "TrainerConfig.num_logical_cpu_devices=%r: expected 0, or > 0 "
            "with strategy='mirrored' (got strategy=%r)" %
            (num_logical_cpu_devices, name))
    if name is None:
        return None
    key = (name, int(num_logical_cpu_devices))
    if key in _CREATED:
        return _CREATED[key]
    if _CREATED:
        raise ValueError(
            "TrainerConfig.strategy=%r (num_logical_cpu_devices=%d): this "
            "process already created strategy %r (num_logical_cpu_devices="
            "%d); one strategy per process" % (key + next(iter(_CREATED))))
    try:
        strategy = _new_strategy(name, int(num_logical_cpu_devices))
    except RuntimeError as e:
        raise ValueError(
            "TrainerConfig.strategy=%r must be created before TensorFlow "
            "runs any op (%s): build the Trainer, or call alf_rl.distributed"
            ".strategy.create_strategy(), first thing in the program "
            "(alf-train does so right after parsing gin)" %
            (name, ' '.join(str(e).split()))) from None
    _CREATED[key] = strategy
    return strategy


def _new_strategy(name: str, num_cpus: int) -> tf.distribute.Strategy:
    """Builds strategy ``name``; RuntimeError when TensorFlow is already
    initialized and cannot be configured for it any more."""
    if name == 'multi_worker_mirrored':
        return tf.distribute.MultiWorkerMirroredStrategy()
    if not num_cpus:
        return tf.distribute.MirroredStrategy()
    cpus = tf.config.list_physical_devices('CPU')
    logical = tf.config.get_logical_device_configuration(cpus[0])
    if logical is None or len(logical) != num_cpus:
        # Raises RuntimeError once the runtime is initialized.
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration()] * num_cpus)
    return tf.distribute.MirroredStrategy(
        ['/cpu:%d' % i for i in range(num_cpus)])


def _aggregate_first_replica(next_creator, **kwargs):
    """Variables updated in a replica context (target networks, counters,
    controllers) keep replica 0's value: every replica computes the same
    one, from mirrored variables and global reductions."""
    if kwargs.get('aggregation') in (None, tf.VariableAggregation.NONE):
        kwargs['aggregation'] = tf.VariableAggregation.ONLY_FIRST_REPLICA
    return next_creator(**kwargs)


@contextlib.contextmanager
def learner_scope(strategy: Optional[tf.distribute.Strategy]
                  ) -> Iterator[None]:
    """Where the learner's variables are built: ``strategy.scope()``, with
    replica-context assignments keeping replica 0's value (every replica
    computes the same one); nothing for ``strategy=None``.

    Args:
        strategy: the strategy, or None.
    """
    if strategy is None:
        yield
        return
    with strategy.scope(), tf.variable_creator_scope(
            _aggregate_first_replica):
        yield


#: The stride between the collection seeds of consecutive workers (a
#: prime, unlike ``make_worker_seed``'s 1000003: a worker's actors do not
#: reuse another worker's seeds).
WORKER_SEED_STRIDE = 7368787


def worker_index(strategy: Optional[tf.distribute.Strategy]) -> int:
    """This process's index among the workers of ``strategy``.

    Args:
        strategy: the strategy, or None.
    Returns:
        0 without a strategy or a cluster (``'mirrored'``); else the
        worker's place in the cluster of ``TF_CONFIG``: the chief is 0,
        ``worker`` *k* is *k* (*k* + 1 when the cluster has a chief).
    """
    resolver = getattr(strategy, 'cluster_resolver', None)
    if resolver is None or resolver.task_type is None:
        return 0
    if resolver.task_type == 'chief':
        return 0
    jobs = resolver.cluster_spec().jobs
    return int(resolver.task_id or 0) + (1 if 'chief' in jobs else 0)


def num_workers(strategy: Optional[tf.distribute.Strategy]) -> int:
    """Processes training together under ``strategy`` (1 for None and
    ``'mirrored'``): its replicas over the replicas of one worker."""
    if strategy is None:
        return 1
    local = len(strategy.extended.worker_devices)
    return max(strategy.num_replicas_in_sync // max(local, 1), 1)


def worker_seed(seed: int, index: int) -> int:
    """The collection seed of worker ``index`` of a run seeded ``seed``:
    ``seed`` itself for worker 0, else ``(seed + index *
    WORKER_SEED_STRIDE) mod 2**31``."""
    if index == 0:
        return int(seed)
    return (int(seed) + int(index) * WORKER_SEED_STRIDE) % 2**31


def seed_worker(strategy: Optional[tf.distribute.Strategy],
                seed: int) -> int:
    """Gives this worker its own collection seed, after the learner's
    variables are built (their initial values come from ``seed`` on
    every worker, and worker 0's are broadcast).

    Worker 0 (and a run without a cluster) keeps ``seed`` and its
    generator untouched; worker *i* > 0 reseeds the global
    ``tf.random.Generator`` with ``worker_seed(seed, i)``, so it samples
    other actions than worker 0, and returns that seed, from which the
    trainer seeds its environments and replay sampler. With several
    workers it prints one line saying which worker this is, its seed, and
    that its metrics count its own steps.

    Args:
        strategy: the strategy, or None.
        seed: the run's seed.
    Returns:
        the seed this worker collects with.
    """
    index = worker_index(strategy)
    if strategy is None or num_workers(strategy) == 1:
        return int(seed)
    own = worker_seed(seed, index)
    print("alf_rl: worker %d of %d collects with seed %d; its metrics and "
          "progress count its own environment steps (the cluster's are the"
          " sum over the workers)" % (index, num_workers(strategy), own),
          flush=True)
    if index > 0:
        with strategy.scope():
            tf.random.get_global_generator().reset_from_seed(own)
    return own


def run_on_replica(strategy: tf.distribute.Strategy,
                   fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run inside ``strategy.run`` on the one replica of this
    worker, its updates under a ``ReplicaGradientApplication`` (losses
    reduced and gradients summed across all workers' replicas).

    For a computation that cannot be split over local replicas, such as
    an on-policy iteration that steps this process's environments under
    the update's tape.

    Args:
        strategy: a strategy with one replica per worker.
        fn: ``(*tensors) -> nest of tensors``.
    Returns:
        ``(*tensors) -> nest of tensors``: ``fn``'s result on this
        worker's replica.
    Raises:
        ValueError: the strategy has several replicas in this process.
    """
    local = len(strategy.extended.worker_devices)
    if local != 1:
        raise ValueError(
            "an on-policy iteration runs on one replica per process, but "
            "this strategy has %d here (%s); use strategy="
            "'multi_worker_mirrored' with one device per worker, or "
            "OffPolicyTrainer with clear_replay_buffer=True" %
            (local, ', '.join(strategy.extended.worker_devices)))

    def _replica(*args):
        application = ReplicaGradientApplication(
            tf.distribute.get_replica_context())
        with applying_gradients(application):
            return fn(*args)

    def _run(*args):
        result = strategy.run(_replica, args=args)
        return tf.nest.map_structure(
            lambda x: strategy.experimental_local_results(x)[0], result)

    return _run


class ReplicaGradientApplication(GradientApplication):
    """The gradient application of one replica's share of an update:
    gradients summed across the replicas (before clipping), applied to the
    mirrored variables without the optimizer's second aggregation.

    Args:
        context: the replica context the update runs in (inside
            ``strategy.run``).
    """

    def __init__(self, context: tf.distribute.ReplicaContext):
        self._context = context

    @property
    def replica_context(self) -> tf.distribute.ReplicaContext:
        """The replica context of the update."""
        return self._context

    @property
    def num_replicas(self) -> int:
        """Replicas in sync (over all workers)."""
        return self._context.num_replicas_in_sync

    def sum_gradients(self, grads: List[tf.Tensor]) -> List[tf.Tensor]:
        """The cross-replica sum of each replica's share.

        Args:
            grads: list of this replica's gradient tensors.
        Returns:
            list of the summed gradients, the same on every replica.
        """
        return self._context.all_reduce(tf.distribute.ReduceOp.SUM, grads)

    def apply(self, optimizer: Any, grads_and_vars: GradsAndVars) -> None:
        """``optimizer.apply_gradients`` without a second aggregation.

        Args:
            optimizer: a ``tf_keras`` optimizer.
            grads_and_vars: list of ``(summed gradient, variable)``.
        """
        optimizer.apply_gradients(grads_and_vars,
                                  **no_aggregation_kwarg(optimizer))


class ReplicaRunner(object):
    """Runs one update on a mini-batch split across this worker's replicas
    (an ``UpdateRunner`` of ``alf_rl.algorithms.replay_training``), each
    replica's share under a ``ReplicaGradientApplication``.

    Every worker passes its own mini-batch; the update is the one of the
    global batch, all workers' mini-batches together (with
    ``'mirrored'``, the one process's).

    Args:
        strategy: a ``MirroredStrategy`` or ``MultiWorkerMirroredStrategy``.
    """

    def __init__(self, strategy: tf.distribute.Strategy):
        self._strategy = strategy

    @property
    def num_replicas(self) -> int:
        """Replicas in sync (over all workers)."""
        return self._strategy.num_replicas_in_sync

    @property
    def num_local_replicas(self) -> int:
        """Replicas of this worker, which share its mini-batch."""
        return len(self._strategy.extended.worker_devices)

    def __call__(self, update_fn: Callable[..., Any], batch: Any,
                 sample_weights: Optional[tf.Tensor] = None) -> Any:
        """``update_fn`` on each local replica's slice of ``batch``.

        Args:
            update_fn: ``(batch, sample_weights) -> UpdateResult`` on
                time-major [L, b / n, ...] experience and [b / n] weights
                (or None), n the number of local replicas.
            batch: nest of [L, b, ...] tensors, this worker's mini-batch.
            sample_weights: [b] float32 importance weights, or None.
        Returns:
            ``UpdateResult``: the loss info and ``keep_going`` of the first
            local replica (every replica holds the same, globally reduced
            values) and the [b] priorities of this worker's replicas in
            batch order (or ``()``).
        Raises:
            ValueError: b is not a multiple of the number of local
                replicas.
        """
        b = tf.nest.flatten(batch)[0].shape[1]
        n = self.num_local_replicas
        if b is None or b % n:
            raise ValueError(
                "TrainerConfig.mini_batch_size: a mini-batch of %s sequences"
                " does not split evenly over this process's %d tf.distribute"
                " replicas; use a multiple of %d" % (b, n, n))
        per = b // n
        weights = () if sample_weights is None else sample_weights

        def _slice(context):
            # Replica ids are worker-major: this worker's are contiguous.
            start = (context.replica_id_in_sync_group % n) * per
            return (tf.nest.map_structure(
                lambda x: x[:, start:start + per], batch),
                    tf.nest.map_structure(lambda x: x[start:start + per],
                                          weights))

        sliced = self._strategy.experimental_distribute_values_from_function(
            _slice)

        def _replica(args):
            weights = args[1] if sample_weights is not None else None
            application = ReplicaGradientApplication(
                tf.distribute.get_replica_context())
            with applying_gradients(application):
                return update_fn(args[0], weights)

        result = self._strategy.run(_replica, args=(sliced, ))
        local = self._strategy.experimental_local_results
        first = tf.nest.map_structure(lambda x: local(x)[0],
                                      result._replace(priority=()))
        if isinstance(result.priority, tuple):
            return first
        return first._replace(
            priority=tf.concat(local(result.priority), axis=0))
