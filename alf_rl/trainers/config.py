"""``TrainerConfig`` and its groups of settings.

A run's settings come in groups, each a small class a part of the trainer
reads: ``ReplayConfig`` (the replay path), ``EvaluationConfig``,
``CheckpointConfig``, ``ReportConfig`` (summaries and the progress line)
and ``ExecutionConfig`` (compilation, calls, ``tf.distribute``).
``TrainerConfig`` holds the run's own settings (directory, algorithm,
budget, seed) and one of each group::

    config = TrainerConfig(root_dir='/tmp/run', algorithm_ctor=make_sac,
                           num_iterations=1000,
                           replay=ReplayConfig(mini_batch_size=64))
    config.replay.mini_batch_size  # 64

Every group setting is also accepted (and read) by its own name on
``TrainerConfig``, which is how gin files set them (one spelling per
setting, in a gin file and in the ``config.gin`` a run writes)::

    TrainerConfig.mini_batch_size = 64      # goes to config.replay

Giving a group object and one of its settings by name is refused.
"""

import inspect
import os
from typing import Any, Callable, Dict, Optional, Sequence, Union

import gin

from alf_rl.distributed.strategy import STRATEGY_NAMES
from alf_rl.utils.config_types import check_arg_types, is_int


def _require_positive(values: Dict[str, Any], names: Sequence[str]) -> None:
    """ValueError naming the first of ``names`` whose value is < 1."""
    for name in names:
        if values[name] < 1:
            raise ValueError("TrainerConfig.%s must be >= 1, got %s" %
                             (name, values[name]))


class ReplayConfig(object):
    """The replay path (``OffPolicyTrainer``, ``AsyncOffPolicyTrainer``).

    Args:
        initial_collect_steps: env steps (over all envs) collected before
            the first update.
        initial_collect_policy: how those steps choose actions:
            ``'rollout'`` (the algorithm's exploring policy, as ALF and
            TF-Agents' drivers do) or ``'uniform'`` (uniformly at random
            within the action spec, as Stable-Baselines3 does for
            ``learning_starts``; the published TD3/DDPG settings assume
            it). ``'uniform'`` needs an algorithm whose rollout info is
            empty (SAC, TD3, DDPG, DQN and its family, SARSA).
        num_updates_per_train_step: updates per iteration (or epochs over
            the iteration's data with ``clear_replay_buffer``).
        mini_batch_size: sequences per update.
        mini_batch_length: steps per sequence (>= 2; the last one only
            bootstraps).
        replay_buffer_capacity: total steps the replay buffer holds (split
            evenly across environments).
        clear_replay_buffer: train only on what this iteration collected
            (on-policy methods trained from replay, e.g. PPO).
        prioritized_replay: use a prioritized replay buffer.
        replay_frame_stack: the observation stacks the last N frames on its
            last axis (suite_atari's [84, 84, 4]): store each frame once and
            rebuild the stacks on replay, N times less observation memory
            (a 1M-step Atari buffer in ~7 GB instead of ~28 GB). Each added
            stack is checked.
    """

    def __init__(self,
                 initial_collect_steps: int = 0,
                 initial_collect_policy: str = 'rollout',
                 num_updates_per_train_step: int = 1,
                 mini_batch_size: Optional[int] = None,
                 mini_batch_length: Optional[int] = None,
                 replay_buffer_capacity: int = 100000,
                 clear_replay_buffer: bool = False,
                 prioritized_replay: bool = False,
                 replay_frame_stack: bool = False):
        check_arg_types('TrainerConfig', ReplayConfig.__init__, locals())
        self.initial_collect_steps = int(initial_collect_steps)
        if initial_collect_policy not in ('rollout', 'uniform'):
            raise ValueError(
                "TrainerConfig.initial_collect_policy must be 'rollout' or "
                "'uniform', got %r" % (initial_collect_policy,))
        self.initial_collect_policy = initial_collect_policy
        self.num_updates_per_train_step = int(num_updates_per_train_step)
        self.mini_batch_size = mini_batch_size
        self.mini_batch_length = mini_batch_length
        self.replay_buffer_capacity = int(replay_buffer_capacity)
        self.clear_replay_buffer = clear_replay_buffer
        self.prioritized_replay = prioritized_replay
        self.replay_frame_stack = replay_frame_stack


