"""In-graph training metrics (TensorBoard tags ``Metrics/<Name>``)."""

from alf_rl.metrics.metrics import AverageEpisodeLength
from alf_rl.metrics.metrics import AverageReturn
from alf_rl.metrics.metrics import EnvironmentSteps
from alf_rl.metrics.metrics import EpisodeAverageMetric
from alf_rl.metrics.metrics import GameScore
from alf_rl.metrics.metrics import NumberOfEpisodes
from alf_rl.metrics.metrics import StepMetric
from alf_rl.metrics.metrics import default_metrics
from alf_rl.metrics.training_metrics import TrainingMetrics

__all__ = [
    'GameScore',
    'StepMetric', 'EnvironmentSteps', 'NumberOfEpisodes', 'AverageReturn',
    'AverageEpisodeLength', 'EpisodeAverageMetric', 'TrainingMetrics',
    'default_metrics'
]
