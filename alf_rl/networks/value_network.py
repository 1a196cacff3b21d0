"""``ValueNetwork``: observation -> state value V(s)."""

import gin
import tensorflow as tf

from alf_rl.networks.encoding_network import EncodingNetwork
from alf_rl.networks.network import Network, _ctor_args


@gin.configurable
class ValueNetwork(Network):
    """An ``EncodingNetwork`` with a final linear unit, squeezed.

    Args:
        input_tensor_spec: nest of ``tf.TensorSpec`` of one observation.
        fc_layer_params: hidden layer sizes.
        conv_layer_params: optional ``(filters, kernel, strides)`` list for
            image leaves.
        activation: hidden activation (ReLU by default).
        preprocessing_combiner: see ``EncodingNetwork``.
        kernel_initializer: kernels' initializer (default Glorot-uniform).
        name: module name.
    """

    def __init__(self,
                 input_tensor_spec,
                 fc_layer_params=(64, 64),
                 conv_layer_params=None,
                 activation=tf.nn.relu,
                 preprocessing_combiner=None,
                 kernel_initializer=None,
                 name='ValueNetwork'):
        ctor_args = _ctor_args(locals())
        super().__init__(input_tensor_spec, name=name)
        self._set_ctor_args(ctor_args)
        with self.name_scope:
            self._encoder = EncodingNetwork(
                input_tensor_spec,
                conv_layer_params=conv_layer_params,
                fc_layer_params=fc_layer_params,
                activation=activation,
                preprocessing_combiner=preprocessing_combiner,
                kernel_initializer=kernel_initializer,
                last_layer_size=1,
                last_kernel_initializer=kernel_initializer,
                name='encoder')

    def _call(self, observation, state, outer_rank):
        """The value.

        Returns:
            ``(value, state)``: [B] (or [T, B]) float32, and ``()``.
        """
        value, _ = self._encoder(observation)
        return tf.squeeze(value, -1), state
