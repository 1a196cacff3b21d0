"""Conformance of every algorithm class exported by ``alf_rl.algorithms``
(Sonnet's module-conformance test, for algorithms).

Each case builds one algorithm with tiny networks (one hidden layer of 8)
on a tiny seeded environment: the copy-the-bit ``PolicyUnittestEnv`` (4
envs, 5-step episodes; ``suite_unittest``) or, for one driver case, the
in-graph ``suite_tf`` CartPole cut to 5-step episodes. It trains the way
the trainers do: ``OnPolicyDriver.run()`` for on-policy methods,
``alg.train(experience, ...)`` on a fixed batch of rolled-out experience
for methods trained from replay (PPO included, as ``OffPolicyTrainer``
trains it), ``train_complete`` on a fixed policy distribution for the
standalone ``EntropyTargetAlgorithm``, ``train_step`` then
``train_complete`` on fixed (x, y) batches for ``MIEstimator``, and for the
intrinsic-reward modules (ICM, RND, DIAYN) ``rollout`` over a fixed [T, B]
batch of ``PolicyUnittestEnv`` time steps (their normalizers updated) then
``train_step`` + ``train_complete`` on it; DIAYN's observation is the pair
(observation, skill), the skill drawn by a ``SkillGenerator`` inside the
iteration. Every case is checked for

1. eager == compiled: two training iterations under the same seed, eagerly
   (``use_tf_functions=False`` / plain ``alg.train``) and compiled (the
   driver's ``tf.function`` / ``tf.function(alg.train, autograph=False)``
   as ``OffPolicyTrainer`` does), give the same losses (every leaf of the
   returned ``LossInfo``) and the same values of every variable (network
   weights, target networks, counters, controllers, optimizer slots);
2. checkpoint round trip: ``tf.train.Checkpoint(algorithm=...,
   optimizers=[...])`` (what the trainer saves) restored into a freshly
   built algorithm with another initialization gives identical variables
   and consumes the whole checkpoint, and the next iteration of the
   original and of the restored algorithm gives identical numbers;
3. training steps: finite losses; ``get_optimizer_and_variable_sets()``
   covers ``trainable_variables`` exactly once; no target network among
   them; each optimizer's ``apply_gradients`` (spied, so whatever path the
   update takes is what is checked) receives exactly its own variables,
   each with a finite, non-zero gradient, in every iteration. Exceptions
   are declared per case with the reason (TD3's delayed actor).

A class newly exported from ``alf_rl.algorithms`` fails
``test_every_exported_class_has_a_case`` until a case is added to ``CASES``.

Tolerance of 1: ``|compiled - eager| <= 1e-6 + 1e-5 |eager|``, float32
rounding. Grappler rewrites the compiled graph (MatMul+BiasAdd fusion,
reordered reductions), so an op agrees to a few float32 ulps (eps = 1.2e-7)
and two Adam steps keep variables within ~1e-7 relative. ``atol`` is for
losses that cancel: PPO's ``approx_kl = mean((r - 1) - log r)`` is ~1e-3
made of terms of order one, so one ulp of ``r`` is ~1e-5 of it. Observed
(all cases): at most 2.4e-7 absolute (ulps of PPO's total loss, ~1.34),
1.4e-8 on ``approx_kl``, at most 6e-7 relative on any other value above
1e-3; 56-100% of the arrays of a case equal exactly. A real divergence
(a Python side effect, a random draw not taken from the global generator,
a state update that runs in one mode only) moves values by orders of
magnitude more: a DQN target update skipped when compiled changes the
second loss by 1e-2. The checkpoint round
trip runs the same eager computation on restored values and is compared
exactly.

Cost: the eager and the compiled run of a case are made once and shared by
the tests (``_train``, cached per module). The whole file takes ~45 s of
CPU (~6 s of it importing TensorFlow), most of the rest tracing: about
that wall time on 2 otherwise idle cores.
"""

import dataclasses
import functools
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp
import tf_keras

import alf_rl.algorithms as algorithms
from alf_rl.algorithms import (ActorCriticAlgorithm, ActorCriticLoss, Agent,
                               Algorithm, CategoricalValues,
                               ImplicitQuantileValues, QuantileValues,
                               ScalarValues, ValueDistribution,
                               DdpgAlgorithm, DqnAlgorithm,
                               DIAYNAlgorithm, EntropyTargetAlgorithm,
                               IcmAlgorithm, MIEstimator, RNDAlgorithm,
                               OffPolicyAlgorithm,
                               OnPolicyAlgorithm, PPOAlgorithm, PPOLoss,
                               RLAlgorithm, SacAlgorithm, SarsaAlgorithm,
                               SkillGenerator, Td3Algorithm, TracAlgorithm,
                               TrustedUpdater, CEMPlanner,
                               DynamicsLearningAlgorithm, MbrlAlgorithm,
                               RandomShootingPlanner,
                               RewardEstimationAlgorithm)
from alf_rl.networks import EnsembleNetwork
from alf_rl.algorithms import (DecodingAlgorithm, MemoryBasedPredictor,
                               MemoryWithUsage, MerlinAlgorithm,
                               MerlinPPOAlgorithm, VariationalAutoEncoder)
from alf_rl.algorithms import (BcAlgorithm, CqlDqnAlgorithm, CqlSacAlgorithm,
                               IqlAlgorithm)
from alf_rl.data_structures import (LossInfo, StepType, TrainingInfo,
                                    namedtuple)
from alf_rl.drivers import OnPolicyDriver
from alf_rl.ops import distributions as dist_ops
from alf_rl.environments import suite_tf
from alf_rl.networks.distributional_q_networks import (
    CategoricalQNetwork, ImplicitQuantileQNetwork, QuantileQNetwork)
from alf_rl.networks import (ActorDistributionNetwork, ActorNetwork,
                             CriticNetwork, EncodingNetwork, Network,
                             NormalProjectionNetwork, QNetwork, QRnnNetwork,
                             ValueNetwork, ActorDistributionRnnNetwork,
                             CriticRnnNetwork, LSTMEncodingNetwork)
from alf_rl.utils.common import reset_state_if_necessary, set_random_seed

RTOL, ATOL = 1e-5, 1e-6
HIDDEN = (8, )
BATCH_SIZE = 4
EPISODE_LENGTH = 5
#: Training iterations of the eager and the compiled run.
NUM_STEPS = 2

# ------------------------------------------------------------------ networks


def _actor_distribution(continuous: bool = False):
    if not continuous:
        return functools.partial(ActorDistributionNetwork,
                                 fc_layer_params=HIDDEN)
    # SAC's actor: a tanh-squashed normal with a state-dependent std.
    return functools.partial(
        ActorDistributionNetwork,
        fc_layer_params=HIDDEN,
        continuous_projection_net_ctor=functools.partial(
            NormalProjectionNetwork, scale_distribution=True,
            state_dependent_std=True))


def _value():
    return functools.partial(ValueNetwork, fc_layer_params=HIDDEN)


