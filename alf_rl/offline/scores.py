"""The D4RL-style normalized score of a return.

    score = 100 * (return - random_return) / (expert_return - random_return)

0 is the return of a uniformly random policy, 100 the expert's; both
reference returns are stored in the dataset's metadata
(``random_return``, ``expert_return``), as D4RL keeps one pair per task.
"""

from typing import Any, Dict, Optional


def normalized_score(
    episode_return: float, random_return: float, expert_return: float
) -> float:
    """``100 * (return - random) / (expert - random)``.

    Raises:
        ValueError: ``expert_return == random_return`` (no scale).
    """
    if expert_return == random_return:
        raise ValueError(
            "normalized score: expert_return %g equals "
            "random_return: no scale" % expert_return
        )
    return (
        100.0
        * (episode_return - random_return)
        / (expert_return - random_return)
    )


def reference_returns(metadata: Dict[str, Any]) -> Optional[Dict[str, float]]:
    """``{'random_return', 'expert_return'}`` from a dataset's metadata,
    or None when either is missing or they are equal."""
    try:
        random_return = float(metadata['random_return'])
        expert_return = float(metadata['expert_return'])
    except (KeyError, TypeError, ValueError):
        return None
    if random_return == expert_return:
        return None
    return {'random_return': random_return, 'expert_return': expert_return}
