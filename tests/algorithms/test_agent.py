"""Agent: reward mixing on both training paths, the state nest and FIRST
steps, per-part losses, what each path hands the RL algorithm, errors."""

import functools

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms import (ActorCriticAlgorithm, Agent, Algorithm,
                               DqnAlgorithm, EntropyTargetAlgorithm,
                               IcmAlgorithm, PPOAlgorithm, PPOLoss,
                               RNDAlgorithm, SkillGenerator, TracAlgorithm)
from alf_rl.algorithms.agent import AgentInfo, AgentState
from alf_rl.data_structures import (AlgStep, LossInfo, StepType, TrainingInfo)
from alf_rl.networks import (ActorDistributionNetwork, EncodingNetwork,
                             QNetwork, ValueNetwork)
from alf_rl.ops import distributions as dist_ops
from alf_rl.utils.common import set_random_seed
from alf_rl.utils.normalizers import StreamingMeanVarNormalizer
from alf_rl.utils.summary import loss_scalars

HIDDEN = (8, )
EXT, INT = 0.5, 3.0


class ObservationBonus(Algorithm):
    """A stateless module whose reward is ``10 * observation[:, 0] + 1``
    (0 at FIRST): known numbers to check the mixing with."""

    def __init__(self, observation_spec, action_spec=None):
        super().__init__(name='ObservationBonus')

    def rollout(self, inputs, state=()):
        valid = 1.0 - tf.cast(inputs.is_first(), tf.float32)
        reward = valid * (10.0 * inputs.observation[:, 0] + 1.0)
        return AlgStep(output=reward, state=(), info=reward)

    def train_step(self, inputs, state=()):
        return self.rollout(inputs, state)

    def calc_loss(self, training_info):
        return LossInfo(loss=tf.zeros_like(training_info.info),
                        extra=training_info.info)


def _nets():
    return dict(actor_network_ctor=functools.partial(
        ActorDistributionNetwork, fc_layer_params=HIDDEN),
                value_network_ctor=functools.partial(ValueNetwork,
                                                     fc_layer_params=HIDDEN))


def _a2c(observation_spec, action_spec, **kwargs):
    return ActorCriticAlgorithm(observation_spec, action_spec, **_nets(),
                                **kwargs)


def _ppo(observation_spec, action_spec, **kwargs):
    return PPOAlgorithm(observation_spec, action_spec, **_nets(),
                        loss=PPOLoss(gamma=0.9, td_lambda=0.8), **kwargs)


def _agent(env, rl=_a2c, module=ObservationBonus, **kwargs):
    kwargs.setdefault('optimizer', tf_keras.optimizers.Adam(1e-2))
    return Agent(env.observation_spec(), env.action_spec(),
                 rl_algorithm_ctor=rl, intrinsic_reward_module_ctor=module,
                 extrinsic_reward_coef=EXT, intrinsic_reward_coef=INT,
                 **kwargs)


def _expected_bonus(step_type, observation):
    first = np.asarray(step_type) == StepType.FIRST
    return np.where(first, 0.0, 10.0 * np.asarray(observation)[..., 0] + 1)


def _rollout_training_info(agent, env, num_steps):
    """On-policy ``TrainingInfo`` [T, B] as the driver builds it."""
    time_step = env.reset()
    state = agent.get_initial_rollout_state(env.batch_size)
    rows, spec = [], None
    for _ in range(num_steps):
        time_step = agent.transform_timestep(time_step)
        step = agent.rollout(time_step, state)
        spec = dist_ops.extract_spec(step.info, from_dim=1)
        rows.append(TrainingInfo(
            action=step.action, step_type=time_step.step_type,
            reward=time_step.reward, discount=time_step.discount,
            info=dist_ops.distributions_to_params(step.info),
            env_id=time_step.env_id))
        state = step.state
        time_step = env.step(step.action)
    stacked = tf.nest.map_structure(lambda *x: tf.stack(x), *rows)
    return stacked._replace(info=dist_ops.params_to_distributions(
        stacked.info, spec))