def _actor():
    return functools.partial(ActorNetwork, fc_layer_params=HIDDEN)


def _critic():
    return functools.partial(CriticNetwork, joint_fc_layer_params=HIDDEN)


def _q():
    return functools.partial(QNetwork, fc_layer_params=HIDDEN)


def _adam():
    return tf_keras.optimizers.Adam(1e-2)


def _mbrl(obs, act, random_shooting: bool = False):
    """PETS with tiny parts: a 2-member ensemble (probabilistic, with a
    learned reward, planning by CEM; or deterministic with a given reward,
    planning by random shooting)."""
    ensemble = functools.partial(EnsembleNetwork, ensemble_size=2,
                                 hidden_layers=HIDDEN,
                                 probabilistic=not random_shooting)
    dynamics = functools.partial(DynamicsLearningAlgorithm,
                                 ensemble_ctor=ensemble)
    if random_shooting:
        planner = functools.partial(RandomShootingPlanner, horizon=2,
                                    population=4)
        reward = dict(reward_fn=lambda o, a: -tf.reduce_sum(tf.square(a), -1))
    else:
        planner = functools.partial(CEMPlanner, horizon=2, population=4,
                                    num_elites=2, iterations=2)
        reward = dict(reward_ctor=functools.partial(
            RewardEstimationAlgorithm, hidden_layers=HIDDEN))
    optimizer = _adam()
    alg = MbrlAlgorithm(obs, act, dynamics_ctor=dynamics,
                        planner_ctor=planner, num_random_steps=4,
                        optimizer=optimizer, **reward)
    return alg, {'model': optimizer}


# ------------------------------------------------------------------ builders
# A builder takes (observation_spec, action_spec) and returns
# (algorithm, {role: optimizer}); a case's gradient exceptions name roles.


def _a2c(obs, act, entropy_target: bool = False):
    opt = _adam()
    alg = ActorCriticAlgorithm(
        obs, act,
        actor_network_ctor=_actor_distribution(),
        value_network_ctor=_value(),
        loss=ActorCriticLoss(),
        optimizer=opt,
        entropy_target_ctor=functools.partial(
            EntropyTargetAlgorithm, target_entropy=0.5)
        if entropy_target else None)
    return alg, {'all': opt}


def _trac(obs, act):
    # The wrapped A2C carries an entropy target: one case for both.
    inner, roles = _a2c(obs, act, entropy_target=True)
    return TracAlgorithm(ac_algorithm=inner, max_kl=0.01), roles


def _ppo(obs, act):
    opt = _adam()
    alg = PPOAlgorithm(
        obs, act,
        actor_network_ctor=_actor_distribution(),
        value_network_ctor=_value(),
        loss=PPOLoss(),
        optimizer=opt,
        entropy_target_ctor=functools.partial(EntropyTargetAlgorithm,
                                              target_entropy=0.5))
    return alg, {'all': opt}


def _bc(obs, act, deterministic: bool = False):
    opt = _adam()
    alg = BcAlgorithm(obs, act,
                      actor_network_ctor=(_actor() if deterministic else
                                          _actor_distribution(True)),
                      optimizer=opt)
    return alg, {'all': opt}


def _cql(obs, act):
    # Continuous: the Lagrangian version (log alpha' trained too).
    discrete = act.dtype.is_integer
    actor, critic, alpha, cql = _adam(), _adam(), _adam(), _adam()
    alg = CqlSacAlgorithm(
        obs, act, cql_target_gap=None if discrete else 1.0,
        num_sampled_actions=3, cql_alpha_optimizer=cql,
        actor_network_ctor=_actor_distribution(not discrete),
        critic_network_ctor=_q() if discrete else _critic(),
        actor_optimizer=actor, critic_optimizer=critic,
        alpha_optimizer=alpha)
    roles = {'actor': actor, 'critic': critic, 'alpha': alpha}
    if not discrete:
        roles['cql_alpha'] = cql
    return alg, roles


def _iql(obs, act):
    discrete = act.dtype.is_integer
    opt = _adam()
    alg = IqlAlgorithm(obs, act,
                       actor_network_ctor=_actor_distribution(),
                       critic_network_ctor=_q() if discrete else _critic(),
                       value_network_ctor=_value(), optimizer=opt)
    return alg, {'all': opt}


#: Recurrent actor-critic cases: LSTM encoders, sequences of 4 from the
#: stored rollout state, the first row a burn-in.
_LSTM = dict(input_fc_layer_params=HIDDEN, lstm_size=HIDDEN)
_RECURRENT_REPLAY = dict(use_rollout_state=True, burn_in_steps=1)


def _rnn_critic():
    return functools.partial(CriticRnnNetwork, joint_fc_layer_params=HIDDEN,
                             lstm_size=HIDDEN)


def _ddpg(obs, act, cls=DdpgAlgorithm, recurrent=False):
    actor, critic = _adam(), _adam()
    alg = cls(obs, act,
              actor_network_ctor=functools.partial(
                  ActorNetwork, encoding_network_ctor=LSTMEncodingNetwork,
                  **_LSTM) if recurrent else _actor(),
              critic_network_ctor=_rnn_critic() if recurrent else _critic(),
              actor_optimizer=actor,
              critic_optimizer=critic,
              **(_RECURRENT_REPLAY if recurrent else {}))
    return alg, {'actor': actor, 'critic': critic}


def _sac(obs, act, entropy_target: bool = False, recurrent: bool = False):
    discrete = act.dtype.is_integer
    actor, critic, alpha = _adam(), _adam(), _adam()
    if entropy_target:
        kwargs = dict(entropy_target_ctor=functools.partial(
            EntropyTargetAlgorithm, initial_alpha=0.2, max_entropy=10.0))
    else:
        kwargs = dict(alpha_optimizer=alpha)
    actor_ctor = _actor_distribution(not discrete)
    critic_ctor = _q() if discrete else _critic()
    if recurrent:  # continuous
        actor_ctor = functools.partial(
            ActorDistributionRnnNetwork,
            continuous_projection_net_ctor=functools.partial(
                NormalProjectionNetwork, scale_distribution=True,
                state_dependent_std=True), **_LSTM)
        critic_ctor = _rnn_critic()
        kwargs.update(_RECURRENT_REPLAY)
    alg = SacAlgorithm(obs, act,
                       actor_network_ctor=actor_ctor,
                       critic_network_ctor=critic_ctor,
                       actor_optimizer=actor,
                       critic_optimizer=critic,
                       **kwargs)
    roles = {'actor': actor, 'critic': critic}
    if not entropy_target:
        roles['alpha'] = alpha
    return alg, roles


def _sarsa(obs, act, recurrent=False):
    actor, critic = _adam(), _adam()
    # target_update_period=1: the target update runs in every compared
    # iteration (and must match eagerly and compiled).
    alg = SarsaAlgorithm(obs, act,
                         actor_network_ctor=functools.partial(
                             ActorNetwork,
                             encoding_network_ctor=LSTMEncodingNetwork,
                             **_LSTM) if recurrent else _actor(),
                         critic_network_ctor=(_rnn_critic() if recurrent
                                              else _critic()),
                         actor_optimizer=actor,
                         critic_optimizer=critic,
                         target_update_period=1,
                         **(_RECURRENT_REPLAY if recurrent else {}))
    return alg, {'actor': actor, 'critic': critic}


