"""The declared protocols, checked on instances: the library's modules are
members, objects without the members are not, and Agent refuses a part
that does not follow its protocol. An Agent's replay hooks, capabilities
and update gate are its RL algorithm's through the base's
``DelegatedHooks``: Agent defines none of them, and a member added to the
base reaches an Agent without Agent code."""

import functools

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms import (ActorCriticAlgorithm, Agent, Algorithm,
                               DIAYNAlgorithm, IcmAlgorithm, PPOAlgorithm,
                               RNDAlgorithm, SacAlgorithm, SkillGenerator)
from alf_rl.algorithms.agent import AgentInfo, AgentLossInfo, AgentState
from alf_rl.algorithms.agent_training import AgentTraining
from alf_rl.algorithms.delegated_hooks import DelegatedHooks
from alf_rl.algorithms.protocols import (GoalGenerator, HasActionDistribution,
                                         IntrinsicRewardModule, ReplayHooks)
from alf_rl.algorithms.training_kind import TrainingKind
from alf_rl.data_structures import (AlgStep, Experience, LossInfo,
                                    PolicyStep, TrainingInfo)
from alf_rl.networks import (ActorDistributionNetwork, CriticNetwork,
                             EncodingNetwork, NormalProjectionNetwork,
                             ValueNetwork)
from alf_rl.specs import BoundedTensorSpec, TensorSpec

OBS = TensorSpec((2, ), tf.float32)
DISCRETE = BoundedTensorSpec((), tf.int64, 0, 1)
CONTINUOUS = BoundedTensorSpec((1, ), tf.float32, -1, 1)
NET = functools.partial(EncodingNetwork, fc_layer_params=(4, ))


def test_library_modules_are_members():
    for module in (IcmAlgorithm(OBS, DISCRETE, encoding_network_ctor=NET,
                                forward_network_ctor=NET,
                                inverse_network_ctor=NET),
                   RNDAlgorithm(OBS, DISCRETE, predictor_network_ctor=NET),
                   DIAYNAlgorithm((OBS, TensorSpec((3, ), tf.float32)),
                                  DISCRETE, discriminator_network_ctor=NET)):
        assert isinstance(module, IntrinsicRewardModule), type(module)
        assert not isinstance(module, GoalGenerator), type(module)
    skills = SkillGenerator(3)
    assert isinstance(skills, GoalGenerator)
    assert skills.changes_goal_only_at_first is True
    ppo = PPOAlgorithm(OBS, DISCRETE, actor_network_ctor=functools.partial(
        ActorDistributionNetwork, fc_layer_params=(4, )),
        value_network_ctor=functools.partial(ValueNetwork,
                                             fc_layer_params=(4, )))
    sac = SacAlgorithm(OBS, CONTINUOUS,
                       actor_network_ctor=functools.partial(
                           ActorDistributionNetwork, fc_layer_params=(4, ),
                           continuous_projection_net_ctor=(
                               NormalProjectionNetwork)),
                       critic_network_ctor=functools.partial(
                           CriticNetwork, joint_fc_layer_params=(4, )),
                       actor_optimizer=tf_keras.optimizers.Adam(),
                       critic_optimizer=tf_keras.optimizers.Adam(),
                       alpha_optimizer=tf_keras.optimizers.Adam())
    for alg in (ppo, sac):
        assert isinstance(alg, ReplayHooks)
    assert (ppo.gives_priorities, sac.gives_priorities) == (False, True)
    assert not isinstance(skills, ReplayHooks)


class _NoReward(Algorithm):
    """A minimal Algorithm: structurally an intrinsic-reward module (the
    base provides the other members), not a goal generator."""

    def rollout(self, inputs, state=()):
        return AlgStep(output=tf.zeros([1]), state=(), info=())


def test_non_members():
    assert not isinstance(object(), IntrinsicRewardModule)
    assert not isinstance(object(), GoalGenerator)
    # An Algorithm has every IntrinsicRewardModule member (the base's
    # defaults) but no output_spec: not a goal generator.
    algorithm = _NoReward()
    assert isinstance(algorithm, IntrinsicRewardModule)
    assert not isinstance(algorithm, GoalGenerator)


# ---------------------------------------------------------------- delegation
def _protocol_members(protocol):
    """The data members and methods a protocol declares."""
    return set(getattr(protocol, '__annotations__', {})) | {
        name for name, value in vars(protocol).items()
        if callable(value) and not name.startswith('_')}


def test_delegated_hooks_cover_the_protocol_and_agent_forwards_none():
    members = _protocol_members(ReplayHooks)
    assert {'training_kind', 'gives_priorities', 'bootstrap_step',
            'calc_priority', 'continue_training'} <= members
    delegated = members | {'should_apply'}
    # Every hook and capability is implemented once, by the base's
    # DelegatedHooks ...
    assert delegated <= set(vars(DelegatedHooks)), sorted(
        delegated - set(vars(DelegatedHooks)))
    # ... and none by Agent's own classes, nor set per instance.
    for cls in (Agent, AgentTraining):
        assert not delegated & set(vars(cls)), (cls, sorted(
            delegated & set(vars(cls))))
    agent = Agent(OBS, DISCRETE, rl_algorithm_ctor=_Marked)
    assert not delegated & set(vars(agent)), sorted(
        delegated & set(vars(agent)))


