"""The parts of an ``Agent`` (``alf_rl.algorithms.agent``): its state, info
and loss-info structures, and the checks and helpers that build and
combine its parts through their protocols (``alf_rl.algorithms.protocols``).
"""

from typing import Any, Callable, Dict, NamedTuple, Optional

import tensorflow as tf

from alf_rl.algorithms.algorithm import Algorithm
from alf_rl.algorithms.protocols import (GoalGenerator, HasActionDistribution,
                                         IntrinsicRewardModule,
                                         ReplayHooks)
from alf_rl.algorithms.rl_algorithm import RLAlgorithm
from alf_rl.data_structures import AlgStep, LossInfo, namedtuple
from alf_rl.networks.network import Network
from alf_rl.ops import distributions as dist_ops
from alf_rl.ops.masks import is_unset
from alf_rl.specs import zeros_from_spec
from alf_rl.utils.nest import Nest

AgentState = namedtuple('AgentState', ['rl', 'intrinsic', 'goal'],
                        default_value=())
AgentState.__doc__ = """The agent's state: each part's state or ``()``."""

AgentInfo = namedtuple(
    'AgentInfo',
    [
        'rl',  # the RL algorithm's info
        'intrinsic',  # the intrinsic-reward module's info
        'intrinsic_reward',  # [B] float32 r_int of the module's output
        'goal',  # [B, ...] the goal generator's output
        'goal_info',  # the goal generator's info
    ],
    default_value=())

AgentLossInfo = namedtuple(
    'AgentLossInfo',
    [
        'rl_loss',  # [T, B] the RL algorithm's per-step loss
        'rl',  # its LossInfo.extra
        'intrinsic_loss',  # [T, B] the intrinsic-reward module's loss
        'intrinsic',  # its extra
        'entropy_target_loss',  # [T, B] -alpha * entropy
        'entropy_target',  # EntropyTargetLossInfo
        'goal_loss',  # [T, B] the goal generator's loss
        'goal',  # its extra
        'extrinsic_reward',  # [T, B] r (after transform_timestep)
        'intrinsic_reward',  # [T, B] r_int
        'training_reward',  # [T, B] what the RL algorithm trains on
    ],
    default_value=())

#: The step of an absent part.
NO_STEP = AlgStep(output=(), state=(), info=())


class StateSpecs(NamedTuple):
    """The agent's three ``AgentState`` specs."""
    train: Any  # AgentState of specs
    rollout: Any
    predict: Any


def state_specs(rl: RLAlgorithm, module: Optional[Algorithm],
                goal: Optional[Algorithm]) -> StateSpecs:
    """``AgentState`` specs of the parts (the goal generator's rollout
    state is carried unchanged through ``train_step``)."""
    goal_spec = goal.rollout_state_spec if goal is not None else ()
    return StateSpecs(
        train=AgentState(
            rl=rl.train_state_spec,
            intrinsic=module.train_state_spec if module is not None else (),
            goal=goal_spec),
        rollout=AgentState(
            rl=rl.rollout_state_spec,
            intrinsic=module.rollout_state_spec if module is not None else (),
            goal=goal_spec),
        predict=AgentState(
            rl=rl.predict_state_spec,
            goal=goal.predict_state_spec if goal is not None else ()))


def _same_structure(a: Nest, b: Nest) -> bool:
    try:
        tf.nest.assert_same_structure(a, b)
    except (TypeError, ValueError):
        return False
    return True


def stores_rollout_state(rl: RLAlgorithm, specs: StateSpecs) -> bool:
    """Whether the agent stores its rollout state in the experience (the
    RL algorithm's ``use_rollout_state``, or a module with a state).

    Raises:
        ValueError: it must, but the rollout and train states differ in
            structure.
    """
    stores = rl.use_rollout_state or bool(tf.nest.flatten(
        specs.train.intrinsic))
    if stores and not _same_structure(specs.rollout, specs.train):
        raise ValueError(
            "Agent: %s's rollout and train states differ in structure "
            "(%s vs %s), but the rollout state must be stored and "
            "replayed (use_rollout_state, or a module with a state)" %
            (type(rl).__name__, specs.rollout, specs.train))
    return stores


def _feature_spec(network: Network, observation_spec: Nest) -> tf.TensorSpec:
    """The [D] spec of what ``network`` outputs for one observation."""
    out, _ = network(zeros_from_spec(observation_spec, [1]))
    if out.shape.rank != 2:
        raise ValueError("Agent: the encoding network must output [B, D] "
                         "features, got shape %s for B=1" %
                         out.shape.as_list())
    return tf.TensorSpec(out.shape[1:], out.dtype)