def _dqn(obs, act):
    opt = _adam()
    alg = DqnAlgorithm(obs, act, q_network_ctor=_q(), optimizer=opt,
                       target_update_period=1, tau=0.5)
    return alg, {'all': opt}


def _r2d2(obs, act):
    """Recurrent DQN: stored LSTM state, one burn-in row, rescaled
    targets, sequence priorities."""
    opt = _adam()
    alg = DqnAlgorithm(obs, act,
                       q_network_ctor=functools.partial(
                           QRnnNetwork, input_fc_layer_params=HIDDEN,
                           lstm_size=HIDDEN),
                       optimizer=opt, target_update_period=1, tau=0.5,
                       use_rollout_state=True, burn_in_steps=1,
                       value_distribution=ScalarValues(value_rescaling=True),
                       sequence_priority_eta=0.9)
    return alg, {'all': opt}


def _cql_dqn(obs, act):
    opt = _adam()
    alg = CqlDqnAlgorithm(obs, act, cql_alpha=0.5, q_network_ctor=_q(),
                          optimizer=opt, target_update_period=1, tau=0.5)
    return alg, {'all': opt}


def _dqn_family(obs, act, net, values):
    opt = _adam()
    alg = DqnAlgorithm(obs, act, q_network_ctor=functools.partial(
        net, fc_layer_params=HIDDEN), value_distribution=values,
                       optimizer=opt, target_update_period=1, tau=0.5)
    return alg, {'all': opt}


def _entropy_target(obs, act):
    del obs
    # max_entropy=None: the first call estimates it; the entropies of
    # ``_ENTROPY_TARGET_PROBS`` lie below the target, so later calls adjust.
    return EntropyTargetAlgorithm(act, target_entropy=0.5), {}


def _mi_estimator(obs, act):
    del obs, act  # it estimates I(x; y) of its own fixed batches
    opt = _adam()
    alg = MIEstimator(MI_X_SPEC, MI_Y_SPEC,
                      network_ctor=functools.partial(
                          EncodingNetwork, fc_layer_params=HIDDEN,
                          last_layer_size=1),
                      estimator_type='DV', averager_rate=0.5, optimizer=opt)
    return alg, {'all': opt}


def _icm(obs, act):
    opt = _adam()
    net = functools.partial(EncodingNetwork, fc_layer_params=HIDDEN)
    alg = IcmAlgorithm(obs, act, encoding_network_ctor=net,
                       forward_network_ctor=net, inverse_network_ctor=net,
                       optimizer=opt)
    return alg, {'all': opt}


def _rnd(obs, act):
    del act
    opt = _adam()
    alg = RNDAlgorithm(obs,
                       predictor_network_ctor=functools.partial(
                           EncodingNetwork, fc_layer_params=HIDDEN,
                           last_layer_size=4),
                       optimizer=opt)
    return alg, {'all': opt}


#: K of the DIAYN case.
NUM_SKILLS = 3


def _diayn(obs, act):
    opt = _adam()
    alg = DIAYNAlgorithm((obs, tf.TensorSpec([NUM_SKILLS], tf.float32)), act,
                         discriminator_network_ctor=functools.partial(
                             EncodingNetwork, fc_layer_params=HIDDEN),
                         optimizer=opt)
    return alg, {'all': opt}


def _agent_a2c_icm(obs, act):
    """A shared encoder (the agent's optimizer), A2C and ICM with their own
    optimizers, an entropy target: every variable set of the composition."""
    roles = {'agent': _adam(), 'icm': _adam()}

    def a2c(observation_spec, action_spec):
        alg, a2c_roles = _a2c(observation_spec, action_spec)
        roles['a2c'] = a2c_roles['all']
        return alg

    net = functools.partial(EncodingNetwork, fc_layer_params=HIDDEN)
    alg = Agent(obs, act, rl_algorithm_ctor=a2c,
                encoding_network_ctor=net,
                intrinsic_reward_module_ctor=functools.partial(
                    IcmAlgorithm, encoding_network_ctor=net,
                    forward_network_ctor=net, inverse_network_ctor=net,
                    optimizer=roles['icm']),
                entropy_target_ctor=functools.partial(
                    EntropyTargetAlgorithm, target_entropy=0.5),
                intrinsic_reward_coef=0.5, optimizer=roles['agent'])
    return alg, roles


def _merlin_predictor(optimizer):
    """MERLIN's predictor (VAE, memory, decoders) with ``optimizer``."""
    return functools.partial(
        MemoryBasedPredictor, z_dim=4, memory_size=6, num_read_keys=2,
        lstm_size=(8, ), optimizer=optimizer,
        encoding_network_ctor=functools.partial(
            EncodingNetwork, fc_layer_params=HIDDEN),
        decoder_ctor=functools.partial(EncodingNetwork,
                                       fc_layer_params=HIDDEN))


def _merlin(obs, act):
    """The predictor (VAE, memory, decoders) with its own optimizer; the
    A2C policy trained by MERLIN's."""
    roles = {'merlin': _adam(), 'predictor': _adam()}
    predictor = _merlin_predictor(roles['predictor'])

    def a2c(observation_spec, action_spec):
        return ActorCriticAlgorithm(
            observation_spec, action_spec,
            actor_network_ctor=_actor_distribution(),
            value_network_ctor=_value(), loss=ActorCriticLoss())

    alg = MerlinAlgorithm(obs, act, predictor_ctor=predictor,
                          rl_algorithm_ctor=a2c, optimizer=roles['merlin'])
    return alg, roles


def _merlin_ppo(obs, act):
    """MERLIN with a PPO policy: the predictor with its own optimizer, the
    policy trained by MERLIN-PPO's; replayed from the stored memory."""
    roles = {'merlin': _adam(), 'predictor': _adam()}
    predictor = _merlin_predictor(roles['predictor'])

    def ppo(observation_spec, action_spec):
        return PPOAlgorithm(
            observation_spec, action_spec,
            actor_network_ctor=_actor_distribution(),
            value_network_ctor=_value(), loss=PPOLoss())

    alg = MerlinPPOAlgorithm(obs, act, predictor_ctor=predictor,
                             rl_algorithm_ctor=ppo,
                             optimizer=roles['merlin'])
    return alg, roles


def _agent_ppo_rnd(obs, act):
    rnd_opt = _adam()
    alg = Agent(obs, act,
                rl_algorithm_ctor=lambda observation_spec, action_spec: (
                    _ppo(observation_spec, action_spec)[0]),
                intrinsic_reward_module_ctor=functools.partial(
                    _rnd_module, optimizer=rnd_opt))
    return alg, {'ppo': alg.rl_algorithm.optimizer, 'rnd': rnd_opt}


