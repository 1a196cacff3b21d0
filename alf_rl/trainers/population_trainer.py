"""Trains a population of P seeds' agents in one compiled call per iteration.

``PopulationTrainer`` runs ``PopulationPPO`` on P seeds' ``suite_tf``
environments or MinAtar games (``environments.population``; observations
are flattened to float32 vectors for the MLPs): one iteration collects
``unroll_length`` steps of B environments per seed and runs ``num_epochs``
passes of shuffled mini-batches, all inside one ``tf.function`` (XLA with
``jit_compile=True``, off by default). Agent k owns its weights, its slice
of the optimizer state, its environments and its random streams, all derived from
``seeds[k]`` with stateless ops, so agent k's numbers equal those of the
one-seed population ``seeds=[seeds[k]]`` up to float rounding.

Summaries are written per seed under ``seed_<seed>/`` (e.g.
``seed_3/Metrics/AverageReturn``) and checkpoints hold the whole population
(weights, optimizer, environments, metrics, iteration), so a resumed run
continues exactly.
"""

import functools
import math
import os
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

import tensorflow as tf

from alf_rl.algorithms.population_ppo import (
    STAT_NAMES,
    PopulationBatch,
    PopulationPPO,
)
from alf_rl.data_structures import StepType
from alf_rl.environments import population
from alf_rl.environments.suite_tf import stateless_uniform
from alf_rl.utils.common import valid_step_mask

# High words of the Philox counters of the agents' streams: far above the
# environments' call counters, so no draw is shared.
_ACTION_STREAM = 2**62
_SHUFFLE_STREAM = 2**62 + 2**61


