"""How a method is trained (``TrainingKind``) and the trainer pairing rule:
each kind's base, the kind of wrappers (Agent, TRAC), one-line refusals of
wrong pairings before anything is collected, prioritized replay only for
methods that give priorities (Agent(PPO) refused, Agent(DQN) trains)."""

import functools

import pytest
import tf_keras

from alf_rl.algorithms import (ActorCriticAlgorithm, Agent, DdpgAlgorithm,
                               DqnAlgorithm, OffPolicyAlgorithm,
                               OnPolicyAlgorithm, PPOAlgorithm,
                               SacAlgorithm, SarsaAlgorithm, Td3Algorithm,
                               TracAlgorithm)
from alf_rl.algorithms.on_policy_algorithm import EpochTraining
from alf_rl.algorithms.training_kind import (TrainingKind,
                                             check_trainer_pairing)
from alf_rl.environments.suite_unittest import PolicyUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.networks import (ActorDistributionNetwork, QNetwork,
                             ValueNetwork)
from alf_rl.trainers import OffPolicyTrainer, OnPolicyTrainer, TrainerConfig

HIDDEN = (8, )


def _ac(observation_spec, action_spec, cls=ActorCriticAlgorithm):
    return cls(observation_spec, action_spec,
               actor_network_ctor=functools.partial(
                   ActorDistributionNetwork, fc_layer_params=HIDDEN),
               value_network_ctor=functools.partial(
                   ValueNetwork, fc_layer_params=HIDDEN),
               optimizer=tf_keras.optimizers.Adam(1e-3))


def _dqn(observation_spec, action_spec):
    return DqnAlgorithm(observation_spec, action_spec,
                        q_network_ctor=functools.partial(
                            QNetwork, fc_layer_params=HIDDEN),
                        optimizer=tf_keras.optimizers.Adam(1e-3))


def _agent(rl_ctor):
    return lambda observation_spec, action_spec: Agent(
        observation_spec, action_spec, rl_algorithm_ctor=rl_ctor)


def _trainer(root, algorithm_ctor, trainer_cls=OffPolicyTrainer, **config):
    settings = dict(root_dir=root, algorithm_ctor=algorithm_ctor,
                    num_iterations=2, unroll_length=4, random_seed=0,
                    evaluate=False, mini_batch_size=4, mini_batch_length=2,
                    clear_replay_buffer=False, replay_buffer_capacity=64,
                    initial_collect_steps=8)
    settings.update(config)
    return trainer_cls(TrainerConfig(**settings),
                       env=TFPyEnvironment(PolicyUnittestEnv(2, 5, seed=0)))


def _first_line(raised):
    return str(raised.value).splitlines()[0]


def test_each_base_declares_its_kind():
    assert OnPolicyAlgorithm.training_kind is TrainingKind.UNROLL
    assert ActorCriticAlgorithm.training_kind is TrainingKind.UNROLL
    assert OffPolicyAlgorithm.training_kind is TrainingKind.REPLAY
    assert issubclass(PPOAlgorithm, EpochTraining)
    assert PPOAlgorithm.training_kind is TrainingKind.EPOCHS
    assert PPOAlgorithm.last_row_only_bootstraps is False
    for cls in (SacAlgorithm, DqnAlgorithm, DdpgAlgorithm, Td3Algorithm,
                SarsaAlgorithm):
        assert cls.training_kind is TrainingKind.REPLAY, cls
        assert cls.gives_priorities and cls.has_first_train_step, cls
    assert not PPOAlgorithm.gives_priorities
    assert not ActorCriticAlgorithm.has_first_train_step


def test_wrappers_take_the_kind_and_capabilities_of_what_they_wrap():
    env = TFPyEnvironment(PolicyUnittestEnv(2, 5))
    specs = (env.observation_spec(), env.action_spec())
    ppo_agent = _agent(functools.partial(_ac, cls=PPOAlgorithm))(*specs)
    assert ppo_agent.training_kind is TrainingKind.EPOCHS
    assert ppo_agent.last_row_only_bootstraps is False
    assert ppo_agent.gives_priorities is False
    dqn_agent = _agent(_dqn)(*specs)
    assert dqn_agent.training_kind is TrainingKind.REPLAY
    assert dqn_agent.gives_priorities and dqn_agent.has_first_train_step
    assert _agent(_ac)(*specs).training_kind is TrainingKind.UNROLL
    trac = TracAlgorithm(*specs, ac_algorithm_ctor=functools.partial(
        _ac, cls=PPOAlgorithm))
    assert trac.training_kind is TrainingKind.EPOCHS


