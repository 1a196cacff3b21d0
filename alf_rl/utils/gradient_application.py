"""How an update's gradients are summed, clipped and applied.

``Algorithm.update_with_gradient`` computes each optimizer's gradients and
hands them to the *gradient application* of the update being traced
(``current_gradient_application()``):

- on one device (the default, ``GradientApplication``) they are clipped and
  applied as they are;
- the distributed learner (``alf_rl.distributed.strategy.ReplicaRunner``)
  runs each replica's update inside ``applying_gradients(...)`` with an
  application that sums the replicas' shares first (so that clipping sees
  the global gradient) and applies them without the optimizer's own second
  aggregation.

No non-finite update is applied (``apply_if_finite``, on by default; opt
out with the gin binding ``check_finite_updates.enabled = False``): one
all-finite flag is reduced over the gradients (summed and clipped), and the
update runs only when the check on it passed; otherwise training stops
with an error naming the first variable whose gradient is NaN/Inf
(``alf_rl.utils.loss_checks.check_update_finite``). XLA compiles that
check away; see ``apply_if_finite``.

The application also names the ``tf.distribute`` replica context the update
runs in (None on one device): the masked reductions of ``alf_rl.ops.masks``
and ``alf_rl.ops.losses`` take it as an argument, and algorithms pass
``replica_context()`` to them.
"""

import contextlib
import inspect
import threading
from typing import Any, Dict, Iterator, List, Optional, Tuple

import gin
import tensorflow as tf

from alf_rl.utils.loss_checks import check_update_finite

GradsAndVars = List[Tuple[tf.Tensor, tf.Variable]]


class GradientApplication(object):
    """One device: gradients applied as computed (the default)."""

    @property
    def replica_context(self) -> Optional[tf.distribute.ReplicaContext]:
        """The replica context of the update, None on one device."""
        return None

    @property
    def num_replicas(self) -> int:
        """Replicas computing the update together (1 here)."""
        return 1

    def sum_gradients(self, grads: List[tf.Tensor]) -> List[tf.Tensor]:
        """The gradients of the whole update from this replica's share.

        Args:
            grads: list of gradient tensors (no None).
        Returns:
            The same list on one device.
        """
        return grads

    def apply(self, optimizer: Any, grads_and_vars: GradsAndVars) -> None:
        """Applies (summed, clipped) gradients with ``optimizer``.

        Args:
            optimizer: a ``tf_keras`` optimizer.
            grads_and_vars: list of ``(gradient, variable)``.
        """
        if tf.distribute.has_strategy():  # a user's strategy scope
            optimizer.apply_gradients(grads_and_vars)
            return
        # One replica: the optimizer's cross-replica sum is an identity, and
        # tracing it leaks the traced graph (tf.custom_gradient registers a
        # gradient function per trace in a global registry, never removed),
        # ~26 MB per traced PPO iteration: skip it where the optimizer can.
        try:
            kwargs = no_aggregation_kwarg(optimizer)
        except TypeError:  # not a tf_keras optimizer: as it is
            kwargs = {}
        optimizer.apply_gradients(grads_and_vars, **kwargs)


def no_aggregation_kwarg(optimizer: Any) -> Dict[str, bool]:
    """The ``apply_gradients`` keyword that skips the optimizer's own
    cross-replica sum (its name differs between tf_keras' optimizers).

    Args:
        optimizer: a ``tf_keras`` optimizer (``optimizers.Optimizer`` or
            ``optimizers.legacy.Optimizer``).
    Returns:
        ``{keyword: value}`` to pass to ``optimizer.apply_gradients``.
    Raises:
        TypeError: if its ``apply_gradients`` has no such keyword.
    """
    params = inspect.signature(optimizer.apply_gradients).parameters
    if 'skip_gradients_aggregation' in params:
        return {'skip_gradients_aggregation': True}
    if 'experimental_aggregate_gradients' in params:
        return {'experimental_aggregate_gradients': False}
    raise TypeError("%s.apply_gradients cannot skip gradient aggregation; "
                    "use a tf_keras optimizer" % type(optimizer).__name__)


_DEFAULT = GradientApplication()
_LOCAL = threading.local()


def _stack() -> List[GradientApplication]:
    stack = getattr(_LOCAL, 'stack', None)
    if stack is None:  # one stack per thread
        stack = _LOCAL.stack = []
    return stack


