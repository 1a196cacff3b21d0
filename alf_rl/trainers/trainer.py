"""``TrainerConfig`` and the ``Trainer`` base: the training run around a driver.

A trainer owns everything that is not an algorithm: environments, the
driver, checkpoints (atomic, resumable), TensorBoard summaries, periodic
greedy evaluation, the operative ``config.gin`` and a progress line on the
terminal. Subclasses only say how training iterations run
(``_train_iterations``, several per compiled call).

Outputs under ``root_dir``: ``train/`` and ``eval/`` event files, ``ckpt/``
checkpoints, ``config.gin``.
"""

import os
import sys
import threading
import time

import gin
import numpy as np
import tensorflow as tf

from alf_rl.drivers.evaluation_driver import EvaluationDriver
from alf_rl.environments.utils import create_environment
from alf_rl.utils import summary as summary_utils
from alf_rl.utils.checkpoint import Checkpointer
from alf_rl.utils.common import set_random_seed


@gin.configurable
class TrainerConfig(object):
    """Settings of a training run (all gin-configurable).

    Args:
        root_dir: directory of the run's outputs; rerunning on it resumes.
        trainer: the trainer class (``OnPolicyTrainer`` by default).
        algorithm_ctor: ``(observation_spec=, action_spec=) -> RLAlgorithm``.
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
        evaluate: run greedy evaluation every ``eval_interval`` iterations.
        eval_interval: iterations between evaluations.
        num_eval_episodes: episodes per evaluation (one per eval env).
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
    """

    def __init__(self,
                 root_dir=None,
                 trainer=None,
                 algorithm_ctor=None,
                 num_iterations=1000,
                 num_env_steps=0,
                 unroll_length=8,
                 final_step_mode='redo',
                 random_seed=None,
                 use_tf_functions=True,
                 jit_compile=False,
                 evaluate=False,
                 eval_interval=10,
                 num_eval_episodes=10,
                 checkpoint_interval=100,
                 checkpoint_max_to_keep=3,
                 summary_interval=10,
                 progress_interval_secs=5.0,
                 summaries_flush_secs=5,
                 initial_collect_steps=0,
                 num_updates_per_train_step=1,
                 mini_batch_size=None,
                 mini_batch_length=None,
                 replay_buffer_capacity=100000,
                 clear_replay_buffer=False,
                 prioritized_replay=False,
                 stop_at_average_return=None,
                 iterations_per_call='auto',
                 call_target_secs=0.2):
        if algorithm_ctor is None:
            raise ValueError("TrainerConfig.algorithm_ctor is required, e.g. "
                             "TrainerConfig.algorithm_ctor=@ActorCriticAlgorithm")
        if not root_dir:
            raise ValueError("TrainerConfig.root_dir is required")
        if num_iterations <= 0 and num_env_steps <= 0:
            raise ValueError("set num_iterations or num_env_steps > 0 (got "
                             "%s and %s)" % (num_iterations, num_env_steps))
        for name in ('unroll_length', 'eval_interval', 'num_eval_episodes',
                     'checkpoint_interval', 'summary_interval'):
            if int(locals()[name]) < 1:
                raise ValueError("TrainerConfig.%s must be >= 1, got %s" %
                                 (name, locals()[name]))
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
        if iterations_per_call != 'auto' and (
                not isinstance(iterations_per_call, int)
                or iterations_per_call < 1):
            raise ValueError("TrainerConfig.iterations_per_call must be an "
                             "int >= 1 or 'auto', got %r" %
                             (iterations_per_call, ))
        if float(call_target_secs) <= 0:
            raise ValueError("TrainerConfig.call_target_secs must be > 0, "
                             "got %r" % (call_target_secs, ))
        self.iterations_per_call = iterations_per_call
        self.call_target_secs = float(call_target_secs)


class TrainingError(RuntimeError):
    """Training stopped on bad input or a non-finite loss."""


