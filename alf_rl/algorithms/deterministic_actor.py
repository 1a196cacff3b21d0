"""Pieces shared by the deterministic-actor methods (DDPG, TD3, SARSA).

Not math (that is ``alf_rl.ops.exploration`` and ``alf_rl.ops.losses``):
the exploration-noise configuration, which draws the stateless seeds of each
call from the global generator; the action-spec check; the ``dQ/da`` actor
loss that runs a critic network under an inner tape; and a mixin giving
``predict``/``rollout`` of a deterministic actor with that noise.
"""

from typing import Any, List, Optional, Tuple

import tensorflow as tf

from alf_rl import specs as alf_specs
from alf_rl.data_structures import PolicyStep, TimeStep
from alf_rl.ops.exploration import exploration_noise, half_range
from alf_rl.ops.losses import dqda_loss
from alf_rl.utils import nest as nest_utils
from alf_rl.utils.common import make_stateless_seed, ou_noise_state_spec

from alf_rl.utils.nest import Nest


def leaf_seeds(n: int) -> List[tf.Tensor]:
    """``n`` independent [2] int32 stateless seeds (one per action leaf).

    Draws one seed from the global generator (so the sequence is the same
    eagerly and compiled) and splits it when ``n > 1``.

    Args:
        n: number of seeds (>= 1).
    Returns:
        list of ``n`` [2] int32 tensors.
    """
    if n == 1:
        return [make_stateless_seed()]
    return tf.unstack(
        tf.random.stateless_uniform([n, 2], make_stateless_seed(),
                                    minval=None, maxval=None,
                                    dtype=tf.int32))


def check_continuous_action_spec(action_spec: Nest,
                                 algorithm_name: str) -> None:
    """Raises ValueError unless every leaf is a bounded float spec.

    Args:
        action_spec: nest of action specs.
        algorithm_name: for the message.
    Raises:
        ValueError: names the first offending leaf's path.
    """
    for path, spec in nest_utils.flatten_with_path(action_spec,
                                                   'action_spec'):
        if not (alf_specs.is_continuous(spec) and alf_specs.is_bounded(spec)):
            raise ValueError(
                "%s: %s needs continuous actions (a BoundedTensorSpec with a "
                "float dtype), got %s; use a discrete-action method (DQN, "
                "SAC with a categorical actor) for integer actions" %
                (path, algorithm_name, spec))


class ExplorationNoise(object):
    """Gaussian or Ornstein-Uhlenbeck exploration noise of a continuous
    action nest, in units of each entry's half-range.

    The OU process lives in the rollout state (``state_spec``), one process
    per environment, reset to 0 at FIRST steps by the driver.

    Args:
        action_spec: nest of bounded float specs.
        kind: ``'gaussian'`` or ``'ou'``.
        stddev: noise scale in half-range units (>= 0).
        damping: theta of the OU process.
        name: the owning algorithm's name, for messages.

    Raises:
        ValueError: an unknown ``kind`` or a negative ``stddev``.
    """

    def __init__(self, action_spec: Nest, kind: str, stddev: float,
                 damping: float, name: str):
        if kind not in ('gaussian', 'ou'):
            raise ValueError("%s: exploration_noise must be 'gaussian' or "
                             "'ou', got %r" % (name, kind))
        if stddev < 0:
            raise ValueError("%s: noise_stddev must be >= 0, got %r" %
                             (name, stddev))
        self._action_spec = action_spec
        self._kind = kind
        self._stddev = stddev
        self._damping = damping
        self.half_ranges = [
            half_range(s) for s in tf.nest.flatten(action_spec)
        ]

    @property
    def ou_state_spec(self) -> Nest:
        """Nest like ``action_spec`` of the OU values, or ``()``."""
        if self._kind == 'ou':
            return ou_noise_state_spec(self._action_spec)
        return ()

    def __call__(self, action: Nest,
                 ou_noise: Nest) -> Tuple[Nest, Optional[Nest]]:
        """Noisy action, clipped to the spec.

        Args:
            action: nest of [B, ...] deterministic actions.
            ou_noise: nest like ``action`` of OU values (``'ou'`` only).
        Returns:
            ``(action nest [B, ...] inside the spec, new OU nest or None)``.
        """
        flat = tf.nest.flatten(action)
        ou_tm1 = tf.nest.flatten(ou_noise) if self._kind == 'ou' else None
        noisy, new_ou = exploration_noise(flat, ou_tm1, self.half_ranges,
                                          self._kind, self._stddev,
                                          self._damping, leaf_seeds(len(flat)))
        if new_ou is not None:
            new_ou = tf.nest.pack_sequence_as(self._action_spec, new_ou)
        noisy = tf.nest.pack_sequence_as(self._action_spec, noisy)
        return alf_specs.cast_and_clip_to_spec(noisy,
                                               self._action_spec), new_ou


