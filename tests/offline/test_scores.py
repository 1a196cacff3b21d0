"""The D4RL-style normalized score and the reference returns it reads."""

import pytest

from alf_rl.offline.scores import normalized_score, reference_returns


def test_normalized_score_maps_random_to_0_and_expert_to_100():
    assert normalized_score(22.0, 22.0, 500.0) == 0.0
    assert normalized_score(500.0, 22.0, 500.0) == 100.0
    assert normalized_score(261.0, 22.0, 500.0) == pytest.approx(50.0)
    # Negative-return tasks (Pendulum): expert above random all the same.
    assert normalized_score(-600.0, -1200.0, -150.0) == pytest.approx(
        100 * 600 / 1050
    )
    with pytest.raises(
        ValueError, match='expert_return 5 equals random_return: no scale'
    ):
        normalized_score(1.0, 5.0, 5.0)


def test_reference_returns_need_both_and_a_scale():
    assert reference_returns({'random_return': 1, 'expert_return': 3}) == {
        'random_return': 1.0,
        'expert_return': 3.0,
    }
    assert reference_returns({'random_return': 1.0}) is None
    assert reference_returns({'random_return': 2, 'expert_return': 2}) is None
    assert (
        reference_returns({'random_return': 'x', 'expert_return': 2}) is None
    )
