"""Recurrent (LSTM) networks: one time step per call, state carried outside.

Recurrent networks take ONE step per call: observations are [B, ...] and the
state is a nest of [B, ...] tensors. Drivers unroll time (they call the
network once per environment step, reset state rows to the initial (zero)
state at FIRST steps with ``reset_state_if_necessary``, and carry the state
through the unroll, under the gradient tape for on-policy training, so the
gradient flows back through time within one training unroll).

The state of an ``LSTMEncodingNetwork`` is a tuple with one ``(h, c)`` pair
per LSTM layer, each leaf ``tf.TensorSpec([lstm_size[i]], tf.float32)``.
"""

import functools
from typing import Any, Optional, Sequence, Tuple, Union, cast

import gin
import tensorflow as tf
import tf_keras

from alf_rl.networks.actor_distribution_network import (ActorDistributionHead,
                                                        ProjectionCtor)
from alf_rl.networks.critic_networks import QNetwork
from alf_rl.networks.encoder_head import EncoderCtor
from alf_rl.networks.encoding_network import (Activation, Combiner,
                                              ConvLayerParams, EncodingNetwork)
from alf_rl.networks.network import (Initializer, Network, _ctor_args,
                                     make_initializer)
from alf_rl.networks.projection_networks import (CategoricalProjectionNetwork,
                                                 NormalProjectionNetwork)
from alf_rl.networks.value_network import ValueHead
from alf_rl import specs as alf_specs
from alf_rl.utils.nest import Nest


def _lstm_sizes(lstm_size: Union[int, Sequence[int]],
                name: str) -> Tuple[int, ...]:
    if isinstance(lstm_size, int):
        lstm_size = (lstm_size, )
    lstm_size = tuple(int(n) for n in lstm_size)
    if not lstm_size or any(n < 1 for n in lstm_size):
        raise ValueError("%s: lstm_size must be a positive int or a non-empty "
                         "list of positive ints, got %r" % (name, lstm_size))
    return lstm_size


def _check_one_step(net: Network, outer_rank: int) -> None:
    if outer_rank != 1:
        # The scope path names the head too (e.g. 'ValueRnnNetwork/encoder').
        raise ValueError(
            "%s: RNN networks take one step at a time: expected [B, ...] "
            "observations (outer rank 1), got outer rank %d (e.g. [T, B, "
            "...]); drivers unroll time and carry the state between calls" %
            (net.name_scope.name.rstrip('/') or net.name, outer_rank))


