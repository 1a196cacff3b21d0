"""``TrainerConfig`` and the ``Trainer`` base: the training run around a driver.

A trainer owns everything that is not an algorithm: environments, the
driver, checkpoints (atomic, resumable), TensorBoard summaries, periodic
greedy evaluation, the operative ``config.gin`` and a progress line on the
terminal. Subclasses only say how training iterations run
(``_create_driver``, ``_train_iterations``, several per compiled call) and
what else to checkpoint (``_checkpoint_objects``).

From Python, build the pieces and hand them over (no gin needed)::

    config = TrainerConfig(root_dir=..., algorithm_ctor=make_algorithm,
                           random_seed=0, num_iterations=100)
    trainer = OnPolicyTrainer(
        config, env=lambda seed: create_environment('CartPole-v1', 8,
                                                    seed=seed))
    result = trainer.train()
    trainer.close()

``alf-train`` instead configures ``TrainerConfig`` and
``create_environment`` with gin. See ``examples/python/``.

Outputs under ``root_dir``: ``train/`` and ``eval/`` event files, ``ckpt/``
checkpoints, ``config.gin``, and ``.alf_rl.lock``: ``train()`` holds an
exclusive lock on the directory (one run at a time; see
``alf_rl.utils.checkpoint.RunDirLock``). Building a trainer writes nothing
there.

A run that cannot go on raises a ``TrainingError`` with fields
(``NonFiniteLossError``, ``EnvironmentStepError``); its text is one line
for the user.
"""

import glob
import os
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, Optional, Union

import gin
import numpy as np
import tensorflow as tf

from alf_rl.distributed.strategy import (STRATEGY_NAMES, create_strategy,
                                        learner_scope)
from alf_rl.drivers.evaluation_driver import EvaluationDriver
from alf_rl.environments.tf_environment import TFEnvironment
from alf_rl.environments.utils import create_environment
from alf_rl.metrics.metrics import GameScore
from alf_rl.specs import add_outer_dims
from alf_rl.trainers.errors import (EnvironmentStepError, NonFiniteLossError,
                                    TrainingError, training_error_from)
from alf_rl.utils import summary as summary_utils
from alf_rl.utils.config_types import check_arg_types, is_int
from alf_rl.utils.checkpoint import (Checkpointer, CheckpointSaveError,
                                     NoUsableCheckpointError, RunDirError,
                                     RunDirLock, describe_os_error)
from alf_rl.utils.common import NestState, set_random_seed

# A ``TFEnvironment``, or a factory ``(seed: int) -> TFEnvironment``.
EnvSource = Union[TFEnvironment, Callable[[int], TFEnvironment]]

# The evaluation environment's seed is the run's seed plus this.
_EVAL_SEED_OFFSET = 7919


