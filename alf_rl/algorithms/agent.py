"""``Agent``: an RL algorithm composed with the parts around it (as the
original ALF's ``Agent``).

An ``Agent`` routes one RL algorithm of the library (on-policy or trained
from replay) and, each optional:

- an **encoding network** shared by the parts: the RL algorithm and the
  intrinsic-reward module see its features instead of the observation, and
  it is trained by the agent's optimizer with the gradients of every loss;
- an **intrinsic-reward module**: any ``Algorithm`` following the
  ``IntrinsicRewardModule`` protocol (``IcmAlgorithm``, ``RNDAlgorithm``,
  ``DIAYNAlgorithm`` or your own; ``alf_rl.algorithms.protocols``): its
  step returns ``AlgStep(output=[B] reward, state, info)`` and its
  ``calc_loss`` a per-step ``LossInfo``;
- an **entropy target** (``EntropyTargetAlgorithm``) on the RL algorithm's
  ``info.action_distribution``: its adaptive entropy bonus is added to the
  loss;
- a **goal/skill generator** (e.g. ``SkillGenerator``): an ``Algorithm``
  following the ``GoalGenerator`` protocol, whose step output (the goal,
  of its ``output_spec``) is appended to the observation: the RL
  algorithm and the intrinsic-reward module see the pair
  ``(observation, goal)``.

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

How it is trained is its RL algorithm's: ``training_kind`` and the other
capabilities the ``ReplayHooks`` protocol declares, its replay hooks and
the gate of gated updates (``should_apply``) are the RL algorithm's,
through ``DelegatedHooks``: the agent gives only its view of a replayed
row (``outer_step``), of the training info and of the loss
(``inner_training_info``, ``inner_loss_info``), so a hook added to the
base needs no change here.
"""


from typing import Any, Callable, List, Optional, Tuple, Union

import gin
import tensorflow as tf

from alf_rl.algorithms.agent_parts import (NO_STEP, AgentInfo, AgentLossInfo,
                                           AgentState, build_module,
                                           check_rl_algorithm,
                                           rl_observation_spec,
                                           state_specs, stores_rollout_state)
from alf_rl.algorithms.agent_training import AgentTraining
from alf_rl.algorithms.algorithm import Algorithm
from alf_rl.algorithms.delegated_hooks import DelegatedHooks
from alf_rl.algorithms.entropy_target_algorithm import EntropyTargetAlgorithm
from alf_rl.algorithms.replay_training import ReplayTrainingMixin
from alf_rl.algorithms.rl_algorithm import RLAlgorithm
from alf_rl.data_structures import AlgStep, Experience, PolicyStep, TimeStep
from alf_rl.networks.network import Network
from alf_rl.utils.nest import Nest

__all__ = ['Agent', 'AgentInfo', 'AgentLossInfo', 'AgentState']


