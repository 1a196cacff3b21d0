"""Algorithms: the ``Algorithm`` base, RL bases and the method classes."""

from alf_rl.algorithms.algorithm import Algorithm
from alf_rl.algorithms.rl_algorithm import RLAlgorithm
from alf_rl.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from alf_rl.algorithms.on_policy_algorithm import OnPolicyAlgorithm
from alf_rl.algorithms.actor_critic_loss import ActorCriticLoss
from alf_rl.algorithms.actor_critic_algorithm import ActorCriticAlgorithm
from alf_rl.algorithms.sac_algorithm import SacAlgorithm
from alf_rl.algorithms.ddpg_algorithm import DdpgAlgorithm
from alf_rl.algorithms.td3_algorithm import Td3Algorithm
from alf_rl.algorithms.dqn_algorithm import DqnAlgorithm
from alf_rl.algorithms.bc_algorithm import BcAlgorithm
from alf_rl.algorithms.cql_algorithm import CqlSacAlgorithm
from alf_rl.algorithms.cql_dqn_algorithm import CqlDqnAlgorithm
from alf_rl.algorithms.iql_algorithm import IqlAlgorithm
from alf_rl.algorithms.value_distributions import (
    CategoricalValues,
    ImplicitQuantileValues,
    QuantileValues,
    ScalarValues,
    ValueDistribution,
)
from alf_rl.algorithms.sarsa_algorithm import SarsaAlgorithm
from alf_rl.algorithms.ppo_loss import PPOLoss
from alf_rl.algorithms.ppo_algorithm import PPOAlgorithm
from alf_rl.algorithms.entropy_target_algorithm import EntropyTargetAlgorithm
from alf_rl.algorithms.trusted_updater import TrustedUpdater
from alf_rl.algorithms.trac_algorithm import TracAlgorithm
from alf_rl.algorithms.mi_estimator import MIEstimator
from alf_rl.algorithms.icm_algorithm import IcmAlgorithm
from alf_rl.algorithms.rnd_algorithm import RNDAlgorithm
from alf_rl.algorithms.diayn_algorithm import DIAYNAlgorithm
from alf_rl.algorithms.skill_generator import SkillGenerator
from alf_rl.algorithms.agent import Agent
from alf_rl.algorithms.dynamics_learning_algorithm import (
    DynamicsLearningAlgorithm,
)
from alf_rl.algorithms.reward_learning_algorithm import (
    RewardEstimationAlgorithm,
    pendulum_reward,
)
from alf_rl.algorithms.planning_algorithm import (
    CEMPlanner,
    RandomShootingPlanner,
)
from alf_rl.algorithms.mbrl_algorithm import MbrlAlgorithm
from alf_rl.algorithms.memory import MemoryWithUsage
from alf_rl.algorithms.vae import DecodingAlgorithm, VariationalAutoEncoder
from alf_rl.algorithms.merlin_algorithm import (
    MemoryBasedPredictor,
    MerlinAlgorithm,
    MerlinPPOAlgorithm,
)
