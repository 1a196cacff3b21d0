"""How a method is trained (``TrainingKind``) and the trainer pairing rule:
each kind's base, the kind of wrappers (Agent, TRAC), one-line refusals of
wrong pairings before anything is collected, prioritized replay only for
methods that give priorities (Agent(PPO) refused, Agent(DQN) trains)."""

import functools
import os

import gin
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
from alf_rl.trainers import (OffPolicyTrainer, OnPolicyTrainer,
                             TrainerConfig, create_trainer)

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


def _config(root, algorithm_ctor, **config):
    settings = dict(root_dir=root, algorithm_ctor=algorithm_ctor,
                    num_iterations=2, unroll_length=4, random_seed=0,
                    evaluate=False, mini_batch_size=4, mini_batch_length=2,
                    clear_replay_buffer=False, replay_buffer_capacity=64,
                    initial_collect_steps=8)
    settings.update(config)
    return TrainerConfig(**settings)


def _env():
    return TFPyEnvironment(PolicyUnittestEnv(2, 5, seed=0))


def _trainer(root, algorithm_ctor, trainer_cls=OffPolicyTrainer, **config):
    return trainer_cls(_config(root, algorithm_ctor, **config), env=_env())


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


def _created(root, algorithm_ctor, **config):
    """The class of the trainer ``create_trainer`` builds (then closed)."""
    trainer = create_trainer(_config(root, algorithm_ctor, **config),
                             env=_env())
    trainer.close()
    return type(trainer)


def test_trainer_chosen_from_the_training_kind(tmp_path):
    root = str(tmp_path)
    assert _created(root, _ac) is OnPolicyTrainer
    assert _created(root, _agent(_ac)) is OnPolicyTrainer
    assert _created(root, _dqn) is OffPolicyTrainer
    assert _created(root, _agent(_dqn)) is OffPolicyTrainer
    ppo = functools.partial(_ac, cls=PPOAlgorithm)
    assert _created(root, ppo, clear_replay_buffer=True,
                    initial_collect_steps=0) is OffPolicyTrainer
    # Its settings are still checked, in one line.
    with pytest.raises(ValueError) as raised:
        _created(root, ppo)
    assert _first_line(raised).endswith(
        "but OffPolicyTrainer keeps a replay buffer: set "
        "TrainerConfig.clear_replay_buffer=True")
    # A named trainer is the one built; a wrong one is refused in one line.
    assert _created(root, _ac, trainer=OffPolicyTrainer) is OffPolicyTrainer
    with pytest.raises(ValueError) as raised:
        _created(root, _dqn, trainer=OnPolicyTrainer)
    assert _first_line(raised).startswith(
        "TrainerConfig.trainer=@OnPolicyTrainer trains on the driver's "
        "unroll, but DqnAlgorithm is trained from a replay buffer")
    assert not (tmp_path / 'ckpt').exists()


def test_gin_file_without_a_trainer_trains_with_the_kinds_trainer(
        tmp_path):
    """sac_pendulum.gin without its TrainerConfig.trainer line trains (the
    default of old, OnPolicyTrainer, refuses SAC before collecting)."""
    from alf_rl.bin.train import train
    examples = os.path.join(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))), 'examples')
    with open(os.path.join(examples, 'sac_pendulum.gin')) as f:
        lines = [line for line in f
                 if not line.startswith('TrainerConfig.trainer')]
    assert len(lines) > 20
    gin_file = tmp_path / 'sac_no_trainer.gin'
    gin_file.write_text(''.join(lines))
    try:
        result = train(str(tmp_path / 'run'), [str(gin_file)], [
            'TrainerConfig.num_env_steps=0', 'TrainerConfig.num_iterations=3',
            'TrainerConfig.initial_collect_steps=8',
            'TrainerConfig.mini_batch_size=4', 'TrainerConfig.evaluate=False'])
    finally:
        gin.clear_config()
    assert result['iterations'] == 3
    assert result['Metrics/EnvironmentSteps'] == 8 + 3
