"""Experiment tracking: a run's TensorBoard scalars, its gin settings and
its final metrics, also in Weights & Biases or MLflow.

A tracker is a callback (``alf_rl.trainers.callbacks``): it opens a
tracked run when training starts, receives every scalar the trainer
writes to TensorBoard with the same tag and step (``on_summaries``:
``train/<tag>`` and ``eval/<tag>`` at the iteration, each
``Metrics_vs_EnvironmentSteps/<name>`` at the env step count), logs the
operative gin configuration (``config.gin``) as the run's hyperparameters
once the first call of iterations has ended, and the result of
``Trainer.train`` as its final metrics (``final/<key>``) before closing.
From Python::

    trainer.train(callbacks=[WandbTracker(project='cartpole')])
    model.learn(20000, callbacks=[MLflowTracker(experiment='cartpole')])

From gin::

    training_callbacks.callbacks = [@WandbTracker()]
    WandbTracker.project = 'cartpole'

The packages are optional extras: ``pip install 'alf_rl[wandb]'`` or
``'alf_rl[mlflow]'`` (without it, building the tracker says so in one
line). Offline: ``WandbTracker(mode='offline')`` (or ``WANDB_MODE=
offline``) writes under ``dir``; ``MLflowTracker(tracking_uri=
'file:/path/mlruns')`` writes files (MLflow 3 asks for
``MLFLOW_ALLOW_FILE_STORE=true`` there).
"""

import importlib
import re
import time
from typing import Any, Dict, List, NamedTuple, Optional, Sequence

import gin

from alf_rl.trainers.callbacks import Callback

_VS_STEPS = 'Metrics_vs_EnvironmentSteps/'
_METRICS = 'Metrics/'


class MissingExtraError(ImportError, ValueError):
    """An optional package a tracker needs is not installed; the message
    gives the ``pip install`` command. An ``ImportError``, and a
    ``ValueError`` so that the commands print it as their one-line
    error."""


def _require(module: str, extra: str, who: str) -> Any:
    """Imports ``module`` or raises ``MissingExtraError`` in one line."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(
            "%s needs the %s package, which is not installed: "
            "pip install 'alf_rl[%s]'" % (who, module, extra)
        ) from None


def gin_hparams() -> Dict[str, Any]:
    """The operative gin configuration (what ``config.gin`` holds) as
    ``{'Configurable.param': value}``: numbers, booleans and strings as
    they are, references as ``'@name'`` (``'@name()'`` when called),
    macros as ``'%name'``, other values (lists, dicts) as their repr."""
    from gin import config_parser

    class _ByName(config_parser.ParserDelegate):
        """References as ``'@name'``, macros as ``'%name'``."""

        def configurable_reference(self, name: str, evaluate: bool) -> str:
            return '@%s%s' % (name, '()' if evaluate else '')

        def macro(self, name: str) -> str:
            return '%' + name

    hparams: Dict[str, Any] = {}
    text = gin.operative_config_str()
    for statement in config_parser.ConfigParser(text, _ByName()):
        selector = getattr(statement, 'selector', None)
        if selector is None or not hasattr(statement, 'arg_name'):
            continue  # an import or include line
        scope = statement.scope + '/' if statement.scope else ''
        value = statement.value
        if not isinstance(value, (bool, int, float, str)):
            value = repr(value)
        hparams['%s%s.%s' % (scope, selector, statement.arg_name)] = value
    return hparams


def final_metrics(result: Dict[str, Any]) -> Dict[str, float]:
    """``Trainer.train``'s numbers as ``{'final/<key>': value}``."""
    return {
        'final/' + k: float(v)
        for k, v in result.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }


class Logged(NamedTuple):
    """One TensorBoard write, as a tracker logs it.

    Attributes:
        split: ``'train'`` or ``'eval'``.
        by_iteration: ``{'<split>/<tag>': value}`` at step ``iteration``.
        iteration: the training iteration.
        by_steps: ``{'<split>/Metrics_vs_EnvironmentSteps/<name>':
            value}`` at step ``env_steps``.
        env_steps: the run's environment steps.
    """

    split: str
    by_iteration: Dict[str, float]
    iteration: int
    by_steps: Dict[str, float]
    env_steps: int


