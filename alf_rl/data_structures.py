"""The nests that flow between environments, algorithms, drivers and trainers.

Field order is part of the public contract (see DESIGN.md). Every structure
is a ``namedtuple`` with defaults, so a partially filled structure is easy to
build, and every one is a nest for ``tf.nest``. ``()`` is the empty nest:
``tf.nest`` skips it, so an algorithm with no state or no info uses ``()``.

Conventions (ALF's): ``reward[t]`` and ``discount[t]`` arrive *with* step t,
i.e. they belong to the transition that led to step t. ``discount`` is 0 only
on a terminating LAST step; a LAST step caused by a time limit keeps
discount 1, so truncation bootstraps.
"""

import collections
import sys
from typing import Any, Dict, Iterable, NamedTuple, Optional, Tuple, Union

import numpy as np

# Avoids importing TensorFlow here (environment worker processes use these
# structures without it): a tensor or array, as a forward reference.
TensorOrArray = Any


def namedtuple(typename: str, field_names: Union[str, Iterable[str]],
               default_value: Any = None,
               default_values: Optional[Dict[str, Any]] = None) -> type:
    """A ``collections.namedtuple`` whose fields all have defaults.

    Args:
        typename: name of the new class.
        field_names: sequence of field names (or a space-separated string).
        default_value: default used for every field not in ``default_values``.
        default_values: optional dict ``{field: default}`` overriding
            ``default_value`` for some fields.

    Returns:
        The new namedtuple class.
    """
    # mypy cannot type a namedtuple whose name is not a literal.
    cls: Any = collections.namedtuple(  # type: ignore[misc]
        typename, field_names)
    fields: Tuple[str, ...] = cls._fields
    defaults: Dict[str, Any] = {f: default_value for f in fields}
    if default_values:
        unknown = set(default_values) - set(fields)
        if unknown:
            raise ValueError("%s has no fields %s; fields are %s" %
                             (typename, sorted(unknown), fields))
        defaults.update(default_values)
    cls.__new__.__defaults__ = tuple(defaults[f] for f in fields)
    return cls


class StepType(object):
    """Where a time step lies in its episode (int32 values)."""
    FIRST = np.int32(0)  # the first step of an episode; its reward is 0
    MID = np.int32(1)
    LAST = np.int32(2)  # the last step; the action chosen at it is ignored


def _compare(step_type, value):
    # TensorFlow is not imported here so that environment worker processes,
    # which only handle numpy arrays, can use these structures without it.
    if isinstance(step_type, (np.ndarray, np.generic, int)):
        return np.equal(step_type, value)
    tf = sys.modules.get('tensorflow')
    if tf is not None and tf.is_tensor(step_type):
        return tf.equal(step_type, value)
    return np.equal(step_type, value)


class _StepTypeMixin(object):
    """``is_first``/``is_mid``/``is_last`` for tensors and numpy arrays."""
    __slots__ = ()
    step_type: TensorOrArray  # a field of the namedtuple it is mixed into

    def is_first(self) -> TensorOrArray:
        """A bool tensor/array shaped like ``step_type``: [B] or [T, B]."""
        return _compare(self.step_type, StepType.FIRST)

    def is_mid(self) -> TensorOrArray:
        """A bool tensor/array shaped like ``step_type``: [B] or [T, B]."""
        return _compare(self.step_type, StepType.MID)

    def is_last(self) -> TensorOrArray:
        """A bool tensor/array shaped like ``step_type``: [B] or [T, B]."""
        return _compare(self.step_type, StepType.LAST)


class TimeStep(
        _StepTypeMixin,
        namedtuple('TimeStep', [  # type: ignore[misc]
            'step_type', 'reward', 'discount', 'observation', 'prev_action',
            'env_id'
        ])):
    """What an environment returns for one step of a batch of environments.

    Fields (B = batch):
        step_type: [B] int32, a ``StepType``.
        reward: [B] float32, received on arriving at this step (0 at FIRST).
        discount: [B] float32, 0 only when the episode terminated here.
        observation: nest of [B, ...] tensors matching the observation spec.
        prev_action: nest of [B, ...], the action that led here (zeros at
            FIRST steps).
        env_id: [B] int32, which environment of the batch this row is.
    """
    __slots__ = ()