class PopulationTrainer(tf.Module):
    """P independent PPO agents, one compiled iteration for all.

    Args:
        seeds: P distinct int seeds.
        env_name: a ``suite_tf`` environment with discrete actions (e.g.
            ``'CartPole-v1'``, ``'MinAtar/Breakout-v1'``); observations of
            any shape are flattened to float32 vectors.
        num_envs: B, environments per seed.
        unroll_length: T, steps collected per environment per iteration.
        mini_batch_size: rows per agent per mini-batch; must divide T * B.
        num_epochs: passes over the collected rows per iteration.
        algorithm_ctor: builds the algorithm from ``(seeds,
            observation_size, num_actions)``; ``PopulationPPO`` by default.
        jit_compile: compile the iteration with XLA (faster for small
            networks: one seed of ``ppo_tf_cart_pole``'s sizes trains its
            10 epochs in 0.025 s against 0.037 s; not for MinAtar's 256 x
            256 MLPs; the compile takes seconds to tens of seconds).
        root_dir: where ``train`` writes ``train/`` summaries and ``ckpt/``
            checkpoints (and restores from); ``None`` for neither.
        max_episode_steps: the environments' time limit, as
            ``population.load`` (``None``: the environment's own).
        env_options: more ``population.load`` arguments (a MinAtar game's
            ``sticky_action_prob`` and ``difficulty_ramping``).
        checkpoint_max_to_keep: newest checkpoints kept under ``ckpt/``.
    """

    def __init__(
        self,
        seeds: Sequence[int],
        env_name: str = 'CartPole-v1',
        num_envs: int = 16,
        unroll_length: int = 32,
        mini_batch_size: int = 256,
        num_epochs: int = 10,
        algorithm_ctor: Callable[..., PopulationPPO] = PopulationPPO,
        jit_compile: bool = False,
        root_dir: Optional[str] = None,
        max_episode_steps: Optional[int] = None,
        env_options: Optional[Mapping[str, Any]] = None,
        checkpoint_max_to_keep: int = 3,
    ):
        super().__init__(name='PopulationTrainer')
        rows = unroll_length * num_envs
        if mini_batch_size < 1 or rows % mini_batch_size:
            raise ValueError(
                'PopulationTrainer: mini_batch_size must divide '
                'unroll_length * num_envs = %d, got %r'
                % (rows, mini_batch_size)
            )
        self.seeds = tuple(seeds)
        self.env, obs_size, num_actions = _load_environment(
            env_name, self.seeds, num_envs, max_episode_steps, env_options
        )
        self.algorithm = algorithm_ctor(self.seeds, obs_size, num_actions)
        self._shape = (len(self.seeds), num_envs, unroll_length)
        self._mini_batch_size = mini_batch_size
        self._num_epochs = num_epochs
        self._root_dir = root_dir
        self._max_to_keep = checkpoint_max_to_keep
        self._init_state()
        # Slots first: a function creating variables is traced twice. No
        # autograph: its conversion was ~3 s of a 16-seed first iteration.
        self.algorithm.build_optimizer()
        self._iterate = tf.function(
            self._iteration, jit_compile=jit_compile, autograph=False
        )

    def _init_state(self) -> None:
        """The variables that carry over between iterations."""
        p, b, _ = self._shape
        step = self.env.reset()
        self.iteration = tf.Variable(0, dtype=tf.int64, name='iteration')
        self._observation = tf.Variable(step.observation, name='observation')
        self._step_type = tf.Variable(step.step_type, name='step_type')
        self._reward = tf.Variable(step.reward, name='reward')
        self._discount = tf.Variable(step.discount, name='discount')
        self._return = tf.Variable(tf.zeros([p * b]), name='episode_return')
        self.num_episodes = tf.Variable(tf.zeros([p], tf.int64))
        self.average_return = tf.Variable(tf.zeros([p]), name='avg_return')
        self._env_state = self.env.checkpoint_state()

    def _noise(self, shape: Sequence[int], stream: int) -> tf.Tensor:
        """[P, *shape] uniform floats in (0, 1), row k from seed k's stream
        ``stream + iteration``."""
        return _seed_noise(self.seeds, shape, stream + self.iteration)

    def _collect_step(self, uniform: tf.Tensor) -> Dict[str, tf.Tensor]:
        """One step of every environment; returns its [P, B, ...] record.

        Args:
            uniform: [P, B, A] float32 noise of the action draws.
        """
        p, b, _ = self._shape
        # MinAtar's [10, 10, C] bool frames become float vectors.
        obs = tf.reshape(tf.cast(self._observation, tf.float32), [p, b, -1])
        action, log_prob, value = self.algorithm.sample(obs, uniform)
        step_type = self._step_type.value()
        episode_return = tf.where(
            step_type == StepType.FIRST, 0.0, self._return + self._reward
        )
        done = tf.cast(step_type == StepType.LAST, tf.float32)
        self._return.assign(episode_return)
        record = dict(
            action=action,
            log_prob=log_prob,
            value=value,
            reward=self._reward.value(),
            step_type=step_type,
            discount=self._discount.value(),
            returns_done=episode_return * done,
            done=done,
        )
        record = {k: tf.reshape(v, [p, b]) for k, v in record.items()}
        record['observation'] = obs
        step = self.env.step(tf.reshape(action, [-1]))
        self._observation.assign(step.observation)
        self._step_type.assign(step.step_type)
        self._reward.assign(step.reward)
        self._discount.assign(step.discount)
        return record

    def _rollout(self) -> Dict[str, tf.Tensor]:
        """T steps of every environment; returns [T, P, B, ...] tensors."""
        _, _, t_len = self._shape
        uniform = self._noise(
            [t_len, self._shape[1], self.algorithm.num_actions],
            _ACTION_STREAM,
        )
        dtypes = dict(action=tf.int64, step_type=tf.int32)
        names = (
            'observation',
            'action',
            'log_prob',
            'value',
            'reward',
            'step_type',
            'discount',
            'returns_done',
            'done',
        )
        arrays = tuple(
            tf.TensorArray(dtypes.get(k, tf.float32), t_len) for k in names
        )

        def body(t: tf.Tensor, arrays: tuple) -> tuple:
            record = self._collect_step(uniform[:, t])
            return t + 1, tuple(
                a.write(t, record[k]) for a, k in zip(arrays, names)
            )

        _, arrays = tf.while_loop(
            lambda t, _: t < t_len, body, (tf.constant(0), arrays)
        )
        return {k: a.stack() for k, a in zip(names, arrays)}

    def _batch(self, exp: Dict[str, tf.Tensor]) -> PopulationBatch:
        """The rollout as per-agent rows [P, T * B] with targets."""
        p, b, t_len = self._shape
        flat = {
            k: tf.reshape(v, [t_len, p * b] + v.shape[3:].as_list())
            for k, v in exp.items()
        }
        advantages, returns = self.algorithm.targets(
            flat['reward'], flat['value'], flat['step_type'], flat['discount']
        )
        # The last row has no successor to bootstrap from: not trained.
        mask = valid_step_mask(flat['step_type'])
        mask = tf.concat([mask[:-1], tf.zeros_like(mask[-1:])], 0)

        def rows(x: tf.Tensor) -> tf.Tensor:
            x = tf.reshape(x, [t_len, p, b] + x.shape[2:].as_list())
            x = tf.transpose(x, [1, 0, 2] + list(range(3, x.shape.rank)))
            return tf.reshape(x, [p, t_len * b] + x.shape[3:].as_list())

        return PopulationBatch(
            observation=rows(flat['observation']),
            action=rows(flat['action']),
            log_prob=rows(flat['log_prob']),
            value=rows(flat['value']),
            advantages=rows(advantages),
            returns=rows(returns),
            mask=rows(mask),
        )

    def _train(self, batch: PopulationBatch) -> Dict[str, tf.Tensor]:
        """``num_epochs`` passes of shuffled mini-batches, per agent."""
        p, b, t_len = self._shape
        rows, size = t_len * b, self._mini_batch_size
        per_epoch = rows // size
        orders = tf.argsort(
            self._noise([self._num_epochs, rows], _SHUFFLE_STREAM)
        )
        # [P, updates, size]: the mini-batch size stays static (XLA bounds a
        # dynamic slice's size by the whole row: ~20x the work per update).
        orders = tf.reshape(orders, [p, self._num_epochs * per_epoch, size])
        stats = {k: tf.zeros([p]) for k in STAT_NAMES}

        def body(u: tf.Tensor, stats: Dict[str, tf.Tensor]) -> tuple:
            gather = functools.partial(
                tf.gather, indices=orders[:, u], batch_dims=1
            )
            mini = PopulationBatch(*tf.nest.map_structure(gather, batch))
            return u + 1, self.algorithm.update(mini)

        updates = self._num_epochs * per_epoch
        return tf.while_loop(
            lambda u, _: u < updates, body, (tf.constant(0), stats)
        )[1]

    def _iteration(self) -> Dict[str, tf.Tensor]:
        """Collects, trains and updates the metrics; [P] statistics."""
        exp = self._rollout()
        stats = self._train(self._batch(exp))
        episodes = tf.reduce_sum(exp['done'], axis=[0, 2])
        mean_return = tf.reduce_sum(
            exp['returns_done'], axis=[0, 2]
        ) / tf.maximum(episodes, 1.0)
        self.average_return.assign(
            tf.where(episodes > 0, mean_return, self.average_return)
        )
        self.num_episodes.assign_add(tf.cast(episodes, tf.int64))
        self.iteration.assign_add(1)
        return stats

    def run_iteration(self) -> Dict[str, Any]:
        """One compiled iteration of every agent.

        Returns:
            dict of [P] numpy arrays: ``loss``, ``pg_loss``, ``td_loss``,
            ``neg_entropy``, ``grad_norm`` of the iteration's last update,
            and
            ``average_return`` (the mean return of the episodes that ended
            in this iteration; the previous value if none did).
        """
        stats = {k: v.numpy() for k, v in self._iterate().items()}
        stats['average_return'] = self.average_return.numpy()
        return stats

    @property
    def env_steps_per_seed(self) -> int:
        """Environment steps each seed has taken so far."""
        p, b, t_len = self._shape
        return int(self.iteration.numpy()) * b * t_len

    def train(
        self,
        num_iterations: int,
        summary_interval: int = 1,
        checkpoint_interval: int = 100,
        should_stop: Optional[Callable[[], bool]] = None,
    ) -> Dict[str, Any]:
        """Runs iterations until ``iteration == num_iterations``.

        Restores the latest checkpoint under ``root_dir/ckpt`` first (if
        any), writes per-seed summaries every ``summary_interval``
        iterations and a checkpoint every ``checkpoint_interval``, both also
        at the last iteration (the budget's or a stopped run's).

        Args:
            num_iterations: the total number of iterations (counting those
                of a restored run).
            summary_interval: iterations between summaries.
            checkpoint_interval: iterations between checkpoints.
            should_stop: called after every iteration; True stops the run
                there (with a checkpoint).
        Returns:
            The last ``run_iteration`` statistics (empty if none ran).
        """
        manager = writer = None
        if self._root_dir:
            manager = tf.train.CheckpointManager(
                tf.train.Checkpoint(trainer=self),
                os.path.join(self._root_dir, 'ckpt'),
                max_to_keep=self._max_to_keep,
            )
            if manager.latest_checkpoint:
                manager.checkpoint.restore(manager.latest_checkpoint)
            writer = tf.summary.create_file_writer(
                os.path.join(self._root_dir, 'train')
            )
        stats: Dict[str, Any] = {}
        while int(self.iteration.numpy()) < num_iterations:
            stats = self.run_iteration()
            it = int(self.iteration.numpy())
            stop = should_stop is not None and should_stop()
            last = stop or it == num_iterations
            if writer is not None and (it % summary_interval == 0 or last):
                write_summaries(
                    writer,
                    self.seeds,
                    self.env_steps_per_seed,
                    stats,
                    self.num_episodes.numpy(),
                )
            if manager is not None and (last or it % checkpoint_interval == 0):
                manager.save(checkpoint_number=it)
            if stop:
                break
        return stats


