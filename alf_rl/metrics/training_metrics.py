"""``TrainingMetrics``: the metrics of one training run, in one place.

The four standard metrics are attributes (``episodes``, ``env_steps``,
``average_return``, ``average_episode_length``): code that needs one holds
it, it never looks a metric up by its name. The user's own metrics
(``extra``) are updated beside them by the same driver, and the optional
``GameScore`` is fed from Python.
"""

from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from alf_rl.metrics.metrics import (AverageEpisodeLength, AverageReturn,
                                    EnvironmentSteps, EpisodeAverageMetric,
                                    GameScore, NumberOfEpisodes, StepMetric)

#: A metric, or a factory ``(batch_size) -> StepMetric`` (e.g. a class).
MetricSource = Union[StepMetric, Callable[[int], StepMetric]]


def build_metric(source: MetricSource, batch_size: int) -> StepMetric:
    """A ``StepMetric`` from an instance or a ``(batch_size)`` factory.

    Args:
        source: a ``StepMetric`` (used as it is) or a callable that takes
            the number of environments B and returns one.
        batch_size: B, the number of environments the driver steps.

    Raises:
        TypeError: one line naming what ``source`` is or returned.
    """
    if isinstance(source, StepMetric):
        return source
    if not callable(source):
        raise TypeError("TrainerConfig.metrics: expected a StepMetric or a "
                        "(batch_size) -> StepMetric callable, got %r" %
                        (source, ))
    metric = source(batch_size)
    if not isinstance(metric, StepMetric):
        raise TypeError("TrainerConfig.metrics: %r returned %s, expected a "
                        "StepMetric" % (source, type(metric).__name__))
    return metric


class TrainingMetrics(object):
    """The standard metrics, the user's and the game score of a run.

    Args:
        batch_size: B, the number of environments the metrics count over.
        extra: the user's metrics (instances or ``(batch_size)``
            factories); their names must differ from each other and from
            the standard four.
        game_score: also keep a ``GameScore`` (the training environment
            reports games).
        buffer_size: episodes the two standard averages cover.

    Raises:
        ValueError: two metrics with one name.
    """

    def __init__(self, batch_size: int, extra: Sequence[MetricSource] = (),
                 game_score: bool = False, buffer_size: int = 10):
        self.episodes = NumberOfEpisodes()
        self.env_steps = EnvironmentSteps()
        self.average_return = AverageReturn(batch_size, buffer_size)
        self.average_episode_length = AverageEpisodeLength(
            batch_size, buffer_size)
        self.extra = [build_metric(m, batch_size) for m in extra]
        self.game_score = GameScore() if game_score else None
        seen = set()
        for metric in self.step_metrics:
            if metric.name in seen:
                raise ValueError(
                    "TrainerConfig.metrics: two metrics are named %r; give "
                    "each its own name (the TensorBoard tag is "
                    "Metrics/<name>)" % metric.name)
            seen.add(metric.name)

    @property
    def step_metrics(self) -> List[StepMetric]:
        """What the driver updates (and the checkpoint holds), in tag
        order: the standard four as ``default_metrics`` orders them, then
        the user's."""
        return [self.episodes, self.env_steps, self.average_return,
                self.average_episode_length] + self.extra

    def num_env_steps(self) -> int:
        """Transitions so far, over all environments."""
        return int(self.env_steps.result())

    def scored(self) -> bool:
        """Whether an episode has ended (the averages hold a score)."""
        return int(self.episodes.result()) > 0

    def scalars(self, scored_only: bool = False) -> Dict[str, float]:
        """``{'Metrics/<name>': value}`` of every metric, the game score
        included once a game ended.

        Args:
            scored_only: leave out the per-episode averages
                (``EpisodeAverageMetric``s) while no episode has ended.
        """
        skip = scored_only and not self.scored()
        scalars = {m.tag: float(m.result()) for m in self.step_metrics
                   if not (skip and isinstance(m, EpisodeAverageMetric))}
        game_score = self.game_score_value()
        if game_score is not None and self.game_score is not None:
            scalars[self.game_score.tag] = game_score
        return scalars

    def game_score_value(self) -> Optional[float]:
        """The mean score of the last games, or None before any game ended
        (or without a game score)."""
        if self.game_score is None or not self.game_score.num_games:
            return None
        return float(self.game_score.result())

    def find(self, name: str) -> StepMetric:
        """The step metric named ``name`` (a user's choice of what to show).

        Raises:
            ValueError: naming the metrics there are.
        """
        for metric in self.step_metrics:
            if metric.name == name:
                return metric
        raise ValueError("TrainerConfig.progress_metrics: no metric named %r "
                         "(the metrics are %s)" % (name, ', '.join(
                             m.name for m in self.step_metrics)))

    def checkpoint_objects(self) -> Dict[str, Any]:
        """The trackables to checkpoint: ``metrics`` (the step metrics, a
        list) and ``game_score`` when kept."""
        objects = {'metrics': self.step_metrics}
        if self.game_score is not None:
            objects['game_score'] = self.game_score
        return objects
