"""``AsyncOffPolicyTrainer``: actors step while the learner trains.

The replay-path trainer (``OffPolicyTrainer``) with collection moved out
of the learner's loop into actors (see
``alf_rl.drivers.async_off_policy_driver``): ``num_actors`` actors, each
with its own B environments (``create_environment``'s
``num_parallel_environments``, or the ``env`` factory) and a copy of the
policy, run as threads of this process (``actors='threads'``) or as Ray
actors on this and other machines (``actors='ray'``, configured by
``RayConfig``; the ``[dist]`` extra). One training iteration takes T =
``unroll_length`` steps of one actor's B environments:

- off-policy (SAC, DDPG, TD3, DQN): they are written into the replay
  buffer (of all ``num_actors * B`` environments) and the iteration trains
  ``num_updates_per_train_step`` mini-batches from it, as the synchronous
  trainer does;
- on-policy methods trained from replay (``clear_replay_buffer=True``: PPO,
  A2C): the iteration trains on exactly those [T, B] steps, with their
  staleness corrected by PPO's ratio to the behaviour policy that collected
  them (stored with the steps), or for A2C by V-trace
  (``ActorCriticLoss.off_policy_correction='vtrace'``).

To switch an example to asynchronous training add::

    TrainerConfig.trainer = @AsyncOffPolicyTrainer
    AsyncOffPolicyTrainer.num_actors = 4

Checkpoints, resume, Ctrl-C, evaluation and summaries are the base
trainer's. Not checkpointed: the actors' environments (episodes restart
after a resume, as for any gymnasium environment) and messages in flight.
Asynchronous runs are not reproducible step for step, seeded or not: which
actor's message the learner takes next depends on timing.
"""

import os
import sys
from typing import Any, Dict, Mapping, Optional

import gin
import tensorflow as tf

from alf_rl.drivers.async_off_policy_driver import (AsyncOffPolicyDriver,
                                                    ThreadActorPool)
from alf_rl.drivers.rollout_worker import (RolloutWorker,
                                           check_same_variables,
                                           make_worker_seed,
                                           publishable_variables)
from alf_rl.environments.utils import create_environment
from alf_rl.trainers.errors import EnvironmentStepError
from alf_rl.trainers.off_policy_trainer import OffPolicyTrainer
from alf_rl.trainers.config import TrainerConfig
from alf_rl.trainers.env_sources import EnvSource, build_env
from alf_rl.utils.actor_messages import ActorFailedError
from alf_rl.utils.config_types import check_arg_types

_ACTOR_KINDS = ('threads', 'ray')


def _set_inter_op_threads(num_actors: int) -> bool:
    """Gives TensorFlow's inter-op pool a thread per thread actor (+2).

    Each actor's environment step is a ``tf.numpy_function``, which holds
    an inter-op thread while the environment runs (or waits on its
    subprocess): with fewer threads than actors they take turns
    (``alf-train`` starts TensorFlow with one, which is fastest for one
    in-graph rollout). Measured with 8 actors on a 20 ms/step
    environment: 40 env steps/s with one thread, 303 with 10.

    Returns:
        False when TensorFlow already started with fewer threads (it can
        no longer be changed), else True.
    """
    needed = num_actors + 2
    current = (tf.config.threading.get_inter_op_parallelism_threads() or
               int(os.environ.get('TF_NUM_INTEROP_THREADS', '0') or 0))
    if current >= needed:
        return True
    try:
        tf.config.threading.set_inter_op_parallelism_threads(needed)
    except RuntimeError:
        return False
    return True