def _rnd_module(observation_spec, action_spec, optimizer):
    return RNDAlgorithm(observation_spec,
                        predictor_network_ctor=functools.partial(
                            EncodingNetwork, fc_layer_params=HIDDEN,
                            last_layer_size=4),
                        optimizer=optimizer)


def _diayn_module(observation_spec, action_spec, optimizer):
    return DIAYNAlgorithm(observation_spec,
                          discriminator_network_ctor=functools.partial(
                              EncodingNetwork, fc_layer_params=HIDDEN),
                          optimizer=optimizer)


def _agent_sac_diayn(obs, act):
    """DIAYN's skills as the only reward (as sac_diayn_pendulum.gin)."""
    roles = {}

    def sac(observation_spec, action_spec):
        alg, sac_roles = _sac(observation_spec, action_spec)
        roles.update(sac_roles)
        return alg

    roles['diayn'] = _adam()
    alg = Agent(obs, act, rl_algorithm_ctor=sac,
                intrinsic_reward_module_ctor=functools.partial(
                    _diayn_module, optimizer=roles['diayn']),
                goal_generator=SkillGenerator(NUM_SKILLS),
                extrinsic_reward_coef=0.0)
    return alg, roles


# ------------------------------------------------------------------ cases


@dataclasses.dataclass(frozen=True)
class Case:
    """One configuration of one exported algorithm class.

    Attributes:
        name: pytest id.
        cls: the exported class covered (``type`` of the built algorithm).
        build: ``(observation_spec, action_spec) -> (algorithm, roles)``.
        path: 'driver' (``OnPolicyDriver``), 'replay' (``alg.train`` on a
            fixed batch), 'loss' (``train_complete`` on a fixed
            distribution: a sub-algorithm that can stand alone), 'mi'
            (``train_step`` and ``train_complete`` on fixed (x, y)) or
            'intrinsic' (an intrinsic-reward module: ``rollout`` over fixed
            [T, B] time steps, then ``train_step`` and ``train_complete``).
        action_type: of ``PolicyUnittestEnv``: 'discrete' or 'continuous'.
        tf_env: instead, this in-graph ``suite_tf`` environment (5-step
            episodes), stepped without ``tf.numpy_function``.
        length: T, the driver's ``train_interval`` or the length of the
            replayed sequences.
        num_skills: 'intrinsic' only: if set, each time step's observation
            becomes the pair (observation, [B, K] one-hot skill) of a
            ``SkillGenerator(num_skills)`` rolled over the steps (state
            reset at FIRST) inside each iteration, so its draws are
            compared eagerly and compiled too.
        train_kwargs: passed to ``alg.train`` ('replay').
        updates_per_step: optimizer updates per iteration (epochs x
            mini-batches of ``alg.train``).
        target_networks: how many target networks the algorithm holds
            (networks whose module name starts with 'target').
        zero_gradients: ``{iteration: (optimizer role, reason)}``: in that
            iteration (0-based) that role's optimizer is not applied, or
            only with zero gradients. Every variable must still get a
            non-zero gradient in some iteration.
    """
    name: str
    cls: type
    build: Callable[[Any, Any], Tuple[Algorithm, Dict[str, Any]]]
    path: str
    action_type: str = 'discrete'
    tf_env: Optional[str] = None
    length: int = 4
    num_skills: int = 0
    train_kwargs: Dict[str, Any] = dataclasses.field(default_factory=dict)
    updates_per_step: int = 1
    target_networks: int = 0
    zero_gradients: Dict[int, Tuple[str, str]] = dataclasses.field(
        default_factory=dict)


# Two-step sequences, as SAC/DDPG/TD3/SARSA examples replay transitions.
_PAIRS = dict(mini_batch_length=2)