@gin.configurable
class TrainerConfig(object):
    """Settings of a training run (all gin-configurable).

    The environments are not settings: a Python user hands them to the
    trainer (``OnPolicyTrainer(config, env=..., eval_env=...)``); without
    them the trainer builds them with the gin-configured
    ``create_environment`` (the ``alf-train`` way).

    Args:
        root_dir: directory of the run's outputs; rerunning on it resumes.
        trainer: the trainer class (``OnPolicyTrainer`` by default).
        algorithm_ctor: ``(observation_spec=, action_spec=) -> RLAlgorithm``
            (specs of the training environment, without batch dimension).
        num_iterations: stop after this many training iterations (0: no
            limit from iterations).
        num_env_steps: stop after this many environment steps (0: no limit).
        unroll_length: environment steps per environment per iteration.
        final_step_mode: on-policy bootstrap mode ('redo', 'skip', 'none').
        random_seed: seed of everything (None: random).
        use_tf_functions: compile drivers; False runs eagerly for debugging.
        jit_compile: also compile with XLA where TensorFlow allows it:
            off-policy updates always; with an in-graph environment
            (``create_environment.backend='tf'``) the whole iteration
            (rollout and update).
        evaluate: run greedy evaluation (``algorithm.predict``) every
            ``eval_interval`` iterations.
        eval_interval: iterations between evaluations.
        num_eval_episodes: episodes per evaluation (one per eval env): the
            batch size of the evaluation environment.
        checkpoint_interval: iterations between checkpoints (a final one is
            always written).
        checkpoint_max_to_keep: newest checkpoints kept.
        summary_interval: iterations between TensorBoard summaries.
        progress_interval_secs: seconds between progress lines.
        summaries_flush_secs: flush period of the event writers.
        initial_collect_steps: off-policy: env steps (over all envs)
            collected before the first update.
        num_updates_per_train_step: off-policy: updates per iteration (or
            epochs over the iteration's data with ``clear_replay_buffer``).
        mini_batch_size: off-policy: sequences per update.
        mini_batch_length: off-policy: steps per sequence (>= 2; the last
            one only bootstraps).
        replay_buffer_capacity: off-policy: total steps the replay buffer
            holds (split evenly across environments).
        clear_replay_buffer: off-policy: train only on what this iteration
            collected (on-policy methods trained from replay, e.g. PPO).
        prioritized_replay: off-policy: use a prioritized replay buffer.
        replay_frame_stack: off-policy, replay buffer: the observation
            stacks the last N frames on its last axis (suite_atari's
            [84, 84, 4]): store each frame once and rebuild the stacks on
            replay, N times less observation memory (a 1M-step Atari buffer
            in ~7 GB instead of ~28 GB). Each added stack is checked.
        stop_at_average_return: if set, stop (with a checkpoint) once the
            training ``AverageReturn`` metric reaches it, like
            Stable-Baselines3's ``StopTrainingOnRewardThreshold``.
        iterations_per_call: training iterations run inside one compiled
            call (a ``tf.while_loop`` around the iteration), like Keras'
            ``steps_per_execution``: an int >= 1, or ``'auto'`` to size
            each call to about ``call_target_secs`` from the measured
            iteration time. Calls always end at summary, evaluation and
            checkpoint iterations; the step budget and
            ``stop_at_average_return`` are checked in the graph after every
            iteration, and a non-finite loss stops the loop at once. The
            first call runs one iteration (tracing is timed separately).
        call_target_secs: the wall-clock a call aims at with
            ``iterations_per_call='auto'``.
        fresh_start: start from iteration 0 when ``root_dir/ckpt`` holds
            checkpoints of which none is usable (all corrupt, moved aside
            as ``ckpt-<step>.corrupt``); without it such a run refuses to
            start. No effect when a usable checkpoint exists (the run
            resumes from it) or there is none at all. ``alf-train
            --fresh_start`` sets it.
        strategy: the learner's ``tf.distribute`` strategy: None (one
            device, the default), ``'mirrored'`` (the local GPUs, or
            ``num_logical_cpu_devices`` logical CPUs) or
            ``'multi_worker_mirrored'`` (the processes of ``TF_CONFIG``).
            Only ``OffPolicyTrainer``'s update is distributed (replay
            training, including PPO/A2C with ``clear_replay_buffer``);
            collection stays on the default device. See
            ``alf_rl.distributed.strategy``. Not with ``jit_compile``;
            ``'multi_worker_mirrored'`` needs an int
            ``iterations_per_call``.
        num_logical_cpu_devices: with ``strategy='mirrored'``: mirror over
            this many logical CPU devices (testing the distributed learner
            without GPUs); 0 (default): the GPUs, or the CPU.

    Raises:
        TypeError: a numeric, boolean or string setting of the wrong type,
            naming the binding, the value and the expected type
            (``TrainerConfig.num_iterations: expected an int, got 'ten'
            (str)``); floats are refused where ints are expected.
        ValueError: a setting out of its range.
    """

    def __init__(self,
                 root_dir: Optional[str] = None,
                 trainer: Optional[type] = None,
                 algorithm_ctor: Optional[Callable[..., Any]] = None,
                 num_iterations: int = 1000,
                 num_env_steps: int = 0,
                 unroll_length: int = 8,
                 final_step_mode: str = 'redo',
                 random_seed: Optional[int] = None,
                 use_tf_functions: bool = True,
                 jit_compile: bool = False,
                 evaluate: bool = False,
                 eval_interval: int = 10,
                 num_eval_episodes: int = 10,
                 checkpoint_interval: int = 100,
                 checkpoint_max_to_keep: int = 3,
                 summary_interval: int = 10,
                 progress_interval_secs: float = 5.0,
                 summaries_flush_secs: float = 5,
                 initial_collect_steps: int = 0,
                 num_updates_per_train_step: int = 1,
                 mini_batch_size: Optional[int] = None,
                 mini_batch_length: Optional[int] = None,
                 replay_buffer_capacity: int = 100000,
                 clear_replay_buffer: bool = False,
                 prioritized_replay: bool = False,
                 replay_frame_stack: bool = False,
                 stop_at_average_return: Optional[float] = None,
                 iterations_per_call: Union[int, str] = 'auto',
                 call_target_secs: float = 0.2,
                 fresh_start: bool = False,
                 strategy: Optional[str] = None,
                 num_logical_cpu_devices: int = 0):
        check_arg_types('TrainerConfig', TrainerConfig.__init__, locals())
        _check_ranges(locals())
        self.root_dir = os.path.expanduser(root_dir)
        self.trainer = trainer
        self.algorithm_ctor = algorithm_ctor
        self.num_iterations = int(num_iterations)
        self.num_env_steps = int(num_env_steps)
        self.unroll_length = int(unroll_length)
        self.final_step_mode = final_step_mode
        self.random_seed = random_seed
        self.use_tf_functions = use_tf_functions
        self.jit_compile = jit_compile
        self.evaluate = evaluate
        self.eval_interval = int(eval_interval)
        self.num_eval_episodes = int(num_eval_episodes)
        self.checkpoint_interval = int(checkpoint_interval)
        self.checkpoint_max_to_keep = int(checkpoint_max_to_keep)
        self.summary_interval = int(summary_interval)
        self.progress_interval_secs = float(progress_interval_secs)
        self.summaries_flush_secs = summaries_flush_secs
        self.stop_at_average_return = stop_at_average_return
        self.initial_collect_steps = int(initial_collect_steps)
        self.num_updates_per_train_step = int(num_updates_per_train_step)
        self.mini_batch_size = mini_batch_size
        self.mini_batch_length = mini_batch_length
        self.replay_buffer_capacity = int(replay_buffer_capacity)
        self.clear_replay_buffer = clear_replay_buffer
        self.prioritized_replay = prioritized_replay
        self.replay_frame_stack = replay_frame_stack
        self.iterations_per_call = iterations_per_call
        self.call_target_secs = float(call_target_secs)
        self.fresh_start = fresh_start
        self.strategy = strategy
        self.num_logical_cpu_devices = int(num_logical_cpu_devices)