@gin.configurable
class Agent(AgentTraining, DelegatedHooks, ReplayTrainingMixin, RLAlgorithm):
    """An RL algorithm with an optional shared encoder, intrinsic-reward
    module, entropy target and goal/skill generator (see the module
    docstring for the data flow).

    Trained like the RL algorithm it wraps (its ``training_kind``): by the
    ``OnPolicyDriver`` (``OnPolicyTrainer``) for A2C-style methods, in
    epochs over what one iteration collected for PPO, or from a replay
    buffer (``OffPolicyTrainer``) for the off-policy methods.

    Args:
        observation_spec: nest of specs of one environment observation.
        action_spec: nest of (bounded) specs of one action.
        rl_algorithm_ctor: ``(observation_spec=, action_spec=) ->
            RLAlgorithm``, called with the observation spec the RL
            algorithm sees (the encoder's feature spec, paired with the
            goal spec when a goal generator is given).
        encoding_network_ctor: optional ``(input_tensor_spec=) -> Network``
            mapping [B, ...] observations to [B, D] features.
        intrinsic_reward_module_ctor: optional ``(observation_spec=,
            action_spec=) -> Algorithm`` following the
            ``IntrinsicRewardModule`` protocol.
        entropy_target_ctor: optional ``(action_spec) ->
            EntropyTargetAlgorithm``.
        goal_generator: optional ``Algorithm`` following the
            ``GoalGenerator`` protocol (e.g. ``SkillGenerator(8)``).
        extrinsic_reward_coef: weight of the environment's reward.
        intrinsic_reward_coef: weight of the module's reward.
        optimizer: trains the encoder and the parts without an optimizer
            of their own.
        name: module name.
        **kwargs: passed to ``RLAlgorithm`` (the agent's own reward and
            observation transforms, gradient clipping).

    Raises:
        ValueError: an RL algorithm with observation transforms behind an
            encoder or a goal; a wrapped algorithm with its own update
            (``has_own_update``: TRAC); rollout and train states of
            different structures when the rollout state must be stored;
            an encoder whose output is not [B, D].
        TypeError: an RL algorithm that is not an ``RLAlgorithm`` with the
            replay-training hooks; a module or goal generator that does
            not follow its protocol.
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
        rl_spec = rl_observation_spec(observation_spec, encoder,
                                      goal_generator)
        rl = rl_algorithm_ctor(observation_spec=rl_spec,
                               action_spec=action_spec)
        check_rl_algorithm(rl, rl_spec is not observation_spec)
        module = build_module(intrinsic_reward_module_ctor, rl_spec,
                              action_spec)
        specs = state_specs(rl, module, goal_generator)
        super().__init__(observation_spec, action_spec,
                         use_rollout_state=stores_rollout_state(rl, specs),
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
        self._rl_sees_observation = rl_spec is observation_spec
        self._extrinsic_reward_coef = float(extrinsic_reward_coef)
        self._intrinsic_reward_coef = float(intrinsic_reward_coef)

    # ------------------------------------------------------------ parts
    @property
    def rl_algorithm(self) -> RLAlgorithm:
        """The wrapped RL algorithm."""
        return self._rl_algorithm

    @property
    def hooks_source(self) -> RLAlgorithm:
        """The RL algorithm: its replay hooks, capabilities and update gate
        are the agent's (``DelegatedHooks``)."""
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
    def recurrent_state_spec(self) -> Nest:
        """The RL algorithm's: the module's and the goal generator's states
        are stored inputs (replayed one-step rows get them whole)."""
        return self._rl_algorithm.recurrent_state_spec

    def _parts(self) -> List[Algorithm]:
        """The RL algorithm, the module and the goal generator present."""
        return [part for part in (self._rl_algorithm, self._intrinsic_module,
                                  self._goal_generator) if part is not None]

    def rollout_owned_variables(self) -> List[tf.Variable]:
        """The parts' rollout-owned variables (DQN's exploration counter,
        the intrinsic-reward module's normalizer statistics)."""
        return [v for part in self._parts()
                for v in part.rollout_owned_variables()]

    def env_action(self, action: Nest) -> Nest:
        """The RL algorithm's ``env_action``."""
        return self._rl_algorithm.env_action(action)

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
        """What the RL algorithm's policy sees at ``predict`` (also run by
        the policy export).

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves (transformed).
            state: ``AgentState`` matching ``predict_state_spec``.
            episode_starts: False: no step of the caller is ever FIRST (an
                exported policy, whose goal is its state input); a goal
                generator that ``changes_goal_only_at_first`` is then not
                run (the state's goal is used as is).
        Returns:
            ``(time_step with the RL algorithm's observation, the goal
            generator's predict AlgStep (empty without one))``.
        """
        goal = self._goal_generator
        if goal is None:
            goal_step = NO_STEP
        elif not episode_starts and goal.changes_goal_only_at_first:
            goal_step = AlgStep(output=state.goal, state=state.goal, info=())
        else:
            goal_step = goal.predict(time_step, state.goal)
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
        goal, module = self._goal_generator, self._intrinsic_module
        goal_step = (NO_STEP if goal is None else
                     goal.rollout(time_step, state.goal))
        return self._step(time_step, state, goal_step,
                          module.rollout if module is not None else None,
                          self._rl_algorithm.rollout)

    def train_step(self, experience: Experience,
                   state: AgentState) -> PolicyStep:
        """Every part's ``train_step`` on one replayed row ([B, ...]
        leaves, ``AgentInfo`` rollout info); the goal is the stored one.
        Returns a ``PolicyStep`` with ``AgentInfo`` info (its
        ``intrinsic_reward`` recomputed, for the record only)."""
        return self.outer_step(experience, state,
                               self._rl_algorithm.train_step)

    def outer_step(self, experience: Experience, state: AgentState,
                   inner_step: Callable[..., PolicyStep]) -> PolicyStep:
        """Every part's ``train_step`` on one replayed row, with
        ``inner_step`` (``train_step`` or one of the replay hooks of
        ``DelegatedHooks``) as the RL algorithm's; the goal is the stored
        one.

        Args:
            experience: ``Experience`` row with [B, ...] leaves and
                ``AgentInfo`` rollout info.
            state: ``AgentState`` matching ``train_state_spec``.
            inner_step: ``(experience, state) -> PolicyStep`` of the RL
                algorithm.
        Returns:
            ``PolicyStep`` with ``AgentInfo`` info.
        """
        stored = experience.rollout_info
        goal_step = AlgStep(output=stored.goal, state=state.goal,
                            info=stored.goal_info)
        module = self._intrinsic_module
        return self._step(experience._replace(rollout_info=stored.rl),
                          state, goal_step,
                          module.train_step if module is not None else None,
                          inner_step)

    def _step(self, inputs: Any, state: AgentState, goal_step: AlgStep,
              module_step_fn: Optional[Callable[..., AlgStep]],
              rl_step_fn: Callable[..., PolicyStep]) -> PolicyStep:
        """Intrinsic module and RL algorithm on ``inputs`` (a time step or
        an experience row whose rollout info is the RL algorithm's)."""
        inputs = inputs._replace(observation=self._rl_observation(
            inputs.observation, goal_step.output))
        module_step = (NO_STEP if module_step_fn is None else
                       module_step_fn(inputs, state.intrinsic))
        rl_step = rl_step_fn(inputs, state.rl)
        return PolicyStep(
            action=rl_step.action,
            state=AgentState(rl=rl_step.state, intrinsic=module_step.state,
                             goal=goal_step.state),
            info=AgentInfo(rl=rl_step.info, intrinsic=module_step.info,
                           intrinsic_reward=module_step.output,
                           goal=goal_step.output,
                           goal_info=goal_step.info))
