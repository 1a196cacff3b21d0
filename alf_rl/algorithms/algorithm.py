"""``Algorithm``: the base of every learning component in alf_rl.

An algorithm owns networks (``tf.Module``), maybe an optimizer, maybe
sub-algorithms (attributes that are ``Algorithm``s). It exposes three step
functions (``predict`` for evaluation, ``rollout`` for collection, and
``train_step`` for off-policy recomputation), each taking ``[B, ...]`` inputs
and a state nest and returning a ``PolicyStep``/``AlgStep``. Training goes
through ``train_complete(tape, training_info)``: ``calc_loss`` inside the
tape, then ``update_with_gradient`` (reduce the loss over valid steps,
gradients per optimizer, optional clipping, apply), then ``after_train``.

The contract a new method implements (what is called, when, with what):

- ``rollout(time_step, state)``: one collection step. ``time_step`` is a
  ``TimeStep`` of [B, ...] tensors already passed through
  ``transform_timestep`` (reward shaping/normalization, observation
  normalization); ``state`` has been reset to the initial state where
  ``time_step.is_first()``. It runs inside a ``tf.while_loop`` (no Python
  side effects, no ``.numpy()``, no summaries). On-policy, it runs under the
  driver's tape and its ``info`` reaches ``calc_loss``.
- ``predict(time_step, state)``: greedy step for evaluation/export.
- ``train_step(experience, state)``: off-policy recomputation on one stored
  ``Experience`` row; ``bootstrap_step`` (replay training) for the last row
  of a sequence, which only provides targets, and ``first_train_step`` for
  the first, whose target values nothing reads.
- ``calc_loss(training_info)``: per-step ``LossInfo`` from [T, B]
  ``TrainingInfo``. In the on-policy driver's default final-step mode
  (``'redo'``) it receives T + 1 rows: the last one only bootstraps and is
  masked out of the mean; replay training likewise passes L rows of which
  the last only bootstraps (unless ``last_row_only_bootstraps = False``).
  ``LossInfo.extra`` is for summaries only.
- ``after_train(training_info)``: state changes after the update (target
  networks, controllers such as an entropy-target temperature, counters).
- ``should_apply(optimizer)``: gate an optimizer's update (TD3's delayed
  actor). Replay-trained methods may also override ``calc_priority``
  (prioritized replay) and ``continue_training`` (early stopping); see
  ``alf_rl.algorithms.replay_training``.
- Randomness: sample with stateless ops seeded by
  ``alf_rl.utils.common.make_stateless_seed()`` (drawn from the global
  ``tf.random.Generator``, which ``TrainerConfig.random_seed`` seeds), so
  seeded runs give the same numbers eagerly and compiled.

Optimizer ownership: variables of an algorithm, of its non-algorithm modules
and of sub-algorithms without an optimizer of their own are trained by the
algorithm's optimizer; a sub-algorithm with its own optimizer trains its own
subtree. Target networks and their updaters (``TargetNetwork``,
``PeriodicSoftUpdate`` of ``alf_rl.networks.target_network``) are skipped by
type, whatever attribute holds them.
"""

import functools
from typing import Any, List, Optional, Tuple, Union

import numpy as np
import tensorflow as tf

from alf_rl.data_structures import Experience, LossInfo, TrainingInfo
from alf_rl.algorithms.optimizer_sets import OptimizerSets
from alf_rl.ops.masks import is_unset, reduce_loss_info
from alf_rl.specs import zeros_from_spec
from alf_rl.utils.gradient_application import (GradientApplication,
                                               apply_if_finite,
                                               clip_gradients,
                                               current_gradient_application)
from alf_rl.utils.loss_checks import check_loss_finite
from alf_rl.utils.nest import Nest, flatten_with_path


def describe_returned(value: Any) -> str:
    """What a user method returned, for messages: the type, and for a
    tensor its shape and dtype (``'SymbolicTensor of shape [8, 2]
    float32'``)."""
    if tf.is_tensor(value):
        shape = (value.shape.as_list() if value.shape.rank is not None
                 else '(unknown)')
        return '%s of shape %s %s' % (type(value).__name__, shape,
                                     value.dtype.name)
    return type(value).__name__