class Tracker(Callback):
    """Base of experiment trackers: opens the tracked run when training
    starts, logs every TensorBoard scalar as it is written, the gin
    settings once, and the final metrics when training ends. Subclasses
    say how (``_open``, ``_log``, ``_log_hparams``, ``_close``)."""

    def __init__(self) -> None:
        self._open_run = False
        self._hparams_logged = False

    def on_training_start(self, iteration: int) -> Optional[bool]:
        """Opens the tracked run."""
        self._open()
        self._open_run, self._hparams_logged = True, False
        return None

    def on_summaries(
        self,
        split: str,
        scalars: Dict[str, float],
        iteration: int,
        env_steps: int,
    ) -> Optional[bool]:
        """Logs ``scalars`` as TensorBoard got them: ``split/tag`` at
        ``iteration``, ``split/Metrics_vs_EnvironmentSteps/name`` at
        ``env_steps``."""
        self._ensure_hparams()
        by_iteration = {split + '/' + k: v for k, v in scalars.items()}
        by_steps = {
            split + '/' + _VS_STEPS + k[len(_METRICS) :]: v
            for k, v in scalars.items()
            if k.startswith(_METRICS)
        }
        self._log(Logged(split, by_iteration, iteration, by_steps, env_steps))
        return None

    def on_iterations_end(
        self, iteration: int, metrics: Dict[str, float]
    ) -> Optional[bool]:
        """Logs the gin settings after the first call (``config.gin`` is
        written then)."""
        self._ensure_hparams()
        return None

    def on_training_end(self, result: Dict[str, Any]) -> None:
        """Logs ``final/<key>`` of ``result`` and closes the run."""
        if not self._open_run:
            return
        self._ensure_hparams()
        self._close(final_metrics(result), int(result.get('iterations', 0)))
        self._open_run = False

    def _ensure_hparams(self) -> None:
        if self._open_run and not self._hparams_logged:
            self._hparams_logged = True
            self._log_hparams(gin_hparams())

    # ------------------------------------------------------ to override
    def _open(self) -> None:
        raise NotImplementedError()

    def _log(self, logged: Logged) -> None:
        raise NotImplementedError()

    def _log_hparams(self, hparams: Dict[str, Any]) -> None:
        raise NotImplementedError()

    def _close(self, final: Dict[str, float], iteration: int) -> None:
        raise NotImplementedError()


@gin.configurable
class WandbTracker(Tracker):
    """Logs the run to Weights & Biases (``pip install
    'alf_rl[wandb]'``): one W&B run per ``Trainer.train``, its step the
    iteration; each ``<split>/Metrics_vs_EnvironmentSteps/<name>`` is
    plotted against ``<split>/env_steps``; the gin settings are the run's
    config, the final metrics its summary.

    Args:
        project: the W&B project.
        name: the W&B run's name (None: W&B's).
        group: the W&B group (e.g. a search's name).
        tags: the W&B run's tags.
        mode: ``'online'``, ``'offline'`` (nothing leaves the machine;
            ``wandb sync`` uploads later) or ``'disabled'``; None: W&B's
            default (``WANDB_MODE``).
        dir: where W&B writes its files (None: the current directory).
    Raises:
        MissingExtraError: wandb is not installed (one line).
    """

    def __init__(
        self,
        project: str = 'alf_rl',
        name: Optional[str] = None,
        group: Optional[str] = None,
        tags: Sequence[str] = (),
        mode: Optional[str] = None,
        dir: Optional[str] = None,
    ):
        super().__init__()
        self._wandb = _require('wandb', 'wandb', 'WandbTracker')
        self._settings = dict(
            project=project, name=name, group=group, tags=list(tags),
            mode=mode, dir=dir,
        )  # fmt: skip
        self.run: Any = None

    def _open(self) -> None:
        self.run = self._wandb.init(reinit='create_new', **self._settings)
        for split in ('train', 'eval'):
            self.run.define_metric(split + '/env_steps')
            self.run.define_metric(
                '%s/%s*' % (split, _VS_STEPS),
                step_metric=split + '/env_steps',
            )

    def _log(self, logged: Logged) -> None:
        row = dict(logged.by_iteration, **logged.by_steps)
        row[logged.split + '/env_steps'] = logged.env_steps
        self.run.log(row, step=logged.iteration)

    def _log_hparams(self, hparams: Dict[str, Any]) -> None:
        self.run.config.update(hparams, allow_val_change=True)

    def _close(self, final: Dict[str, float], iteration: int) -> None:
        self.run.summary.update(final)
        self.run.finish()


