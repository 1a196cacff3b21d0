"""``ActorDistributionNetwork``: observation -> nest of action distributions."""

import gin
import tensorflow as tf

from alf_rl import specs as alf_specs
from alf_rl.networks.encoding_network import EncodingNetwork
from alf_rl.networks.network import Network, _ctor_args
from alf_rl.networks.projection_networks import (CategoricalProjectionNetwork,
                                                 NormalProjectionNetwork)
from alf_rl.utils import nest as nest_utils


def make_projection_networks(input_size, action_spec,
                             discrete_projection_net_ctor,
                             continuous_projection_net_ctor):
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


@gin.configurable
class ActorDistributionNetwork(Network):
    """Encodes the observation, then projects it to one distribution per
    action leaf.

    Integer action leaves (bounded, scalar or vector) use
    ``discrete_projection_net_ctor`` (default ``CategoricalProjectionNetwork``,
    samples in the spec's dtype and range); float leaves use
    ``continuous_projection_net_ctor`` (default ``NormalProjectionNetwork``;
    bind ``NormalProjectionNetwork.scale_distribution=True`` or pass a
    ``functools.partial`` for the tanh-squashed normal of SAC).

    Hidden activation defaults to ReLU (as TF-Agents/ALF); for on-policy
    methods on continuous control, ``activation=tf.nn.tanh`` (as
    Stable-Baselines3's PPO) is a common alternative.

    Args:
        input_tensor_spec: nest of ``tf.TensorSpec`` of one observation.
        action_spec: nest of ``BoundedTensorSpec`` (integer leaves must be
            bounded; float leaves may be unbounded unless the continuous
            projection needs bounds).
        fc_layer_params: hidden layer sizes of the encoder.
        conv_layer_params: optional ``(filters, kernel, strides)`` list for
            image leaves.
        activation: hidden activation.
        preprocessing_combiner: see ``EncodingNetwork``.
        kernel_initializer: hidden kernels' initializer (see
            ``EncodingNetwork``).
        discrete_projection_net_ctor: ``ctor(input_size, action_spec)`` ->
            projection module for an integer leaf.
        continuous_projection_net_ctor: ``ctor(input_size, action_spec)`` ->
            projection module for a float leaf.
        name: module name.

    Raises:
        ValueError: an action leaf with an unsupported spec (message names
            its path).
    """

    def __init__(self,
                 input_tensor_spec,
                 action_spec,
                 fc_layer_params=(64, 64),
                 conv_layer_params=None,
                 activation=tf.nn.relu,
                 preprocessing_combiner=None,
                 kernel_initializer=None,
                 discrete_projection_net_ctor=CategoricalProjectionNetwork,
                 continuous_projection_net_ctor=NormalProjectionNetwork,
                 name='ActorDistributionNetwork'):
        ctor_args = _ctor_args(locals())
        super().__init__(input_tensor_spec, name=name)
        self._set_ctor_args(ctor_args)
        self._action_spec = action_spec
        with self.name_scope:
            self._encoder = EncodingNetwork(
                input_tensor_spec,
                conv_layer_params=conv_layer_params,
                fc_layer_params=fc_layer_params,
                activation=activation,
                preprocessing_combiner=preprocessing_combiner,
                kernel_initializer=kernel_initializer,
                name='encoder')
            self._projections = make_projection_networks(
                self._encoder.output_size, action_spec,
                discrete_projection_net_ctor, continuous_projection_net_ctor)

    @property
    def action_spec(self):
        """Nest of action specs."""
        return self._action_spec

    def _call(self, observation, state, outer_rank):
        """The action distributions.

        Returns:
            ``(distributions, state)``: a nest like ``action_spec`` of
            distributions with batch shape [B] (or [T, B]), and ``()``.
        """
        h, _ = self._encoder(observation)
        dists = [proj(h) for proj in self._projections]
        return tf.nest.pack_sequence_as(self._action_spec, dists), state
