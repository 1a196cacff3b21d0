"""Learning test: an intrinsic reward finds a sparse reward that PPO alone
does not.

``ChainUnittestEnv(length=20)``: 20 positions, every episode starts at 0
and lasts 24 steps; the only reward (1) arrives on the step that reaches
position 19, which takes 19 right moves in 23 actions (a uniformly random
policy gets there with probability ~2e-4 per episode). PPO, alone or as the
RL algorithm of an ``Agent`` with ``RNDAlgorithm`` or ``IcmAlgorithm``
(intrinsic_reward_coef 1, extrinsic 1), trains 30 iterations of 8 envs x 16
steps (3,840 env steps) through the replay path as ``examples/
ppo_cart_pole.gin`` does (one-time replayer, one-step rows, 4 epochs):
the ``chain_exploration`` fixture of ``tests/conftest.py``.

Measured (seeds 0-2): RND reached the end first after 1,264 / 1,264 /
1,624 env steps, ICM after 1,464 / 1,264 / 1,640; PPO alone never did
(furthest positions 15 / 11 / 14; also none within 9.8k steps).
"""

import pytest
import tf_keras

from alf_rl.algorithms import IcmAlgorithm, RNDAlgorithm


def _rnd(observation_spec, action_spec=None):
    return RNDAlgorithm(observation_spec,
                        optimizer=tf_keras.optimizers.Adam(1e-3))


def _icm(observation_spec, action_spec):
    return IcmAlgorithm(observation_spec, action_spec,
                        optimizer=tf_keras.optimizers.Adam(1e-3))


@pytest.mark.parametrize('module_ctor, found_on', [
    pytest.param(None, 0, id='ppo_alone'),
    pytest.param(_rnd, 3, id='ppo_rnd'),
    pytest.param(_icm, 3, id='ppo_icm'),
])
def test_intrinsic_reward_finds_the_end_of_the_chain(chain_exploration,
                                                     module_ctor, found_on,
                                                     tmp_path):
    found = [chain_exploration(module_ctor, seed, tmp_path / str(seed)) > 0
             for seed in range(3)]
    assert sum(found) == found_on, found