CASES = [
    Case('mbrl_cem_learned_reward', MbrlAlgorithm, _mbrl, 'replay',
         'continuous', train_kwargs=_PAIRS),
    Case('mbrl_random_shooting', MbrlAlgorithm,
         functools.partial(_mbrl, random_shooting=True), 'replay',
         'continuous', train_kwargs=_PAIRS),
    Case('a2c', ActorCriticAlgorithm, _a2c, 'driver', tf_env='CartPole-v1'),
    Case('trac_a2c_entropy_target', TracAlgorithm, _trac, 'driver'),
    # As ppo_cart_pole.gin: one-step rows (targets precomputed), several
    # epochs of shuffled mini-batches: 16 sequences, 8 per update, 2 epochs.
    Case('ppo_entropy_target', PPOAlgorithm, _ppo, 'replay',
         train_kwargs=dict(num_updates=2, mini_batch_size=8,
                           mini_batch_length=1), updates_per_step=4),
    Case('ddpg', DdpgAlgorithm, _ddpg, 'replay', 'continuous',
         train_kwargs=_PAIRS, target_networks=2),
    Case('td3', Td3Algorithm, functools.partial(_ddpg, cls=Td3Algorithm),
         'replay', 'continuous', train_kwargs=_PAIRS, target_networks=3,
         zero_gradients={
             0: ('actor', "TD3 delays the actor: it is updated on every "
                 "actor_update_period(=2)-th update only")
         }),
    Case('sac_continuous', SacAlgorithm, _sac, 'replay', 'continuous',
         train_kwargs=_PAIRS, target_networks=2),
    Case('sac_discrete_entropy_target', SacAlgorithm,
         functools.partial(_sac, entropy_target=True), 'replay', 'discrete',
         train_kwargs=_PAIRS, target_networks=2),
    Case('bc_discrete', BcAlgorithm, _bc, 'replay', train_kwargs=_PAIRS),
    Case('bc_deterministic', BcAlgorithm,
         functools.partial(_bc, deterministic=True), 'replay', 'continuous',
         train_kwargs=_PAIRS),
    Case('cql_sac_lagrangian', CqlSacAlgorithm, _cql, 'replay', 'continuous',
         train_kwargs=_PAIRS, target_networks=2),
    Case('cql_sac_discrete', CqlSacAlgorithm, _cql, 'replay', 'discrete',
         train_kwargs=_PAIRS, target_networks=2),
    Case('iql_continuous', IqlAlgorithm, _iql, 'replay', 'continuous',
         train_kwargs=_PAIRS, target_networks=2),
    Case('iql_discrete', IqlAlgorithm, _iql, 'replay', 'discrete',
         train_kwargs=_PAIRS, target_networks=2),
    Case('sarsa', SarsaAlgorithm, _sarsa, 'replay', 'continuous',
         train_kwargs=_PAIRS, target_networks=1),
    # Recurrent actor and critics (sequences of 4 from the stored states,
    # 1 burn-in row, 3 trained).
    Case('ddpg_rnn', DdpgAlgorithm, functools.partial(_ddpg, recurrent=True),
         'replay', 'continuous', target_networks=2),
    Case('td3_rnn', Td3Algorithm,
         functools.partial(_ddpg, cls=Td3Algorithm, recurrent=True),
         'replay', 'continuous', target_networks=3,
         zero_gradients={
             0: ('actor', "TD3 delays the actor: it is updated on every "
                 "actor_update_period(=2)-th update only")
         }),
    Case('sac_rnn', SacAlgorithm, functools.partial(_sac, recurrent=True),
         'replay', 'continuous', target_networks=2),
    Case('sarsa_rnn', SarsaAlgorithm,
         functools.partial(_sarsa, recurrent=True), 'replay', 'continuous',
         target_networks=1),
    # Sequences of 4: DQN's n-step returns over the unroll's while loop.
    Case('dqn', DqnAlgorithm, _dqn, 'replay', target_networks=1),
    # Sequences of 4 from the stored LSTM state: 1 burn-in row, 3 trained.
    Case('r2d2', DqnAlgorithm, _r2d2, 'replay', target_networks=1),
    Case('cql_dqn', CqlDqnAlgorithm, _cql_dqn, 'replay', target_networks=1),
    # The value family: C51 with Rainbow's dueling noisy streams (noise
    # redrawn every rollout and update), QR-DQN, IQN (fractions drawn per
    # call).
    Case('dqn_c51_rainbow', DqnAlgorithm, functools.partial(
        _dqn_family, net=functools.partial(
            CategoricalQNetwork, num_atoms=5, dueling=True, noisy=True),
        values=CategoricalValues(5, -2.0, 2.0)), 'replay',
         target_networks=1),
    Case('dqn_qr', DqnAlgorithm, functools.partial(
        _dqn_family, net=functools.partial(QuantileQNetwork,
                                           num_quantiles=4),
        values=QuantileValues(4)), 'replay', target_networks=1),
    Case('dqn_iqn', DqnAlgorithm, functools.partial(
        _dqn_family, net=functools.partial(ImplicitQuantileQNetwork,
                                           embedding_dim=4),
        values=ImplicitQuantileValues(3, 2, 2)), 'replay',
         target_networks=1),
    Case('entropy_target', EntropyTargetAlgorithm, _entropy_target, 'loss'),
    # DV: the one estimator with state (the moving average, in after_train);
    # the default 'shuffle' sampler draws from the global generator.
    Case('mi_estimator_dv', MIEstimator, _mi_estimator, 'mi'),
    # Default reward normalizers (ICM: per-step EMA; RND: return scale with
    # its [B] returns) and RND's observation normalizer: state that only
    # rollout changes. RND's fixed random network is a target network.
    Case('icm_discrete', IcmAlgorithm, _icm, 'intrinsic', length=6),
    Case('icm_continuous', IcmAlgorithm, _icm, 'intrinsic', 'continuous',
         length=6),
    Case('rnd', RNDAlgorithm, _rnd, 'intrinsic', length=6,
         target_networks=1),
    # Stateless, no normalizer; FIRST rows (t = 0 and 5) masked.
    Case('diayn', DIAYNAlgorithm, _diayn, 'intrinsic', length=6,
         num_skills=NUM_SKILLS),
    # The driver path with every part; the RL algorithm, the module and
    # the encoder are trained through one update by their own optimizers.
    Case('agent_a2c_icm_encoder', Agent, _agent_a2c_icm, 'driver'),
    # Replay paths: PPO's one-step rows (advantages of the mixed reward in
    # preprocess_experience), SAC's pairs with stored skills.
    Case('agent_ppo_rnd', Agent, _agent_ppo_rnd, 'replay',
         train_kwargs=dict(num_updates=2, mini_batch_size=8,
                           mini_batch_length=1), updates_per_step=4,
         target_networks=1),
    Case('agent_sac_diayn_skills', Agent, _agent_sac_diayn, 'replay',
         'continuous', train_kwargs=_PAIRS, target_networks=2),
    # The memory is part of the policy state the driver carries.
    Case('merlin', MerlinAlgorithm, _merlin, 'driver', length=6),
    # Whole stored sequences (the memory state of their first step), 2
    # epochs of 2 sequences each: 4 updates.
    Case('merlin_ppo', MerlinPPOAlgorithm, _merlin_ppo, 'replay', length=6,
         train_kwargs=dict(num_updates=2, mini_batch_size=2),
         updates_per_step=4),
]

#: Exported bases: they declare the interface and are trained only through
#: a subclass (they have no ``rollout``/``train_step`` of their own).
BASES = {Algorithm, RLAlgorithm, OffPolicyAlgorithm, OnPolicyAlgorithm}

#: Exported parts that are not algorithms, or algorithms with nothing to
#: train or save (no variables, an unset ``LossInfo()``), with the case that
#: runs them.
COMPONENTS = {
    ActorCriticLoss: 'a2c',
    PPOLoss: 'ppo_entropy_target',
    TrustedUpdater: 'trac_a2c_entropy_target',
    # Draws the skills of the DIAYN case inside each compared iteration.
    SkillGenerator: 'diayn',
    # MbrlAlgorithm's parts (its model, learned reward and planners).
    DynamicsLearningAlgorithm: 'mbrl_cem_learned_reward',
    RewardEstimationAlgorithm: 'mbrl_cem_learned_reward',
    CEMPlanner: 'mbrl_cem_learned_reward',
    RandomShootingPlanner: 'mbrl_random_shooting',
    # MERLIN's parts: its predictor is a VAE, a memory and decoders.
    MemoryBasedPredictor: 'merlin',
    VariationalAutoEncoder: 'merlin',
    DecodingAlgorithm: 'merlin',
    MemoryWithUsage: 'merlin',
    # DqnAlgorithm's value distributions.
    ValueDistribution: 'dqn',
    ScalarValues: 'dqn',
    CategoricalValues: 'dqn_c51_rainbow',
    QuantileValues: 'dqn_qr',
    ImplicitQuantileValues: 'dqn_iqn',
}


def _exported_classes() -> set:
    names = getattr(algorithms, '__all__', None)
    if names is None:
        names = [n for n in dir(algorithms) if not n.startswith('_')]
    return {
        getattr(algorithms, n)
        for n in names if isinstance(getattr(algorithms, n), type)
    }


def test_every_exported_class_has_a_case():
    exported = _exported_classes()
    assert {SacAlgorithm, PPOLoss, Algorithm} <= exported  # discovery works
    covered = {case.cls for case in CASES} | BASES | set(COMPONENTS)
    missing = sorted(c.__name__ for c in exported - covered)
    assert not missing, (
        "alf_rl.algorithms exports %s without a conformance case: add a "
        "Case to CASES (or COMPONENTS) in tests/algorithms/"
        "test_conformance.py" % missing)
    names = [case.name for case in CASES]
    assert len(names) == len(set(names))
    assert set(COMPONENTS.values()) <= set(names)


# ------------------------------------------------------------------ running

_PolicyInfo = namedtuple('_PolicyInfo', ['action_distribution'])

#: P(action 0) of the standalone entropy target's i-th call.
_ENTROPY_TARGET_PROBS = (0.9, 0.95, 0.8, 0.85)