def actor_dqda_loss(critic_network: Any, observation: Nest, action: Nest,
                    dqda_clipping: Optional[float]) -> tf.Tensor:
    """The deterministic policy gradient loss at ``a = mu(s)``.

    ``dQ/da`` comes from an inner tape that watches only ``action``, so the
    critic's variables get no gradient from the actor's loss.

    Args:
        critic_network: ``((observation, action)) -> ([B] Q, state)``.
        observation: nest of [B, ...].
        action: nest of [B, ...] float32, ``mu(s)`` (differentiable).
        dqda_clipping: optional bound on each entry of dQ/da.
    Returns:
        [B] float32 ``dqda_loss``.
    """
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(action)
        q_pi, _ = critic_network((observation, action))
    dqda = tape.gradient(q_pi, action)
    return dqda_loss(action, dqda, dqda_clipping)


class DeterministicActorMixin(object):
    """``predict`` and ``rollout`` of a deterministic actor ``mu(s)``.

    The class mixing it in sets ``self._actor_network`` (``observation ->
    (action nest, state)``), ``self._noise`` (an ``ExplorationNoise``) and
    ``self._streams`` (a ``NetworkStreams`` with an ``'actor'`` stream;
    its other rollout streams are critics, advanced at the action taken),
    and its rollout state has the fields ``ou_noise`` and ``networks`` (the
    rollout streams' states).
    """

    def predict(self, time_step: TimeStep, state: Nest) -> PolicyStep:
        """Greedy action ``mu(s)``.

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: the actor's state (``()`` if feed-forward).
        Returns:
            ``PolicyStep(action [B, ...] inside the spec, state, ())``.
        """
        step = self._streams.step(state, 'predict')
        action, _ = step('actor', self._actor_network)(time_step.observation)
        action = alf_specs.cast_and_clip_to_spec(action, self._action_spec)
        return PolicyStep(action=action, state=step.state)

    def rollout(self, time_step: TimeStep, state: Nest) -> PolicyStep:
        """Exploration action ``clip(mu(s) + noise * half_range)``.

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: the rollout state (with ``ou_noise``), [B, ...] leaves.
        Returns:
            ``PolicyStep(action [B, ...], rollout state, info=())``.
        """
        observation = time_step.observation
        step = self._streams.step(state.networks, 'rollout')
        action, _ = step('actor', self._actor_network)(observation)
        action, ou_noise = self._noise(action, state.ou_noise)
        if ou_noise is not None:
            state = state._replace(ou_noise=ou_noise)
        for name in self._streams.names('rollout'):
            if name != 'actor':  # a critic, at the action taken
                step(name, self._streams.network(name))((observation, action))
        return PolicyStep(action=action,
                          state=state._replace(networks=step.state))

    def train_state_from_rollout_state(self, state: Nest) -> Nest:
        """Every train stream's state from its rollout stream's stored one
        (``()`` if feed-forward; see ``NetworkStreams.start``).

        Args:
            state: the stored rollout state, [b, ...] leaves.
        Returns:
            the train state.
        """
        return self._streams.start(state.networks)
