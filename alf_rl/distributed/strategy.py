"""A ``tf.distribute`` learner: the strategy of ``TrainerConfig.strategy``.

What is distributed: the learner's update in ``OffPolicyTrainer`` (replay
training, and on-policy methods trained from replay with
``clear_replay_buffer=True``). Each global mini-batch of ``b`` sequences is
split into N equal slices, one per replica; every replica runs the
algorithm's update (``train_step`` unroll, ``calc_loss``, gradients) on its
slice; losses are reduced over valid steps globally (a cross-replica sum of
``m_t x_t`` over a cross-replica sum of ``m_t``, ``alf_rl.ops.masks``) and
gradients summed across replicas before clipping, so N replicas compute the
update one device computes on the same global batch. Networks, optimizers
and the algorithm's other variables are mirrored (one copy per replica,
kept equal).

What is not: collection. The driver's rollout runs on the default device
(reading the mirrored variables), the replay buffer lives on the host, and
``OnPolicyTrainer`` (rollout and update under one tape) refuses a strategy.
With ``'multi_worker_mirrored'`` every worker (process, ``TF_CONFIG``) runs
the whole trainer with the same seed, so the workers collect the same
experience and each takes its replicas' slices of the same global batch:
collection is replicated, not split (the async and Ray drivers split it).
Each worker needs its own ``root_dir``, and a fixed
``TrainerConfig.iterations_per_call`` (workers must run the same number of
updates per compiled call).

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
import inspect
from typing import Any, Callable, Dict, Iterator, List, Optional

import tensorflow as tf

from alf_rl.utils.gradient_application import (GradientApplication,
                                               GradsAndVars,
                                               applying_gradients)

#: The values of ``TrainerConfig.strategy`` besides None.
STRATEGY_NAMES = ('mirrored', 'multi_worker_mirrored')

_CREATED = {}


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
                                  **_no_aggregation_kwarg(optimizer))


def _no_aggregation_kwarg(optimizer: Any) -> Dict[str, bool]:
    """The ``apply_gradients`` keyword that skips the optimizer's own
    cross-replica sum (its name differs between tf_keras' optimizers)."""
    params = inspect.signature(optimizer.apply_gradients).parameters
    if 'skip_gradients_aggregation' in params:
        return {'skip_gradients_aggregation': True}
    if 'experimental_aggregate_gradients' in params:
        return {'experimental_aggregate_gradients': False}
    raise TypeError("%s.apply_gradients cannot skip gradient aggregation; "
                    "use a tf_keras optimizer under a tf.distribute strategy"
                    % type(optimizer).__name__)


class ReplicaRunner(object):
    """Runs one update on a global mini-batch split across replicas (an
    ``UpdateRunner`` of ``alf_rl.algorithms.replay_training``), each
    replica's share under a ``ReplicaGradientApplication``.

    Args:
        strategy: a ``MirroredStrategy`` or ``MultiWorkerMirroredStrategy``.
    """

    def __init__(self, strategy: tf.distribute.Strategy):
        self._strategy = strategy

    @property
    def num_replicas(self) -> int:
        """Replicas in sync (over all workers)."""
        return self._strategy.num_replicas_in_sync

    def __call__(self, update_fn: Callable[..., Any], batch: Any,
                 sample_weights: Optional[tf.Tensor] = None) -> Any:
        """``update_fn`` on each replica's slice of ``batch``.

        Args:
            update_fn: ``(batch, sample_weights) -> UpdateResult`` on
                time-major [L, b / N, ...] experience and [b / N] weights
                (or None).
            batch: nest of [L, b, ...] tensors, the global mini-batch (the
                same on every worker).
            sample_weights: [b] float32 importance weights, or None.
        Returns:
            ``UpdateResult``: the loss info and ``keep_going`` of replica 0
            (every replica holds the same, globally reduced values) and
            the [b] priorities of all replicas in batch order (or ``()``).
        Raises:
            ValueError: b is not a multiple of the number of replicas.
        """
        b = tf.nest.flatten(batch)[0].shape[1]
        n = self.num_replicas
        if b is None or b % n:
            raise ValueError(
                "TrainerConfig.mini_batch_size: a mini-batch of %s sequences"
                " does not split evenly over %d tf.distribute replicas; use "
                "a multiple of %d" % (b, n, n))
        per = b // n
        weights = () if sample_weights is None else sample_weights

        def _slice(context):
            start = context.replica_id_in_sync_group * per
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
        first = tf.nest.map_structure(
            lambda x: self._strategy.experimental_local_results(x)[0],
            result._replace(priority=()))
        if isinstance(result.priority, tuple):
            return first
        return first._replace(
            priority=self._strategy.gather(result.priority, axis=0))
