"""``TrainerConfig.num_seeds = N``: a gin-configured PPO run as N seeds.

``create_trainer`` hands a config with ``num_seeds > 1`` to
``PopulationRun``, which reads the run's gin settings (the environment of
``create_environment``, PPO's loss, optimizer and network settings, the
budget) into a ``PopulationTrainer`` of seeds ``random_seed, ...,
random_seed + N - 1``. Only what ``PopulationPPO`` implements is accepted:
PPO (``PPOAlgorithm``) with a feed-forward categorical actor on a
``suite_tf`` environment (``create_environment.backend = 'tf'``) with
discrete actions and flat observations, trained from its own collection
(``mini_batch_length`` 1); any other combination is refused in one line.
The iteration is compiled without XLA whatever ``jit_compile`` says.
"""

import functools
import inspect
import math
import os
import random
import time
from typing import Any, Dict, List, Sequence, Tuple

import gin

from alf_rl.algorithms.population_ppo import PopulationPPO
from alf_rl.trainers.config import TrainerConfig
from alf_rl.trainers.population_trainer import PopulationTrainer

# Bindings PopulationPPO takes over: (configurable, parameter) -> its
# argument name ('' for settings that are checked, not passed).
_TRANSLATED = {
    ('PPOLoss', 'gamma'): 'gamma',
    ('PPOLoss', 'td_lambda'): 'td_lambda',
    ('PPOLoss', 'importance_ratio_clipping'): 'importance_ratio_clipping',
    ('PPOLoss', 'normalize_advantages'): 'normalize_advantages',
    ('PPOLoss', 'td_loss_weight'): 'td_loss_weight',
    ('PPOAlgorithm', 'gradient_clipping'): 'gradient_clipping',
    ('LegacyAdam', 'learning_rate'): 'learning_rate',
    ('LegacyAdam', 'epsilon'): 'adam_epsilon',
    ('ActorDistributionNetwork', 'fc_layer_params'): 'hidden_layers',
    ('ActorDistributionNetwork', 'activation'): 'activation',
}
# Bindings that must have one value (the one PopulationPPO implements).
_REQUIRED = {
    ('create_environment', 'backend'): ('tf', "'tf'"),
    ('PPOLoss', 'entropy_regularization'): (None, 'None'),
    ('PPOAlgorithm', 'clip_by_global_norm'): (True, 'True'),
}
_NETWORKS = ('ActorDistributionNetwork', 'ValueNetwork')
_NEEDS = (
    "TrainerConfig.num_seeds > 1 trains PPOAlgorithm (feed-forward, "
    "LegacyAdam) on a suite_tf environment (create_environment.backend="
    "'tf') with discrete actions and flat observations"
)


def _default(configurable: str, parameter: str) -> Any:
    """The parameter's default in the configurable's signature (for a
    class, the first ``__init__`` of its MRO that names it)."""
    target = gin.config._REGISTRY.get_match(configurable).wrapped
    functions = [
        vars(c)['__init__']
        for c in getattr(target, '__mro__', ())
        if '__init__' in vars(c)
    ] or [target]
    for function in functions:
        parameters = inspect.signature(function).parameters
        if parameter in parameters:
            return parameters[parameter].default
    raise ValueError('%s has no parameter %r' % (configurable, parameter))


def _bound(configurable: str, parameter: str) -> Any:
    """The gin binding's value, else the parameter's default (a network's
    encoder settings: its default ``EncodingNetwork`` with (64, 64)
    layers)."""
    bindings = gin.get_bindings(configurable)
    if parameter in bindings:
        return bindings[parameter]
    if configurable in _NETWORKS:
        if parameter == 'fc_layer_params':
            return (64, 64)
        return _bound('EncodingNetwork', parameter)
    return _default(configurable, parameter)


def _refuse(what: str) -> None:
    """ValueError: one line saying what is not supported and what is."""
    raise ValueError('%s; got %s' % (_NEEDS, what))


def _check_bindings(config: TrainerConfig) -> None:
    """Refuses what ``PopulationPPO`` would not train as configured."""
    ctor = getattr(config.algorithm_ctor, '__name__', config.algorithm_ctor)
    if ctor != 'PPOAlgorithm':
        _refuse('TrainerConfig.algorithm_ctor=%s' % (ctor,))
    for (name, parameter), (value, text) in _REQUIRED.items():
        got = _bound(name, parameter)
        if got != value and not (value is None and got == 0):
            _refuse('%s.%s=%r (expected %s)' % (name, parameter, got, text))
    for name in _NETWORKS:
        if 'encoding_network_ctor' in gin.get_bindings(name):
            _refuse('%s.encoding_network_ctor bound' % name)
    value_net = [
        _bound('ValueNetwork', p) for p in ('fc_layer_params', 'activation')
    ]
    actor_net = [
        _bound('ActorDistributionNetwork', p)
        for p in ('fc_layer_params', 'activation')
    ]
    if value_net != actor_net:
        _refuse(
            'ValueNetwork %r != ActorDistributionNetwork %r'
            % (value_net, actor_net)
        )
    if config.evaluation.evaluate:
        _refuse('TrainerConfig.evaluate=True (no evaluation: set it False)')
    for name in ('stop_at_average_return', 'from_checkpoint'):
        if getattr(config, name) is not None:
            _refuse('TrainerConfig.%s=%r' % (name, getattr(config, name)))
    if config.fresh_start or config.metrics:
        _refuse('TrainerConfig.fresh_start or metrics')
    if config.mini_batch_length not in (None, 1):
        _refuse(
            'TrainerConfig.mini_batch_length=%r (expected 1)'
            % (config.mini_batch_length,)
        )