@gin.configurable
class LSTMEncodingNetwork(Network):
    """Input ``EncodingNetwork`` -> stacked ``LSTMCell``s -> output MLP.

    The recurrent encoder of the heads (default of
    ``ActorDistributionRnnNetwork`` and ``ValueRnnNetwork``; pass it as
    ``encoding_network_ctor`` to any head): ``net(observation [B, ...],
    state) -> ([B, D], new_state)``, one step per call.

    Args:
        input_tensor_spec: nest of ``tf.TensorSpec`` of one observation.
        input_fc_layer_params: hidden layer sizes before the LSTM.
        lstm_size: int or list of ints, units of each stacked LSTM layer.
        output_fc_layer_params: hidden layer sizes after the LSTM.
        activation: activation of the fc (and conv) layers.
        conv_layer_params: optional ``(filters, kernel, strides)`` list for
            image leaves (see ``EncodingNetwork``).
        preprocessing_combiner: see ``EncodingNetwork``.
        kernel_initializer: initializer of the fc/conv kernels and of the
            LSTM input kernels (``None``: Glorot-uniform).
        last_layer_size: optional size of a final dense layer.
        last_activation: activation of the final layer.
        last_kernel_initializer: initializer of the final layer's kernel
            (``None``: ``kernel_initializer``).
        name: module name.

    Raises:
        ValueError: a bad ``lstm_size``.
    """

    def __init__(self,
                 input_tensor_spec: Nest,
                 input_fc_layer_params: Optional[Sequence[int]] = (64, ),
                 lstm_size: Union[int, Sequence[int]] = (32, ),
                 output_fc_layer_params: Optional[Sequence[int]] = (),
                 activation: Activation = tf.nn.relu,
                 conv_layer_params: ConvLayerParams = None,
                 preprocessing_combiner: Combiner = None,
                 kernel_initializer: Initializer = None,
                 last_layer_size: Optional[int] = None,
                 last_activation: Activation = None,
                 last_kernel_initializer: Initializer = None,
                 name: str = 'LSTMEncodingNetwork'):
        ctor_args = _ctor_args(locals())
        sizes = _lstm_sizes(lstm_size, name)
        state_spec = tuple(
            (tf.TensorSpec([n], tf.float32), tf.TensorSpec([n], tf.float32))
            for n in sizes)
        super().__init__(input_tensor_spec, state_spec=state_spec, name=name)
        self._set_ctor_args(ctor_args)
        mlp = functools.partial(EncodingNetwork, activation=activation,
                                kernel_initializer=kernel_initializer)
        with self.name_scope:
            self._input_encoder = mlp(
                input_tensor_spec,
                conv_layer_params=conv_layer_params,
                fc_layer_params=input_fc_layer_params,
                preprocessing_combiner=preprocessing_combiner,
                name='input_encoder')
            size = self._input_encoder.output_size
            self._cells = []
            for i, units in enumerate(sizes):
                cell = tf_keras.layers.LSTMCell(
                    units,
                    kernel_initializer=make_initializer(kernel_initializer),
                    name='lstm%d' % i)
                # Build now so the variables exist after construction.
                with tf.name_scope(cell.name):
                    cell.build((None, size))
                self._cells.append(cell)
                size = units
            self._output_encoder = mlp(
                tf.TensorSpec([size], tf.float32),
                fc_layer_params=output_fc_layer_params,
                last_layer_size=last_layer_size,
                last_activation=last_activation,
                last_kernel_initializer=last_kernel_initializer,
                name='output_encoder')
        self._output_size = self._output_encoder.output_size

    @property
    def output_size(self) -> int:
        """int: size of the output feature."""
        return self._output_size

    def _call(self, observation: Nest, state: Nest,
              outer_rank: int) -> Tuple[tf.Tensor, Nest]:
        """One step.

        Args:
            observation: nest of [B, ...] tensors.
            state: nest like ``state_spec`` of [B, n] tensors; ``()`` means
                the zero (initial) state.

        Returns:
            ``(output [B, D], new_state)``.

        Raises:
            ValueError: the observation has more than one outer dim.
        """
        _check_one_step(self, outer_rank)
        h, _ = self._input_encoder(observation)
        if not tf.nest.flatten(state):
            batch = tf.shape(h)[0]
            state = tf.nest.map_structure(
                lambda s: tf.zeros(tf.concat([[batch], s.shape.as_list()], 0),
                                   s.dtype), self._state_spec)
        tf.nest.assert_same_structure(state, self._state_spec)
        new_state = []
        pairs = cast(Sequence[Any], state)  # ((h, c), ...), checked above
        for cell, (h_state, c_state) in zip(self._cells, pairs):
            h, (h_state, c_state) = cell(h, [h_state, c_state])
            new_state.append((h_state, c_state))
        out, _ = self._output_encoder(h)
        return out, tuple(new_state)