def _entropy_target_inputs(call: int) -> Tuple[tf.Tensor, tf.Tensor]:
    """([T=3, B, 2] logits, [T, B] step types) of the ``call``-th call."""
    p0 = _ENTROPY_TARGET_PROBS[call % len(_ENTROPY_TARGET_PROBS)]
    logits = tf.broadcast_to(tf.math.log(tf.constant([p0, 1 - p0])),
                             [3, BATCH_SIZE, 2])
    step_type = tf.constant([[StepType.FIRST] * BATCH_SIZE,
                             [StepType.MID] * BATCH_SIZE,
                             [StepType.LAST] * BATCH_SIZE])
    return logits, step_type


def _entropy_target_step(alg, logits, step_type):
    """``train_complete`` of the standalone entropy target on a categorical
    policy with these [T, B, 2] ``logits``; returns the reduced loss."""
    with tf.GradientTape() as tape:
        tape.watch(logits)
        dist = tfp.distributions.Categorical(logits=logits)
    info = TrainingInfo(step_type=step_type, info=_PolicyInfo(dist))
    return alg.train_complete(tape, info)[0]


MI_X_SPEC = tf.TensorSpec([2], tf.float32)
MI_Y_SPEC = tf.TensorSpec([1], tf.float32)


def _mi_estimator_inputs(call: int) -> Tuple[tf.Tensor, tf.Tensor]:
    """([B, 2] x, [B, 1] y) of the ``call``-th call, y a noisy sum of x."""
    x = tf.random.stateless_normal([BATCH_SIZE, 2], seed=[call, 0])
    noise = tf.random.stateless_normal([BATCH_SIZE, 1], seed=[call, 1])
    return x, tf.reduce_sum(x, -1, keepdims=True) + 0.5 * noise


def _mi_estimator_step(alg, x, y):
    """One update of a standalone ``MIEstimator``; the reduced loss."""
    with tf.GradientTape() as tape:
        step = alg.train_step((x, y))
    return alg.train_complete(tape, TrainingInfo(info=step.info))[0]


def _intrinsic_time_steps(env_factory, case: Case) -> list:
    """T = ``case.length`` time steps ([B, ...] each) of a fresh
    ``PolicyUnittestEnv`` stepped with fixed actions from its reset (an
    episode boundary included: 5-step episodes)."""
    env = env_factory(case.action_type, BATCH_SIZE, EPISODE_LENGTH, seed=0)
    time_step, rows = env.reset(), []
    for t in range(case.length):
        rows.append(time_step)
        bits = (np.arange(BATCH_SIZE) + t) % 2
        action = (tf.constant(bits, tf.int64) if case.action_type ==
                  'discrete' else tf.constant(bits[:, None], tf.float32))
        time_step = env.step(action)
    return rows


def _with_skills(time_steps: list, num_skills: int) -> list:
    """The time steps, each observation paired with the [B, K] one-hot
    skill a ``SkillGenerator`` draws at FIRST rows and holds."""
    generator = SkillGenerator(num_skills)
    initial = generator.get_initial_rollout_state(BATCH_SIZE)
    skill, paired = initial, []
    for time_step in time_steps:
        skill = reset_state_if_necessary(skill, initial,
                                         time_step.is_first())
        skill = generator.rollout(time_step, skill).output
        paired.append(time_step._replace(
            observation=(time_step.observation, skill)))
    return paired


def _intrinsic_step(alg, time_steps, num_skills=0):
    """``rollout`` over the [B] time steps (normalizers updated, state
    reset at FIRST), then ``train_step`` over them from the same initial
    state under a tape and ``train_complete``; the reduced loss. With
    ``num_skills``, first ``_with_skills``."""
    if num_skills:
        time_steps = _with_skills(time_steps, num_skills)
    initial = alg.get_initial_rollout_state(BATCH_SIZE)
    state = initial
    for time_step in time_steps:
        state = reset_state_if_necessary(state, initial,
                                         time_step.is_first())
        state = alg.rollout(time_step, state).state
    state, infos, rewards = initial, [], []
    with tf.GradientTape() as tape:
        for time_step in time_steps:
            state = reset_state_if_necessary(state, initial,
                                             time_step.is_first())
            step = alg.train_step(time_step, state)
            state = step.state
            infos.append(step.info)
            rewards.append(step.output)
        info = tf.nest.map_structure(lambda *x: tf.stack(x), *infos)
    step_type = tf.stack([ts.step_type for ts in time_steps])
    rewards = tf.debugging.check_numerics(tf.stack(rewards), 'reward')
    loss_info = alg.train_complete(
        tape, TrainingInfo(step_type=step_type, info=info))[0]
    return loss_info._replace(extra=(loss_info.extra, rewards))


def _env(case: Case, env_factory):
    """A fresh environment of the case, its observations seeded with 0."""
    if case.tf_env:
        return suite_tf.load(case.tf_env, BATCH_SIZE, seed=0,
                             max_episode_steps=EPISODE_LENGTH)
    return env_factory(case.action_type, BATCH_SIZE, EPISODE_LENGTH, seed=0)


def _make(case: Case, env_factory, seed: int, for_training: bool = True):
    """(env, algorithm, roles), the algorithm initialized from ``seed``;
    ``for_training``: prepared for ``train`` as the trainer does it."""
    set_random_seed(seed)
    env = _env(case, env_factory)
    alg, roles = case.build(env.observation_spec(), env.action_spec())
    if case.path == 'replay' and for_training:
        alg.prepare_off_policy_specs(env.batch_size)
    return env, alg, roles


class _Trainer(object):
    """Runs training iterations of a case's algorithm, eagerly or compiled,
    as the trainers do (on a freshly reset environment for 'driver')."""

    def __init__(self, case: Case, env, alg, experience, compiled: bool,
                 first_call: int = 0):
        self._case, self._experience = case, experience
        self._calls = first_call
        if case.path == 'driver':
            self._driver = OnPolicyDriver(env, alg,
                                          train_interval=case.length,
                                          use_tf_functions=compiled)
            return
        if case.path == 'replay':
            alg.build_optimizers()
            fn = functools.partial(alg.train, **case.train_kwargs)
        elif case.path == 'mi':
            fn = functools.partial(_mi_estimator_step, alg)
        elif case.path == 'intrinsic':
            fn = functools.partial(_intrinsic_step, alg,
                                   num_skills=case.num_skills)
        else:
            fn = functools.partial(_entropy_target_step, alg)
        self._fn = tf.function(fn, autograph=False) if compiled else fn

    def step(self) -> LossInfo:
        """One iteration; returns the reduced ``LossInfo`` (scalars)."""
        self._calls += 1
        if self._case.path == 'driver':
            return self._driver.run()
        if self._case.path in ('replay', 'intrinsic'):
            return self._fn(self._experience)
        if self._case.path == 'mi':
            return self._fn(*_mi_estimator_inputs(self._calls - 1))
        return self._fn(*_entropy_target_inputs(self._calls - 1))


def _optimizers(alg) -> list:
    return [opt for opt, _ in alg.get_optimizer_and_variable_sets()]


