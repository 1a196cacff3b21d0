"""``ValueNetwork``: observation -> state value V(s)."""

import functools
from typing import Any

import gin
import tensorflow as tf

from alf_rl.networks.encoder_head import EncoderCtor, EncoderHead
from alf_rl.networks.encoding_network import EncodingNetwork
from alf_rl.networks.network import _ctor_args
from alf_rl.utils.nest import Nest


class ValueHead(EncoderHead):
    """An encoder ending in one linear unit, squeezed.

    The shared body of ``ValueNetwork`` (feed-forward encoder) and
    ``ValueRnnNetwork`` (LSTM encoder); see the former for the arguments
    (and ``ActorDistributionHead`` for why both subclass this).
    """

    def __init__(self, input_tensor_spec: Nest,
                 encoding_network_ctor: EncoderCtor, name: str,
                 **encoder_kwargs: Any):
        super().__init__(input_tensor_spec,
                         _ctor_args(locals(), 'encoder_kwargs'), name)
        with self.name_scope:
            # The value unit is the encoder's last layer (its kernel
            # initializer defaults to the encoder's kernel_initializer).
            self._encoder = self._make_encoder(encoding_network_ctor,
                                               encoder_kwargs,
                                               last_layer_size=1)

    def _head(self, value: tf.Tensor) -> tf.Tensor:
        """[B, 1] (or [T, B, 1]) -> the value [B] (or [T, B]) float32."""
        return tf.squeeze(value, -1)


@gin.configurable
class ValueNetwork(ValueHead):
    """V(s): ``net(observation, state=()) -> (value [B] (or [T, B]),
    state)``, an encoder with a final linear unit.

    Args:
        input_tensor_spec: nest of ``tf.TensorSpec`` of one observation.
        encoding_network_ctor: builds the encoder (see ``EncoderCtor``),
            which gets the value unit as its last layer; default an
            ``EncodingNetwork`` with ``fc_layer_params=(64, 64)`` and ReLU.
            ``LSTMEncodingNetwork`` gives a recurrent value network (as
            ``ValueRnnNetwork``).
        name: module name.
        **encoder_kwargs: ``encoding_network_ctor``'s arguments, e.g.
            ``fc_layer_params``, ``activation`` (see ``EncodingNetwork``).

    Raises:
        TypeError: an encoder argument that ``encoding_network_ctor`` does
            not take.
    """

    def __init__(self,
                 input_tensor_spec: Nest,
                 encoding_network_ctor: EncoderCtor = functools.partial(
                     EncodingNetwork, fc_layer_params=(64, 64)),
                 name: str = 'ValueNetwork',
                 **encoder_kwargs: Any):
        super().__init__(input_tensor_spec, encoding_network_ctor, name,
                         **encoder_kwargs)
