"""The declared protocols, checked on instances: the library's modules are
members, objects without the members are not, and Agent refuses a part
that does not follow its protocol."""

import functools

import tensorflow as tf
import tf_keras

from alf_rl.algorithms import (Algorithm, DIAYNAlgorithm, IcmAlgorithm,
                               PPOAlgorithm, RNDAlgorithm, SacAlgorithm,
                               SkillGenerator)
from alf_rl.algorithms.protocols import (GoalGenerator, IntrinsicRewardModule,
                                         ReplayHooks)
from alf_rl.data_structures import AlgStep
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
