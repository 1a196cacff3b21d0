"""The model object: make, learn, predict (one or a batch of raw
observations), save and load; it writes what alf-train writes and
resumes the same way."""

import os

import numpy as np
import pytest

import alf_rl

SMALL = {
    'create_environment.num_parallel_environments': 2,
    'TrainerConfig.evaluate': False,
}
OBS = np.array(
    [[0.0, 0.1, 0.02, -0.1], [0.1, -0.5, -0.1, 0.8], [-0.1, 0.5, 0.1, -0.8]],
    np.float32,
)


def test_learn_predict_save_load_and_resume(tmp_path):
    root = str(tmp_path / 'run')
    model = alf_rl.A2C('CartPole-v1', root_dir=root, bindings=SMALL)
    with pytest.raises(ValueError, match='nothing trained yet'):
        model.predict(OBS[0])
    result = model.learn(total_env_steps=200)
    assert result['Metrics/EnvironmentSteps'] >= 200
    # What alf-train writes.
    for name in ('config.gin', 'modules.json', 'ckpt', 'train'):
        assert os.path.exists(os.path.join(root, name)), name
    config = open(os.path.join(root, 'config.gin')).read()
    assert 'ActorCriticAlgorithm' in config and "'CartPole-v1'" in config
    # One observation gives one action; a batch, one per row, the same.
    action, state = model.predict(OBS[0])
    assert np.asarray(action).shape == () and action in (0, 1)
    actions, _ = model.predict(OBS)
    assert actions.shape == (3,) and actions[0] == action
    # The next step of an episode takes the returned state.
    again, _ = model.predict(OBS[0], state=state)
    assert again in (0, 1)
    saved = model.save(str(tmp_path / 'saved'))
    loaded = alf_rl.load(saved)
    np.testing.assert_array_equal(loaded.predict(OBS)[0], actions)
    with pytest.raises(ValueError, match='already holds checkpoints'):
        model.save(saved)
    # learn() again resumes from the run's checkpoint.
    more = model.learn(total_env_steps=400)
    assert more['iterations'] > result['iterations']
    assert more['Metrics/EnvironmentSteps'] >= 400


def test_every_family_has_its_example():
    from alf_rl.api import models

    for cls in (
        alf_rl.A2C,
        alf_rl.PPO,
        alf_rl.SAC,
        alf_rl.DDPG,
        alf_rl.TD3,
        alf_rl.DQN,
        alf_rl.MBRL,
    ):
        assert issubclass(cls, alf_rl.Model)
        assert os.path.exists(
            os.path.join(models.examples_dir(), cls.example)
        ), cls
    with pytest.raises(AttributeError):
        alf_rl.NoSuchModel  # noqa: B018