def rl_observation_spec(observation_spec: Nest, encoder: Optional[Network],
                        goal: Optional[Algorithm]) -> Nest:
    """What the RL algorithm sees: the encoder's feature spec (or
    ``observation_spec`` itself), paired with the goal's spec.

    Raises:
        TypeError: ``goal`` is not an ``Algorithm`` following the
            ``GoalGenerator`` protocol (``output_spec``...).
    """
    spec = (_feature_spec(encoder, observation_spec)
            if encoder is not None else observation_spec)
    if goal is None:
        return spec
    if not (isinstance(goal, Algorithm) and isinstance(goal, GoalGenerator)):
        raise TypeError("Agent: goal_generator must be an Algorithm following "
                        "the GoalGenerator protocol (an output_spec, "
                        "changes_goal_only_at_first; e.g. SkillGenerator), "
                        "got %s" % type(goal).__name__)
    return (spec, goal.output_spec)


def build_module(ctor: Optional[Callable[..., Algorithm]],
                 observation_spec: Nest,
                 action_spec: Nest) -> Optional[Algorithm]:
    """The intrinsic-reward module ``ctor(observation_spec=,
    action_spec=)``, or None without a constructor.

    Raises:
        TypeError: it is not an ``Algorithm`` following the
            ``IntrinsicRewardModule`` protocol.
    """
    if ctor is None:
        return None
    module = ctor(observation_spec=observation_spec, action_spec=action_spec)
    if not (isinstance(module, Algorithm)
            and isinstance(module, IntrinsicRewardModule)):
        raise TypeError("Agent: intrinsic_reward_module_ctor must build an "
                        "Algorithm following the IntrinsicRewardModule "
                        "protocol, got %s" % type(module).__name__)
    return module


def check_rl_algorithm(rl: Any, observation_replaced: bool) -> None:
    """Refuses an RL algorithm an ``Agent`` cannot wrap, in one line.

    Args:
        rl: what ``rl_algorithm_ctor`` built.
        observation_replaced: whether it sees features or (observation,
            goal) pairs rather than the environment's observation.
    Raises:
        TypeError: not an ``RLAlgorithm`` with the replay-training hooks.
        ValueError: its ``train_complete`` is its own update (TRAC); it
            transforms observations it does not see.
    """
    if not (isinstance(rl, RLAlgorithm) and isinstance(rl, ReplayHooks)):
        raise TypeError("Agent: rl_algorithm_ctor must build an RLAlgorithm "
                        "(OnPolicyAlgorithm or OffPolicyAlgorithm), got %s" %
                        type(rl).__name__)
    if rl.has_own_update:
        raise ValueError(
            "Agent cannot wrap %s: its train_complete is its own update "
            "(has_own_update; the agent trains all parts in one update)" %
            type(rl).__name__)
    if observation_replaced and rl.has_observation_transforms:
        raise ValueError(
            "Agent: %s has observation transformers or a normalizer, but it "
            "sees the encoder's features or (observation, goal) pairs; give "
            "them to the Agent (Agent.observation_normalizer_ctor) instead" %
            type(rl).__name__)


def action_distribution(rl: RLAlgorithm, info: Any) -> Nest:
    """The RL algorithm's ``info.action_distribution`` (for the entropy
    target); ValueError naming the algorithm when its info has none."""
    if not isinstance(info, HasActionDistribution):
        raise ValueError(
            "Agent: entropy_target_ctor needs the RL algorithm's info to have "
            "an action_distribution; %s's info is %s" %
            (type(rl).__name__, type(info).__name__))
    return info.action_distribution


def merged_apply(network: Network, observation: Nest) -> tf.Tensor:
    """``network`` on [T, B, ...] observations: [T, B, D] outputs."""
    outer = tf.shape(tf.nest.flatten(observation)[0])[:2]
    out, _ = network(dist_ops.merge_outer_dims(observation))
    return tf.reshape(out, tf.concat([outer, out.shape[1:].as_list()], 0))


def sum_part_losses(parts: Dict[str, LossInfo]) -> LossInfo:
    """The sum of the parts' per-step losses and scalar losses; ``extra``
    a dict of each part's loss (``<part>_loss``) and extra (``<part>``).

    Args:
        parts: part name -> its ``LossInfo`` ([T, B] ``loss`` or ``()``).
    Returns:
        ``LossInfo(loss=[T, B] or (), scalar_loss, extra=dict)``.
    """
    loss, scalar_loss, extra = (), (), {}
    for part, part_loss in parts.items():
        if not is_unset(part_loss.loss):
            loss = part_loss.loss if is_unset(loss) else loss + part_loss.loss
            extra[part + '_loss'] = part_loss.loss
        if not is_unset(part_loss.scalar_loss):
            scalar_loss = (part_loss.scalar_loss if is_unset(scalar_loss)
                           else scalar_loss + part_loss.scalar_loss)
        extra[part] = part_loss.extra
    return LossInfo(loss=loss, scalar_loss=scalar_loss, extra=extra)
