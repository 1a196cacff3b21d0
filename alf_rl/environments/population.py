"""A population's environments in one ``suite_tf`` batch: P seeds x B envs.

``load(name, seeds, batch_size)`` returns one ``TFDynamicsEnvironment`` of
P * B rows; rows ``k * B .. k * B + B - 1`` are seed k's environments and
step exactly as ``suite_tf.load(name, B, seed=seeds[k])`` does (the same
initial states, the same resets), because the dynamics are row-wise and
every fresh state of seed k is drawn from seed k's own stateless stream.
"""

from typing import Any, Optional, Sequence, Tuple

import tensorflow as tf

from alf_rl.environments import suite_tf


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


def load(
    name: str,
    seeds: Sequence[int],
    batch_size: int,
    max_episode_steps: Optional[int] = None,
) -> suite_tf.TFDynamicsEnvironment:
    """P seeds' ``suite_tf`` environments as one batch of P * B.

    Args:
        name: a ``suite_tf`` environment name (e.g. ``'CartPole-v1'``).
        seeds: the P distinct int seeds.
        batch_size: B, environments per seed.
        max_episode_steps: as ``suite_tf.load``.
    Returns:
        A ``TFDynamicsEnvironment`` of batch P * B, seed-major rows.
    Raises:
        ValueError: an unknown name or bad seeds / batch size.
    """
    seeds = tuple(seeds)
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(
            'population.load: seeds must be non-empty and distinct, got %r'
            % (seeds,)
        )
    dynamics = suite_tf.load(name, 1, seed=0).dynamics
    return suite_tf.TFDynamicsEnvironment(
        PopulationDynamics(dynamics, seeds, batch_size),
        len(seeds) * batch_size,
        seed=0,
        max_episode_steps=max_episode_steps,
    )