def info_of(training_info: Any, info_type: type, owner: str) -> Any:
    """The ``info_type`` info of a ``TrainingInfo`` (or that info itself),
    for a sub-algorithm's ``calc_loss`` that accepts either.

    Args:
        training_info: ``TrainingInfo`` whose ``info`` has [T, B] leaves,
            or such an info.
        info_type: the namedtuple type the info must be.
        owner: class name for the message (``'<owner>.calc_loss'``).
    Returns:
        The info.
    Raises:
        TypeError: naming ``owner``, ``info_type`` and what was given.
    """
    info = (training_info.info
            if isinstance(training_info, TrainingInfo) else training_info)
    if not isinstance(info, info_type):
        raise TypeError("%s.calc_loss: expected a TrainingInfo whose info "
                        "is an %s, got %s" %
                        (owner, info_type.__name__, type(info).__name__))
    return info


class Algorithm(OptimizerSets, tf.Module):
    """Base class of algorithms (see the module docstring).

    Args:
        train_state_spec: nest of ``tf.TensorSpec`` of the ``train_step``
            state (without batch dim); ``()`` when stateless.
        rollout_state_spec: state spec of ``rollout``; defaults to
            ``train_state_spec``.
        predict_state_spec: state spec of ``predict``; defaults to
            ``rollout_state_spec``.
        optimizer: a ``tf_keras`` optimizer, or None to let the parent
            algorithm's optimizer train this algorithm's variables.
        gradient_clipping: if set, clip gradients to this norm.
        clip_by_global_norm: clip by the global norm of each optimizer's
            gradients instead of per-tensor norms.
        name: module name.
    """

    def __init__(self,
                 train_state_spec: Nest = (),
                 rollout_state_spec: Optional[Nest] = None,
                 predict_state_spec: Optional[Nest] = None,
                 optimizer: Optional[Any] = None,
                 gradient_clipping: Optional[float] = None,
                 clip_by_global_norm: bool = False,
                 name: str = 'Algorithm'):
        super().__init__(name=name)
        if gradient_clipping is not None and gradient_clipping <= 0:
            raise ValueError("gradient_clipping must be positive, got %s" %
                             gradient_clipping)
        self._train_state_spec = train_state_spec
        self._rollout_state_spec = (train_state_spec
                                    if rollout_state_spec is None else
                                    rollout_state_spec)
        self._predict_state_spec = (self._rollout_state_spec
                                    if predict_state_spec is None else
                                    predict_state_spec)
        self._optimizer = optimizer
        self._module_optimizers = []
        self._gradient_clipping = gradient_clipping
        self._clip_by_global_norm = clip_by_global_norm
        self._opt_var_sets = None

    # ------------------------------------------------------------ state specs
    @property
    def train_state_spec(self) -> Nest:
        """Nest of specs of the ``train_step`` state (no batch dim)."""
        return self._train_state_spec

    @property
    def rollout_state_spec(self) -> Nest:
        """Nest of specs of the ``rollout`` state (no batch dim)."""
        return self._rollout_state_spec

    @property
    def predict_state_spec(self) -> Nest:
        """Nest of specs of the ``predict`` state (no batch dim)."""
        return self._predict_state_spec

    def get_initial_train_state(self, batch_size: Union[int, tf.Tensor]) -> Nest:
        """Zero train state, leaves shaped [batch_size, ...]."""
        return zeros_from_spec(self._train_state_spec, [batch_size])

    def get_initial_rollout_state(self,
                                  batch_size: Union[int, tf.Tensor]) -> Nest:
        """Zero rollout state, leaves shaped [batch_size, ...]."""
        return zeros_from_spec(self._rollout_state_spec, [batch_size])

    def get_initial_predict_state(self,
                                  batch_size: Union[int, tf.Tensor]) -> Nest:
        """Zero predict state, leaves shaped [batch_size, ...]."""
        return zeros_from_spec(self._predict_state_spec, [batch_size])

    # ------------------------------------------------------------ steps
    def predict(self, inputs: Nest, state: Nest) -> Any:
        """One greedy step for evaluation; defaults to ``rollout``.

        Args:
            inputs: nest of [B, ...] tensors.
            state: nest matching ``predict_state_spec`` with [B, ...] leaves.
        Returns:
            ``PolicyStep``/``AlgStep`` with [B, ...] leaves.
        """
        return self.rollout(inputs, state)

    def rollout(self, inputs: Nest, state: Nest) -> Any:
        """One step during collection (and on-policy training).

        Defaults to ``train_step``. Runs inside ``tf.while_loop``: no Python
        side effects. Args/returns as ``predict`` with ``rollout_state_spec``.
        """
        return self.train_step(inputs, state)

    def train_step(self, inputs: Nest, state: Nest) -> Any:
        """One step recomputed from stored experience (off-policy training).

        Args/returns as ``predict`` with ``train_state_spec``.
        """
        raise NotImplementedError("%s must implement train_step or rollout" %
                                  type(self).__name__)

    def preprocess_experience(self, experience: Experience) -> Experience:
        """Hook on replayed experience before training (e.g. advantages).

        Args:
            experience: ``Experience`` nest with time-major [T, B, ...]
                leaves (``rollout_info`` with distributions).
        Returns:
            The processed experience, same structure.
        """
        return experience

    def calc_loss(self, training_info: TrainingInfo) -> LossInfo:
        """Per-step losses from [T, B] training info; defaults to ``info``.

        Args:
            training_info: ``TrainingInfo`` with [T, B, ...] leaves.
        Returns:
            ``LossInfo`` whose ``loss`` is [T, B].
        """
        if not isinstance(training_info.info, LossInfo):
            raise TypeError("%s.calc_loss: info must be a LossInfo unless "
                            "calc_loss is overridden; got %s" %
                            (type(self).__name__,
                             type(training_info.info).__name__))
        return training_info.info

    def after_train(self, training_info: TrainingInfo) -> None:
        """Called after gradients were applied (target updates and the like).

        Args:
            training_info: the ``TrainingInfo`` that was trained on.
        """
        del training_info

    def rollout_owned_variables(self) -> List[tf.Variable]:
        """Variables that ``rollout`` itself advances (an exploration
        schedule's step counter, an intrinsic-reward module's normalizer
        statistics), as opposed to those training changes.

        Asynchronous training runs ``rollout`` on copies of the algorithm
        in actors: these variables are not overwritten by the learner's
        published weights, and the learner keeps the values the actors
        report (so a checkpoint holds them). None by default.

        Returns:
            list of ``tf.Variable``.
        """
        return []

    # ------------------------------------------------------------ training
    def should_apply(self, optimizer: Any) -> Union[bool, tf.Tensor]:
        """Whether ``optimizer``'s update is applied in this update.

        The gate of gated updates (TD3's delayed actor): return a scalar
        bool tensor for an optimizer to compute and apply its gradients
        only when it is true (inside a ``tf.cond``, so neither the gradient
        nor the optimizer's step count advances otherwise). Called once per
        optimizer per update, before ``after_train``; must not change
        state. The default, Python ``True``, applies every update
        unconditionally (no ``tf.cond`` in the graph).

        Args:
            optimizer: one of the optimizers of
                ``get_optimizer_and_variable_sets()``.
        Returns:
            ``True`` or a bool scalar tensor.
        """
        del optimizer
        return True

    def train_complete(self,
                       tape: tf.GradientTape,
                       training_info: TrainingInfo,
                       valid_masks: Optional[tf.Tensor] = None,
                       weight: float = 1.0,
                       per_step_loss_info: Optional[LossInfo] = None
                       ) -> Tuple[LossInfo, list]:
        """``calc_loss`` inside ``tape``, ``update_with_gradient``, then
        ``after_train``.

        Args:
            tape: the ``tf.GradientTape`` under which the forward pass ran
                (persistent when more than one optimizer is used).
            training_info: ``TrainingInfo`` with [T, B, ...] leaves.
            valid_masks: [T, B] float mask of steps that count (None: all).
            weight: scalar multiplying the total loss.
            per_step_loss_info: the per-step ``LossInfo`` if the caller
                already ran ``calc_loss(training_info)`` under ``tape``
                (replay training keeps it for ``calc_priority``); None to
                compute it here.

        Returns:
            ``(loss_info, grads_and_vars)`` as ``update_with_gradient``.
        """
        if per_step_loss_info is None:
            with tape:
                per_step_loss_info = self.calc_loss(training_info)
        result = self.update_with_gradient(tape, per_step_loss_info,
                                           valid_masks, weight)
        self.after_train(training_info)
        return result

    def update_with_gradient(self,
                             tape: tf.GradientTape,
                             loss_info: LossInfo,
                             valid_masks: Optional[tf.Tensor] = None,
                             weight: float = 1.0) -> Tuple[LossInfo, list]:
        """Reduces per-step losses, then computes and applies gradients.

        The per-step loss is averaged over valid steps only (``sum(loss *
        mask) / max(sum(mask), 1)``); ``scalar_loss`` is added after the
        reduction. A non-finite total loss stops training with an
        ``InvalidArgumentError`` naming the loss before any update. Each
        optimizer's gradients are clipped (if configured) and applied, under
        ``should_apply``'s gate.

        The gradients are summed and applied by the current gradient
        application (``alf_rl.utils.gradient_application``): as computed
        on one device; under the distributed learner with N > 1 replicas
        (``alf_rl.distributed.strategy.ReplicaRunner``) the reduction is
        global (its replica context passed to ``alf_rl.ops.masks``), each
        replica's gradients are its share, summed across replicas before
        clipping, and applied to the mirrored variables without a second
        aggregation.

        Args:
            tape: the tape that recorded the forward pass and ``loss_info``.
            loss_info: per-step ``LossInfo`` ([T, B] leaves) from
                ``calc_loss``.
            valid_masks: [T, B] float mask of steps that count (None: all).
            weight: scalar multiplying the total loss.

        Returns:
            ``(loss_info, grads_and_vars)``: ``loss_info`` with scalar
            ``loss``/``extra`` leaves, ``loss`` the weighted total;
            ``grads_and_vars`` the clipped gradients (zeros for a gated
            optimizer whose update was skipped).

        Raises:
            TypeError: ``loss_info`` is not a ``LossInfo`` (at trace time,
                naming ``<class>.calc_loss``).
            ValueError: a per-step leaf's shape differs from
                ``valid_masks``' (at trace time, naming the leaf, both
                shapes and ``<class>.calc_loss``); a gated optimizer under
                a strategy with several replicas.
        """
        self._check_loss_info(loss_info, valid_masks)
        application = current_gradient_application()
        with tape:
            loss_info = reduce_loss_info(loss_info, valid_masks,
                                         application.replica_context)
            total = tf.zeros(())
            if not is_unset(loss_info.loss):
                total += loss_info.loss
            if not is_unset(loss_info.scalar_loss):
                total += loss_info.scalar_loss
            total = check_loss_finite(
                total * weight, self.name, [p for p, _ in flatten_with_path(
                    loss_info.extra, 'loss')])
        all_grads_and_vars = []
        for optimizer, variables in self.get_optimizer_and_variable_sets():
            gate = self.should_apply(optimizer)
            if gate is not True and application.num_replicas > 1:
                raise ValueError(
                    "%s: a gated optimizer update (should_apply, e.g. "
                    "TD3's delayed actor) cannot run with %d tf.distribute "
                    "replicas (a synchronization point inside tf.cond); "
                    "train it with TrainerConfig.strategy=None" %
                    (type(self).__name__, application.num_replicas))
            apply = functools.partial(self._apply_gradients, tape, total,
                                      optimizer,
                                      application=application)
            all_grads_and_vars.extend(
                apply(variables) if gate is True else
                _gated_update(gate, tape, total, variables, apply))
        return loss_info._replace(loss=total), all_grads_and_vars

    def _check_loss_info(self, loss_info, valid_masks):
        """``check_loss_info`` for this class's ``calc_loss``."""
        check_loss_info(loss_info, valid_masks,
                        '%s.calc_loss' % type(self).__name__)

    def _apply_gradients(self, tape: tf.GradientTape, total: tf.Tensor,
                         optimizer: Any, variables: List[tf.Variable],
                         application: GradientApplication) -> list:
        """``apply_clipped_gradients`` with this algorithm's clipping."""
        return apply_clipped_gradients(
            tape, total, optimizer, variables, application,
            self._gradient_clipping, self._clip_by_global_norm, self.name)