class EvaluationConfig(object):
    """Periodic greedy evaluation (``algorithm.predict``).

    Args:
        evaluate: evaluate every ``eval_interval`` iterations.
        eval_interval: iterations between evaluations.
        num_eval_episodes: episodes per evaluation (one per eval env): the
            batch size of the evaluation environment.
    """

    def __init__(self, evaluate: bool = False, eval_interval: int = 10,
                 num_eval_episodes: int = 10):
        check_arg_types('TrainerConfig', EvaluationConfig.__init__, locals())
        _require_positive(locals(), ('eval_interval', 'num_eval_episodes'))
        self.evaluate = evaluate
        self.eval_interval = int(eval_interval)
        self.num_eval_episodes = int(num_eval_episodes)


class CheckpointConfig(object):
    """Checkpoints of the run (``ckpt/`` under ``root_dir``).

    Args:
        checkpoint_interval: iterations between checkpoints (a final one is
            always written).
        checkpoint_max_to_keep: newest checkpoints kept.
        fresh_start: start over from iteration 0: the earlier run in
            ``root_dir`` (``ckpt/`` with its replay buffers, ``train/``,
            ``eval/``, ``config.gin``) is first moved aside to
            ``root_dir/set_aside-<k>/`` (said in one line; nothing is
            deleted). Every start with it starts over: rerun without it
            to resume. ``alf-train --fresh_start`` sets it.
        from_checkpoint: resume from the kept checkpoint of this iteration
            (``ckpt/ckpt-<from_checkpoint>``), e.g. when the newer ones
            hold bad state; the newer ones are renamed
            ``ckpt-<k>.set_aside`` (said in one line; nothing is deleted)
            and the summaries written after it are removed from the event
            files, as on any resume. Every start with it goes back to that
            checkpoint: rerun without it to resume. None (default): the
            newest usable checkpoint. ``alf-train --from_checkpoint N``
            sets it.
        restore_replay: False: resume the model, optimizers, counters and
            metrics but not the replay buffer's contents (its chunk files
            are not read), e.g. when they are damaged (the refusal to
            start says so) or to drop the stored experience; an online run
            starts its buffer empty and refills it with
            ``initial_collect_steps`` of its current collect policy, an
            offline run holds its dataset as always. Rerun without it
            afterwards: the next checkpoints hold the new buffer. No
            effect on runs without a replay buffer. ``alf-train
            --without_replay`` sets it.
    """

    def __init__(self, checkpoint_interval: int = 100,
                 checkpoint_max_to_keep: int = 3, fresh_start: bool = False,
                 from_checkpoint: Optional[int] = None,
                 restore_replay: bool = True):
        check_arg_types('TrainerConfig', CheckpointConfig.__init__, locals())
        _require_positive(locals(), ('checkpoint_interval', ))
        if from_checkpoint is not None and from_checkpoint < 0:
            raise ValueError("TrainerConfig.from_checkpoint: expected the "
                             "iteration (>= 0) of a kept checkpoint, got %r"
                             % (from_checkpoint, ))
        if from_checkpoint is not None and fresh_start:
            raise ValueError("TrainerConfig.from_checkpoint=%r and "
                             "fresh_start=True contradict each other: give "
                             "one of them" % (from_checkpoint, ))
        self.checkpoint_interval = int(checkpoint_interval)
        self.checkpoint_max_to_keep = int(checkpoint_max_to_keep)
        self.fresh_start = fresh_start
        self.from_checkpoint = from_checkpoint
        self.restore_replay = restore_replay