class PolicyStep(NamedTuple):
    """What an RL algorithm's predict/rollout/train_step return.

    Fields:
        action: nest of [B, ...] sampled (or greedy) actions.
        state: nest of [B, ...], the next policy state (``()`` if stateless).
        info: nest of [B, ...], whatever the loss needs (distributions
            allowed).
    """
    action: Any = ()
    state: Any = ()
    info: Any = ()


class AlgStep(NamedTuple):
    """One step of an algorithm whose output is not an action.

    Fields:
        output: nest of [B, ...] (an intrinsic reward, an embedding, ...).
        state: nest of [B, ...] next state.
        info: nest of [B, ...] for the loss.
    """
    output: Any = ()
    state: Any = ()
    info: Any = ()


class Experience(
        _StepTypeMixin,
        namedtuple('Experience', [  # type: ignore[misc]
            'step_type', 'reward', 'discount', 'observation', 'prev_action',
            'env_id', 'action', 'rollout_info', 'state'
        ],
                   default_value=())):
    """One step of collected experience, as stored in a replay buffer.

    Fields are ``TimeStep``'s ([B] or [T, B] leading dims), plus:
        action: nest of [B, ...], the action taken at this step.
        rollout_info: nest, ``PolicyStep.info`` of rollout (distributions as
            parameters when stored).
        state: nest, the policy state passed *into* rollout at this step
            (``()`` unless the algorithm uses its rollout state).
    """
    __slots__ = ()


class TrainingInfo(NamedTuple):
    """What ``calc_loss`` sees, time-major [T, B, ...].

    Fields:
        action: nest of [T, B, ...] actions taken (gradient stopped).
        step_type: [T, B] int32.
        reward: [T, B] float32, reward[t] arrives with step t.
        discount: [T, B] float32.
        info: nest of [T, B, ...], rollout's info (on-policy) or
            train_step's info (off-policy).
        rollout_info: nest of [T, B, ...], the stored rollout info
            (off-policy; ``()`` on-policy).
        env_id: [T, B] int32.
    """
    action: Any = ()
    step_type: Any = ()
    reward: Any = ()
    discount: Any = ()
    info: Any = ()
    rollout_info: Any = ()
    env_id: Any = ()


class LossInfo(NamedTuple):
    """A loss and what is worth summarizing about it.

    Fields:
        loss: [T, B] or [B] float32 per-sample loss (masked and averaged by
            ``train_complete``), or ``()``.
        scalar_loss: [] float32 added after the reduction, or ``()``.
        extra: nest of [T, B], [B] or [] tensors, for summaries only
            (averaged the same way as ``loss``).
    """
    loss: Any = ()
    scalar_loss: Any = ()
    extra: Any = ()


def make_experience(time_step: 'TimeStep', policy_step: 'PolicyStep',
                    state: Any) -> 'Experience':
    """Builds an ``Experience`` from a step and the policy's answer to it.

    Args:
        time_step: ``TimeStep`` with [B, ...] fields.
        policy_step: ``PolicyStep`` returned for ``time_step``.
        state: nest of [B, ...], the policy state passed into the algorithm
            for ``time_step``.

    Returns:
        ``Experience`` with [B, ...] fields.
    """
    return Experience(step_type=time_step.step_type,
                      reward=time_step.reward,
                      discount=time_step.discount,
                      observation=time_step.observation,
                      prev_action=time_step.prev_action,
                      env_id=time_step.env_id,
                      action=policy_step.action,
                      rollout_info=policy_step.info,
                      state=state)


def experience_to_time_step(exp: 'Experience') -> 'TimeStep':
    """The ``TimeStep`` part of an ``Experience``.

    Args:
        exp: ``Experience`` with [B, ...] or [T, B, ...] fields.

    Returns:
        ``TimeStep`` with the same leading dims (no copies).
    """
    return TimeStep(step_type=exp.step_type,
                    reward=exp.reward,
                    discount=exp.discount,
                    observation=exp.observation,
                    prev_action=exp.prev_action,
                    env_id=exp.env_id)
