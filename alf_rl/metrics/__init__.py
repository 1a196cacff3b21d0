"""In-graph training metrics (TensorBoard tags ``Metrics/<Name>``)."""

from alf_rl.metrics.metrics import AverageEpisodeLength
from alf_rl.metrics.metrics import AverageReturn
from alf_rl.metrics.metrics import EnvironmentSteps
from alf_rl.metrics.metrics import GameScore
from alf_rl.metrics.metrics import NumberOfEpisodes
from alf_rl.metrics.metrics import StepMetric
from alf_rl.metrics.metrics import default_metrics

__all__ = [
    'GameScore',
    'StepMetric', 'EnvironmentSteps', 'NumberOfEpisodes', 'AverageReturn',
    'AverageEpisodeLength', 'default_metrics'
]
