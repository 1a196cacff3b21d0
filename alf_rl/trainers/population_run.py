"""``TrainerConfig.num_seeds = N``: a gin-configured PPO run as N seeds.

``create_trainer`` hands a config with ``num_seeds > 1`` to
``PopulationRun``, which reads the run's gin settings into a
``PopulationTrainer`` of seeds ``random_seed, ..., random_seed + N - 1``:
the environment of ``create_environment`` (its name, number of
environments and ``max_episode_steps``; a MinAtar game's
``suite_minatar.load.sticky_action_prob`` and ``difficulty_ramping``),
``PPOLoss``'s settings (gamma, GAE lambda, ratio clip, advantage
normalization, TD-loss weight, entropy regularization, value clipping),
``PPOAlgorithm.gradient_clipping`` (by global norm), ``LegacyAdam``'s
learning rate and epsilon, the networks' layers and activation, and the
budget, interval and checkpoint settings of ``TrainerConfig``.

Only what ``PopulationPPO`` implements is accepted: PPO (``PPOAlgorithm``)
with feed-forward categorical actor and critic of the same layers on a
``suite_tf`` classic-control environment or a MinAtar game
(``create_environment.backend = 'tf'``) with discrete actions (MinAtar's
[10, 10, C] frames are flattened to float vectors, as the single-seed
network's encoder does), trained from its own collection
(``clear_replay_buffer``, ``mini_batch_length`` 1). Every gin binding of
the configurables read here (``PPOLoss``, ``PPOAlgorithm``, ``LegacyAdam``,
``ActorDistributionNetwork``, ``ValueNetwork``, ``EncodingNetwork``,
``create_environment``, ``suite_minatar.load``) and every setting of
``TrainerConfig`` is translated (``jit_compile``: the iteration is compiled
with XLA or not), equal to what the population does (a parameter's
default, or a setting without effect on it), or refused in one line naming
it, before anything is built.
"""

import functools
import inspect
import math
import os
import random
import time
from typing import Any, Dict, List, NoReturn, Optional, Sequence, Tuple

import gin
import tf_keras

from alf_rl.algorithms.population_ppo import PopulationPPO
from alf_rl.trainers import config as trainer_config
from alf_rl.trainers.config import TrainerConfig
from alf_rl.trainers.population_trainer import PopulationTrainer
from alf_rl.trainers.progress import format_secs