def _load_environment(
    env_name: str,
    seeds: Sequence[int],
    num_envs: int,
    max_episode_steps: Optional[int],
    env_options: Optional[Mapping[str, Any]],
) -> Tuple[Any, int, int]:
    """The population's environment (``population.load``), the size d of
    its flattened observation and its number of actions A.

    Raises:
        ValueError: one line for an environment without discrete actions.
    """
    env = population.load(
        env_name, seeds, num_envs, max_episode_steps, **dict(env_options or {})
    )
    spec = env.action_spec()
    if spec.dtype.is_floating or spec.shape.rank != 0:
        raise ValueError(
            'PopulationTrainer: env_name must have discrete actions (one '
            'int per step), got %r with action_spec %s' % (env_name, spec)
        )
    num_actions = int(spec.maximum) - int(spec.minimum) + 1
    return env, math.prod(env.observation_spec().shape.as_list()), num_actions


def _seed_noise(
    seeds: Sequence[int], shape: Sequence[int], counter: tf.Tensor
) -> tf.Tensor:
    """[P, *shape] uniform float32 in (0, 1): row k from the stateless seed
    ``[seeds[k], counter]`` (counter: int64 scalar)."""
    return tf.stack(
        [
            stateless_uniform(
                shape,
                tf.stack([tf.constant(s % 2**63, tf.int64), counter]),
                2.0**-25,
                1.0,
            )
            for s in seeds
        ]
    )


def write_summaries(
    writer: Any,
    seeds: Sequence[int],
    step: int,
    stats: Dict[str, Any],
    episodes: Any,
) -> None:
    """Writes ``seed_<seed>/Metrics/...`` and ``seed_<seed>/loss/...``.

    Args:
        writer: a ``tf.summary`` writer.
        seeds: the P seeds.
        step: environment steps per seed (the summaries' step).
        stats: ``PopulationTrainer.run_iteration``'s dict of [P] arrays.
        episodes: [P] int, episodes each seed has finished.
    """
    with writer.as_default(step=step):
        for k, seed in enumerate(seeds):
            tag = 'seed_%d/' % seed
            tf.summary.scalar(
                tag + 'Metrics/AverageReturn', stats['average_return'][k]
            )
            tf.summary.scalar(tag + 'Metrics/NumberOfEpisodes', episodes[k])
            tf.summary.scalar(tag + 'Metrics/EnvironmentSteps', step)
            for name in STAT_NAMES:
                tf.summary.scalar(tag + 'loss/' + name, stats[name][k])
    writer.flush()
