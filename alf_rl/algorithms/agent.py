"""``Agent``: an RL algorithm composed with the parts around it (as the
original ALF's ``Agent``).

An ``Agent`` routes one RL algorithm of the library (on-policy or trained
from replay) and, each optional:

- an **encoding network** shared by the parts: the RL algorithm and the
  intrinsic-reward module see its features instead of the observation, and
  it is trained by the agent's optimizer with the gradients of every loss;
- an **intrinsic-reward module**: any ``Algorithm`` following the
  intrinsic-reward module contract (``IcmAlgorithm``, ``RNDAlgorithm``,
  ``DIAYNAlgorithm`` or your own; see ``alf_rl.algorithms.icm_algorithm``):
  its step returns ``AlgStep(output=[B] reward, state, info)`` and its
  ``calc_loss`` a per-step ``LossInfo``;
- an **entropy target** (``EntropyTargetAlgorithm``) on the RL algorithm's
  ``info.action_distribution``: its adaptive entropy bonus is added to the
  loss;
- a **goal/skill generator** (e.g. ``SkillGenerator``): an ``Algorithm``
  with an ``output_spec`` whose step output (the goal) is appended to the
  observation: the RL algorithm and the intrinsic-reward module see the
  pair ``(observation, goal)``.

The reward the RL algorithm is trained on is ``extrinsic_reward_coef * r +
intrinsic_reward_coef * r_int``, with ``r`` the environment's reward after
``transform_timestep`` and ``r_int`` the module's reward for the same
transition (into step t, 0 at FIRST). ``LossInfo.extra`` is an
``AgentLossInfo``: each part's loss under its own name (``rl_loss``,
``intrinsic_loss``, ``entropy_target_loss``, ``goal_loss``), each part's
own extras (``rl``, ``intrinsic``, ...), and the mean extrinsic, intrinsic
and training rewards, so TensorBoard shows ``loss/intrinsic_loss``,
``loss/intrinsic/forward_loss``, ``loss/intrinsic_reward`` and so on.

Replay training stores the intrinsic reward computed at rollout (in the
rollout info) and trains on that stored value; it is not recomputed from
the replayed observations. Why: (1) it is the reward the data was
collected under, which is what on-policy methods (PPO's advantages over
what one iteration collected, A2C) must be trained on; (2) a module with
state (ICM's previous observation) cannot recompute the first row of a
sampled sequence, whose previous step is not in the batch; (3) it costs
nothing at training time. The price, for off-policy methods with a large
buffer: old transitions keep the novelty they had when collected. The
module itself is trained on the replayed rows (its ``train_step``, with
the stored rollout state when it has one: an agent whose module has a
state stores the rollout state in the experience, ``use_rollout_state``).

The state is ``AgentState(rl, intrinsic, goal)``, each part's own state
(``()`` where a part is absent); ``predict`` runs only the encoder, the
goal generator and the RL algorithm's ``predict`` (its state has
``intrinsic=()``). ``transform_timestep`` applies the agent's own reward
and observation transforms (``RLAlgorithm`` arguments), then the RL
algorithm's: its reward transforms always, its observation transforms only
when it sees the environment's observation (no encoder, no goal).
"""

import inspect
from typing import Any, Callable, List, NamedTuple, Optional, Tuple, Union

import gin
import tensorflow as tf

from alf_rl.algorithms.algorithm import Algorithm
from alf_rl.algorithms.entropy_target_algorithm import EntropyTargetAlgorithm
from alf_rl.algorithms.on_policy_algorithm import OnPolicyAlgorithm
from alf_rl.algorithms.rl_algorithm import RLAlgorithm
from alf_rl.data_structures import (AlgStep, Experience, LossInfo,
                                    PolicyStep, TimeStep, TrainingInfo,
                                    namedtuple)
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