def _check_ranges(values: Dict[str, Any]) -> None:
    """The value checks of ``TrainerConfig`` (its arguments, by name; types
    already checked).

    Raises:
        ValueError: naming the setting, what it must be and what it is.
    """
    if values['algorithm_ctor'] is None:
        raise ValueError("TrainerConfig.algorithm_ctor is required, e.g. "
                         "TrainerConfig.algorithm_ctor=@ActorCriticAlgorithm")
    if not values['root_dir']:
        raise ValueError("TrainerConfig.root_dir is required")
    if values['num_iterations'] <= 0 and values['num_env_steps'] <= 0:
        raise ValueError("set num_iterations or num_env_steps > 0 (got "
                         "%s and %s)" % (values['num_iterations'],
                                         values['num_env_steps']))
    for name in ('unroll_length', 'eval_interval', 'num_eval_episodes',
                 'checkpoint_interval', 'summary_interval'):
        if values[name] < 1:
            raise ValueError("TrainerConfig.%s must be >= 1, got %s" %
                             (name, values[name]))
    calls = values['iterations_per_call']
    if calls != 'auto' and (not is_int(calls) or calls < 1):
        raise ValueError("TrainerConfig.iterations_per_call: expected an "
                         "int >= 1 or 'auto', got %r (%s)" %
                         (calls, type(calls).__name__))
    if values['call_target_secs'] <= 0:
        raise ValueError("TrainerConfig.call_target_secs must be > 0, "
                         "got %r" % (values['call_target_secs'], ))
    _check_strategy(values)


def _check_strategy(values: Dict[str, Any]) -> None:
    """The checks of ``TrainerConfig.strategy`` and what goes with it.

    Raises:
        ValueError: one line naming the setting.
    """
    strategy = values['strategy']
    if strategy is not None and strategy not in STRATEGY_NAMES:
        raise ValueError("TrainerConfig.strategy: expected None or one of %s,"
                         " got %r" % (', '.join(map(repr, STRATEGY_NAMES)),
                                      strategy))
    devices = values['num_logical_cpu_devices']
    if devices < 0 or (devices and strategy != 'mirrored'):
        raise ValueError(
            "TrainerConfig.num_logical_cpu_devices=%r: expected 0, or > 0 "
            "with strategy='mirrored' (got strategy=%r)" % (devices,
                                                            strategy))
    if strategy is not None and values['jit_compile']:
        raise ValueError("TrainerConfig.jit_compile=True cannot compile a "
                         "distributed update (strategy=%r); set one of them "
                         "off" % strategy)
    if (strategy == 'multi_worker_mirrored'
            and values['iterations_per_call'] == 'auto'):
        raise ValueError(
            "TrainerConfig.strategy='multi_worker_mirrored' needs an int "
            "iterations_per_call (workers must run the same updates per "
            "call), got 'auto'")


def _build_env(source: EnvSource, seed: int, name: str) -> TFEnvironment:
    """A ``TFEnvironment`` from an instance or a ``(seed) -> env`` factory.

    Raises:
        TypeError: naming ``name`` when ``source`` (or what the factory
            returned) is not a ``TFEnvironment``.
    """
    env = source
    if not isinstance(source, TFEnvironment):
        if not callable(source):
            raise TypeError(
                "%s: expected a TFEnvironment or a factory (seed) -> "
                "TFEnvironment, got %s (wrap a PyEnvironment in "
                "TFPyEnvironment)" % (name, type(source).__name__))
        env = source(seed)
        if not isinstance(env, TFEnvironment):
            raise TypeError(
                "%s: the factory returned %s, expected a TFEnvironment "
                "(wrap a PyEnvironment in TFPyEnvironment)" %
                (name, type(env).__name__))
    return env


class _Run(object):
    """Wall-clock and progress bookkeeping of one ``Trainer.train()`` call.

    Args:
        start_time: ``time.time()`` at the start of the training loop.
        start_steps: environment steps done before it (non-zero when
            resumed).
    """

    def __init__(self, start_time: float, start_steps: int):
        self.start_time = start_time
        self.start_steps = start_steps
        self.last_report = start_time
        self.last_summary_time = start_time
        self.last_summary_steps = start_steps
        # The first call (one iteration) includes tracing and XLA
        # compilation; later calls measure the time per iteration.
        self.first_iteration_secs = None
        self.secs_per_iteration = None
        self.last_eval = {}
        # (wall-clock, fraction of the run done) at the end of the first
        # call: the ETA extrapolates from there (steady state only).
        self.steady_start = None

    def record_call(self, now: float, call_start: float, iterations: int,
                    fraction_done: float):
        """Updates the timings after a call that ran ``iterations``.

        Args:
            now: ``time.time()`` at the end of the call.
            call_start: ``time.time()`` at its start.
            iterations: iterations it ran.
            fraction_done: the run's progress after it, in [0, 1].
        """
        if self.first_iteration_secs is None:
            self.first_iteration_secs = now - self.start_time
            self.steady_start = (now, fraction_done)
        else:
            self.secs_per_iteration = (now - call_start) / max(iterations, 1)

    def eta_secs(self, now: float, fraction_done: float) -> Optional[float]:
        """Seconds left at this process's steady-state rate: the progress
        made since its first (tracing) call over the time it took. None
        until that is measurable or once done.

        Args:
            now: ``time.time()``.
            fraction_done: the run's progress now, in [0, 1].
        """
        if self.steady_start is None or not 0 <= fraction_done < 1:
            return None
        t0, f0 = self.steady_start
        if fraction_done <= f0 or now <= t0:
            return None
        return (1 - fraction_done) * (now - t0) / (fraction_done - f0)