def population_settings(
    config: TrainerConfig,
) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """The ``PopulationTrainer`` and ``PopulationPPO`` arguments of a
    gin-configured run (read from the current gin configuration).

    Args:
        config: the run's ``TrainerConfig`` (``num_seeds > 1``).
    Returns:
        ``(trainer kwargs, PopulationPPO kwargs)``.
    Raises:
        ValueError: one line naming a binding ``PopulationPPO`` does not
            implement.
    """
    _check_bindings(config)
    # Every setting from the gin file or the original's default, never
    # PopulationPPO's own defaults (ppo_cart_pole.gin's).
    ppo = {
        argument: _bound(name, parameter)
        for (name, parameter), argument in _TRANSLATED.items()
    }
    ppo['hidden_layers'] = tuple(ppo['hidden_layers'] or ())
    ppo['activation'] = getattr(
        ppo['activation'], '__name__', ppo['activation']
    )
    num_envs = _bound('create_environment', 'num_parallel_environments')
    seed = config.random_seed
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    trainer = dict(
        seeds=list(range(seed, seed + config.num_seeds)),
        env_name=_bound('create_environment', 'env_name'),
        num_envs=num_envs,
        unroll_length=config.unroll_length,
        mini_batch_size=config.mini_batch_size or num_envs,
        num_epochs=config.num_updates_per_train_step,
        # Not TrainerConfig.jit_compile: on CPU the XLA-compiled
        # population iteration measured ~10x the CPU time of the plain
        # graph (the 20 updates of one seed: 0.45 s against 0.043 s).
        jit_compile=False,
        root_dir=config.root_dir,
    )
    return trainer, ppo


class PopulationRun(object):
    """What ``create_trainer`` returns for ``num_seeds > 1``: trains the
    population as ``alf-train`` trains one run (budget, summaries,
    checkpoints and resuming in ``root_dir``, a progress line, a stop
    request honoured after the current iteration).

    Args:
        config: the ``TrainerConfig`` (read with the gin configuration
            current when it is built).
    """

    def __init__(self, config: TrainerConfig):
        kwargs, ppo = population_settings(config)
        kwargs['algorithm_ctor'] = functools.partial(PopulationPPO, **ppo)
        self.trainer = PopulationTrainer(**kwargs)
        steps = kwargs['num_envs'] * kwargs['unroll_length']
        budgets = [config.num_iterations] if config.num_iterations else []
        if config.num_env_steps:
            budgets.append(math.ceil(config.num_env_steps / steps))
        self.num_iterations = min(budgets)
        self._config = config
        self._stop = False
        os.makedirs(config.root_dir, exist_ok=True)
        with open(os.path.join(config.root_dir, 'config.gin'), 'w') as f:
            f.write(gin.config_str())

    def request_stop(self) -> None:
        """Stop after the current iteration (with a checkpoint)."""
        self._stop = True

    def close(self) -> None:
        """Nothing to release (event files are closed by ``train``)."""

    def train(self, callbacks: Sequence[Any] = ()) -> Dict[str, Any]:
        """Trains every seed to the budget (resuming from ``ckpt/``).

        Args:
            callbacks: not supported with ``num_seeds > 1`` (must be empty).
        Returns:
            ``iterations``, ``num_seeds``, ``Metrics/EnvironmentSteps`` (per
            seed), ``Metrics/NumberOfEpisodes`` (all seeds),
            ``Metrics/AverageReturn`` (the mean over seeds) and its
            ``min``/``max`` over seeds, each seed's
            ``seed_<seed>/Metrics/AverageReturn``, ``train_secs``, and
            ``stopped_early`` when a stop was requested.
        """
        if callbacks:
            _refuse('callbacks %r' % (list(callbacks),))
        start = time.time()
        progress = _Progress(self.trainer)
        stats = self.trainer.train(
            self.num_iterations,
            summary_interval=self._config.summary_interval,
            checkpoint_interval=self._config.checkpoint_interval,
            should_stop=lambda: progress.report() or self._stop,
        )
        del stats  # the variables hold the same, also after a resume
        returns = [float(r) for r in self.trainer.average_return.numpy()]
        result = {
            'iterations': int(self.trainer.iteration.numpy()),
            'num_seeds': len(self.trainer.seeds),
            'Metrics/EnvironmentSteps': self.trainer.env_steps_per_seed,
            'Metrics/NumberOfEpisodes': int(
                self.trainer.num_episodes.numpy().sum()
            ),
            'Metrics/AverageReturn': sum(returns) / len(returns),
            'Metrics/AverageReturn_min': min(returns),
            'Metrics/AverageReturn_max': max(returns),
            'train_secs': time.time() - start,
        }
        for seed, value in zip(self.trainer.seeds, returns):
            result['seed_%d/Metrics/AverageReturn' % seed] = value
        if self._stop and result['iterations'] < self.num_iterations:
            result['stopped_early'] = True
        return result


class _Progress(object):
    """Prints ``iter k | env steps n (per seed) | AverageReturn mean
    (min-max)`` after the first iteration and then every 5 seconds."""

    def __init__(self, trainer: PopulationTrainer):
        self._trainer = trainer
        self._last = 0.0

    def report(self) -> bool:
        """Prints the line when due; returns False (never asks to stop)."""
        now = time.time()
        if now - self._last < 5.0:
            return False
        self._last = now
        returns: List[float] = list(self._trainer.average_return.numpy())
        print(
            'iter %d | env steps %d per seed | AverageReturn %.2f '
            '(%.2f-%.2f over %d seeds)'
            % (
                int(self._trainer.iteration.numpy()),
                self._trainer.env_steps_per_seed,
                sum(returns) / len(returns),
                min(returns),
                max(returns),
                len(returns),
            ),
            flush=True,
        )
        return False