def _accepts(ctor: Callable, name: str) -> bool:
    """Whether ``ctor`` takes a keyword argument ``name``."""
    try:
        params = inspect.signature(ctor).parameters
    except (TypeError, ValueError):
        return True
    return name in params or any(
        p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values())


def _feature_spec(network: Network, observation_spec: Nest) -> tf.TensorSpec:
    """The [D] spec of what ``network`` outputs for one observation."""
    out, _ = network(zeros_from_spec(observation_spec, [1]))
    if out.shape.rank != 2:
        raise ValueError("Agent: the encoding network must output [B, D] "
                         "features, got shape %s for B=1" %
                         out.shape.as_list())
    return tf.TensorSpec(out.shape[1:], out.dtype)


def _same_structure(a: Nest, b: Nest) -> bool:
    try:
        tf.nest.assert_same_structure(a, b)
    except (TypeError, ValueError):
        return False
    return True


@gin.configurable
class Agent(OnPolicyAlgorithm):
    """An RL algorithm with an optional shared encoder, intrinsic-reward
    module, entropy target and goal/skill generator (see the module
    docstring for the data flow).

    Trained like the RL algorithm it wraps: by the ``OnPolicyDriver``
    (``OnPolicyTrainer``) for on-policy methods, or from replay
    (``OffPolicyTrainer``) for PPO and the off-policy methods.

    Args:
        observation_spec: nest of specs of one environment observation.
        action_spec: nest of (bounded) specs of one action.
        rl_algorithm_ctor: ``(observation_spec=, action_spec=) ->
            RLAlgorithm``, called with the observation spec the RL
            algorithm sees (the encoder's feature spec, paired with the
            goal spec when a goal generator is given).
        encoding_network_ctor: optional ``(input_tensor_spec=) -> Network``
            mapping [B, ...] observations to [B, D] features.
        intrinsic_reward_module_ctor: optional ``(observation_spec=[,
            action_spec=]) -> Algorithm`` (``action_spec`` is passed when
            the constructor takes it) following the intrinsic-reward
            module contract.
        entropy_target_ctor: optional ``(action_spec) ->
            EntropyTargetAlgorithm``.
        goal_generator: optional ``Algorithm`` with an ``output_spec``
            property (e.g. ``SkillGenerator(num_skills=8)``).
        extrinsic_reward_coef: weight of the environment's reward.
        intrinsic_reward_coef: weight of the module's reward.
        optimizer: trains the encoder and the parts without an optimizer
            of their own.
        name: module name.
        **kwargs: passed to ``RLAlgorithm`` (the agent's own reward and
            observation transforms, gradient clipping).

    Raises:
        ValueError: an RL algorithm with observation transforms behind an
            encoder or a goal; a wrapped algorithm that overrides
            ``train_complete`` (TRAC); rollout and train states of
            different structures when the rollout state must be stored;
            an encoder whose output is not [B, D].
        TypeError: an RL algorithm that is not an ``RLAlgorithm`` trained
            on-policy or from replay; a module that is not an
            ``Algorithm``; a goal generator without ``output_spec``.
    """

    def __init__(self,
                 observation_spec: Nest,
                 action_spec: Nest,
                 rl_algorithm_ctor: Callable[..., RLAlgorithm],
                 encoding_network_ctor: Optional[Callable[..., Network]] = None,
                 intrinsic_reward_module_ctor: Optional[
                     Callable[..., Algorithm]] = None,
                 entropy_target_ctor: Optional[
                     Callable[[Nest], EntropyTargetAlgorithm]] = None,
                 goal_generator: Optional[Algorithm] = None,
                 extrinsic_reward_coef: float = 1.0,
                 intrinsic_reward_coef: float = 1.0,
                 optimizer: Optional[Any] = None,
                 name: str = 'Agent',
                 **kwargs: Any):
        encoder = (encoding_network_ctor(input_tensor_spec=observation_spec)
                   if encoding_network_ctor is not None else None)
        rl_observation_spec = _rl_observation_spec(observation_spec, encoder,
                                                   goal_generator)
        rl = rl_algorithm_ctor(observation_spec=rl_observation_spec,
                               action_spec=action_spec)
        _check_rl_algorithm(rl, rl_observation_spec is not observation_spec)
        module = _build_module(intrinsic_reward_module_ctor,
                               rl_observation_spec, action_spec)
        specs = _state_specs(rl, module, goal_generator)
        stores_state = rl.use_rollout_state or bool(
            tf.nest.flatten(specs.train.intrinsic))
        if stores_state and not _same_structure(specs.rollout, specs.train):
            raise ValueError(
                "Agent: %s's rollout and train states differ in structure "
                "(%s vs %s), but the rollout state must be stored and "
                "replayed (use_rollout_state, or a module with a state)" %
                (type(rl).__name__, specs.rollout, specs.train))
        super().__init__(observation_spec, action_spec,
                         use_rollout_state=stores_state,
                         train_state_spec=specs.train,
                         rollout_state_spec=specs.rollout,
                         predict_state_spec=specs.predict,
                         optimizer=optimizer, name=name, **kwargs)
        self._encoding_network = encoder
        self._rl_algorithm = rl
        self._intrinsic_module = module
        self._entropy_target = (entropy_target_ctor(action_spec)
                                if entropy_target_ctor is not None else None)
        self._goal_generator = goal_generator
        self._rl_sees_observation = rl_observation_spec is observation_spec
        self._extrinsic_reward_coef = float(extrinsic_reward_coef)
        self._intrinsic_reward_coef = float(intrinsic_reward_coef)

    # ------------------------------------------------------------ parts
    @property
    def rl_algorithm(self) -> RLAlgorithm:
        """The wrapped RL algorithm."""
        return self._rl_algorithm

    @property
    def intrinsic_reward_module(self) -> Optional[Algorithm]:
        """The intrinsic-reward module, or None."""
        return self._intrinsic_module

    @property
    def goal_generator(self) -> Optional[Algorithm]:
        """The goal/skill generator, or None."""
        return self._goal_generator

    @property
    def encoding_network(self) -> Optional[Network]:
        """The shared encoder, or None."""
        return self._encoding_network

    @property
    def last_row_only_bootstraps(self) -> bool:
        """As the wrapped RL algorithm's."""
        return self._rl_algorithm.last_row_only_bootstraps

    @property
    def recurrent_state_spec(self) -> Nest:
        """The RL algorithm's: the module's and the goal generator's states
        are stored inputs (replayed one-step rows get them whole)."""
        return self._rl_algorithm.recurrent_state_spec

    def rollout_owned_variables(self) -> List[tf.Variable]:
        """The parts' rollout-owned variables (DQN's exploration counter,
        the intrinsic-reward module's normalizer statistics)."""
        parts = [self._rl_algorithm, self._intrinsic_module,
                 self._goal_generator]
        return [v for part in parts if part is not None
                for v in part.rollout_owned_variables()]

    def env_action(self, action: Nest) -> Nest:
        """The RL algorithm's ``env_action``."""
        return self._rl_algorithm.env_action(action)

    def training_reward(self, reward: tf.Tensor,
                        intrinsic_reward: Union[tf.Tensor, tuple]
                        ) -> tf.Tensor:
        """``extrinsic_reward_coef * reward + intrinsic_reward_coef *
        intrinsic_reward`` (the extrinsic part alone without a module).

        Args:
            reward: [T, B] (or [B]) float32 transformed rewards.
            intrinsic_reward: the same shape, or ``()``.
        Returns:
            float32 tensor shaped like ``reward``.
        """
        mixed = self._extrinsic_reward_coef * reward
        if not is_unset(intrinsic_reward):
            mixed += self._intrinsic_reward_coef * intrinsic_reward
        return mixed

    def transform_timestep(self, time_step: Any,
                           update_normalizers: bool = False) -> Any:
        """The agent's transforms, then the RL algorithm's (see the module
        docstring).

        Args:
            time_step: ``TimeStep`` or ``Experience`` with [B, ...] or
                [T, B, ...] leaves.
            update_normalizers: fold this batch into the statistics first.
        Returns:
            The same structure, reward and observation transformed.
        """
        time_step = super().transform_timestep(time_step, update_normalizers)
        rl = self._rl_algorithm
        reward = rl.transform_reward(time_step, update_normalizers)
        observation = time_step.observation
        if self._rl_sees_observation:
            observation = rl.transform_observation(
                observation, time_step.step_type.shape.rank,
                update_normalizers)
        return time_step._replace(reward=reward, observation=observation)

    # ------------------------------------------------------------ steps
    def _rl_observation(self, observation: Nest,
                        goal: Union[tf.Tensor, tuple]) -> Nest:
        """What the RL algorithm sees: features (or the observation),
        paired with the goal when there is a goal generator."""
        if self._encoding_network is not None:
            observation, _ = self._encoding_network(observation)
        if self._goal_generator is not None:
            observation = (observation, goal)
        return observation

    def rl_policy_input(self, time_step: TimeStep, state: AgentState,
                        episode_starts: bool = True
                        ) -> Tuple[TimeStep, AlgStep]:
        """What the RL algorithm's policy sees at ``predict``.

        Used by ``predict`` and by the policy export, which runs the RL
        algorithm's policy on this observation.

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves (transformed).
            state: ``AgentState`` matching ``predict_state_spec``.
            episode_starts: False: no step of the caller is ever FIRST (an
                exported policy, whose goal is its state input); a goal
                generator whose ``changes_goal_only_at_first`` is True is
                then not run (the state's goal is used as is), so its draw
                is not part of the traced policy.
        Returns:
            ``(time_step with the RL algorithm's observation (the
            encoder's [B, D] features, or the observation, paired with
            the goal when there is a goal generator), the goal
            generator's predict AlgStep (empty without one))``.
        """
        if not episode_starts and getattr(self._goal_generator,
                                          'changes_goal_only_at_first',
                                          False):
            goal_step = AlgStep(output=state.goal, state=state.goal,
                                info=())
        else:
            goal_step = self._goal_step('predict', time_step, state.goal)
        return time_step._replace(observation=self._rl_observation(
            time_step.observation, goal_step.output)), goal_step

    def predict(self, time_step: TimeStep, state: AgentState) -> PolicyStep:
        """Encoder, goal generator and the RL algorithm's ``predict``.

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves (transformed).
            state: ``AgentState`` matching ``predict_state_spec``.
        Returns:
            ``PolicyStep(action, AgentState(rl, (), goal), AgentInfo(rl,
            goal=...))``.
        """
        rl_time_step, goal_step = self.rl_policy_input(time_step, state)
        rl_step = self._rl_algorithm.predict(rl_time_step, state.rl)
        return PolicyStep(action=rl_step.action,
                          state=AgentState(rl=rl_step.state,
                                           goal=goal_step.state),
                          info=AgentInfo(rl=rl_step.info,
                                         goal=goal_step.output,
                                         goal_info=goal_step.info))

    def rollout(self, time_step: TimeStep, state: AgentState) -> PolicyStep:
        """One collection step of every part.

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves (transformed).
            state: ``AgentState`` matching ``rollout_state_spec``.
        Returns:
            ``PolicyStep(action [B, ...], AgentState, AgentInfo)``; the
            info's ``intrinsic_reward`` is the module's [B] reward.
        """
        goal_step = self._goal_step('rollout', time_step, state.goal)
        return self._step(time_step, state, goal_step, 'rollout')

    def train_step(self, experience: Experience,
                   state: AgentState) -> PolicyStep:
        """Every part's ``train_step`` on one replayed row; the goal is the
        one stored at rollout.

        Args:
            experience: ``Experience`` with [B, ...] leaves whose
                ``rollout_info`` is an ``AgentInfo``.
            state: ``AgentState`` matching ``train_state_spec``.
        Returns:
            ``PolicyStep`` with ``AgentInfo`` info (its
            ``intrinsic_reward`` recomputed, for the record only).
        """
        return self._replayed_step(experience, state, 'train_step')

    def bootstrap_step(self, experience: Experience,
                       state: AgentState) -> PolicyStep:
        """As ``train_step`` with the RL algorithm's ``bootstrap_step``."""
        return self._replayed_step(experience, state, 'bootstrap_step')

    def first_train_step(self, experience: Experience,
                         state: AgentState) -> PolicyStep:
        """As ``train_step`` with the RL algorithm's ``first_train_step``."""
        return self._replayed_step(experience, state, 'first_train_step')

    def _goal_step(self, method, time_step, state):
        if self._goal_generator is None:
            return AlgStep(output=(), state=(), info=())
        return getattr(self._goal_generator, method)(time_step, state)

    def _replayed_step(self, experience, state, rl_method):
        stored = experience.rollout_info
        goal_step = AlgStep(output=stored.goal, state=state.goal,
                            info=stored.goal_info)
        return self._step(experience._replace(rollout_info=stored.rl),
                          state, goal_step, 'train_step', rl_method)

    def _step(self, inputs, state, goal_step, module_method,
              rl_method=None):
        """Intrinsic module and RL algorithm on ``inputs`` (a time step or
        an experience row whose rollout info is the RL algorithm's)."""
        inputs = inputs._replace(observation=self._rl_observation(
            inputs.observation, goal_step.output))
        module_step = AlgStep(output=(), state=(), info=())
        if self._intrinsic_module is not None:
            module_step = getattr(self._intrinsic_module, module_method)(
                inputs, state.intrinsic)
        rl_step = getattr(self._rl_algorithm, rl_method or module_method)(
            inputs, state.rl)
        return PolicyStep(
            action=rl_step.action,
            state=AgentState(rl=rl_step.state, intrinsic=module_step.state,
                             goal=goal_step.state),
            info=AgentInfo(rl=rl_step.info, intrinsic=module_step.info,
                           intrinsic_reward=module_step.output,
                           goal=goal_step.output,
                           goal_info=goal_step.info))

    # ------------------------------------------------------------ training
    def preprocess_experience(self, experience: Experience) -> Experience:
        """The RL algorithm's ``preprocess_experience`` on the training
        reward (e.g. PPO's advantages of the mixed reward).

        Args:
            experience: ``Experience`` with [T, B, ...] leaves and
                ``AgentInfo`` rollout info.
        Returns:
            The processed experience: the RL algorithm's changes, the
            extrinsic reward and the observation kept, the rollout info an
            ``AgentInfo`` again.
        """
        info = experience.rollout_info
        observation = experience.observation
        if self._encoding_network is not None:
            observation = _merged_apply(self._encoding_network, observation)
        if self._goal_generator is not None:
            observation = (observation, info.goal)
        processed = self._rl_algorithm.preprocess_experience(
            experience._replace(
                reward=self.training_reward(experience.reward,
                                            info.intrinsic_reward),
                observation=observation,
                rollout_info=info.rl))
        return processed._replace(
            reward=experience.reward,
            observation=experience.observation,
            rollout_info=info._replace(rl=processed.rollout_info))

    def _rl_training_info(self, training_info):
        """The RL algorithm's view: its infos and the training reward."""
        stored = training_info.rollout_info
        replayed = isinstance(stored, AgentInfo)
        intrinsic_reward = (stored if replayed else
                            training_info.info).intrinsic_reward
        return training_info._replace(
            reward=self.training_reward(training_info.reward,
                                        intrinsic_reward),
            info=training_info.info.rl,
            rollout_info=stored.rl if replayed else stored), intrinsic_reward

    def calc_loss(self, training_info: TrainingInfo) -> LossInfo:
        """The sum of every part's per-step loss.

        Args:
            training_info: ``TrainingInfo`` with [T, B, ...] leaves and
                ``AgentInfo`` infos (``rollout_info`` ``()`` on-policy,
                the stored ``AgentInfo`` from replay).
        Returns:
            ``LossInfo(loss=[T, B], scalar_loss, extra=AgentLossInfo)``.
        """
        rl_info, intrinsic_reward = self._rl_training_info(training_info)
        info = training_info.info
        if self._entropy_target is not None:  # checked first
            entropy_loss = self._entropy_target.calc_loss(
                _action_distribution(self._rl_algorithm, info.rl),
                step_type=training_info.step_type)
        parts = {'rl': self._rl_algorithm.calc_loss(rl_info)}
        if self._intrinsic_module is not None:
            parts['intrinsic'] = self._intrinsic_module.calc_loss(
                training_info._replace(info=info.intrinsic, rollout_info=()))
        if self._entropy_target is not None:
            parts['entropy_target'] = entropy_loss
        if self._goal_generator is not None:
            parts['goal'] = self._goal_generator.calc_loss(
                training_info._replace(info=info.goal_info, rollout_info=()))
        loss, scalar_loss, extra = (), (), {}
        for part, part_loss in parts.items():
            if not is_unset(part_loss.loss):
                loss = part_loss.loss if is_unset(loss) else loss + part_loss.loss
                extra[part + '_loss'] = part_loss.loss
            if not is_unset(part_loss.scalar_loss):
                scalar_loss = (part_loss.scalar_loss if is_unset(scalar_loss)
                               else scalar_loss + part_loss.scalar_loss)
            extra[part] = part_loss.extra
        return LossInfo(loss=loss, scalar_loss=scalar_loss,
                        extra=AgentLossInfo(
                            extrinsic_reward=training_info.reward,
                            intrinsic_reward=intrinsic_reward,
                            training_reward=rl_info.reward, **extra))

    def after_train(self, training_info: TrainingInfo) -> None:
        """Every part's ``after_train`` on its own view of the batch (the
        entropy target's controller on the RL algorithm's infos)."""
        rl_info, _ = self._rl_training_info(training_info)
        self._rl_algorithm.after_train(rl_info)
        if self._intrinsic_module is not None:
            self._intrinsic_module.after_train(training_info._replace(
                info=training_info.info.intrinsic, rollout_info=()))
        if self._entropy_target is not None:
            self._entropy_target.after_train(rl_info)
        if self._goal_generator is not None:
            self._goal_generator.after_train(training_info._replace(
                info=training_info.info.goal_info, rollout_info=()))

    def _should_apply(self, optimizer: Any) -> Union[bool, tf.Tensor]:
        """The RL algorithm's gate (TD3's delayed actor)."""
        return self._rl_algorithm._should_apply(optimizer)

    def calc_priority(self, training_info: TrainingInfo,
                      per_step_loss_info: LossInfo) -> Optional[tf.Tensor]:
        """The RL algorithm's priorities, on its own loss and infos.

        Args:
            training_info: ``TrainingInfo`` with [L, b] leaves.
            per_step_loss_info: the agent's per-step ``LossInfo``.
        Returns:
            [b] float32 or None.
        """
        rl_info, _ = self._rl_training_info(training_info)
        extra = per_step_loss_info.extra
        return self._rl_algorithm.calc_priority(
            rl_info, LossInfo(loss=extra.rl_loss, extra=extra.rl))

    def continue_training(self, training_info: TrainingInfo,
                          valid_masks: tf.Tensor) -> tf.Tensor:
        """The RL algorithm's early stop (PPO's KL stop).

        Args:
            training_info: [L, b] ``TrainingInfo`` of the last update.
            valid_masks: [L, b] float32 mask of the steps that counted.
        Returns:
            bool scalar tensor.
        """
        rl_info, _ = self._rl_training_info(training_info)
        return self._rl_algorithm.continue_training(rl_info, valid_masks)