def _state_variables(alg) -> List[tf.Variable]:
    """Every variable training changes: the algorithm's (networks, targets,
    counters, controllers) and its optimizers' (iterations, slots)."""
    variables = list(alg.variables)
    for opt in _optimizers(alg):
        opt_vars = opt.variables
        variables.extend(opt_vars() if callable(opt_vars) else opt_vars)
    return variables


def _values(variables) -> List[np.ndarray]:
    return [np.array(v.numpy()) for v in variables]


def _loss_leaves(loss_info) -> List[np.ndarray]:
    return [np.array(x) for x in tf.nest.flatten(loss_info)]


@dataclasses.dataclass
class _Run:
    """A case trained ``NUM_STEPS`` iterations eagerly and compiled."""
    env_factory: Callable
    experience: Optional[Any]  # [B, T] Experience ('replay'), [T] time
    # steps ('intrinsic')
    eager_alg: Algorithm
    roles: Dict[str, Any]
    sets_before: list  # get_optimizer_and_variable_sets() before training
    updates: List[list]  # per iteration: [(optimizer, grads_and_vars)]
    eager: Tuple[list, list]  # (losses per iteration, variable values)
    compiled: Tuple[list, list]


@pytest.fixture(scope='module')
def _runs():
    return {}


@pytest.fixture
def run(_runs, policy_unittest_env, collect_experience,
        spy_apply_gradients) -> Callable[[Case], _Run]:
    """``run(case) -> _Run``, computed once per case for the module (the
    tests read its snapshots; only the checkpoint test trains further)."""

    def get(case: Case) -> _Run:
        if case.name not in _runs:
            _runs[case.name] = _train(case, policy_unittest_env,
                                      collect_experience,
                                      spy_apply_gradients)
        return _runs[case.name]

    return get


def _train(case: Case, env_factory: Callable, collect_experience: Callable,
           spy_apply_gradients: Callable) -> _Run:
    """Trains ``NUM_STEPS`` iterations of two identically seeded instances
    of the case, the first eagerly (its optimizer updates recorded), the
    second compiled; snapshots losses and variables."""
    experience = None
    if case.path == 'replay':
        # The fixed batch, rolled out by another instance of the case.
        env, alg, _ = _make(case, env_factory, seed=100, for_training=False)
        experience = tf.nest.map_structure(
            tf.identity, collect_experience(alg, env, case.length))
    elif case.path == 'intrinsic':
        experience = _intrinsic_time_steps(env_factory, case)
    results = []
    for compiled in (False, True):
        env, alg, roles = _make(case, env_factory, seed=1)
        sets = [(o, list(vs))
                for o, vs in alg.get_optimizer_and_variable_sets()]
        calls = [] if compiled else spy_apply_gradients(_optimizers(alg))
        trainer = _Trainer(case, env, alg, experience, compiled)
        # Training draws random numbers from the global generator: both
        # runs start from the same generator state.
        set_random_seed(2)
        losses, updates = [], []
        for _ in range(NUM_STEPS):
            losses.append(_loss_leaves(trainer.step()))
            updates.append(list(calls))
            del calls[:]
        results.append((alg, roles, sets, updates,
                        (losses, _values(_state_variables(alg)))))
    (alg, roles, sets, updates, eager), compiled = results[0], results[1][4]
    return _Run(env_factory, experience, alg, roles, sets, updates, eager,
                compiled)


# ------------------------------------------------------------------ tests


def _case_params(cases: List[Case]) -> List[Any]:
    """``cases`` as parameters named by the case, each in the pytest-xdist
    group of its name: with ``--dist loadgroup`` (``make test``) every test
    of a case runs in one worker, which trains the case once (``run``)
    instead of once per worker."""
    return [pytest.param(case, id=case.name,
                         marks=pytest.mark.xdist_group(case.name))
            for case in cases]



@pytest.mark.parametrize('case', _case_params(CASES))
def test_eager_equals_compiled(case, run):
    r = run(case)
    (eager_losses, eager_values), (compiled_losses, compiled_values) = (
        r.eager, r.compiled)
    for step, (e, c) in enumerate(zip(eager_losses, compiled_losses)):
        assert len(e) == len(c)
        for x, y in zip(e, c):
            np.testing.assert_allclose(y, x, rtol=RTOL, atol=ATOL,
                                       err_msg='loss, iteration %d' % step)
    names = [v.name for v in _state_variables(r.eager_alg)]
    assert len(eager_values) == len(compiled_values) == len(names)
    for name, x, y in zip(names, eager_values, compiled_values):
        np.testing.assert_allclose(y, x, rtol=RTOL, atol=ATOL, err_msg=name)


def _target_networks(alg) -> List[Network]:
    """Networks whose module name starts with 'target' (the names the
    algorithms give their target copies), outermost ones only."""
    found = [
        m for m in alg.submodules
        if isinstance(m, Network) and m.name.startswith('target')
    ]
    inner = {id(s) for m in found for s in m.submodules}
    return [m for m in found if id(m) not in inner]


@pytest.mark.parametrize('case', _case_params(CASES))
def test_training_steps_reach_every_variable(case, run):
    r = run(case)
    alg = r.eager_alg
    assert type(alg) is case.cls

    # Every trainable variable is trained by exactly one optimizer.
    trainable = alg.trainable_variables
    trainable_refs = {v.ref() for v in trainable}
    assert len(trainable) == len(trainable_refs)
    assert all(v.trainable for v in trainable)
    in_sets = [v.ref() for _, vs in r.sets_before for v in vs]
    assert len(in_sets) == len(set(in_sets)), "a variable in two sets"
    assert set(in_sets) == trainable_refs

    # No target network is trained (and each is found).
    targets = _target_networks(alg)
    assert len(targets) == case.target_networks, [m.name for m in targets]
    for target in targets:
        assert target.variables, target.name
        trained = [v.name for v in target.variables
                   if v.ref() in trainable_refs]
        assert not trained, (target.name, trained)

    # Finite losses; each optimizer applied to exactly its own variables,
    # each with a finite, non-zero gradient.
    reached = set()
    for step, (losses, calls) in enumerate(zip(r.eager[0], r.updates)):
        assert all(np.all(np.isfinite(x)) for x in losses), step
        gated_role, reason = case.zero_gradients.get(step, (None, ''))
        for optimizer, variables in r.sets_before:
            updates = [gv for o, gv in calls if o is optimizer]
            if gated_role and optimizer is r.roles[gated_role]:
                # Declared in the case, with the reason.
                assert all(not np.any(g.numpy())
                           for gv in updates for g, _ in gv), reason
                continue
            assert len(updates) == case.updates_per_step, (
                step, variables[0].name, len(updates))
            for grads_and_vars in updates:
                assert [v.ref() for _, v in grads_and_vars] == [
                    v.ref() for v in variables
                ], "%s: an optimizer updated other variables than its " \
                   "set" % variables[0].name
                for g, v in grads_and_vars:
                    assert g is not None, "no gradient for %s" % v.name
                    g = tf.convert_to_tensor(g).numpy()
                    assert np.all(np.isfinite(g)), v.name
                    assert np.any(g != 0), "zero gradient for %s" % v.name
                    reached.add(v.ref())
    assert reached == trainable_refs

    if case.path == 'loss':
        # Standalone, the entropy target trains nothing itself: its loss
        # carries the gradient into the policy's parameters, and alpha is
        # moved by the controller, not by a gradient.
        assert not trainable and not r.sets_before
        assert not alg.log_alpha.trainable
        logits, step_type = _entropy_target_inputs(0)
        logits = tf.Variable(logits)
        with tf.GradientTape() as tape:
            loss = alg.calc_loss(
                tfp.distributions.Categorical(logits=logits), step_type).loss
            total = tf.reduce_sum(loss)
        grad = tape.gradient(total, logits).numpy()
        assert np.all(np.isfinite(grad)) and np.any(grad != 0)