# Bindings PopulationPPO takes over: (configurable, parameter) -> its
# argument name.
_TRANSLATED = {
    ('PPOLoss', 'gamma'): 'gamma',
    ('PPOLoss', 'td_lambda'): 'td_lambda',
    ('PPOLoss', 'importance_ratio_clipping'): 'importance_ratio_clipping',
    ('PPOLoss', 'normalize_advantages'): 'normalize_advantages',
    ('PPOLoss', 'td_loss_weight'): 'td_loss_weight',
    ('PPOLoss', 'entropy_regularization'): 'entropy_regularization',
    ('PPOLoss', 'value_clipping'): 'value_clipping',
    ('PPOAlgorithm', 'gradient_clipping'): 'gradient_clipping',
    ('LegacyAdam', 'learning_rate'): 'learning_rate',
    ('LegacyAdam', 'epsilon'): 'adam_epsilon',
    ('ActorDistributionNetwork', 'fc_layer_params'): 'hidden_layers',
    ('ActorDistributionNetwork', 'activation'): 'activation',
}
# Bindings PopulationTrainer takes over (or checked against each other:
# the critic's layers must be the actor's).
_READ = {
    ('create_environment', 'env_name'),
    ('create_environment', 'num_parallel_environments'),
    ('create_environment', 'max_episode_steps'),
    ('suite_minatar.load', 'sticky_action_prob'),
    ('suite_minatar.load', 'difficulty_ramping'),
    ('ValueNetwork', 'fc_layer_params'),
    ('ValueNetwork', 'activation'),
    # The networks' activation when they bind none.
    ('EncodingNetwork', 'activation'),
}
# Bindings with no effect on a population run (nor on a single-seed run
# with backend 'tf').
_NO_EFFECT = {
    ('PPOAlgorithm', 'name'),
    ('ActorDistributionNetwork', 'name'),
    ('ValueNetwork', 'name'),
    ('LegacyAdam', 'name'),
    ('ActorDistributionNetwork', 'continuous_projection_net_ctor'),
    ('create_environment', 'step_timeout'),
    ('create_environment', 'check_finite'),
}
# Settings whose value (bound or default) must be the one PopulationPPO
# implements: (configurable, parameter) -> (test, what is expected).
_REQUIRED = {
    ('create_environment', 'backend'): (lambda v: v == 'tf', "'tf'"),
    ('PPOAlgorithm', 'loss'): (
        lambda v: v is None or type(v).__name__ == 'PPOLoss',
        '@PPOLoss()',
    ),
    ('PPOAlgorithm', 'optimizer'): (
        lambda v: type(v) is tf_keras.optimizers.legacy.Adam,
        '@LegacyAdam()',
    ),
    ('PPOAlgorithm', 'clip_by_global_norm'): (lambda v: v is True, 'True'),
    ('PPOLoss', 'td_error_loss_fn'): (
        lambda v: getattr(v, '__name__', None) == 'element_wise_squared_loss',
        '@element_wise_squared_loss',
    ),
}
# The configurables whose every binding is checked.
_CONFIGURABLES = (
    'PPOLoss',
    'PPOAlgorithm',
    'LegacyAdam',
    'ActorDistributionNetwork',
    'ValueNetwork',
    'EncodingNetwork',
    'create_environment',
    'suite_minatar.load',
)
_NETWORKS = ('ActorDistributionNetwork', 'ValueNetwork')
# TrainerConfig settings read into the population run.
_TRAINER_READ = frozenset(
    (
        'root_dir',
        'algorithm_ctor',
        'num_iterations',
        'num_env_steps',
        'unroll_length',
        'random_seed',
        'num_seeds',
        'mini_batch_size',
        'num_updates_per_train_step',
        'summary_interval',
        'checkpoint_interval',
        'checkpoint_max_to_keep',
        'trainer',
        'clear_replay_buffer',
        'mini_batch_length',
        'jit_compile',  # XLA or not
    )
)
# TrainerConfig settings without effect on the population's numbers.
_TRAINER_NO_EFFECT = frozenset(
    (
        'iterations_per_call',  # one compiled call per iteration
        'call_target_secs',
        'summaries_flush_secs',  # flushed after every summary
        'progress_interval_secs',  # a progress line every 5 s
        'replay_buffer_capacity',  # nothing is replayed
        'final_step_mode',  # on-policy trainers only
        'eval_interval',  # no evaluation (evaluate must be False)
        'num_eval_episodes',
    )
)
# What ``_check_binding`` finds for a parameter no signature names.
_NO_DEFAULT = object()
_NEEDS = (
    "TrainerConfig.num_seeds > 1 trains PPOAlgorithm (feed-forward, "
    "LegacyAdam) on a suite_tf or MinAtar environment (create_environment."
    "backend='tf') with discrete actions"
)


def _registered(configurable: str) -> bool:
    """Whether gin knows ``configurable`` (an unimported module's is not
    bound either)."""
    return gin.config._REGISTRY.get_match(configurable) is not None


def _default(configurable: str, parameter: str) -> Any:
    """The parameter's default in the configurable's signature (for a
    class, the first ``__init__`` of its MRO that names it).

    Raises:
        KeyError: no signature in the MRO names ``parameter`` (it would go
            to a ``**kwargs``).
    """
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
    raise KeyError('%s has no parameter %r' % (configurable, parameter))


def _bound(configurable: str, parameter: str) -> Any:
    """The gin binding's value, else the parameter's default (a network's
    encoder settings: its default ``EncodingNetwork`` with (64, 64)
    layers)."""
    bindings = (
        gin.get_bindings(configurable) if _registered(configurable) else {}
    )
    if parameter in bindings:
        return bindings[parameter]
    if configurable in _NETWORKS:
        if parameter == 'fc_layer_params':
            return (64, 64)
        return _bound('EncodingNetwork', parameter)
    return _default(configurable, parameter)


def _refuse(what: str) -> NoReturn:
    """ValueError: one line saying what is not supported and what is."""
    raise ValueError('%s; got %s' % (_NEEDS, what))