class ReportConfig(object):
    """TensorBoard summaries and the progress line.

    Args:
        summary_interval: iterations between TensorBoard summaries.
        summaries_flush_secs: flush period of the event writers.
        progress_interval_secs: seconds between progress lines.
        progress_metrics: names of metrics (``StepMetric.name``, e.g. a
            metric of ``TrainerConfig.metrics``) also shown in the progress
            line, as ``name value``.
    """

    def __init__(self, summary_interval: int = 10,
                 summaries_flush_secs: float = 5,
                 progress_interval_secs: float = 5.0,
                 progress_metrics: Sequence[str] = ()):
        check_arg_types('TrainerConfig', ReportConfig.__init__, locals())
        _require_positive(locals(), ('summary_interval', ))
        if isinstance(progress_metrics, str) or not all(
                isinstance(n, str) for n in progress_metrics):
            raise TypeError("TrainerConfig.progress_metrics: expected a list "
                            "of metric names, got %r" % (progress_metrics, ))
        self.summary_interval = int(summary_interval)
        self.summaries_flush_secs = summaries_flush_secs
        self.progress_interval_secs = float(progress_interval_secs)
        self.progress_metrics = tuple(progress_metrics)


class ExecutionConfig(object):
    """How iterations run: compiled or eager, per call, on which devices.

    Args:
        use_tf_functions: compile drivers; False runs eagerly for debugging.
        jit_compile: also compile with XLA where TensorFlow allows it:
            off-policy updates always; with an in-graph environment
            (``create_environment.backend='tf'``) the whole iteration
            (rollout and update).
        iterations_per_call: training iterations run inside one compiled
            call (a ``tf.while_loop`` around the iteration), like Keras'
            ``steps_per_execution``: an int >= 1, or ``'auto'`` to size
            each call to about ``call_target_secs`` from the measured
            iteration time. Calls always end at summary, evaluation and
            checkpoint iterations; the step budget, ``stop_at_env_steps``
            and ``stop_at_average_return`` are checked in the graph after
            every
            iteration, and a non-finite loss stops the loop at once. The
            first call runs one iteration (tracing is timed separately).
        call_target_secs: the wall-clock a call aims at with
            ``iterations_per_call='auto'``.
        strategy: the learner's ``tf.distribute`` strategy: None (one
            device, the default), ``'mirrored'`` (the local GPUs, or
            ``num_logical_cpu_devices`` logical CPUs) or
            ``'multi_worker_mirrored'`` (the processes of ``TF_CONFIG``).
            The update is distributed; with ``'multi_worker_mirrored'``
            each worker collects its own experience (its own seeds). See
            ``alf_rl.distributed.strategy``. Not with ``jit_compile``;
            ``'multi_worker_mirrored'`` needs an int
            ``iterations_per_call``, and stops by ``num_iterations`` only
            (not ``num_env_steps``, ``stop_at_env_steps`` or
            ``stop_at_average_return``).
        num_logical_cpu_devices: with ``strategy='mirrored'``: mirror over
            this many logical CPU devices (testing the distributed learner
            without GPUs); 0 (default): the GPUs, or the CPU.
    """

    def __init__(self,
                 use_tf_functions: bool = True,
                 jit_compile: bool = False,
                 iterations_per_call: Union[int, str] = 'auto',
                 call_target_secs: float = 0.2,
                 strategy: Optional[str] = None,
                 num_logical_cpu_devices: int = 0):
        check_arg_types('TrainerConfig', ExecutionConfig.__init__, locals())
        calls: Any = iterations_per_call
        if calls != 'auto' and (not is_int(calls) or calls < 1):
            raise ValueError("TrainerConfig.iterations_per_call: expected an "
                             "int >= 1 or 'auto', got %r (%s)" %
                             (calls, type(calls).__name__))
        if call_target_secs <= 0:
            raise ValueError("TrainerConfig.call_target_secs must be > 0, "
                             "got %r" % (call_target_secs, ))
        _check_strategy(locals())
        self.use_tf_functions = use_tf_functions
        self.jit_compile = jit_compile
        self.iterations_per_call = iterations_per_call
        self.call_target_secs = float(call_target_secs)
        self.strategy = strategy
        self.num_logical_cpu_devices = int(num_logical_cpu_devices)