class _StateSpecs(NamedTuple):
    """The agent's three ``AgentState`` specs."""
    train: AgentState
    rollout: AgentState
    predict: AgentState


def _state_specs(rl: RLAlgorithm, module: Optional[Algorithm],
                 goal: Optional[Algorithm]) -> _StateSpecs:
    """``AgentState`` specs of the parts (the goal generator's rollout
    state is carried unchanged through ``train_step``)."""
    goal_spec = goal.rollout_state_spec if goal is not None else ()
    return _StateSpecs(
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


def _rl_observation_spec(observation_spec: Nest, encoder: Optional[Network],
                         goal: Optional[Algorithm]) -> Nest:
    """What the RL algorithm sees: the encoder's feature spec (or
    ``observation_spec`` itself), paired with the goal's spec."""
    spec = (_feature_spec(encoder, observation_spec)
            if encoder is not None else observation_spec)
    if goal is None:
        return spec
    if not isinstance(goal, Algorithm) or not hasattr(goal, 'output_spec'):
        raise TypeError("Agent: goal_generator must be an Algorithm with an "
                        "output_spec (e.g. SkillGenerator), got %s" %
                        type(goal).__name__)
    return (spec, goal.output_spec)


def _build_module(ctor: Optional[Callable[..., Algorithm]],
                  observation_spec: Nest,
                  action_spec: Nest) -> Optional[Algorithm]:
    """The intrinsic-reward module (``action_spec`` passed when the
    constructor takes it), or None without a constructor."""
    if ctor is None:
        return None
    kwargs = dict(observation_spec=observation_spec)
    if _accepts(ctor, 'action_spec'):
        kwargs['action_spec'] = action_spec
    module = ctor(**kwargs)
    if not isinstance(module, Algorithm):
        raise TypeError("Agent: intrinsic_reward_module_ctor must build an "
                        "Algorithm, got %s" % type(module).__name__)
    return module


def _check_rl_algorithm(rl: Any, observation_replaced: bool) -> None:
    if not (isinstance(rl, RLAlgorithm) and hasattr(rl, 'train')):
        raise TypeError("Agent: rl_algorithm_ctor must build an RLAlgorithm "
                        "(OnPolicyAlgorithm or OffPolicyAlgorithm), got %s" %
                        type(rl).__name__)
    if type(rl).train_complete is not RLAlgorithm.train_complete:
        raise ValueError(
            "Agent cannot wrap %s: it overrides train_complete (the agent "
            "trains all parts in one update)" % type(rl).__name__)
    if observation_replaced and rl.has_observation_transforms:
        raise ValueError(
            "Agent: %s has observation transformers or a normalizer, but it "
            "sees the encoder's features or (observation, goal) pairs; give "
            "them to the Agent (Agent.observation_normalizer_ctor) instead" %
            type(rl).__name__)


def _action_distribution(rl: RLAlgorithm, info: Any) -> Nest:
    """The RL algorithm's ``info.action_distribution`` (for the entropy
    target); ValueError naming the algorithm when its info has none."""
    dist = getattr(info, 'action_distribution', None)
    if dist is None:
        raise ValueError(
            "Agent: entropy_target_ctor needs the RL algorithm's info to have "
            "an action_distribution; %s's info is %s" %
            (type(rl).__name__, type(info).__name__))
    return dist


def _merged_apply(network: Network, observation: Nest) -> tf.Tensor:
    """``network`` on [T, B, ...] observations: [T, B, D] outputs."""
    outer = tf.shape(tf.nest.flatten(observation)[0])[:2]
    out, _ = network(dist_ops.merge_outer_dims(observation))
    return tf.reshape(out, tf.concat([outer, out.shape[1:].as_list()], 0))
