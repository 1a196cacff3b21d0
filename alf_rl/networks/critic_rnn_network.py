"""``CriticRnnNetwork``: Q(s, a) with memory, for continuous actions."""

import functools
from typing import Optional, Sequence, Tuple, Union

import gin
import tensorflow as tf

from alf_rl.networks.critic_networks import critic_input_spec
from alf_rl.networks.encoding_network import Activation, EncodingNetwork
from alf_rl.networks.network import Initializer, Network, _ctor_args
from alf_rl.networks.rnn_networks import LSTMEncodingNetwork
from alf_rl.utils.nest import Nest


@gin.configurable
class CriticRnnNetwork(Network):
    """Q(s, a) of a history: the observation and the action encoded
    separately (as in ``CriticNetwork``), concatenated, then an
    ``LSTMEncodingNetwork`` (joint layers -> LSTM -> output layers) ending
    in one linear unit.

    ``critic((observation, action), state) -> ([B] Q, new_state)``, one
    step per call (the recurrent critic of SAC, TD3, DDPG and SARSA).

    Args:
        input_tensor_spec: ``(observation_spec, action_spec)``, nests of
            ``tf.TensorSpec``.
        observation_fc_layer_params: optional hidden sizes for the
            observation alone.
        action_fc_layer_params: optional hidden sizes for the action alone.
        joint_fc_layer_params: hidden sizes after the concatenation,
            before the LSTM.
        lstm_size: int or list of ints, units of each stacked LSTM layer.
        output_fc_layer_params: hidden sizes after the LSTM.
        activation: hidden activation (ReLU by default).
        kernel_initializer: kernels' initializer (default Glorot-uniform).
        name: module name.

    Raises:
        ValueError: ``input_tensor_spec`` is not a pair, or a bad
            ``lstm_size``.
    """

    def __init__(
        self,
        input_tensor_spec: Tuple[Nest, Nest],
        observation_fc_layer_params: Optional[Sequence[int]] = None,
        action_fc_layer_params: Optional[Sequence[int]] = None,
        joint_fc_layer_params: Optional[Sequence[int]] = (64,),
        lstm_size: Union[int, Sequence[int]] = (32,),
        output_fc_layer_params: Optional[Sequence[int]] = (),
        activation: Activation = tf.nn.relu,
        kernel_initializer: Initializer = None,
        name: str = 'CriticRnnNetwork',
    ):
        ctor_args = _ctor_args(locals())
        input_tensor_spec = critic_input_spec(name, input_tensor_spec)
        super().__init__(input_tensor_spec, name=name)
        self._set_ctor_args(ctor_args)
        observation_spec, action_spec = input_tensor_spec
        mlp = functools.partial(
            EncodingNetwork,
            activation=activation,
            kernel_initializer=kernel_initializer,
        )
        with self.name_scope:
            self._observation_encoder = mlp(
                observation_spec,
                fc_layer_params=observation_fc_layer_params,
                name='observation_encoder',
            )
            self._action_encoder = mlp(
                action_spec,
                fc_layer_params=action_fc_layer_params,
                name='action_encoder',
            )
            joint_size = (
                self._observation_encoder.output_size
                + self._action_encoder.output_size
            )
            self._joint = LSTMEncodingNetwork(
                tf.TensorSpec([joint_size], tf.float32),
                input_fc_layer_params=joint_fc_layer_params,
                lstm_size=lstm_size,
                output_fc_layer_params=output_fc_layer_params,
                activation=activation,
                kernel_initializer=kernel_initializer,
                last_layer_size=1,
                name='joint',
            )
        self._state_spec = self._joint.state_spec

    # Narrower than Network._call's nest on purpose: a critic takes a pair.
    def _call(  # type: ignore[override]
        self, inputs: Tuple[Nest, Nest], state: Nest, outer_rank: int
    ) -> Tuple[tf.Tensor, Nest]:
        """Q(s, a) and the new state.

        Args:
            inputs: ``(observation, action)`` with outer dims [B].
            state: the LSTM state ([B, n] leaves; ``()``: zeros).
        Returns:
            ``(q, state)``: [B] float32 and the new LSTM state.
        """
        observation, action = inputs
        h_o, _ = self._observation_encoder(observation)
        h_a, _ = self._action_encoder(action)
        q, state = self._joint(tf.concat([h_o, h_a], -1), state)
        return tf.squeeze(q, -1), state
