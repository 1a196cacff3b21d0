"""Critics: ``CriticNetwork`` Q(s, a) for continuous actions and
``QNetwork`` Q(s, .) for a discrete action."""

import functools
from typing import Any, Optional, Sequence, Tuple

import gin
import tensorflow as tf

from alf_rl import specs as alf_specs
from alf_rl.networks.encoder_head import EncoderCtor, EncoderHead
from alf_rl.networks.encoding_network import (Activation, ConvLayerParams,
                                              EncodingNetwork)
from alf_rl.networks.network import Initializer, Network, _ctor_args
from alf_rl.utils.nest import Nest


def critic_input_spec(name: str,
                      input_tensor_spec: Any) -> Tuple[Nest, Nest]:
    """``(observation_spec, action_spec)`` of a critic's
    ``input_tensor_spec``.

    Raises:
        ValueError: ``input_tensor_spec`` is not a pair.
    """
    if not (isinstance(input_tensor_spec, (tuple, list))
            and len(input_tensor_spec) == 2):
        raise ValueError(
            "%s: input_tensor_spec must be (observation_spec, "
            "action_spec), got %s" % (name, input_tensor_spec))
    return (input_tensor_spec[0], input_tensor_spec[1])


@gin.configurable
class CriticNetwork(Network):
    """Q(s, a): encodes observation and action separately, concatenates,
    then a joint MLP ending in one linear unit.

    Called as ``critic((observation, action))``. Integer actions are only
    cast to float32; for discrete actions prefer ``QNetwork``. The three
    parts are ``EncodingNetwork``s sharing ``activation`` and
    ``kernel_initializer``.

    Args:
        input_tensor_spec: ``(observation_spec, action_spec)``, nests of
            ``tf.TensorSpec``.
        observation_conv_layer_params: optional conv stack for image leaves.
        observation_fc_layer_params: optional hidden sizes for the
            observation alone.
        action_fc_layer_params: optional hidden sizes for the action alone.
        joint_fc_layer_params: hidden sizes after concatenation.
        activation: hidden activation (ReLU by default).
        kernel_initializer: kernels' initializer (default Glorot-uniform).
        name: module name.

    Raises:
        ValueError: ``input_tensor_spec`` is not a pair.
    """

    def __init__(self,
                 input_tensor_spec: Tuple[Nest, Nest],
                 observation_conv_layer_params: ConvLayerParams = None,
                 observation_fc_layer_params: Optional[Sequence[int]] = None,
                 action_fc_layer_params: Optional[Sequence[int]] = None,
                 joint_fc_layer_params: Optional[Sequence[int]] = (256, 256),
                 activation: Activation = tf.nn.relu,
                 kernel_initializer: Initializer = None,
                 name: str = 'CriticNetwork'):
        ctor_args = _ctor_args(locals())
        input_tensor_spec = critic_input_spec(name, input_tensor_spec)
        super().__init__(input_tensor_spec, name=name)
        self._set_ctor_args(ctor_args)
        observation_spec, action_spec = input_tensor_spec
        mlp = functools.partial(EncodingNetwork, activation=activation,
                                kernel_initializer=kernel_initializer)
        with self.name_scope:
            self._observation_encoder = mlp(
                observation_spec,
                conv_layer_params=observation_conv_layer_params,
                fc_layer_params=observation_fc_layer_params,
                name='observation_encoder')
            self._action_encoder = mlp(action_spec,
                                       fc_layer_params=action_fc_layer_params,
                                       name='action_encoder')
            joint_size = (self._observation_encoder.output_size +
                          self._action_encoder.output_size)
            self._joint = mlp(tf.TensorSpec([joint_size]),
                              fc_layer_params=joint_fc_layer_params,
                              last_layer_size=1, name='joint')

    # Narrower than Network._call's nest on purpose: a critic takes a pair.
    def _call(self, inputs: Tuple[Nest, Nest],  # type: ignore[override]
              state: Nest, outer_rank: int) -> Tuple[tf.Tensor, Nest]:
        """Q(s, a).

        Args:
            inputs: ``(observation, action)`` with outer dims [B] (or
                [T, B]).

        Returns:
            ``(q, state)``: [B] (or [T, B]) float32, and ``()``.
        """
        observation, action = inputs
        h_o, _ = self._observation_encoder(observation)
        h_a, _ = self._action_encoder(action)
        q, _ = self._joint(tf.concat([h_o, h_a], -1))
        return tf.squeeze(q, -1), state


