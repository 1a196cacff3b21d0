"""What the offline algorithms' actors share: their default network, the
action of ``predict`` (greedy) and ``rollout`` (sampled), and
``ActorPolicy``, the two steps from one actor network."""

import functools
from typing import Any, Callable

import tensorflow as tf
import tensorflow_probability as tfp

from alf_rl.data_structures import PolicyStep
from alf_rl.networks import ActorDistributionNetwork
from alf_rl.ops import distributions as dist_ops
from alf_rl.specs import cast_and_clip_to_spec
from alf_rl.utils.common import make_stateless_seed
from alf_rl.utils.nest import Nest

#: The default ``actor_network_ctor``: two hidden layers of 256, as the
#: IQL and CQL papers' MuJoCo actors.
DEFAULT_ACTOR_CTOR: Callable[..., Any] = functools.partial(
    ActorDistributionNetwork, fc_layer_params=(256, 256)
)


def policy_action(output: Nest, action_spec: Nest, greedy: bool) -> Nest:
    """The action of an actor's ``output``, cast and clipped to the spec.

    Args:
        output: a nest of distributions (``greedy``: their mode; else a
            sample, seeded by ``make_stateless_seed``) or of actions
            [B, ...] (a deterministic actor's, taken as they are).
        action_spec: the nest of action specs.
        greedy: the mode rather than a sample.

    Returns:
        the action nest, [B, ...] leaves of the spec's dtypes.
    """
    if isinstance(tf.nest.flatten(output)[0], tfp.distributions.Distribution):
        output = (
            dist_ops.mode(output)
            if greedy
            else dist_ops.sample_action_distribution(
                output, seed=make_stateless_seed()
            )
        )
    return cast_and_clip_to_spec(output, action_spec)


class ActorPolicy(object):
    """``predict`` (greedy) and ``rollout`` (sampled) from
    ``self._actor_network``, for an ``RLAlgorithm`` whose policy is one
    feed-forward actor: mix it in before the algorithm base."""

    _actor_network: Any
    action_spec: Nest

    def predict(self, time_step: Any, state: Nest) -> PolicyStep:
        """Greedy action: the mode (a deterministic actor's output as is).

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: ``()``.
        Returns:
            ``PolicyStep(action [B, ...], (), ())``.
        """
        return self._act(time_step, state, True)

    def rollout(self, time_step: Any, state: Nest) -> PolicyStep:
        """Action sampled from the policy (a deterministic actor's output
        as is).

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: ``()``.
        Returns:
            ``PolicyStep(action [B, ...], (), ())``.
        """
        return self._act(time_step, state, False)

    def _act(self, time_step: Any, state: Nest, greedy: bool) -> PolicyStep:
        output, _ = self._actor_network(time_step.observation)
        return PolicyStep(
            action=policy_action(output, self.action_spec, greedy),
            state=state,
        )