def _text(value: Any) -> str:
    """A value as gin spells it: ``repr`` of plain data, ``@Name`` of a
    function or class, ``@Name()`` of an object."""
    if value is None or isinstance(
        value, (bool, int, float, str, tuple, list, dict)
    ):
        return repr(value)
    if hasattr(value, '__name__'):
        return '@%s' % value.__name__
    return '@%s()' % type(value).__name__


def _same(value: Any, default: Any) -> bool:
    """``value`` is ``default`` (or equal to it, where comparable)."""
    if value is default:
        return True
    try:
        return bool(value == default)
    except Exception:  # e.g. an array's ambiguous truth value
        return False


def _check_binding(name: str, parameter: str, value: Any) -> None:
    """Refuses one gin binding the population does not take over, unless
    it is the parameter's default (what the population does)."""
    key = (name, parameter)
    if key in _TRANSLATED or key in _READ or key in _NO_EFFECT:
        return
    if key in _REQUIRED:
        test, text = _REQUIRED[key]
        if not test(value):
            _refuse(
                '%s.%s=%s (expected %s)'
                % (name, parameter, _text(value), text)
            )
        return
    try:
        default = _default(name, parameter)
    except KeyError:
        default = _NO_DEFAULT
    if default is _NO_DEFAULT:
        _refuse(
            '%s.%s=%s (not implemented: leave it unbound)'
            % (name, parameter, _text(value))
        )
    if not _same(value, default):
        _refuse(
            '%s.%s=%s (expected its default %s)'
            % (name, parameter, _text(value), _text(default))
        )


def _check_trainer_config(config: TrainerConfig) -> None:
    """Refuses a ``TrainerConfig`` setting that is neither read nor
    without effect unless it has its default (each setting by name, as
    ``TrainerConfig.<name>`` binds it)."""
    parameters = list(
        inspect.signature(TrainerConfig.__init__).parameters.values()
    )[1:]
    groups = [attr for attr, _ in trainer_config._GROUPS]
    for _, group in trainer_config._GROUPS:
        parameters += trainer_config._group_parameters(group)
    for parameter in parameters:
        name = parameter.name
        if (
            parameter.kind is parameter.VAR_KEYWORD
            or name in groups
            or name in _TRAINER_READ
            or name in _TRAINER_NO_EFFECT
        ):
            continue
        value = getattr(config, name)
        if not _same(value, parameter.default) and not (
            name in ('metrics', 'progress_metrics') and not value
        ):
            _refuse(
                'TrainerConfig.%s=%s (expected %s)'
                % (name, _text(value), _text(parameter.default))
            )


