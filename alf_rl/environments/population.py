"""A population's environments in one TF-ops batch: P seeds x B envs.

``load(name, seeds, batch_size)`` returns one environment of P * B rows;
rows ``k * B .. k * B + B - 1`` are seed k's environments and step exactly
as ``suite_tf.load(name, B, seed=seeds[k])`` does (the same initial states,
the same resets, for a MinAtar game the same sticky actions and game
draws), because the dynamics are row-wise and every random number of seed
k's rows is drawn from seed k's own stateless stream. The classic-control
environments are a ``TFDynamicsEnvironment`` over ``PopulationDynamics``,
the MinAtar games (``suite_minatar``) a ``PopulationMinAtarEnvironment``.
"""

from typing import Any, Optional, Sequence, Tuple

import tensorflow as tf

from alf_rl.environments import suite_minatar, suite_tf


class PopulationDynamics(suite_tf.Dynamics):
    """A ``Dynamics`` over P * B rows whose initial states come per seed.

    Args:
        dynamics: the single-environment ``Dynamics`` (e.g. CartPole's).
        seeds: the P seeds.
        batch_size: B, environments per seed.
    """

    def __init__(
        self,
        dynamics: suite_tf.Dynamics,
        seeds: Sequence[int],
        batch_size: int,
    ):
        self._base = dynamics
        self._seeds = tuple(int(s) % 2**63 for s in seeds)
        self._batch_size = batch_size
        self.name = dynamics.name
        self.state_dim = dynamics.state_dim
        self.max_episode_steps = dynamics.max_episode_steps
        self.observation_spec = dynamics.observation_spec
        self.action_spec = dynamics.action_spec

    def initial_state(self, batch_size: int, seed: tf.Tensor) -> tf.Tensor:
        """[P * B, d] float32: seed k's B states from ``[seeds[k], c]``.

        Args:
            batch_size: P * B (checked).
            seed: [2] int64 stateless seed; only its counter ``c = seed[1]``
                is used, so every seed advances its own stream in step.
        Returns:
            [P * B, d] float32.
        """
        if batch_size != len(self._seeds) * self._batch_size:
            raise ValueError(
                'PopulationDynamics: batch_size must be P * B = %d, got %r'
                % (len(self._seeds) * self._batch_size, batch_size)
            )
        counter = tf.cast(seed[1], tf.int64)
        return tf.concat(
            [
                self._base.initial_state(
                    self._batch_size,
                    tf.stack([tf.constant(s, tf.int64), counter]),
                )
                for s in self._seeds
            ],
            axis=0,
        )

    def observation(self, state: tf.Tensor) -> tf.Tensor:
        """The base dynamics' observation of [P * B, d] states."""
        return self._base.observation(state)

    def _next_state(
        self, state: tf.Tensor, action: tf.Tensor
    ) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        return self._base._next_state(state, action)

    def to_gym_state(self, state: Any) -> Any:
        """As the base dynamics'."""
        return self._base.to_gym_state(state)


class PopulationMinAtarEnvironment(suite_minatar.MinAtarEnvironment):
    """P seeds' batches of B MinAtar games as one ``MinAtarEnvironment``.

    Every call draws ``[P * B, n]`` uniform numbers whose rows
    ``k * B .. k * B + B - 1`` come from ``[seeds[k], counter]``, the
    stream of ``suite_minatar.load(name, B, seed=seeds[k])``, so each
    seed's rows equal that environment's (the games, the sticky actions
    and the time limit are row-wise).

    Args:
        dynamics: the ``MinAtarDynamics`` (game, action set, sticky-action
            probability).
        seeds: the P seeds.
        batch_size: B, games per seed.
        max_episode_steps: as ``MinAtarEnvironment``.
    """

    def __init__(
        self,
        dynamics: suite_minatar.MinAtarDynamics,
        seeds: Sequence[int],
        batch_size: int,
        max_episode_steps: Optional[int] = None,
    ):
        super().__init__(
            dynamics,
            len(seeds) * batch_size,
            seed=0,
            max_episode_steps=max_episode_steps,
        )
        self._seeds = tuple(int(s) % 2**63 for s in seeds)
        self._seed_batch_size = batch_size

    def _draws(self, n: int) -> tf.Tensor:
        """[P * B, n] uniform float32, seed k's rows from seed k's stream."""
        counter = self._counter.assign_add(1)
        return tf.concat(
            [
                suite_tf.stateless_uniform(
                    [self._seed_batch_size, n],
                    tf.stack([tf.constant(s, tf.int64), counter]),
                    0.0,
                    1.0,
                )
                for s in self._seeds
            ],
            axis=0,
        )


def load(
    name: str,
    seeds: Sequence[int],
    batch_size: int,
    max_episode_steps: Optional[int] = None,
    sticky_action_prob: float = 0.1,
    difficulty_ramping: bool = True,
) -> Any:
    """P seeds' ``suite_tf`` environments as one batch of P * B.

    Args:
        name: a ``suite_tf`` environment name (e.g. ``'CartPole-v1'``) or a
            MinAtar game (``'MinAtar/Breakout-v1'``).
        seeds: the P distinct int seeds.
        batch_size: B, environments per seed.
        max_episode_steps: as ``suite_tf.load`` (``None``: the registered
            limit of a classic-control environment, none for MinAtar).
        sticky_action_prob: MinAtar only, as ``suite_minatar.load``.
        difficulty_ramping: MinAtar only, as ``suite_minatar.load``.
    Returns:
        A ``TFDynamicsEnvironment`` (classic control) or a
        ``PopulationMinAtarEnvironment`` of batch P * B, seed-major rows;
        observations [P * B, ...] as the single environment's.
    Raises:
        ValueError: an unknown name or bad seeds / batch size / options.
    """
    seeds = tuple(seeds)
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(
            'population.load: seeds must be non-empty and distinct, got %r'
            % (seeds,)
        )
    if str(name).startswith('MinAtar/'):
        game = suite_minatar.load(
            name,
            1,
            seed=0,
            sticky_action_prob=sticky_action_prob,
            difficulty_ramping=difficulty_ramping,
        )
        return PopulationMinAtarEnvironment(
            game.dynamics, seeds, batch_size, max_episode_steps
        )
    dynamics = suite_tf.load(name, 1, seed=0).dynamics
    return suite_tf.TFDynamicsEnvironment(
        PopulationDynamics(dynamics, seeds, batch_size),
        len(seeds) * batch_size,
        seed=0,
        max_episode_steps=max_episode_steps,
    )