def _check_strategy(values: Dict[str, Any]) -> None:
    """The checks of ``strategy`` and what goes with it.

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


def _check_worker_budget(num_env_steps: int,
                         stop_at_env_steps: Optional[int],
                         stop_at_average_return: Optional[float]) -> None:
    """Refuses, in one line, a stopping rule that could stop
    ``'multi_worker_mirrored'`` workers at different iterations (the
    others would wait for ever in the next update's all-reduce): each
    worker counts and scores its own episodes."""
    for name, value, unset in (
            ('num_env_steps', num_env_steps, 0),
            ('stop_at_env_steps', stop_at_env_steps, None),
            ('stop_at_average_return', stop_at_average_return, None)):
        if value != unset:
            raise ValueError(
                "TrainerConfig.%s=%r cannot stop strategy="
                "'multi_worker_mirrored' workers together (each counts its "
                "own episodes' steps and returns); set num_iterations and "
                "%s=%r" % (name, value, name, unset))


#: (attribute of ``TrainerConfig``, group class), in signature order.
_GROUPS = (('replay', ReplayConfig), ('evaluation', EvaluationConfig),
           ('checkpoint', CheckpointConfig), ('report', ReportConfig),
           ('execution', ExecutionConfig))


def _group_parameters(cls: type) -> Sequence[inspect.Parameter]:
    init: Any = vars(cls)['__init__']
    return list(inspect.signature(init).parameters.values())[1:]


#: Group setting name -> the ``TrainerConfig`` attribute of its group.
_GROUP_OF = {p.name: attr for attr, cls in _GROUPS
             for p in _group_parameters(cls)}


class TrainerConfig(object):
    """Settings of a training run (all gin-configurable).

    The environments are not settings: a Python user hands them to the
    trainer (``OnPolicyTrainer(config, env=..., eval_env=...)``); without
    them the trainer builds them with the gin-configured
    ``create_environment`` (the ``alf-train`` way).

    Args:
        root_dir: directory of the run's outputs; rerunning on it resumes.
        trainer: the trainer class; None: the one of the algorithm's
            ``training_kind`` (``create_trainer``: ``OnPolicyTrainer`` for
            ``UNROLL``, ``OffPolicyTrainer`` for ``EPOCHS`` and ``REPLAY``).
        algorithm_ctor: ``(observation_spec=, action_spec=) -> RLAlgorithm``
            (specs of the training environment, without batch dimension).
        num_iterations: stop after this many training iterations (0: no
            limit from iterations).
        num_env_steps: stop after this many environment steps (0: no limit).
        unroll_length: environment steps per environment per iteration.
        final_step_mode: on-policy bootstrap mode ('redo', 'skip', 'none').
        random_seed: seed of everything (None: random).
        stop_at_env_steps: if set, stop (with a checkpoint) once the run
            has taken this many environment steps, leaving its budget
            (``num_env_steps`` / ``num_iterations``) and what derives from
            it (learning-rate and exploration schedules) as configured:
            RLlib's stop criterion beside the config, e.g. a 10M-step
            Atari schedule trained to 2M. The ETA counts to the stop.
            Rerunning without it continues to the budget.
        stop_at_average_return: if set, stop (with a checkpoint) once the
            training ``AverageReturn`` metric reaches it, like
            Stable-Baselines3's ``StopTrainingOnRewardThreshold``: the
            shorthand that installs the ``StopAtAverageReturn`` callback
            (``alf_rl.trainers.callbacks``).
        metrics: the user's own metrics, updated in the graph with every
            training time step beside the standard four, checkpointed and
            written to TensorBoard as ``Metrics/<name>``: ``StepMetric``
            instances, or callables ``(batch_size) -> StepMetric`` (a
            metric class taking the number of environments, e.g. in gin
            ``TrainerConfig.metrics = [@MyMetric]``). Names must differ.
        num_seeds: N > 1 trains N independent agents (seeds
            ``random_seed`` .. ``random_seed + N - 1``) in one compiled
            graph (``alf_rl.trainers.population_run``: PPO on a
            ``suite_tf`` or MinAtar environment; summaries under
            ``seed_<seed>/``).
        replay: a ``ReplayConfig`` (None: from the settings given by name).
        evaluation: an ``EvaluationConfig`` (likewise).
        checkpoint: a ``CheckpointConfig`` (likewise).
        report: a ``ReportConfig`` (likewise).
        execution: an ``ExecutionConfig`` (likewise).
        **settings: any setting of the five groups by its name, e.g.
            ``mini_batch_size=64`` (see the group classes); gin bindings
            ``TrainerConfig.<name>`` land here. The signature lists them
            (so gin checks a binding's name when it parses it).

    Raises:
        TypeError: a numeric, boolean or string setting of the wrong type,
            naming the binding, the value and the expected type
            (``TrainerConfig.num_iterations: expected an int, got 'ten'
            (str)``); floats are refused where ints are expected. An
            unknown setting name.
        ValueError: a setting out of its range; a group object given
            together with one of its settings by name.
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
                 stop_at_env_steps: Optional[int] = None,
                 stop_at_average_return: Optional[float] = None,
                 metrics: Sequence[Any] = (),
                 num_seeds: int = 1,
                 replay: Optional[ReplayConfig] = None,
                 evaluation: Optional[EvaluationConfig] = None,
                 checkpoint: Optional[CheckpointConfig] = None,
                 report: Optional[ReportConfig] = None,
                 execution: Optional[ExecutionConfig] = None,
                 **settings: Any):
        own = {k: v for k, v in locals().items()
               if k not in ('self', 'settings')}
        check_arg_types('TrainerConfig', TrainerConfig.__init__, own)
        _check_run_settings(own)
        # str(): _check_run_settings refused a missing root_dir.
        self.root_dir = os.path.expanduser(str(root_dir))
        self.trainer = trainer
        self.algorithm_ctor = algorithm_ctor
        self.num_iterations = int(num_iterations)
        self.num_env_steps = int(num_env_steps)
        self.unroll_length = int(unroll_length)
        self.final_step_mode = final_step_mode
        self.random_seed = random_seed
        self.num_seeds = int(num_seeds)
        self.stop_at_env_steps = stop_at_env_steps
        self.stop_at_average_return = stop_at_average_return
        self.metrics = list(metrics)
        for attr, group in _build_groups(own, settings).items():
            setattr(self, attr, group)
        if self.execution.strategy == 'multi_worker_mirrored':
            _check_worker_budget(self.num_env_steps, stop_at_env_steps,
                                 stop_at_average_return)

    def __getattr__(self, name: str) -> Any:
        """A group setting by its name: ``config.mini_batch_size`` is
        ``config.replay.mini_batch_size``."""
        attr = _GROUP_OF.get(name)
        if attr is None or attr not in self.__dict__:
            raise AttributeError("TrainerConfig has no setting %r" % name)
        return getattr(self.__dict__[attr], name)

    def iterations_for_call(self, iteration: int,
                            secs_per_iteration: Optional[float]) -> int:
        """How many iterations the next compiled call runs:
        ``iterations_per_call`` (or, for ``'auto'``, about
        ``call_target_secs`` worth), cut at the next summary, evaluation or
        checkpoint iteration and at ``num_iterations``.

        Args:
            iteration: iterations done so far.
            secs_per_iteration: measured wall-clock of one iteration, or
                ``None`` before it is known (then 1 is returned for
                ``'auto'``).
        """
        e = self.execution
        if e.iterations_per_call == 'auto':
            if secs_per_iteration is None:
                return 1
            n = int(e.call_target_secs / max(secs_per_iteration, 1e-6))
        else:
            n = e.iterations_per_call
        intervals = [self.report.summary_interval,
                     self.checkpoint.checkpoint_interval]
        if self.evaluation.evaluate:
            intervals.append(self.evaluation.eval_interval)
        for interval in intervals:
            n = min(n, interval - iteration % interval)
        if self.num_iterations > 0:
            n = min(n, self.num_iterations - iteration)
        return max(n, 1)

    def fraction_done(self, iteration: int, env_steps: int) -> float:
        """The run's progress in [0, 1]: the largest of the iteration, the
        env-step budget's and ``stop_at_env_steps``' fractions (of those
        set)."""
        fractions = []
        if self.num_iterations > 0:
            fractions.append(iteration / self.num_iterations)
        for steps in (self.num_env_steps, self.stop_at_env_steps or 0):
            if steps > 0:
                fractions.append(env_steps / steps)
        return max(fractions)


def _check_run_settings(values: Dict[str, Any]) -> None:
    """The value checks of ``TrainerConfig``'s own settings (types already
    checked).

    Raises:
        ValueError: naming the setting, what it must be and what it is.
    """
    if values['algorithm_ctor'] is None:
        raise ValueError("TrainerConfig.algorithm_ctor is required, e.g. "
                         "TrainerConfig.algorithm_ctor=@ActorCriticAlgorithm")
    if not values['root_dir']:
        raise ValueError("TrainerConfig.root_dir is required")
    stop = values['stop_at_env_steps']
    if stop is not None and stop <= 0:
        raise ValueError("TrainerConfig.stop_at_env_steps must be > 0 (or "
                         "None: no stop before the budget), got %d" % stop)
    if values['num_iterations'] <= 0 and values['num_env_steps'] <= 0:
        raise ValueError("set num_iterations or num_env_steps > 0 (got "
                         "%s and %s)" % (values['num_iterations'],
                                         values['num_env_steps']))
    _require_positive(values, ('unroll_length', 'num_seeds'))
    metrics = values['metrics']
    if isinstance(metrics, (str, bytes)) or not isinstance(
            metrics, (list, tuple)):
        raise TypeError("TrainerConfig.metrics: expected a list of "
                        "StepMetrics or (batch_size) -> StepMetric "
                        "callables, got %r" % (metrics, ))


def _build_groups(given: Dict[str, Any],
                  settings: Dict[str, Any]) -> Dict[str, Any]:
    """The five groups: those given, the others built from ``settings``.

    Raises:
        TypeError: an unknown setting name; a group of the wrong class.
        ValueError: a group given together with one of its settings.
    """
    unknown = sorted(set(settings) - set(_GROUP_OF))
    if unknown:
        raise TypeError("TrainerConfig: no setting named %r" % unknown[0])
    groups = {}
    for attr, cls in _GROUPS:
        named = {k: v for k, v in settings.items() if _GROUP_OF[k] == attr}
        group = given[attr]
        if group is None:
            group = cls(**named)
        elif not isinstance(group, cls):
            raise TypeError("TrainerConfig.%s: expected a %s, got %s" %
                            (attr, cls.__name__, type(group).__name__))
        elif named:
            raise ValueError(
                "TrainerConfig: %s is given twice, in %s=%s(...) and by "
                "name; set it in one place" % (sorted(named)[0], attr,
                                               cls.__name__))
        groups[attr] = group
    return groups


def _flat_signature() -> inspect.Signature:
    """``TrainerConfig.__init__``'s signature with each group setting as a
    keyword-only parameter instead of ``**settings``: what ``inspect`` and
    gin see, so that gin refuses an unknown binding when it parses it and
    records the defaults in the operative config as before."""
    own = [p for p in inspect.signature(
        TrainerConfig.__init__).parameters.values()
           if p.kind != inspect.Parameter.VAR_KEYWORD]
    flat = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            for _, cls in _GROUPS for p in _group_parameters(cls)]
    return inspect.Signature(own + flat)


# Before gin registers the class: gin reads (and caches) the signature then.
_init: Any = TrainerConfig.__init__
_init.__signature__ = _flat_signature()
gin.configurable(TrainerConfig)