def _check_bindings(config: TrainerConfig) -> None:
    """Refuses what ``PopulationPPO`` would not train as configured."""
    ctor = getattr(config.algorithm_ctor, '__name__', config.algorithm_ctor)
    if ctor != 'PPOAlgorithm':
        _refuse(
            'TrainerConfig.algorithm_ctor=@%s (expected @PPOAlgorithm)'
            % (ctor,)
        )
    trainer = getattr(config.trainer, '__name__', config.trainer)
    if trainer not in (None, 'OffPolicyTrainer'):
        _refuse(
            'TrainerConfig.trainer=%s (expected @OffPolicyTrainer with '
            'clear_replay_buffer=True)' % (trainer,)
        )
    if not config.clear_replay_buffer:
        _refuse(
            'TrainerConfig.clear_replay_buffer=False (expected True: '
            'each iteration trains on its own collection)'
        )
    if config.mini_batch_length not in (None, 1):
        _refuse(
            'TrainerConfig.mini_batch_length=%r (expected 1)'
            % (config.mini_batch_length,)
        )
    _check_trainer_config(config)
    for name in _CONFIGURABLES:
        if _registered(name):
            for parameter, value in gin.get_bindings(name).items():
                _check_binding(name, parameter, value)
    for name, parameter in _REQUIRED:
        if parameter not in gin.get_bindings(name):
            _check_binding(name, parameter, _bound(name, parameter))
    for key, argument in _TRANSLATED.items():
        value = _bound(*key)
        if argument not in ('hidden_layers', 'activation') and callable(value):
            _refuse(
                '%s.%s=%s (expected a number: no schedules)'
                % (key + (_text(value),))
            )
    value_net, actor_net = [
        [_bound(n, p) for p in ('fc_layer_params', 'activation')]
        for n in _NETWORKS[::-1]
    ]
    if value_net != actor_net:
        _refuse(
            'ValueNetwork %r != ActorDistributionNetwork %r'
            % (value_net, actor_net)
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
        ValueError: one line naming a binding or setting the population
            does not implement.
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
    ppo['entropy_regularization'] = ppo['entropy_regularization'] or 0.0
    num_envs = _bound('create_environment', 'num_parallel_environments')
    env_name = _bound('create_environment', 'env_name')
    env_options = {}
    if str(env_name).startswith('MinAtar/'):
        env_options = {
            p: _bound('suite_minatar.load', p)
            for p in ('sticky_action_prob', 'difficulty_ramping')
        }
    seed = config.random_seed
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    trainer = dict(
        seeds=list(range(seed, seed + config.num_seeds)),
        env_name=env_name,
        num_envs=num_envs,
        unroll_length=config.unroll_length,
        mini_batch_size=config.mini_batch_size or num_envs,
        num_epochs=config.num_updates_per_train_step,
        jit_compile=config.jit_compile,
        root_dir=config.root_dir,
        max_episode_steps=_bound('create_environment', 'max_episode_steps'),
        env_options=env_options,
        checkpoint_max_to_keep=config.checkpoint_max_to_keep,
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
            ``seed_<seed>/Metrics/AverageReturn``, ``train_secs``,
            ``first_iteration_secs`` (this process's first iteration,
            tracing and XLA compilation included; absent if none ran) and
            ``stopped_early`` when a stop was requested.
        """
        if callbacks:
            _refuse('callbacks %r' % (list(callbacks),))
        start = time.time()
        progress = _Progress(self.trainer, self.num_iterations)
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
        if progress.first_iteration_end is not None:
            result['first_iteration_secs'] = (
                progress.first_iteration_end - start
            )
        for seed, value in zip(self.trainer.seeds, returns):
            result['seed_%d/Metrics/AverageReturn' % seed] = value
        if self._stop and result['iterations'] < self.num_iterations:
            result['stopped_early'] = True
        return result


class _Progress(object):
    """Prints ``iter k | env steps n per seed | r steps/s | AverageReturn
    mean (min-max over P seeds) | ETA h:mm:ss`` after the first iteration
    and then every 5 seconds. The rate (env steps per second over all
    seeds) and the ETA count from the end of this process's first
    iteration (tracing and compilation left out); both are left out of the
    first line.

    Args:
        trainer: the population's trainer.
        num_iterations: the run's total iterations (the ETA's target).
    """

    def __init__(self, trainer: PopulationTrainer, num_iterations: int):
        self._trainer = trainer
        self._num_iterations = num_iterations
        self._last = 0.0
        # (time, iteration) at the first report: the end of this process's
        # first iteration.
        self._base: Optional[Tuple[float, int]] = None

    @property
    def first_iteration_end(self) -> Optional[float]:
        """``time.time()`` at the end of this process's first iteration
        (its first report), or None before it."""
        return None if self._base is None else self._base[0]

    def report(self) -> bool:
        """Prints the line when due; returns False (never asks to stop)."""
        now = time.time()
        if self._base is not None and now - self._last < 5.0:
            return False
        iteration = int(self._trainer.iteration.numpy())
        if self._base is None:
            self._base = (now, iteration)
        self._last = now
        returns: List[float] = list(self._trainer.average_return.numpy())
        parts = [
            'iter %d' % iteration,
            'env steps %d per seed' % self._trainer.env_steps_per_seed,
        ]
        done, secs = iteration - self._base[1], now - self._base[0]
        rate = done / secs if done > 0 and secs > 0 else None
        if rate is not None:
            steps = self._trainer.env_steps_per_seed / max(iteration, 1)
            parts.append('%.0f steps/s' % (rate * steps * len(returns)))
        parts.append(
            'AverageReturn %.2f (%.2f-%.2f over %d seeds)'
            % (
                sum(returns) / len(returns),
                min(returns),
                max(returns),
                len(returns),
            )
        )
        if rate is not None:
            left = max(self._num_iterations - iteration, 0)
            parts.append('ETA %s' % format_secs(left / rate))
        print(' | '.join(parts), flush=True)
        return False