def test_pairing_rule():
    env = TFPyEnvironment(PolicyUnittestEnv(2, 5))
    specs = (env.observation_spec(), env.action_spec())
    a2c, ppo, dqn = _ac(*specs), _ac(*specs, cls=PPOAlgorithm), _dqn(*specs)
    # Accepted pairings return None.
    for alg in (a2c, ppo, dqn):
        assert check_trainer_pairing(alg, 'OffPolicyTrainer', False,
                                     clear_replay_buffer=True) is None
    assert check_trainer_pairing(a2c, 'OnPolicyTrainer', True) is None
    assert check_trainer_pairing(a2c, 'OffPolicyTrainer', False) is None
    with pytest.raises(ValueError) as raised:
        check_trainer_pairing(dqn, 'OnPolicyTrainer', True)
    assert str(raised.value) == (
        "TrainerConfig.trainer=@OnPolicyTrainer trains on the driver's "
        "unroll, but DqnAlgorithm is trained from a replay buffer "
        "(training_kind 'replay'): use TrainerConfig.trainer="
        "@OffPolicyTrainer")
    with pytest.raises(ValueError, match=r"PPOAlgorithm is trained in epochs"
                       r" over what one iteration collected \(training_kind "
                       r"'epochs'\): use TrainerConfig.trainer="
                       r"@OffPolicyTrainer with TrainerConfig."
                       r"clear_replay_buffer=True$"):
        check_trainer_pairing(ppo, 'OnPolicyTrainer', True)
    with pytest.raises(ValueError, match=r"^PPOAlgorithm is trained in epochs"
                       r" .* but OffPolicyTrainer keeps a replay buffer: set "
                       r"TrainerConfig.clear_replay_buffer=True$"):
        check_trainer_pairing(ppo, 'OffPolicyTrainer', False)
    with pytest.raises(TypeError, match="OnPolicyTrainer cannot train int: "
                       "it declares no training_kind"):
        check_trainer_pairing(3, 'OnPolicyTrainer', True)


def test_dqn_with_on_policy_trainer_is_refused_before_training(tmp_path):
    with pytest.raises(ValueError) as raised:
        _trainer(str(tmp_path), _dqn, OnPolicyTrainer)
    assert _first_line(raised).startswith(
        "TrainerConfig.trainer=@OnPolicyTrainer trains on the driver's "
        "unroll, but DqnAlgorithm is trained from a replay buffer")
    assert not (tmp_path / 'ckpt').exists()


def test_prioritized_replay_refused_for_agent_of_ppo(tmp_path):
    ppo_agent = _agent(functools.partial(_ac, cls=PPOAlgorithm))
    for clear in (True, False):
        with pytest.raises(ValueError) as raised:
            _trainer(str(tmp_path / str(clear)), ppo_agent,
                     prioritized_replay=True, clear_replay_buffer=clear,
                     initial_collect_steps=0, mini_batch_length=1)
        assert _first_line(raised) == (
            "TrainerConfig.prioritized_replay needs an algorithm that gives "
            "priorities (e.g. mixes in TDErrorPriority); "
            "Agent.gives_priorities is False")
    with pytest.raises(ValueError, match=r"; ActorCriticAlgorithm\."
                       r"gives_priorities is False"):
        _trainer(str(tmp_path / 'a2c'), _ac, prioritized_replay=True)


def test_prioritized_replay_trains_agent_of_dqn(tmp_path):
    trainer = _trainer(str(tmp_path), _agent(_dqn), prioritized_replay=True)
    try:
        result = trainer.train()
    finally:
        trainer.close()
    assert result['iterations'] == 2
    assert result['Metrics/EnvironmentSteps'] > 0