def _gated_update(gate: Any, tape: tf.GradientTape, total: tf.Tensor,
                  variables: List[tf.Variable], apply: Any) -> list:
    """``apply(variables)`` inside ``tf.cond(gate)``; zero gradients when
    the gate is false. Returns ``[(gradient, variable)]``."""
    # Which variables get a gradient is known at trace time: both branches
    # return gradients for the same variables.
    grads = tape.gradient(total, variables)
    with_grad = [v for g, v in zip(grads, variables) if g is not None]
    gated = tf.cond(tf.convert_to_tensor(gate),
                    lambda: [g for g, _ in apply(with_grad)],
                    lambda: [tf.zeros_like(v) for v in with_grad])
    return list(zip(gated, with_grad))


def check_loss_info(loss_info: Any, valid_masks: Optional[Any],
                    where: str) -> None:
    """What ``calc_loss`` returned, checked in Python (at trace time): a
    ``LossInfo`` whose non-scalar leaves have the mask's shape.

    Args:
        loss_info: what ``calc_loss`` returned.
        valid_masks: the [T, B] mask of the update, or None (no shape
            check).
        where: the method for messages (``'<class>.calc_loss'``).
    Raises:
        TypeError: ``loss_info`` is not a ``LossInfo``.
        ValueError: a non-scalar leaf's shape differs from the mask's.
    """
    if not isinstance(loss_info, LossInfo):
        raise TypeError(
            "%s must return a LossInfo (loss=[T, B] per-step losses, "
            "extra=summaries), got %s -- wrap it: LossInfo(loss=...)" %
            (where, describe_returned(loss_info)))
    if valid_masks is None:
        return
    want = tf.TensorShape(valid_masks.shape if tf.is_tensor(valid_masks)
                          else np.shape(valid_masks))
    if want.rank is None:
        return
    for path, leaf in flatten_with_path(
            LossInfo(loss=loss_info.loss, extra=loss_info.extra),
            'loss_info'):
        if not tf.is_tensor(leaf):
            continue
        shape = leaf.shape
        if shape.rank == 0:
            continue
        if shape.rank is not None and not shape.is_compatible_with(want):
            raise ValueError(
                "%s returned %s of shape %s, expected %s (the [T, B] "
                "rows of the training info it was given): every "
                "per-step LossInfo leaf must be [T, B] or a scalar -- "
                "a TD loss over rows 0..T-2 needs its last row back "
                "(alf_rl.ops.masks.pad_last_row)" %
                (where, path.replace('loss_info.', '', 1),
                 shape.as_list(), want.as_list()))