class _Writers(object):
    """The ``train/`` and (when evaluating) ``eval/`` summary writers."""

    def __init__(self, root_dir: str, flush_secs: float, evaluate: bool):
        flush_millis = int(flush_secs * 1000)
        try:
            self.train = tf.summary.create_file_writer(
                os.path.join(root_dir, 'train'), flush_millis=flush_millis)
            self.eval = (tf.summary.create_file_writer(
                os.path.join(root_dir, 'eval'), flush_millis=flush_millis)
                         if evaluate else None)
        except tf.errors.OpError as e:
            raise RunDirError(describe_os_error(
                root_dir, OSError(' '.join(e.message.split())))) from None

    def flush(self):
        """Flushes both writers."""
        self.train.flush()
        if self.eval is not None:
            self.eval.flush()


class Trainer(object):
    """Base of trainers: environment, algorithm, checkpoints, summaries.

    Environments: pass ``env`` (and ``eval_env`` when
    ``config.evaluate``) to train on environments built in Python; leave
    them ``None`` to build them with the gin-configured
    ``create_environment`` (what ``alf-train`` does). Each is a
    ``TFEnvironment`` or, preferably, a factory ``(seed: int) ->
    TFEnvironment``: the factory is called with the run's seed (from
    ``config.random_seed``) for ``env`` and with that seed + 7919 for
    ``eval_env``, so a seeded run seeds its environments too, as with gin.
    The trainer owns the environments: ``close()`` closes them.

    Args:
        config: a ``TrainerConfig``.
        env: the training environment (batch size B = its number of
            parallel environments), or ``None`` for
            ``create_environment(seed=seed)``.
        eval_env: the evaluation environment; its batch size must be
            ``config.num_eval_episodes`` (one greedy episode per
            environment). ``None``: ``create_environment(
            num_parallel_environments=num_eval_episodes, seed=seed + 7919,
            use_subprocess=False)``, allowed only when ``env`` is ``None``
            too. Not built (a factory is not called) when
            ``config.evaluate`` is False.

    Raises:
        TypeError: if ``env``/``eval_env`` is neither a ``TFEnvironment``
            nor a factory returning one.
        ValueError: if ``env`` is given without ``eval_env`` while
            ``config.evaluate``, or ``eval_env``'s batch size is not
            ``config.num_eval_episodes``.
    """

    def __init__(self, config: TrainerConfig,
                 env: Optional[EnvSource] = None,
                 eval_env: Optional[EnvSource] = None):
        if not isinstance(config, TrainerConfig):
            raise TypeError("%s: config must be a TrainerConfig, got %s" %
                            (type(self).__name__, type(config).__name__))
        if config.evaluate and env is not None and eval_env is None:
            raise ValueError(
                "TrainerConfig.evaluate=True and env was given: also pass "
                "eval_env (a factory (seed) -> TFEnvironment with "
                "num_eval_episodes=%d environments), or set evaluate=False" %
                config.num_eval_episodes)
        self._config = config
        self._root_dir = config.root_dir
        # Nothing is written under root_dir before train() takes its lock:
        # a trainer that fails to build (unknown env...) leaves no trace.
        self._lock = RunDirLock(self._root_dir)
        self._saved_iteration = None  # the iteration of the newest save
        # Before any TensorFlow op (set_random_seed runs some): logical
        # devices and collective ops are configured at start-up only.
        self._strategy = create_strategy(config.strategy,
                                         config.num_logical_cpu_devices)
        # Under a strategy the global generator is mirrored: each replica
        # draws its own stream, the state advancing alike on all of them.
        with learner_scope(self._strategy):
            self._seed = set_random_seed(config.random_seed)
        self._env = (create_environment(seed=self._seed) if env is None else
                     _build_env(env, self._seed, 'env'))
        with learner_scope(self._strategy):
            self._algorithm = config.algorithm_ctor(
                observation_spec=self._env.observation_spec(),
                action_spec=self._env.action_spec())
        self._eval_env = None
        self._evaluator = None
        if config.evaluate:
            self._eval_env = self._create_eval_env(eval_env)
            self._evaluator = EvaluationDriver(
                self._eval_env,
                self._algorithm,
                use_tf_functions=config.use_tf_functions)
        self._iteration = tf.Variable(0, dtype=tf.int64, trainable=False,
                                      name='iteration')
        self._driver = self._create_driver()
        self._metrics = {m.name: m for m in self._driver.metrics}
        # Games (e.g. Atari's, over all lives, unclipped): from Python, after
        # each compiled call.
        self._game_score = (GameScore() if self._env.reports_game_scores
                            else None)
        self._checkpointer = Checkpointer(
            os.path.join(self._root_dir, 'ckpt'),
            max_to_keep=config.checkpoint_max_to_keep,
            algorithm=self._algorithm,
            metrics=list(self._driver.metrics),
            iteration=self._iteration,
            optimizers=[o for o, _ in
                        self._algorithm.get_optimizer_and_variable_sets()],
            **self._checkpoint_objects())

    def _create_eval_env(self, eval_env):
        c = self._config
        seed = self._seed + _EVAL_SEED_OFFSET
        if eval_env is None:
            return create_environment(
                num_parallel_environments=c.num_eval_episodes, seed=seed,
                use_subprocess=False, evaluation=True)
        env = _build_env(eval_env, seed, 'eval_env')
        if env.batch_size != c.num_eval_episodes:
            env.close()
            raise ValueError(
                "eval_env: batch size %d, expected "
                "TrainerConfig.num_eval_episodes=%d (one episode per "
                "environment)" % (env.batch_size, c.num_eval_episodes))
        return env

    # ------------------------------------------------------------ to override
    def _create_driver(self):
        """Builds the training driver (called once, in ``__init__``).

        Can use ``self._env``, ``self._algorithm``, ``self._config`` and
        ``self._seed``; ``self._iteration`` exists already.
        """
        raise NotImplementedError()

    def _train_iterations(self, num_iterations):
        """Runs up to ``num_iterations`` iterations in one compiled call,
        stopping early once ``_stop_condition()`` holds.

        Returns:
            ``(loss_info, iterations_done)``: the last iteration's reduced
            ``LossInfo`` and how many iterations ran.
        """
        raise NotImplementedError()

    def _extra_summaries(self) -> Dict[str, float]:
        """More ``{tag: value}`` scalars written with every training
        summary (e.g. an asynchronous driver's policy lag); none here."""
        return {}

    def _stop_condition(self):
        """In-graph: the step budget or ``stop_at_average_return`` reached.

        Returns:
            a scalar bool tensor.
        """
        c = self._config
        stop = tf.constant(False)
        if c.stop_at_average_return is not None:
            # AverageReturn is 0 until an episode ends: not a score yet.
            stop = tf.logical_or(
                stop, tf.logical_and(
                    self._metrics['NumberOfEpisodes'].result() > 0,
                    self._metrics['AverageReturn'].result() >=
                    c.stop_at_average_return))
        if c.num_env_steps > 0:
            stop = tf.logical_or(
                stop, self._metrics['EnvironmentSteps'].result() >=
                c.num_env_steps)
        return stop

    def _iterations_for_call(self, iteration, secs_per_iteration):
        """How many iterations the next call runs: ``iterations_per_call``
        (or, for ``'auto'``, about ``call_target_secs`` worth), cut at the
        next summary/evaluation/checkpoint iteration and at
        ``num_iterations``.

        Args:
            iteration: iterations done so far.
            secs_per_iteration: measured wall-clock of one iteration, or
                ``None`` before it is known (then 1 is returned).
        """
        c = self._config
        if c.iterations_per_call == 'auto':
            if secs_per_iteration is None:
                return 1
            n = int(c.call_target_secs / max(secs_per_iteration, 1e-6))
        else:
            n = c.iterations_per_call
        intervals = [c.summary_interval, c.checkpoint_interval]
        if c.evaluate:
            intervals.append(c.eval_interval)
        for interval in intervals:
            n = min(n, interval - iteration % interval)
        if c.num_iterations > 0:
            n = min(n, c.num_iterations - iteration)
        return max(n, 1)

    def _checkpoint_objects(self):
        """Trackable objects checkpointed besides the algorithm, metrics,
        iteration and optimizers: what a resumed run needs to continue as
        the uninterrupted one would.

        - ``rng``: the global ``tf.random.Generator`` that
          ``make_stateless_seed`` draws from (set by ``set_random_seed`` in
          ``__init__``; restoring assigns its state variable, which the
          compiled functions captured).
        - ``eval_rng``: the evaluation's own generator (a placeholder
          without evaluation, so that the checkpoint's layout does not
          depend on ``evaluate``).
        - ``game_score``: the ``GameScore`` metric, when the training
          environment reports games.
        - ``env_state`` and ``driver_state``, when the training environment
          can save its state (``env.checkpoint_state()``: ``suite_tf``,
          ``suite_unittest``): the environment's state and the driver's
          last ``TimeStep`` and policy state. Other environments (gymnasium)
          are reset after a resume: their episodes restart.

        Subclasses add theirs (e.g. a replay buffer) to this dict.
        """
        objects = {
            'rng': tf.random.get_global_generator(),
            'eval_rng': (self._evaluator.generator if self._evaluator
                         is not None else tf.random.Generator.from_seed(0)),
        }
        if self._game_score is not None:
            objects['game_score'] = self._game_score
        env_state = self._env.checkpoint_state()
        if env_state is not None:
            driver = self._driver
            batch = self._env.batch_size
            # The nest types the driver keeps (lists stay lists: a restored
            # state must not retrace the compiled iteration).
            initial_state = self._algorithm.get_initial_rollout_state(batch)
            spec = (add_outer_dims(self._env.time_step_spec(), [batch]),
                    tf.nest.map_structure(
                        lambda x: tf.TensorSpec(x.shape, x.dtype),
                        initial_state))

            def _set(value):
                driver.loop_state = value

            objects['env_state'] = env_state
            objects['driver_state'] = NestState(
                spec, lambda: driver.loop_state, _set)
        return objects

    # ------------------------------------------------------------ helpers
    @property
    def algorithm(self) -> Any:
        """The algorithm being trained (an ``RLAlgorithm``)."""
        return self._algorithm

    @property
    def env(self) -> TFEnvironment:
        """The training environment."""
        return self._env

    @property
    def eval_env(self) -> Optional[TFEnvironment]:
        """The evaluation environment (``None`` unless evaluating)."""
        return self._eval_env

    def _env_steps(self):
        return int(self._metrics['EnvironmentSteps'].result())

    def _done(self):
        c = self._config
        it = int(self._iteration.numpy())
        if c.num_iterations > 0 and it >= c.num_iterations:
            return True
        if (c.stop_at_average_return is not None and it > 0
                and int(self._metrics['NumberOfEpisodes'].result()) > 0
                and float(self._metrics['AverageReturn'].result()) >=
                c.stop_at_average_return):
            return True
        return c.num_env_steps > 0 and self._env_steps() >= c.num_env_steps

    def _fraction_done(self):
        c = self._config
        fractions = []
        if c.num_iterations > 0:
            fractions.append(int(self._iteration.numpy()) / c.num_iterations)
        if c.num_env_steps > 0:
            fractions.append(self._env_steps() / c.num_env_steps)
        return max(fractions)

    def _write_config(self):
        path = os.path.join(self._root_dir, 'config.gin')
        tmp = path + '.tmp'
        try:
            with open(tmp, 'w') as f:
                f.write(gin.operative_config_str())
            os.replace(tmp, path)
        except OSError as e:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise RunDirError(describe_os_error(path, e)) from None

    def _metric_scalars(self):
        scalars = {
            'Metrics/' + name: float(m.result())
            for name, m in self._metrics.items()
        }
        game_score = self._game_score_value()
        if game_score is not None:
            scalars[self._game_score.tag] = game_score
        return scalars

    def _game_score_value(self):
        """The mean score of the last games, or None before any game
        ended (or when the environment reports no games)."""
        if self._game_score is None or not self._game_score.num_games:
            return None
        return float(self._game_score.result())

    def _collect_game_scores(self):
        """Folds the games the training environment finished since the
        last call into ``Metrics/GameScore``."""
        if self._game_score is not None:
            self._game_score.add(self._env.pop_game_scores())

    def _unscored_metrics(self):
        """Names of the per-episode averages while no episode has ended
        (they read 0 then, which is not a score): left out of summaries
        and the progress line."""
        if int(self._metrics['NumberOfEpisodes'].result()) > 0:
            return set()
        return set(EPISODE_AVERAGES)

    def evaluate(self) -> Dict[str, float]:
        """Plays one greedy (``algorithm.predict``) episode in each
        evaluation environment.

        Returns:
            ``{'Metrics/AverageReturn': mean episode return,
            'Metrics/AverageEpisodeLength': mean transitions per episode}``
            over the ``num_eval_episodes`` episodes.

        Raises:
            ValueError: if the trainer was built with
                ``config.evaluate=False`` (no evaluation environment).
        """
        if self._evaluator is None:
            raise ValueError("Trainer.evaluate: no evaluation environment; "
                             "build the trainer with TrainerConfig("
                             "evaluate=True)")
        returns, lengths = self._evaluator.run()
        return {
            'Metrics/AverageReturn': float(np.mean(returns.numpy())),
            'Metrics/AverageEpisodeLength': float(np.mean(lengths.numpy())),
        }

    # ------------------------------------------------------------ main loop
    def train(self) -> Dict[str, Any]:
        """Trains until ``num_iterations`` or ``num_env_steps``; resumable.

        Holds the run directory's lock (``RunDirLock``) while it runs.
        Resumes from the newest checkpoint that reads back completely
        (corrupt newer ones are moved aside and reported; see
        ``Checkpointer.restore``); summaries that an interrupted run wrote
        after that checkpoint are removed from the event files first, so
        TensorBoard shows one value per step.

        Returns:
            dict of final metric values (``'Metrics/...'``), plus the last
            evaluation under ``'eval/...'`` when evaluating, ``iterations``,
            ``train_secs`` (the training loop's wall-clock),
            ``first_iteration_secs`` (its first iteration, which includes
            tracing and XLA compilation) and ``stopped_early`` (True when
            ``request_stop()`` ended it; a checkpoint was still written).

        Raises:
            TrainingError: a ``NonFiniteLossError`` or an
                ``EnvironmentStepError``. A checkpoint is written first when
                the model is still good (its message says so, and
                ``error.checkpoint`` is its prefix); when the update with
                the bad loss was already applied it is not, and the message
                says why.
            RunDirLockedError: another process trains in ``root_dir``.
            RunDirError: ``root_dir`` cannot be written (e.g. a full disk:
                ``CheckpointSaveError``, the last good checkpoint kept).
            NoUsableCheckpointError: checkpoints are on disk and none reads
                back, and ``config.fresh_start`` is False.
            CheckpointError: the checkpoint does not match the model.
        """
        self._lock.acquire()
        try:
            return self._train_locked()
        finally:
            self._lock.release()

    def _train_locked(self):
        self._checkpointer.remove_stale_temporaries()
        restored = self._restore()
        self._drop_orphaned_summaries(restored)
        writers = _Writers(self._root_dir, self._config.summaries_flush_secs,
                           self._config.evaluate)
        self._write_config()
        run = _Run(time.time(), self._env_steps())
        loss_info = None
        try:
            while not self._done() and not _STOP_REQUESTED.is_set():
                try:
                    loss_info, now = self._run_call(run)
                except TrainingError as error:
                    writers.flush()
                    self._checkpoint_after_error(error)
                    raise
                self._after_call(run, loss_info, now, writers)
            if loss_info is not None and self._done():
                self._final_summaries(run, loss_info, writers)
            self._report_progress(run)
            self._save(int(self._iteration.numpy()), writers)
        finally:
            writers.flush()
        return self._result(run)

    def _restore(self):
        """Restores the newest usable checkpoint, if any, and says so.

        Returns:
            the prefix restored, or None (starting from iteration 0).
        """
        try:
            restored = self._checkpointer.restore(move_corrupt=True)
        except NoUsableCheckpointError:
            if not self._config.fresh_start:
                raise
            kept = sorted(n for n in os.listdir(self._checkpointer.directory)
                          if '.corrupt' in n)
            print("alf_rl: fresh_start: no usable checkpoint in %s (kept: "
                  "%s); starting from iteration 0" %
                  (self._checkpointer.directory, ', '.join(kept) or 'none'),
                  file=sys.stderr, flush=True)
            return None
        if restored:
            self._saved_iteration = int(self._iteration.numpy())
            print("alf_rl: resumed from %s at iteration %d, %d env steps%s" %
                  (restored, self._saved_iteration, self._env_steps(),
                   ' (fresh_start has no effect: this checkpoint is usable)'
                   if self._config.fresh_start else ''), flush=True)
        return restored

    def _drop_orphaned_summaries(self, restored):
        """Removes from ``train/`` and ``eval/`` the summaries written after
        the checkpoint being resumed from (all of them when starting from
        iteration 0): the iterations they describe run again, and
        TensorBoard would otherwise show two values for their steps.

        Same effect as TensorBoard's purge on a restart (``SessionLog.START``)
        but for every series: the ``Metrics_vs_EnvironmentSteps`` series are
        indexed by env steps, which a purge by iteration would wipe.

        Args:
            restored: the checkpoint prefix restored, or None.
        """
        after = (self._checkpointer.saved_wall_time(restored)
                 if restored else None)
        for sub in ('train', 'eval'):
            for path in sorted(glob.glob(os.path.join(self._root_dir, sub,
                                                      '*tfevents*'))):
                # mtime may be a clock tick behind the last write: a margin.
                if after is not None and os.path.getmtime(path) < after - 1:
                    continue
                dropped = _drop_summaries_after(path, after)
                if dropped:
                    print("alf_rl: TensorBoard: removed %d summaries written "
                          "after %s from %s (their iterations run again)" %
                          (dropped, 'the checkpoint' if restored else
                           'the start (no checkpoint)', path),
                          file=sys.stderr, flush=True)

    def _save(self, iteration, writers):
        """Checkpoints ``iteration`` (unless it is the newest save), after
        flushing the summaries written so far (a kill then loses at most
        what came after the checkpoint)."""
        if iteration == self._saved_iteration:
            return
        writers.flush()
        self._checkpointer.save(iteration)
        self._saved_iteration = iteration

    def _checkpoint_after_error(self, error):
        """Writes a checkpoint before a ``TrainingError`` ends the run when
        the model state is still good, and adds to the error's message what
        was (or why nothing was) written."""
        it = int(self._iteration.numpy())
        last = self._checkpointer.latest_path()
        last_good = ('the last good checkpoint is %s' % last if last else
                     'there is no earlier checkpoint')
        path = None
        if isinstance(error, NonFiniteLossError) and error.update_applied:
            note = ("No checkpoint was written: the update with the "
                    "non-finite loss was already applied (XLA), so the model "
                    "may hold NaN/Inf values; %s." % last_good)
        elif it == 0:
            note = "No checkpoint was written: no iteration had completed."
        elif (bad := self._non_finite_variable()) is not None:
            note = ("No checkpoint was written: the model variable %s holds "
                    "non-finite values; %s." % (bad, last_good))
        elif it == self._saved_iteration:
            path = last
            note = ("The checkpoint of iteration %d (%s) is current: rerun "
                    "the same command to resume from it." % (it, path))
        else:
            try:
                path = self._checkpointer.save(it)
                self._saved_iteration = it
                note = ("A checkpoint was written at iteration %d (%s): "
                        "rerun the same command to resume from it." %
                        (it, path))
            except CheckpointSaveError as e:
                note = "Writing a checkpoint failed too: %s." % e
        error.add_checkpoint_note(note, path)

    def _non_finite_variable(self):
        """The name of the first model variable holding NaN or Inf, or
        None (then the model is fit to checkpoint)."""
        for v in getattr(self._algorithm, 'variables', ()):
            if v.dtype.is_floating and not bool(
                    tf.reduce_all(tf.math.is_finite(v))):
                return v.name
        return None

    def _run_call(self, run):
        """One compiled call of one or more training iterations.

        Returns:
            ``(loss_info, now)``: the last iteration's reduced ``LossInfo``
            and the wall-clock at the end of the call.

        Raises:
            TrainingError: built by ``training_error_from`` when the call
                failed in a way it recognizes (else the original error).
        """
        it = int(self._iteration.numpy())
        n = (1 if run.first_iteration_secs is None else
             self._iterations_for_call(it, run.secs_per_iteration))
        # An error the environment kept from before this call (e.g. from
        # a user's own eager use of it) must not be blamed for this one.
        self._env.last_error = None
        call_start = time.time()
        try:
            loss_info, done = self._train_iterations(n)
            done = int(done)
        except tf.errors.OpError as e:
            error = training_error_from(e, it + 1, n, self._env.last_error)
            if error is None:
                raise
            cause = (error.env_error
                     if isinstance(error, EnvironmentStepError) else e)
            raise error from cause
        self._iteration.assign_add(done)
        self._collect_game_scores()
        now = time.time()
        run.record_call(now, call_start, done, self._fraction_done())
        return loss_info, now

    def _after_call(self, run, loss_info, now, writers):
        """Summaries, evaluation, checkpoint and progress line, each when
        its interval comes due at the iteration the call ended on."""
        c = self._config
        it = int(self._iteration.numpy())
        if it % c.summary_interval == 0:
            self._write_train_summaries(run, loss_info, it, now,
                                        writers.train)
        if c.evaluate and it % c.eval_interval == 0:
            run.last_eval = self._evaluate_and_write(it, writers.eval)
        if it % c.checkpoint_interval == 0:
            self._save(it, writers)
        if now - run.last_report >= c.progress_interval_secs:
            self._report_progress(run)
            run.last_report = now

    def _final_summaries(self, run, loss_info, writers):
        """At the end of training: the summaries and evaluation of the
        last iteration, unless their intervals just wrote them, so that a
        run's curves (and tables made from them) end at its budget."""
        c = self._config
        it = int(self._iteration.numpy())
        if it % c.summary_interval:
            self._write_train_summaries(run, loss_info, it, time.time(),
                                        writers.train)
        if c.evaluate and it % c.eval_interval:
            run.last_eval = self._evaluate_and_write(it, writers.eval)

    def _write_train_summaries(self, run, loss_info, iteration, now, writer):
        """Metrics, losses and throughput under ``train/`` at
        ``iteration``; metrics also against environment steps."""
        env_steps = self._env_steps()
        unscored = self._unscored_metrics()
        scalars = {k: v for k, v in self._metric_scalars().items()
                   if k[len('Metrics/'):] not in unscored}
        scalars.update(summary_utils.loss_scalars(loss_info))
        dt = max(now - run.last_summary_time, 1e-9)
        scalars['time/env_steps_per_sec'] = (env_steps -
                                             run.last_summary_steps) / dt
        scalars['time/elapsed_secs'] = now - run.start_time
        scalars.update(self._extra_summaries())
        run.last_summary_time, run.last_summary_steps = now, env_steps
        with writer.as_default():
            summary_utils.write_scalars(scalars, iteration)
            for tag, value in scalars.items():
                name = tag[len('Metrics/'):]
                if tag.startswith('Metrics/') and name not in unscored:
                    tf.summary.scalar('Metrics_vs_EnvironmentSteps/' + name,
                                      value, step=env_steps)

    def _evaluate_and_write(self, iteration, writer):
        """Runs ``evaluate()`` and writes it under ``eval/`` at
        ``iteration`` (and against environment steps); returns it."""
        scalars = self.evaluate()
        with writer.as_default():
            summary_utils.write_scalars(scalars, iteration)
            for tag, value in scalars.items():
                tf.summary.scalar(
                    tag.replace('Metrics/', 'Metrics_vs_EnvironmentSteps/'),
                    value, step=self._env_steps())
        return scalars

    def _result(self, run):
        """The dict ``train()`` returns; clears a handled stop request."""
        result = self._metric_scalars()
        result.update({'eval/' + k: v for k, v in run.last_eval.items()})
        result['iterations'] = int(self._iteration.numpy())
        result['train_secs'] = time.time() - run.start_time
        result['first_iteration_secs'] = run.first_iteration_secs or 0.0
        result['stopped_early'] = _STOP_REQUESTED.is_set()
        _STOP_REQUESTED.clear()  # handled: the next train() runs normally
        return result

    def _report_progress(self, run):
        elapsed = max(time.time() - run.start_time, 1e-9)
        steps = self._env_steps()
        rate = (steps - run.start_steps) / elapsed
        remaining = run.eta_secs(time.time(), self._fraction_done())
        eta = '' if remaining is None else ' | ETA %s' % _format_secs(
            remaining)
        last_eval = run.last_eval
        score = ('no episode ended yet' if self._unscored_metrics() else
                 'AverageReturn %.2f' %
                 float(self._metrics['AverageReturn'].result()))
        game_score = self._game_score_value()
        if game_score is not None:
            score += ' | game score %.1f' % game_score
        line = ("iter %d | env steps %d | %.0f steps/s | %s%s%s" %
                (int(self._iteration.numpy()), steps, rate, score,
                 (' | eval %.2f' % last_eval['Metrics/AverageReturn'])
                 if last_eval else '', eta))
        print(line, file=sys.stdout, flush=True)

    def close(self) -> None:
        """Closes the environments (also those passed in)."""
        self._env.close()
        if self._eval_env is not None:
            self._eval_env.close()