class Trainer(object):
    """Base of trainers: environment, algorithm, checkpoints, summaries.

    Args:
        config: a ``TrainerConfig``.
    """

    def __init__(self, config):
        self._config = config
        self._root_dir = config.root_dir
        os.makedirs(self._root_dir, exist_ok=True)
        self._seed = set_random_seed(config.random_seed)
        self._env = create_environment(seed=self._seed)
        self._algorithm = config.algorithm_ctor(
            observation_spec=self._env.observation_spec(),
            action_spec=self._env.action_spec())
        self._eval_env = None
        self._evaluator = None
        if config.evaluate:
            self._eval_env = create_environment(
                num_parallel_environments=config.num_eval_episodes,
                seed=self._seed + 7919,
                use_subprocess=False)
            self._evaluator = EvaluationDriver(
                self._eval_env,
                self._algorithm,
                use_tf_functions=config.use_tf_functions)
        self._iteration = tf.Variable(0, dtype=tf.int64, trainable=False,
                                      name='iteration')
        self._driver = self._create_driver()
        self._metrics = {m.name: m for m in self._driver.metrics}
        self._checkpointer = Checkpointer(
            os.path.join(self._root_dir, 'ckpt'),
            max_to_keep=config.checkpoint_max_to_keep,
            algorithm=self._algorithm,
            metrics=list(self._driver.metrics),
            iteration=self._iteration,
            optimizers=[o for o, _ in
                        self._algorithm.get_optimizer_and_variable_sets()],
            **self._checkpoint_objects())

    # ------------------------------------------------------------ to override
    def _create_driver(self):
        raise NotImplementedError()

    def _train_iterations(self, num_iterations):
        """Runs up to ``num_iterations`` iterations in one compiled call,
        stopping early once ``_stop_condition()`` holds.

        Returns:
            ``(loss_info, iterations_done)``: the last iteration's reduced
            ``LossInfo`` and how many iterations ran.
        """
        raise NotImplementedError()

    def _stop_condition(self):
        """In-graph: the step budget or ``stop_at_average_return`` reached.

        Returns:
            a scalar bool tensor.
        """
        c = self._config
        stop = tf.constant(False)
        if c.stop_at_average_return is not None:
            stop = tf.logical_or(
                stop, self._metrics['AverageReturn'].result() >=
                c.stop_at_average_return)
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
        """Extra trackable objects to checkpoint (e.g. a replay buffer)."""
        return {}

    # ------------------------------------------------------------ helpers
    @property
    def algorithm(self):
        """The algorithm being trained."""
        return self._algorithm

    @property
    def env(self):
        """The training environment."""
        return self._env

    def _env_steps(self):
        return int(self._metrics['EnvironmentSteps'].result())

    def _done(self):
        c = self._config
        it = int(self._iteration.numpy())
        if c.num_iterations > 0 and it >= c.num_iterations:
            return True
        if (c.stop_at_average_return is not None and it > 0
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
        with open(tmp, 'w') as f:
            f.write(gin.operative_config_str())
        os.replace(tmp, path)

    def _metric_scalars(self):
        return {
            'Metrics/' + name: float(m.result())
            for name, m in self._metrics.items()
        }

    def _raise_clear_error(self, error, num_iterations=1):
        it = int(self._iteration.numpy()) + 1
        where = ("at iteration %d" % it if num_iterations == 1 else
                 "in iterations %d-%d" % (it, it + num_iterations - 1))
        env_error = getattr(self._env, 'last_error', None)
        if env_error is not None:
            raise TrainingError("training stopped %s: %s" %
                                (where, env_error)) from env_error
        message = getattr(error, 'message', str(error))
        if 'loss of' in message and ('NaN' in message or 'Inf' in message):
            applied = ("the XLA-compiled update was already applied"
                       if 'XLA' in message else "no update was applied")
            # A graph error's first line is 'Graph execution error:'; the
            # CheckNumerics message (loss name, NaN/Inf) is a later line.
            detail = next((line.strip() for line in message.split('\n')
                           if 'loss of' in line), message)
            raise TrainingError(
                "training stopped %s: non-finite loss (%s); %s "
                "and no checkpoint was written for this iteration." %
                (where, detail[:500], applied)) from error
        raise error

    def evaluate(self):
        """Runs greedy evaluation; returns ``{tag: value}`` scalars."""
        returns, lengths = self._evaluator.run()
        return {
            'Metrics/AverageReturn': float(np.mean(returns.numpy())),
            'Metrics/AverageEpisodeLength': float(np.mean(lengths.numpy())),
        }

    # ------------------------------------------------------------ main loop
    def train(self):
        """Trains until ``num_iterations`` or ``num_env_steps``; resumable.

        Returns:
            dict of final metric values (``'Metrics/...'``), plus the last
            evaluation under ``'eval/...'`` when evaluating, ``iterations``,
            ``train_secs`` (the training loop's wall-clock),
            ``first_iteration_secs`` (its first iteration, which includes
            tracing and XLA compilation) and ``stopped_early`` (True when
            ``request_stop()`` ended it; a checkpoint was still written).
        """
        c = self._config
        restored = self._checkpointer.restore()
        start_iteration = int(self._iteration.numpy())
        if restored:
            print("alf_rl: resumed from %s at iteration %d, %d env steps" %
                  (restored, start_iteration, self._env_steps()),
                  flush=True)
        train_writer = tf.summary.create_file_writer(
            os.path.join(self._root_dir, 'train'),
            flush_millis=int(c.summaries_flush_secs * 1000))
        eval_writer = (tf.summary.create_file_writer(
            os.path.join(self._root_dir, 'eval'),
            flush_millis=int(c.summaries_flush_secs * 1000))
                       if c.evaluate else None)
        self._write_config()
        start_time = time.time()
        start_steps = self._env_steps()
        last_report = start_time
        last_eval = {}
        last_summary_time, last_summary_steps = start_time, start_steps
        first_iteration_secs = None
        secs_per_iteration = None
        try:
            while not self._done() and not _STOP_REQUESTED.is_set():
                n = (1 if first_iteration_secs is None else
                     self._iterations_for_call(int(self._iteration.numpy()),
                                               secs_per_iteration))
                call_start = time.time()
                try:
                    loss_info, done = self._train_iterations(n)
                    done = int(done)
                except tf.errors.OpError as e:
                    self._raise_clear_error(e, n)
                self._iteration.assign_add(done)
                it = int(self._iteration.numpy())
                now = time.time()
                if first_iteration_secs is None:
                    # Tracing (and XLA compilation) happen in this one.
                    first_iteration_secs = now - start_time
                else:
                    secs_per_iteration = (now - call_start) / max(done, 1)
                if it % c.summary_interval == 0:
                    env_steps = self._env_steps()
                    scalars = self._metric_scalars()
                    scalars.update(summary_utils.loss_scalars(loss_info))
                    dt = max(now - last_summary_time, 1e-9)
                    scalars['time/env_steps_per_sec'] = (
                        env_steps - last_summary_steps) / dt
                    scalars['time/elapsed_secs'] = now - start_time
                    last_summary_time, last_summary_steps = now, env_steps
                    with train_writer.as_default():
                        summary_utils.write_scalars(scalars, it)
                        for name, m in self._metrics.items():
                            tf.summary.scalar(
                                'Metrics_vs_EnvironmentSteps/' + name,
                                float(m.result()), step=env_steps)
                if c.evaluate and it % c.eval_interval == 0:
                    last_eval = self.evaluate()
                    with eval_writer.as_default():
                        summary_utils.write_scalars(last_eval, it)
                        for tag, value in last_eval.items():
                            tf.summary.scalar(
                                tag.replace('Metrics/',
                                            'Metrics_vs_EnvironmentSteps/'),
                                value, step=self._env_steps())
                if it % c.checkpoint_interval == 0:
                    self._checkpointer.save(it)
                if now - last_report >= c.progress_interval_secs:
                    self._report_progress(start_time, start_steps, last_eval)
                    last_report = now
            self._report_progress(start_time, start_steps, last_eval)
            self._checkpointer.save(int(self._iteration.numpy()))
        finally:
            train_writer.flush()
            if eval_writer is not None:
                eval_writer.flush()
        result = self._metric_scalars()
        result.update({'eval/' + k: v for k, v in last_eval.items()})
        result['iterations'] = int(self._iteration.numpy())
        result['train_secs'] = time.time() - start_time
        result['first_iteration_secs'] = first_iteration_secs or 0.0
        result['stopped_early'] = _STOP_REQUESTED.is_set()
        _STOP_REQUESTED.clear()  # handled: the next train() runs normally
        return result

    def _report_progress(self, start_time, start_steps, last_eval):
        elapsed = max(time.time() - start_time, 1e-9)
        steps = self._env_steps()
        rate = (steps - start_steps) / elapsed
        frac = self._fraction_done()
        eta = ''
        if 0 < frac < 1 and steps > start_steps:
            # Fraction of the run done in this process, extrapolated.
            done_here = frac - 0 if start_steps == 0 else frac
            remaining = elapsed * (1 - frac) / max(done_here, 1e-9)
            eta = ' | ETA %s' % _format_secs(remaining)
        line = ("iter %d | env steps %d | %.0f steps/s | AverageReturn %.2f"
                "%s%s" % (int(self._iteration.numpy()), steps, rate,
                          float(self._metrics['AverageReturn'].result()),
                          (' | eval %.2f' %
                           last_eval['Metrics/AverageReturn'])
                          if last_eval else '', eta))
        print(line, file=sys.stdout, flush=True)

    def close(self):
        """Closes the environments."""
        self._env.close()
        if self._eval_env is not None:
            self._eval_env.close()


_STOP_REQUESTED = threading.Event()


def request_stop():
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