#: What MLflow allows in a metric or parameter name.
_MLFLOW_NAME = re.compile(r'[^\w\-./ ]')


@gin.configurable
class MLflowTracker(Tracker):
    """Logs the run to MLflow (``pip install 'alf_rl[mlflow]'``): one
    MLflow run per ``Trainer.train`` in ``experiment``; each scalar at
    TensorBoard's step (iteration, or env steps for
    ``Metrics_vs_EnvironmentSteps``); the gin settings as parameters; the
    final metrics as ``final/<key>`` at the last iteration. Characters
    MLflow refuses in a name become ``_``.

    Args:
        tracking_uri: where the runs go (a server's URL, ``file:/path``
            for files; None: MLflow's default, ``MLFLOW_TRACKING_URI``).
        experiment: the experiment's name (created when missing).
        run_name: the MLflow run's name (None: MLflow's).
        tags: more ``{name: value}`` tags of the run.
    Raises:
        MissingExtraError: mlflow is not installed (one line).
    """

    def __init__(
        self,
        tracking_uri: Optional[str] = None,
        experiment: str = 'alf_rl',
        run_name: Optional[str] = None,
        tags: Optional[Dict[str, str]] = None,
    ):
        super().__init__()
        self._mlflow = _require('mlflow', 'mlflow', 'MLflowTracker')
        self._tracking_uri = tracking_uri
        self._experiment = experiment
        self._run_name = run_name
        self._tags = dict(tags or {})
        self.run_id: Optional[str] = None
        self._client: Any = None

    def _open(self) -> None:
        client = self._mlflow.tracking.MlflowClient(self._tracking_uri)
        found = client.get_experiment_by_name(self._experiment)
        experiment_id = (
            found.experiment_id
            if found is not None
            else client.create_experiment(self._experiment)
        )
        run = client.create_run(
            experiment_id, run_name=self._run_name, tags=self._tags
        )
        self._client, self.run_id = client, run.info.run_id

    def _metrics(self, values: Dict[str, float], step: int) -> List[Any]:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        return [
            Metric(_MLFLOW_NAME.sub('_', k), float(v), now, int(step))
            for k, v in values.items()
        ]

    def _log(self, logged: Logged) -> None:
        self._client.log_batch(
            self.run_id,
            metrics=self._metrics(logged.by_iteration, logged.iteration)
            + self._metrics(logged.by_steps, logged.env_steps),
        )

    def _log_hparams(self, hparams: Dict[str, Any]) -> None:
        from mlflow.entities import Param

        params = [
            Param(_MLFLOW_NAME.sub('_', k), str(v)[:6000])
            for k, v in sorted(hparams.items())
        ]
        for start in range(0, len(params), 100):  # MLflow's batch limit
            self._client.log_batch(
                self.run_id, params=params[start : start + 100]
            )

    def _close(self, final: Dict[str, float], iteration: int) -> None:
        self._client.log_batch(
            self.run_id, metrics=self._metrics(final, iteration)
        )
        self._client.set_terminated(self.run_id)