@contextlib.contextmanager
def applying_gradients(application: GradientApplication
                       ) -> Iterator[GradientApplication]:
    """Within this block (on this thread), updates use ``application``.

    Args:
        application: a ``GradientApplication``.
    Yields:
        ``application``.
    """
    if not isinstance(application, GradientApplication):
        raise TypeError("applying_gradients: expected a GradientApplication, "
                        "got %s" % type(application).__name__)
    _stack().append(application)
    try:
        yield application
    finally:
        _stack().pop()


def current_gradient_application() -> GradientApplication:
    """The application of the update being traced (one device by default).

    Raises:
        ValueError: an update traced in a ``tf.distribute`` replica context
            of several replicas without a replica-aware application (it
            would average over one replica's slice only).
    """
    stack = _stack()
    application = stack[-1] if stack else _DEFAULT
    if application.num_replicas == 1:
        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            raise ValueError(
                "an update runs in a tf.distribute replica context of %d "
                "replicas without a replica-aware gradient application; run"
                " it through alf_rl.distributed.strategy.ReplicaRunner" %
                context.num_replicas_in_sync)
    return application


def replica_context() -> Optional[tf.distribute.ReplicaContext]:
    """The current application's replica context (None on one device): the
    ``replica_context`` argument of the ``alf_rl.ops`` reductions."""
    return current_gradient_application().replica_context


def clip_gradients(grads_and_vars: GradsAndVars,
                   clip_norm: Optional[float],
                   by_global_norm: bool = False) -> GradsAndVars:
    """Clips gradients to ``clip_norm`` (per tensor, or by their global norm).

    Args:
        grads_and_vars: list of ``(gradient, variable)``.
        clip_norm: the norm, or None for no clipping.
        by_global_norm: clip by the global norm of all the gradients.
    Returns:
        list of ``(clipped gradient, variable)``.
    """
    if clip_norm is None or not grads_and_vars:
        return grads_and_vars
    grads, variables = zip(*grads_and_vars)
    if by_global_norm:
        clipped, _ = tf.clip_by_global_norm(grads, clip_norm)
    else:
        clipped = [tf.clip_by_norm(g, clip_norm) for g in grads]
    return list(zip(clipped, variables))


@gin.configurable
def check_finite_updates(enabled: bool = True) -> bool:
    """Whether updates are checked for NaN/Inf gradients before they are
    applied (read when an update is traced).

    Args:
        enabled: True (default): a non-finite update is never applied and
            stops training; ``check_finite_updates.enabled = False`` opts
            out.

    Returns:
        ``enabled``.

    Raises:
        TypeError: ``enabled`` is not a bool (naming the binding).
    """
    if not isinstance(enabled, bool):
        raise TypeError("check_finite_updates.enabled: expected a bool "
                        "(True/False), got %r (%s)" %
                        (enabled, type(enabled).__name__))
    return enabled


def apply_if_finite(application: GradientApplication, optimizer: Any,
                    grads_and_vars: GradsAndVars, owner: str) -> None:
    """``application.apply(optimizer, grads_and_vars)`` unless a gradient
    holds NaN/Inf: then training stops naming the first such variable
    (``check_update_finite``) and nothing is applied (the update's ops
    depend on the check).

    Inside an XLA-compiled function the check is compiled away, and so is
    not built (gating the update there would change how XLA fuses it, and
    so the numbers): a non-finite update is then applied, and found by the
    loss check after the compiled call and by the checkpoint check, so
    that no checkpoint is written from it.

    Args:
        application: the current ``GradientApplication``.
        optimizer: a ``tf_keras`` optimizer.
        grads_and_vars: list of ``(summed, clipped gradient, variable)``.
        owner: the algorithm's name, for the error.
    """
    if not grads_and_vars or not check_finite_updates() or _in_xla():
        application.apply(optimizer, grads_and_vars)
        return
    ok = check_update_finite([g for g, _ in grads_and_vars],
                             [v.name for _, v in grads_and_vars], owner)
    with tf.control_dependencies([ok]):
        application.apply(optimizer, grads_and_vars)


def _in_xla() -> bool:
    """Whether the function being traced is XLA-compiled
    (``jit_compile=True``, which traces inside an XLA context)."""
    if tf.executing_eagerly():
        return False
    try:
        from tensorflow.python.ops import control_flow_util
    except ImportError:  # moved: assume not (the check is then built)
        return False
    return bool(control_flow_util.GraphOrParentsInXlaContext(
        tf.compat.v1.get_default_graph()))