@gin.configurable
class QNetwork(EncoderHead):
    """Q(s, .) for a scalar bounded integer action: ``net(observation,
    state=()) -> ([B, num_actions] (or [T, B, num_actions]), state)``.

    Column i is the value of action ``minimum + i``.

    With ``dueling=True`` (Wang et al. 2016, "Dueling Network Architectures
    for Deep Reinforcement Learning") the hidden encoding feeds two linear
    heads, a state value V(s) and advantages A(s, a), combined as
    ``Q(s, a) = V(s) + A(s, a) - mean_a' A(s, a')`` (the paper's
    mean-subtracted form, eq. 9).

    Args:
        input_tensor_spec: nest of ``tf.TensorSpec`` of one observation.
        action_spec: scalar ``BoundedTensorSpec`` with an integer dtype.
        encoding_network_ctor: builds the encoder (see ``EncoderCtor``),
            which gets the Q output layer as its last layer unless
            ``dueling``; default an ``EncodingNetwork`` with
            ``fc_layer_params=(64, 64)`` and ReLU.
        dueling: use the dueling value/advantage head (its two layers use
            the ``kernel_initializer`` passed to the head, if any).
        name: module name.
        **encoder_kwargs: ``encoding_network_ctor``'s arguments, e.g.
            ``fc_layer_params``, ``activation`` (see ``EncodingNetwork``).

    Raises:
        ValueError: ``action_spec`` is not a scalar bounded integer spec.
        TypeError: an encoder argument that ``encoding_network_ctor`` does
            not take.
    """

    def __init__(self,
                 input_tensor_spec: Nest,
                 action_spec: alf_specs.BoundedTensorSpec,
                 encoding_network_ctor: EncoderCtor = functools.partial(
                     EncodingNetwork, fc_layer_params=(64, 64)),
                 dueling: bool = False,
                 name: str = 'QNetwork',
                 **encoder_kwargs: Any):
        super().__init__(input_tensor_spec,
                         _ctor_args(locals(), 'encoder_kwargs'), name)
        if (not alf_specs.is_bounded(action_spec) or action_spec.shape.rank
                or not action_spec.dtype.is_integer):
            raise ValueError(
                "%s: action_spec must be a scalar BoundedTensorSpec with an "
                "integer dtype, got %s" % (name, action_spec))
        self._action_spec = action_spec
        self._num_actions = alf_specs.num_discrete_actions(action_spec)
        self._dueling = bool(dueling)
        with self.name_scope:
            self._encoder = self._make_encoder(
                encoding_network_ctor, encoder_kwargs,
                last_layer_size=None if dueling else self._num_actions)
            if dueling:
                head = functools.partial(
                    EncodingNetwork,
                    tf.TensorSpec([self._encoder.output_size], tf.float32),
                    kernel_initializer=encoder_kwargs.get(
                        'kernel_initializer'))
                self._value_head = head(last_layer_size=1, name='value_head')
                self._advantage_head = head(last_layer_size=self._num_actions,
                                            name='advantage_head')

    @property
    def num_actions(self) -> int:
        """int: number of action values."""
        return self._num_actions

    def _head(self, h: tf.Tensor) -> tf.Tensor:
        """Q values of every action.

        Args:
            h: the encoding, [B, num_actions] (or [T, B, num_actions]) Q
                values, or [B, D] (or [T, B, D]) hidden features when
                ``dueling``.

        Returns:
            [B, num_actions] (or [T, B, num_actions]) float32.
        """
        if not self._dueling:
            return h
        value, _ = self._value_head(h)
        advantage, _ = self._advantage_head(h)
        return value + advantage - tf.reduce_mean(
            advantage, axis=-1, keepdims=True)