@pytest.mark.parametrize('case', _case_params(CASES))
def test_checkpoint_round_trip(case, run, tmp_path):
    r = run(case)
    alg = r.eager_alg  # trained NUM_STEPS iterations
    saved = _values(_state_variables(alg))
    path = tf.train.Checkpoint(algorithm=alg,
                               optimizers=_optimizers(alg)).save(
                                   str(tmp_path / 'ckpt'))

    # A fresh algorithm with another initialization, its optimizer slots
    # built before the restore as the trainers do.
    _, other, _ = _make(case, r.env_factory, seed=7)
    other.build_optimizers()
    before = _values(_state_variables(other))
    assert len(before) == len(saved)
    assert any(not np.array_equal(b, s) for b, s in zip(before, saved))
    tf.train.Checkpoint(algorithm=other,
                        optimizers=_optimizers(other)).restore(
                            path).assert_consumed()
    for v, s in zip(_state_variables(other), saved):
        np.testing.assert_array_equal(v.numpy(), s, err_msg=v.name)

    # The next iteration of the original and of the restored algorithm,
    # from the same generator state (and, for the driver, a freshly reset
    # environment each).
    nexts = []
    for algorithm in (alg, other):
        env = _env(case, r.env_factory)
        trainer = _Trainer(case, env, algorithm, r.experience,
                           compiled=False, first_call=NUM_STEPS)
        set_random_seed(3)
        loss = _loss_leaves(trainer.step())
        nexts.append((loss, _state_variables(algorithm)))
    (loss, variables), (other_loss, other_variables) = nexts
    for x, y in zip(loss, other_loss):
        np.testing.assert_array_equal(y, x)
    for v, w in zip(variables, other_variables):
        np.testing.assert_array_equal(w.numpy(), v.numpy(), err_msg=v.name)
    # The step did train: something moved since the save.
    assert any(not np.array_equal(v.numpy(), s)
               for v, s in zip(variables, saved))


#: Replay cases whose class overrides ``first_train_step`` and
#: ``bootstrap_step`` (the first row skips the target values, which no
#: target reads; the last row computes only them).
_ROW_HOOK_CASES = [
    c for c in CASES if c.path == 'replay' and c.name not in (
        'ppo_entropy_target', 'agent_ppo_rnd', 'merlin_ppo',
        'mbrl_cem_learned_reward',
        'mbrl_random_shooting', 'bc_discrete', 'bc_deterministic',
        'iql_continuous', 'iql_discrete')
]


#: (case, hook) pairs whose hook runs the full ``train_step``: with
#: recurrent networks the first row must advance the targets' states too.
_HOOKS_THAT_SAVE_NOTHING = {
    (name, 'first_train_step')
    for name in ('r2d2', 'ddpg_rnn', 'td3_rnn', 'sac_rnn', 'sarsa_rnn')
}


def _check_hook_is_train_step(case: Case, hook: str, env_factory,
                              experience: Any) -> None:
    """For a hook that runs the whole ``train_step`` (recurrent networks'
    first row): one eager call of each on row 0 of ``experience``, from the
    same seed and initial state, returns the same step (action, state and
    info; tracing and training the whole update twice, as the other
    pairs do, took ~20 s per case and checked nothing more).
    ``experience``: [B, T] (row 0 is ``[:, 0]``)."""
    _, alg, _ = _make(case, env_factory, seed=1)
    row = tf.nest.map_structure(lambda x: x[:, 0], experience)
    row = row._replace(rollout_info=dist_ops.params_to_distributions(
        row.rollout_info, alg.rollout_info_spec))
    state = alg.get_initial_train_state(tf.shape(row.step_type)[0])
    steps = []
    for fn in (getattr(alg, hook), alg.train_step):
        set_random_seed(2)
        steps.append(dist_ops.distributions_to_params(fn(row, state)))
    leaves = [tf.nest.flatten(s) for s in steps]
    assert len(leaves[0]) == len(leaves[1]) > 0
    for x, y in zip(*leaves):
        np.testing.assert_allclose(x, y, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize('hook', ['first_train_step', 'bootstrap_step'])
@pytest.mark.parametrize('case', _case_params(_ROW_HOOK_CASES))
def test_row_hooks_change_only_the_cost(case, hook, run):
    """One compiled update with the class's ``hook`` equals one with
    ``train_step`` in its place (same losses and variables), with fewer
    matrix products in the graph. TD3's target-policy noise is set to 0:
    skipping a row's target action also skips its noise draw, so the other
    rows would draw other (equally distributed) noise."""
    experience = run(case).experience
    if (case.name, hook) in _HOOKS_THAT_SAVE_NOTHING:
        _check_hook_is_train_step(case, hook, run(case).env_factory,
                                  experience)
        return
    results, matmuls = [], []
    for full_row in (False, True):
        _, alg, _ = _make(case, run(case).env_factory, seed=1)
        assert alg.last_row_only_bootstraps
        assert (getattr(type(alg), hook)
                is not getattr(algorithms.OffPolicyAlgorithm, hook))
        if isinstance(alg, Td3Algorithm):
            alg._target_policy_noise = 0.0
        if full_row:
            setattr(alg, hook, alg.train_step)
        alg.build_optimizers()
        train = tf.function(functools.partial(alg.train,
                                              **case.train_kwargs),
                            autograph=False)
        set_random_seed(2)
        graph = train.get_concrete_function(experience).graph
        matmuls.append(sum(1 for n in graph.as_graph_def().node
                           if n.op == 'MatMul'))
        set_random_seed(2)
        losses = _loss_leaves(train(experience))
        results.append((losses, _values(_state_variables(alg))))
    assert matmuls[0] < matmuls[1], matmuls
    if case.name == 'dqn_iqn':
        # IQN draws fresh fractions at every network call: a row that skips
        # the target network shifts the later rows' draws (as TD3's noise).
        return
    (losses, values), (full_losses, full_values) = results
    for x, y in zip(losses, full_losses):
        np.testing.assert_allclose(x, y, rtol=RTOL, atol=ATOL)
    for x, y in zip(values, full_values):
        np.testing.assert_allclose(x, y, rtol=RTOL, atol=ATOL)