def test_on_policy_loss_trains_on_the_mixed_reward(policy_unittest_env):
    env = policy_unittest_env()
    agent = _agent(env)
    info = _rollout_training_info(agent, env, 6)
    assert info.rollout_info == ()
    loss = agent.calc_loss(info)
    extra = loss.extra
    np.testing.assert_allclose(extra.intrinsic_reward.numpy(),
                               info.info.intrinsic_reward.numpy())
    np.testing.assert_allclose(
        extra.training_reward.numpy(),
        EXT * info.reward.numpy() + INT * info.info.intrinsic_reward.numpy(),
        rtol=1e-6)
    np.testing.assert_array_equal(extra.extrinsic_reward.numpy(),
                                  info.reward.numpy())
    # What the RL algorithm's own loss gives on the mixed reward.
    rl_loss = agent.rl_algorithm.calc_loss(info._replace(
        reward=extra.training_reward, info=info.info.rl))
    np.testing.assert_allclose(extra.rl_loss.numpy(), rl_loss.loss.numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(loss.loss.numpy(), rl_loss.loss.numpy(),
                               rtol=1e-6)  # the bonus module's loss is 0


def test_rollout_reward_is_the_modules_and_zero_at_first(
        policy_unittest_env, collect_experience):
    env = policy_unittest_env()
    agent = _agent(env)
    experience = collect_experience(agent, env, 7)
    assert isinstance(experience.rollout_info, AgentInfo)
    np.testing.assert_allclose(
        experience.rollout_info.intrinsic_reward.numpy(),
        _expected_bonus(experience.step_type.numpy(),
                        experience.observation.numpy()), rtol=1e-6)
    assert (experience.step_type.numpy() == StepType.FIRST).any()


def test_replay_path_mixes_the_stored_reward_before_ppo_advantages(
        policy_unittest_env, collect_experience):
    env = policy_unittest_env()
    set_random_seed(0)
    agent = _agent(env, rl=_ppo)
    experience = collect_experience(agent, env, 8)
    processed = agent.preprocess_experience(experience)
    stored = experience.rollout_info
    mixed = EXT * experience.reward + INT * stored.intrinsic_reward
    want = agent.rl_algorithm.preprocess_experience(
        experience._replace(reward=mixed, rollout_info=stored.rl))
    np.testing.assert_allclose(processed.rollout_info.rl.advantages.numpy(),
                               want.rollout_info.advantages.numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(processed.step_type.numpy(),
                                  want.step_type.numpy())
    # The extrinsic reward is kept; calc_loss mixes again from the stored
    # intrinsic reward (off-policy methods read training_info.reward).
    np.testing.assert_array_equal(processed.reward.numpy(),
                                  experience.reward.numpy())
    assert isinstance(processed.rollout_info, AgentInfo)


def test_replay_calc_loss_uses_the_stored_intrinsic_reward(
        policy_unittest_env):
    env = policy_unittest_env()
    agent = _agent(env)
    info = _rollout_training_info(agent, env, 4)
    stored = info.info._replace(intrinsic_reward=tf.fill(
        tf.shape(info.reward), 7.0))
    loss = agent.calc_loss(info._replace(rollout_info=stored))
    np.testing.assert_allclose(loss.extra.training_reward.numpy(),
                               EXT * info.reward.numpy() + INT * 7.0,
                               rtol=1e-6)


def test_losses_are_reported_per_part(policy_unittest_env,
                                      collect_experience):
    env = policy_unittest_env()
    set_random_seed(0)
    agent = Agent(env.observation_spec(), env.action_spec(),
                  rl_algorithm_ctor=_ppo,
                  encoding_network_ctor=functools.partial(
                      EncodingNetwork, fc_layer_params=HIDDEN),
                  intrinsic_reward_module_ctor=functools.partial(
                      RNDAlgorithm, predictor_network_ctor=functools.partial(
                          EncodingNetwork, fc_layer_params=HIDDEN,
                          last_layer_size=4)),
                  entropy_target_ctor=functools.partial(
                      EntropyTargetAlgorithm, target_entropy=0.5),
                  optimizer=tf_keras.optimizers.Adam(1e-2))
    agent.prepare_off_policy_specs(env.batch_size)  # RND's [B] returns
    experience = collect_experience(agent, env, 8)
    scalars = loss_scalars(agent.train(experience, mini_batch_length=1))
    for tag in ('loss/total', 'loss/rl_loss', 'loss/rl/pg_loss',
                'loss/intrinsic_loss', 'loss/intrinsic/prediction_loss',
                'loss/entropy_target_loss', 'loss/entropy_target/alpha',
                'loss/extrinsic_reward', 'loss/intrinsic_reward',
                'loss/training_reward'):
        assert tag in scalars and np.isfinite(scalars[tag]), tag
    np.testing.assert_allclose(
        scalars['loss/total'],
        scalars['loss/rl_loss'] + scalars['loss/intrinsic_loss'] +
        scalars['loss/entropy_target_loss'], rtol=1e-5)


def test_state_nest_predict_skips_the_module(policy_unittest_env):
    env = policy_unittest_env()
    agent = _agent(env, module=functools.partial(
        IcmAlgorithm, encoding_network_ctor=functools.partial(
            EncodingNetwork, fc_layer_params=HIDDEN)))
    obs = env.observation_spec()
    assert agent.rollout_state_spec == AgentState(
        rl=agent.rl_algorithm.rollout_state_spec, intrinsic=obs)
    assert agent.predict_state_spec == AgentState(
        rl=agent.rl_algorithm.predict_state_spec)
    # A module with state: the rollout state is stored for replay, but it
    # is no recurrent memory (one-step rows get it whole).
    assert agent.use_rollout_state
    assert agent.recurrent_state_spec == agent.rl_algorithm.train_state_spec
    time_step = agent.transform_timestep(env.reset())
    step = agent.predict(time_step, agent.get_initial_predict_state(4))
    assert step.state.intrinsic == () and step.info.intrinsic == ()
    step = agent.rollout(time_step, agent.get_initial_rollout_state(4))
    # FIRST: no reward; the module's state is now this observation.
    np.testing.assert_array_equal(step.info.intrinsic_reward.numpy(),
                                  np.zeros(4))
    np.testing.assert_array_equal(step.state.intrinsic.numpy(),
                                  time_step.observation.numpy())


@pytest.mark.parametrize('only_at_first', [True, False])
def test_policy_input_without_episode_starts_keeps_the_goal(
        policy_unittest_env, only_at_first):
    """rl_policy_input(..., episode_starts=False) takes the state's goal as
    is when the generator changes goals only at FIRST steps (the draw is
    not traced: no random op); otherwise it runs the generator."""
    env = policy_unittest_env()
    generator = SkillGenerator(num_skills=3)
    generator.changes_goal_only_at_first = only_at_first
    agent = Agent(env.observation_spec(), env.action_spec(),
                  rl_algorithm_ctor=_a2c, goal_generator=generator)
    time_step = agent.transform_timestep(env.reset())  # FIRST steps
    skill = tf.one_hot([2, 0, 1, 2], 3)
    state = agent.get_initial_predict_state(4)._replace(goal=skill)
    graph = tf.function(lambda ts, s: agent.rl_policy_input(
        ts, s, episode_starts=False)).get_concrete_function(
            time_step, state).graph
    random_ops = [n.op for n in graph.as_graph_def().node
                  if 'Random' in n.op]
    rl_time_step, goal_step = agent.rl_policy_input(time_step, state,
                                                    episode_starts=False)
    zeros = agent.get_initial_predict_state(4)
    drawn = agent.rl_policy_input(time_step, zeros)[1].output
    if only_at_first:
        assert not random_ops
        np.testing.assert_array_equal(goal_step.output, skill)
        np.testing.assert_array_equal(goal_step.state, skill)
        np.testing.assert_array_equal(rl_time_step.observation[1], skill)
    else:
        assert random_ops
    # FIRST steps from the reset (zero) state: the default
    # (episode_starts=True) draws a one-hot skill for every row.
    np.testing.assert_array_equal(np.sum(drawn.numpy(), -1), np.ones(4))


def test_rollout_owned_variables_include_the_modules_normalizers(
        policy_unittest_env):
    env = policy_unittest_env()
    agent = _agent(env, module=RNDAlgorithm)
    owned = {v.ref() for v in agent.rollout_owned_variables()}
    module = agent.intrinsic_reward_module
    assert owned == {v.ref() for v in module.rollout_owned_variables()}
    assert owned and not owned & {
        v.ref() for v in agent.trainable_variables}


def test_rl_algorithm_observation_normalizer_moves_to_the_agent(
        policy_unittest_env):
    env = policy_unittest_env()
    agent = _agent(env, rl=functools.partial(
        _a2c, observation_normalizer_ctor=StreamingMeanVarNormalizer))
    ts = env.reset()
    ts = ts._replace(observation=ts.observation + 3.0)
    out = agent.transform_timestep(ts, update_normalizers=True)
    # No encoder, no goal: the RL algorithm's normalizer applies.
    want = agent.rl_algorithm.transform_observation(ts.observation, 1)
    np.testing.assert_allclose(out.observation.numpy(), want.numpy())
    with pytest.raises(ValueError, match="give them to the Agent"):
        _agent(env, rl=functools.partial(
            _a2c, observation_normalizer_ctor=StreamingMeanVarNormalizer),
               encoding_network_ctor=functools.partial(
                   EncodingNetwork, fc_layer_params=HIDDEN))


def test_bad_compositions_are_refused_in_one_line(policy_unittest_env):
    env = policy_unittest_env()
    with pytest.raises(ValueError, match="its train_complete is its own update"):
        _agent(env, rl=lambda observation_spec, action_spec: TracAlgorithm(
            observation_spec, action_spec, ac_algorithm_ctor=_a2c))
    with pytest.raises(TypeError, match="must build an Algorithm"):
        _agent(env, module=lambda observation_spec, action_spec: object())
    with pytest.raises(TypeError, match="output_spec"):
        _agent(env, goal_generator=ObservationBonus(None))
    with pytest.raises(TypeError, match="must build an RLAlgorithm"):
        _agent(env, rl=lambda observation_spec, action_spec: object())
    dqn = _agent(env, rl=functools.partial(
        DqnAlgorithm, q_network_ctor=functools.partial(
            QNetwork, fc_layer_params=HIDDEN)),
                 entropy_target_ctor=EntropyTargetAlgorithm)
    info = _rollout_training_info(dqn, env, 2)
    with pytest.raises(ValueError, match="action_distribution"):
        dqn.calc_loss(info)