#: The per-episode averages among the metrics: no score (0) until an
#: episode has ended, so left out of reports until then.
EPISODE_AVERAGES = ('AverageReturn', 'AverageEpisodeLength')

_STOP_REQUESTED = threading.Event()


def request_stop() -> None:
    """Asks a running ``Trainer.train`` to stop after its current call.

    Safe to call from a signal handler (``alf-train`` calls it on the first
    Ctrl-C): the loop finishes the compiled call in progress, writes a
    checkpoint and returns with ``result['stopped_early'] = True``.
    Raising ``KeyboardInterrupt`` instead could land inside an
    environment's Python callback in the middle of a graph call.
    """
    _STOP_REQUESTED.set()


def _format_secs(secs):
    secs = int(secs)
    return '%d:%02d:%02d' % (secs // 3600, secs % 3600 // 60, secs % 60)


def _drop_summaries_after(path: str, wall_time: Optional[float]) -> int:
    """Rewrites an event file without its summaries stamped after
    ``wall_time`` (all of them when it is None); other events (the file
    version header) are kept. A record cut short by a kill is dropped.

    Args:
        path: an ``events.out.tfevents.*`` file (TFRecords of ``Event``).
        wall_time: ``time.time()`` of the checkpoint resumed from, or None.

    Returns:
        the number of summary events removed (the file is untouched when
        there are none and nothing was cut short).
    """
    from tensorflow.core.util import event_pb2
    kept, dropped, truncated = [], 0, False
    try:
        for record in tf.data.TFRecordDataset(path):
            raw = record.numpy()
            event = event_pb2.Event.FromString(raw)
            if event.HasField('summary') and (wall_time is None or
                                              event.wall_time > wall_time):
                dropped += 1
            else:
                kept.append(raw)
    except tf.errors.DataLossError:
        truncated = True
    if not dropped and not truncated:
        return 0
    # Not named '*tfevents*' while being written: TensorBoard reads those.
    fd, tmp = tempfile.mkstemp(prefix='.tmp-events-',
                               dir=os.path.dirname(path))
    os.close(fd)
    try:
        with tf.io.TFRecordWriter(tmp) as writer:
            for raw in kept:
                writer.write(raw)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return dropped