@gin.configurable
class AsyncOffPolicyTrainer(OffPolicyTrainer):
    """Asynchronous actor-learner training (see the module docstring).

    Args:
        config: a ``TrainerConfig`` (as for ``OffPolicyTrainer``;
            ``iterations_per_call`` counts learner iterations).
        env: the environments of actor 0 (a ``TFEnvironment``) or, better,
            a factory ``(seed) -> TFEnvironment`` called once per actor
            (thread actors; Ray actors need a factory that pickles, or the
            gin-configured ``create_environment``); None: the gin-configured
            ``create_environment``.
        eval_env: as for ``Trainer``.
        num_actors: actors, each with its own environments.
        actors: ``'threads'`` (in this process) or ``'ray'`` (Ray actors,
            see ``alf_rl.distributed.ray_actors.RayConfig``).
        iterations_per_message: k: each message of an actor holds k
            iterations' steps (k * ``unroll_length`` per environment); more
            amortizes the cost per message (for ``unroll_length=1``
            methods such as SAC), at k - 1 more updates of policy lag.
        max_policy_lag: drop messages collected with weights more than
            this many learner iterations old (counted in
            ``async/dropped_messages``).
        queue_size: messages that may wait for the learner; None: one per
            actor.
        message_timeout: seconds the learner waits for a message before
            stopping with an error (an environment that hangs).

    Raises:
        TypeError, ValueError: a setting of the wrong type or range (one
            line naming it).
    """

    def __init__(self,
                 config: TrainerConfig,
                 env: Optional[EnvSource] = None,
                 eval_env: Optional[EnvSource] = None,
                 num_actors: int = 2,
                 actors: str = 'threads',
                 iterations_per_message: int = 1,
                 max_policy_lag: int = 100,
                 queue_size: Optional[int] = None,
                 message_timeout: float = 300.0):
        check_arg_types('AsyncOffPolicyTrainer', AsyncOffPolicyTrainer.__init__,
                        locals())
        for name, value in (('num_actors', num_actors),
                            ('iterations_per_message',
                             iterations_per_message),
                            ('queue_size', queue_size or 1)):
            if value < 1:
                raise ValueError("AsyncOffPolicyTrainer.%s must be >= 1, "
                                 "got %r" % (name, value))
        if max_policy_lag < 0:
            raise ValueError("AsyncOffPolicyTrainer.max_policy_lag must be "
                             ">= 0, got %r" % (max_policy_lag, ))
        if actors not in _ACTOR_KINDS:
            raise ValueError("AsyncOffPolicyTrainer.actors: expected one of "
                             "%s, got %r" % (_ACTOR_KINDS, actors))
        if actors == 'threads' and not _set_inter_op_threads(num_actors):
            print("alf_rl: AsyncOffPolicyTrainer: TensorFlow started with "
                  "fewer than num_actors + 2 = %d inter-op threads, so the "
                  "%d thread actors take turns stepping; set "
                  "TF_NUM_INTEROP_THREADS=%d before TensorFlow starts (as "
                  "alf-train does)" % (num_actors + 2, num_actors,
                                       num_actors + 2),
                  file=sys.stderr, flush=True)
        if (isinstance(config, TrainerConfig) and
                config.execution.strategy == 'multi_worker_mirrored'):
            raise ValueError(
                "AsyncOffPolicyTrainer does not run under TrainerConfig."
                "strategy='multi_worker_mirrored' (every worker's actors "
                "would have to keep step with the others' updates); use "
                "OffPolicyTrainer, whose workers each collect their own "
                "experience")
        self._env_source = env
        self._num_actors = int(num_actors)
        self._actor_kind = actors
        self._iterations_per_message = int(iterations_per_message)
        self._max_policy_lag = int(max_policy_lag)
        self._queue_size = int(queue_size or num_actors)
        self._message_timeout = float(message_timeout)
        super().__init__(config, env=env, eval_env=eval_env)

    @staticmethod
    def configure_runtime(settings: Mapping[str, Any]) -> None:
        """Before TensorFlow's runtime starts: enough inter-op threads for
        the number of thread actors (see ``_set_inter_op_threads``).

        Args:
            settings: the keyword arguments the trainer will be built with
                (``actors``, ``num_actors``; the others are ignored).
                ``alf-train`` passes gin's bindings of the class.
        """
        if settings.get('actors', 'threads') == 'threads':
            _set_inter_op_threads(int(settings.get('num_actors', 2)))

    def _metrics_batch_size(self) -> int:
        # The learner's metrics count over every actor's environments.
        return self._num_actors * self._env.batch_size

    def _replay_batch_size(self):
        # Replay holds every actor's environments; on-policy training
        # takes one actor's B environments per iteration.
        if self._config.replay.clear_replay_buffer:
            return self._env.batch_size
        return self._num_actors * self._env.batch_size

    def _create_driver(self):
        super()._create_driver()  # replayer, checks, optimizers
        c = self._config
        if c.replay.initial_collect_policy != 'rollout':
            raise ValueError(
                "TrainerConfig.initial_collect_policy=%r: %s's actors "
                "collect with the algorithm's rollout only; use 'rollout'" %
                (c.replay.initial_collect_policy, type(self).__name__))
        replayer = None if c.replay.clear_replay_buffer else self._replayer
        return AsyncOffPolicyDriver(
            self._algorithm, self._create_pool(),
            iteration_length=c.unroll_length, replayer=replayer,
            max_policy_lag=self._max_policy_lag,
            message_timeout=self._message_timeout,
            metrics=self._metrics.step_metrics,
            use_tf_functions=c.execution.use_tf_functions)

    def _create_pool(self):
        c = self._config
        length = c.unroll_length * self._iterations_per_message
        if self._actor_kind == 'ray':
            from alf_rl.distributed.ray_actors import RayActorPool
            return RayActorPool(
                num_actors=self._num_actors,
                unroll_length=length,
                run_seed=self._seed,
                algorithm_ctor=c.algorithm_ctor,
                env_factory=self._env_source,
                batch_size=self._env.batch_size,
                queue_size=self._queue_size,
                learner_variables=self._driver_signature(),
                use_tf_functions=c.execution.use_tf_functions)
        workers = []
        for i in range(self._num_actors):
            seed = make_worker_seed(self._seed, i)
            env = self._actor_env(i, seed)
            algorithm = c.algorithm_ctor(
                observation_spec=env.observation_spec(),
                action_spec=env.action_spec())
            worker = RolloutWorker(
                env, algorithm, i, length, seed,
                use_tf_functions=c.execution.use_tf_functions)
            check_same_variables(publishable_variables(self._algorithm),
                                 worker.variable_signature(), 'actor %d' % i)
            workers.append(worker)
        return ThreadActorPool(workers, self._queue_size)

    def _driver_signature(self):
        return [(v.name, tuple(v.shape), v.dtype.name)
                for v in publishable_variables(self._algorithm)]

    def _actor_env(self, index, seed):
        """Actor ``index``'s environments: actor 0 steps the trainer's own
        (built with the run's seed), the others are built like it
        (``create_environment`` or the ``env`` factory) with their seeds."""
        if index == 0:
            return self._env
        source = self._env_source
        if source is None:
            return create_environment(seed=seed)
        if not callable(source):
            raise ValueError(
                "AsyncOffPolicyTrainer: env must be a factory (seed) -> "
                "TFEnvironment when num_actors > 1: each of the %d actors "
                "builds its own" % self._num_actors)
        return build_env(source, seed, 'env')

    def _checkpoint_objects(self):
        """The off-policy trainer's objects, without the environment's and
        the driver's state: the actors' environments run on; their
        episodes restart after a resume."""
        objects = super()._checkpoint_objects()
        objects.pop('env_state', None)
        objects.pop('driver_state', None)
        return objects

    def _train_iterations(self, num_iterations):
        r = self._config.replay
        driver = self._driver
        try:
            if not driver.started:
                driver.start(int(self._iteration.numpy()))
                self._drop_restored_replay()  # refilled below
            if r.initial_collect_steps and not r.clear_replay_buffer:
                while (int(self._replayer.buffer.total_size) <
                       r.initial_collect_steps):
                    driver.run_iterations(1, None, observe_only=True)
            if r.clear_replay_buffer:
                train_fn = self._train_on
            else:
                train_fn = lambda steps: self._train()
            return driver.run_iterations(num_iterations, train_fn,
                                         stop_fn=self._stop_condition)
        except ActorFailedError as e:
            raise EnvironmentStepError(
                "%s; training stopped at iteration %d" %
                (e, int(self._iteration.numpy()) + 1),
                int(self._iteration.numpy()) + 1, None,
                e.env_error or e) from e.env_error

    def _extra_summaries(self) -> Dict[str, float]:
        """The driver's policy-lag and queue summaries."""
        return self._driver.stats()

    def close(self) -> None:
        """Stops the actors and closes their environments (actor 0's are
        the trainer's ``env``) and the evaluation environment."""
        self._driver.close()
        if self._actor_kind == 'ray':
            self._env.close()
        if self._evaluator is not None:
            self._evaluator.close()