@gin.configurable
class ActorDistributionRnnNetwork(ActorDistributionHead):
    """``LSTMEncodingNetwork`` then one projection per action leaf.

    ``ActorDistributionNetwork`` with an LSTM encoder by default (same
    projection networks): ``net(observation [B, ...], state) ->
    (distributions with batch [B], new_state)``, one step per call.

    Args:
        input_tensor_spec: nest of ``tf.TensorSpec`` of one observation.
        action_spec: nest of bounded action specs.
        encoding_network_ctor: builds the encoder (see ``EncoderCtor``);
            default ``LSTMEncodingNetwork``.
        discrete_projection_net_ctor: projection ctor for integer leaves.
        continuous_projection_net_ctor: projection ctor for float leaves.
        name: module name.
        **encoder_kwargs: ``encoding_network_ctor``'s arguments, e.g.
            ``lstm_size`` (see ``LSTMEncodingNetwork``).

    Raises:
        ValueError: an action leaf with an unsupported spec, or a bad
            ``lstm_size``.
        TypeError: an encoder argument that ``encoding_network_ctor`` does
            not take.
    """

    def __init__(self,
                 input_tensor_spec: Nest,
                 action_spec: Nest,
                 encoding_network_ctor: EncoderCtor = LSTMEncodingNetwork,
                 discrete_projection_net_ctor: ProjectionCtor = (
                     CategoricalProjectionNetwork),
                 continuous_projection_net_ctor: ProjectionCtor = (
                     NormalProjectionNetwork),
                 name: str = 'ActorDistributionRnnNetwork',
                 **encoder_kwargs: Any):
        super().__init__(input_tensor_spec, action_spec,
                         encoding_network_ctor, discrete_projection_net_ctor,
                         continuous_projection_net_ctor, name,
                         **encoder_kwargs)


@gin.configurable
class ValueRnnNetwork(ValueHead):
    """``LSTMEncodingNetwork`` with a final linear unit, squeezed.

    ``ValueNetwork`` with an LSTM encoder by default: ``net(observation
    [B, ...], state) -> (value [B], new_state)``, one step per call.

    Args:
        input_tensor_spec: nest of ``tf.TensorSpec`` of one observation.
        encoding_network_ctor: builds the encoder (see ``EncoderCtor``),
            which gets the value unit as its last layer; default
            ``LSTMEncodingNetwork``.
        name: module name.
        **encoder_kwargs: ``encoding_network_ctor``'s arguments, e.g.
            ``lstm_size`` (see ``LSTMEncodingNetwork``).

    Raises:
        ValueError: a bad ``lstm_size``.
        TypeError: an encoder argument that ``encoding_network_ctor`` does
            not take.
    """

    def __init__(self,
                 input_tensor_spec: Nest,
                 encoding_network_ctor: EncoderCtor = LSTMEncodingNetwork,
                 name: str = 'ValueRnnNetwork',
                 **encoder_kwargs: Any):
        super().__init__(input_tensor_spec, encoding_network_ctor, name,
                         **encoder_kwargs)


@gin.configurable
class QRnnNetwork(QNetwork):
    """``QNetwork`` with an ``LSTMEncodingNetwork`` encoder by default.

    ``net(observation [B, ...], state) -> (Q values [B, num_actions],
    new_state)``, one step per call (R2D2's recurrent Q network; see
    ``DqnAlgorithm``).

    Args:
        input_tensor_spec: nest of ``tf.TensorSpec`` of one observation.
        action_spec: scalar ``BoundedTensorSpec`` with an integer dtype.
        encoding_network_ctor: builds the encoder (see ``EncoderCtor``);
            default ``LSTMEncodingNetwork``.
        dueling: use the dueling value/advantage head.
        name: module name.
        **encoder_kwargs: ``encoding_network_ctor``'s arguments, e.g.
            ``lstm_size`` (see ``LSTMEncodingNetwork``).

    Raises:
        ValueError: ``action_spec`` is not a scalar bounded integer spec,
            or a bad ``lstm_size``.
        TypeError: an encoder argument that ``encoding_network_ctor`` does
            not take.
    """

    def __init__(self,
                 input_tensor_spec: Nest,
                 action_spec: alf_specs.BoundedTensorSpec,
                 encoding_network_ctor: EncoderCtor = LSTMEncodingNetwork,
                 dueling: bool = False,
                 name: str = 'QRnnNetwork',
                 **encoder_kwargs: Any):
        super().__init__(input_tensor_spec, action_spec,
                         encoding_network_ctor=encoding_network_ctor,
                         dueling=dueling, name=name, **encoder_kwargs)