def apply_clipped_gradients(tape: tf.GradientTape, total: tf.Tensor,
                            optimizer: Any, variables: List[tf.Variable],
                            application: GradientApplication,
                            gradient_clipping: Optional[float],
                            clip_by_global_norm: bool,
                            owner: str = 'algorithm') -> list:
    """Gradients of ``total`` (None ones dropped), summed by
    ``application``, clipped, applied by ``application`` unless one of
    them holds NaN/Inf (``apply_if_finite``: training stops naming it).

    Args:
        tape: the tape that recorded ``total``.
        total: the scalar loss.
        optimizer: the optimizer applying the gradients.
        variables: the variables it trains.
        application: the current ``GradientApplication``.
        gradient_clipping: clip norm, or None for no clipping.
        clip_by_global_norm: clip by the global norm instead of per tensor.
        owner: the algorithm's name, for a non-finite update's error.
    Returns:
        The applied ``[(gradient, variable)]``.
    """
    grads = tape.gradient(total, variables)
    grads_and_vars = [(g, v) for g, v in zip(grads, variables)
                      if g is not None]
    grads = application.sum_gradients([g for g, _ in grads_and_vars])
    grads_and_vars = clip_gradients(
        list(zip(grads, [v for _, v in grads_and_vars])),
        gradient_clipping, clip_by_global_norm)
    apply_if_finite(application, optimizer, grads_and_vars, owner)
    return grads_and_vars