class _Marked(ActorCriticAlgorithm):
    """Declares the capabilities opposite to its base's and answers each
    hook with what it was given, so a test sees what an Agent passes."""

    last_row_only_bootstraps = False
    has_first_train_step = True
    gives_priorities = True

    def __init__(self, observation_spec, action_spec):
        super().__init__(observation_spec, action_spec,
                         actor_network_ctor=functools.partial(
                             ActorDistributionNetwork, fc_layer_params=(4, )),
                         value_network_ctor=functools.partial(
                             ValueNetwork, fc_layer_params=(4, )))

    def bootstrap_step(self, experience, state):
        return PolicyStep(action='bootstrap', state=state,
                          info=experience.rollout_info)

    def first_train_step(self, experience, state):
        return PolicyStep(action='first', state=state,
                          info=experience.rollout_info)

    def calc_priority(self, training_info, per_step_loss_info):
        return (training_info.info, training_info.rollout_info,
                training_info.reward, per_step_loss_info)

    def continue_training(self, training_info, valid_masks):
        return (training_info.info, valid_masks)

    def should_apply(self, optimizer):
        return ('gate', optimizer)


def test_agent_has_the_hooks_and_capabilities_of_its_rl_algorithm():
    agent = Agent(OBS, DISCRETE, rl_algorithm_ctor=_Marked,
                  extrinsic_reward_coef=0.5)
    assert agent.hooks_source is agent.rl_algorithm
    assert agent.training_kind is TrainingKind.UNROLL
    assert agent.last_row_only_bootstraps is False
    assert agent.has_first_train_step is True
    assert agent.gives_priorities is True
    assert agent.should_apply('actor') == ('gate', 'actor')
    # Step hooks: the RL algorithm's step on its part of the row and state.
    row = Experience(**{f: () for f in Experience._fields})._replace(
        observation=tf.zeros([3, 2]),
        rollout_info=AgentInfo(rl='rl rollout info'))
    state = AgentState(rl='rl state')
    for hook, mark in ((agent.bootstrap_step, 'bootstrap'),
                       (agent.first_train_step, 'first')):
        step = hook(row, state)
        assert step.action == mark
        assert step.state == AgentState(rl='rl state')
        assert step.info.rl == 'rl rollout info'
    # Training-info hooks: the RL algorithm's infos, its training reward
    # (0.5 * r without an intrinsic reward) and its part of the loss.
    info = TrainingInfo(**{f: () for f in TrainingInfo._fields})._replace(
        reward=tf.constant([[2.0], [4.0]]), info=AgentInfo(rl='rl info'),
        rollout_info=AgentInfo(rl='rl rollout info'))
    loss = LossInfo(loss=tf.zeros([2, 1]), extra=AgentLossInfo(
        rl_loss='rl loss', rl='rl extra'))
    seen_info, seen_rollout, reward, rl_loss = agent.calc_priority(info, loss)
    assert (seen_info, seen_rollout) == ('rl info', 'rl rollout info')
    np.testing.assert_allclose(reward.numpy(), [[1.0], [2.0]])
    assert (rl_loss.loss, rl_loss.extra) == ('rl loss', 'rl extra')
    assert agent.continue_training(info, 'masks') == ('rl info', 'masks')


def test_a_capability_added_to_the_base_reaches_an_agent(monkeypatch):
    """What adding a member to the base does: DelegatedHooks gains it, the
    RL algorithm declares it, and the Agent has it (no Agent code)."""
    monkeypatch.setattr(
        DelegatedHooks, 'uses_new_capability',
        property(lambda self: self.hooks_source.uses_new_capability),
        raising=False)
    monkeypatch.setattr(_Marked, 'uses_new_capability', 'declared',
                        raising=False)
    agent = Agent(OBS, DISCRETE, rl_algorithm_ctor=_Marked)
    assert agent.uses_new_capability == 'declared'


def test_entropy_target_reads_a_declared_action_distribution():
    from alf_rl.algorithms.actor_critic_algorithm import ActorCriticInfo
    from alf_rl.algorithms.agent_parts import action_distribution
    from alf_rl.algorithms.dqn_algorithm import DqnInfo
    with_dist = ActorCriticInfo(action_distribution='the distribution')
    assert isinstance(with_dist, HasActionDistribution)
    assert action_distribution(None, with_dist) == 'the distribution'
    assert not isinstance(DqnInfo(), HasActionDistribution)
    with pytest.raises(ValueError, match=r"^Agent: entropy_target_ctor needs "
                       r"the RL algorithm's info to have an "
                       r"action_distribution; NoneType's info is DqnInfo$"):
        action_distribution(None, DqnInfo())
