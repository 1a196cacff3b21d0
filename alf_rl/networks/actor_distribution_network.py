"""``ActorDistributionNetwork``: observation -> nest of action distributions."""

import functools
from typing import Any, Callable, List

import gin
import tensorflow as tf

from alf_rl import specs as alf_specs
from alf_rl.networks.encoder_head import EncoderCtor, EncoderHead
from alf_rl.networks.encoding_network import EncodingNetwork
from alf_rl.networks.network import _ctor_args
from alf_rl.networks.projection_networks import (CategoricalProjectionNetwork,
                                                 NormalProjectionNetwork)
from alf_rl.utils import nest as nest_utils
from alf_rl.utils.nest import Nest

# ``ctor(input_size, action_spec) -> module`` mapping [B, D] features to the
# distribution of one action leaf.
ProjectionCtor = Callable[[int, tf.TensorSpec], tf.Module]


def make_projection_networks(
        input_size: int, action_spec: Nest,
        discrete_projection_net_ctor: ProjectionCtor,
        continuous_projection_net_ctor: ProjectionCtor) -> List[tf.Module]:
    """One projection module per action leaf (``tf.nest.flatten`` order).

    Args:
        input_size: D, the size of the features fed to the projections.
        action_spec: nest of bounded action specs.
        discrete_projection_net_ctor: ``ctor(input_size, spec)`` for integer
            leaves.
        continuous_projection_net_ctor: ``ctor(input_size, spec)`` for float
            leaves.

    Returns:
        A list of projection modules.

    Raises:
        ValueError: an action leaf with an unsupported spec (message names
            its path).
    """
    projections = []
    for path, spec in nest_utils.flatten_with_path(action_spec,
                                                   'action_spec'):
        if alf_specs.is_discrete(spec):
            if not alf_specs.is_bounded(spec) or spec.dtype == tf.bool:
                raise ValueError(
                    "%s: a discrete action needs a BoundedTensorSpec "
                    "with an integer dtype, got %s" % (path, spec))
            ctor = discrete_projection_net_ctor
        elif alf_specs.is_continuous(spec):
            ctor = continuous_projection_net_ctor
        else:
            raise ValueError("%s: unsupported action dtype in %s" %
                             (path, spec))
        projections.append(ctor(input_size, spec))
    return projections


class ActorDistributionHead(EncoderHead):
    """An encoder, then one projection per action leaf.

    The shared body of ``ActorDistributionNetwork`` (feed-forward encoder)
    and ``ActorDistributionRnnNetwork`` (LSTM encoder); see the former for
    the arguments. Both subclass this, not each other: gin wraps a
    configurable's ``__init__``, so a ``super().__init__`` into the other
    would apply that class's bindings too.
    """

    def __init__(self, input_tensor_spec: Nest, action_spec: Nest,
                 encoding_network_ctor: EncoderCtor,
                 discrete_projection_net_ctor: ProjectionCtor,
                 continuous_projection_net_ctor: ProjectionCtor, name: str,
                 **encoder_kwargs: Any):
        super().__init__(input_tensor_spec,
                         _ctor_args(locals(), 'encoder_kwargs'), name)
        self._action_spec = action_spec
        with self.name_scope:
            self._encoder = self._make_encoder(encoding_network_ctor,
                                               encoder_kwargs)
            self._projections = make_projection_networks(
                self._encoder.output_size, action_spec,
                discrete_projection_net_ctor, continuous_projection_net_ctor)

    @property
    def action_spec(self) -> Nest:
        """Nest of action specs."""
        return self._action_spec

    def _head(self, encoding: tf.Tensor) -> Nest:
        """A nest like ``action_spec`` of distributions with batch shape [B]
        (or [T, B]) from the encoding [B, D] (or [T, B, D])."""
        dists = [proj(encoding) for proj in self._projections]
        return tf.nest.pack_sequence_as(self._action_spec, dists)


@gin.configurable
class ActorDistributionNetwork(ActorDistributionHead):
    """Encodes the observation, then projects it to one distribution per
    action leaf: ``net(observation, state=()) -> (distributions, state)``,
    distributions with batch shape [B] (or [T, B]).

    Integer action leaves (bounded, scalar or vector) use
    ``discrete_projection_net_ctor`` (default ``CategoricalProjectionNetwork``,
    samples in the spec's dtype and range); float leaves use
    ``continuous_projection_net_ctor`` (default ``NormalProjectionNetwork``;
    bind ``NormalProjectionNetwork.scale_distribution=True`` or pass a
    ``functools.partial`` for the tanh-squashed normal of SAC).

    The encoder's hidden activation defaults to ReLU (as TF-Agents/ALF); for
    on-policy methods on continuous control, ``activation=tf.nn.tanh`` (as
    Stable-Baselines3's PPO) is a common alternative.

    Args:
        input_tensor_spec: nest of ``tf.TensorSpec`` of one observation.
        action_spec: nest of ``BoundedTensorSpec`` (integer leaves must be
            bounded; float leaves may be unbounded unless the continuous
            projection needs bounds).
        encoding_network_ctor: builds the encoder (see ``EncoderCtor``);
            default an ``EncodingNetwork`` with ``fc_layer_params=(64,
            64)``. ``LSTMEncodingNetwork`` gives a recurrent actor (as
            ``ActorDistributionRnnNetwork``).
        discrete_projection_net_ctor: ``ctor(input_size, action_spec)`` ->
            projection module for an integer leaf.
        continuous_projection_net_ctor: ``ctor(input_size, action_spec)`` ->
            projection module for a float leaf.
        name: module name.
        **encoder_kwargs: ``encoding_network_ctor``'s arguments, e.g.
            ``fc_layer_params``, ``activation`` (see ``EncodingNetwork``).

    Raises:
        ValueError: an action leaf with an unsupported spec (message names
            its path).
        TypeError: an encoder argument that ``encoding_network_ctor`` does
            not take.
    """

    def __init__(self,
                 input_tensor_spec: Nest,
                 action_spec: Nest,
                 encoding_network_ctor: EncoderCtor = functools.partial(
                     EncodingNetwork, fc_layer_params=(64, 64)),
                 discrete_projection_net_ctor: ProjectionCtor = (
                     CategoricalProjectionNetwork),
                 continuous_projection_net_ctor: ProjectionCtor = (
                     NormalProjectionNetwork),
                 name: str = 'ActorDistributionNetwork',
                 **encoder_kwargs: Any):
        super().__init__(input_tensor_spec, action_spec,
                         encoding_network_ctor, discrete_projection_net_ctor,
                         continuous_projection_net_ctor, name,
                         **encoder_kwargs)
