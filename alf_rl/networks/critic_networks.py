"""Critics: ``CriticNetwork`` Q(s, a) for continuous actions and
``QNetwork`` Q(s, .) for a discrete action."""

import gin
import tensorflow as tf

from alf_rl import specs as alf_specs
from alf_rl.networks.encoding_network import EncodingNetwork
from alf_rl.networks.network import Network, _ctor_args


@gin.configurable
class CriticNetwork(Network):
    """Q(s, a): encodes observation and action separately, concatenates,
    then a joint MLP ending in one linear unit.

    Called as ``critic((observation, action))``. Integer actions are only
    cast to float32; for discrete actions prefer ``QNetwork``.

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
                 input_tensor_spec,
                 observation_conv_layer_params=None,
                 observation_fc_layer_params=None,
                 action_fc_layer_params=None,
                 joint_fc_layer_params=(256, 256),
                 activation=tf.nn.relu,
                 kernel_initializer=None,
                 name='CriticNetwork'):
        ctor_args = _ctor_args(locals())
        if not (isinstance(input_tensor_spec, (tuple, list))
                and len(input_tensor_spec) == 2):
            raise ValueError(
                "%s: input_tensor_spec must be (observation_spec, "
                "action_spec), got %s" % (name, input_tensor_spec))
        input_tensor_spec = tuple(input_tensor_spec)
        super().__init__(input_tensor_spec, name=name)
        self._set_ctor_args(ctor_args)
        observation_spec, action_spec = input_tensor_spec
        with self.name_scope:
            self._observation_encoder = EncodingNetwork(
                observation_spec,
                conv_layer_params=observation_conv_layer_params,
                fc_layer_params=observation_fc_layer_params,
                activation=activation,
                kernel_initializer=kernel_initializer,
                name='observation_encoder')
            self._action_encoder = EncodingNetwork(
                action_spec,
                fc_layer_params=action_fc_layer_params,
                activation=activation,
                kernel_initializer=kernel_initializer,
                name='action_encoder')
            self._joint = EncodingNetwork(
                tf.TensorSpec([
                    self._observation_encoder.output_size +
                    self._action_encoder.output_size
                ]),
                fc_layer_params=joint_fc_layer_params,
                activation=activation,
                kernel_initializer=kernel_initializer,
                last_layer_size=1,
                last_kernel_initializer=kernel_initializer,
                name='joint')

    def _call(self, inputs, state, outer_rank):
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
class QNetwork(Network):
    """Q(s, .) for a scalar bounded integer action: [B, num_actions].

    Column i is the value of action ``minimum + i``.

    With ``dueling=True`` (Wang et al. 2016, "Dueling Network Architectures
    for Deep Reinforcement Learning") the hidden encoding feeds two linear
    heads, a state value V(s) and advantages A(s, a), combined as
    ``Q(s, a) = V(s) + A(s, a) - mean_a' A(s, a')`` (the paper's
    mean-subtracted form, eq. 9).

    Args:
        input_tensor_spec: nest of ``tf.TensorSpec`` of one observation.
        action_spec: scalar ``BoundedTensorSpec`` with an integer dtype.
        fc_layer_params: hidden layer sizes.
        conv_layer_params: optional conv stack for image leaves.
        activation: hidden activation (ReLU by default).
        preprocessing_combiner: see ``EncodingNetwork``.
        kernel_initializer: kernels' initializer (default Glorot-uniform).
        dueling: use the dueling value/advantage head.
        name: module name.

    Raises:
        ValueError: ``action_spec`` is not a scalar bounded integer spec.
    """

    def __init__(self,
                 input_tensor_spec,
                 action_spec,
                 fc_layer_params=(64, 64),
                 conv_layer_params=None,
                 activation=tf.nn.relu,
                 preprocessing_combiner=None,
                 kernel_initializer=None,
                 dueling=False,
                 name='QNetwork'):
        ctor_args = _ctor_args(locals())
        super().__init__(input_tensor_spec, name=name)
        self._set_ctor_args(ctor_args)
        if (not alf_specs.is_bounded(action_spec) or action_spec.shape.rank
                or not action_spec.dtype.is_integer):
            raise ValueError(
                "%s: action_spec must be a scalar BoundedTensorSpec with an "
                "integer dtype, got %s" % (name, action_spec))
        self._action_spec = action_spec
        self._num_actions = alf_specs.num_discrete_actions(action_spec)
        self._dueling = bool(dueling)
        with self.name_scope:
            self._encoder = EncodingNetwork(
                input_tensor_spec,
                conv_layer_params=conv_layer_params,
                fc_layer_params=fc_layer_params,
                activation=activation,
                preprocessing_combiner=preprocessing_combiner,
                kernel_initializer=kernel_initializer,
                last_layer_size=None if dueling else self._num_actions,
                last_kernel_initializer=kernel_initializer,
                name='encoder')
            if dueling:
                hidden_spec = self._encoder.output_spec
                self._value_head = EncodingNetwork(
                    hidden_spec,
                    last_layer_size=1,
                    last_kernel_initializer=kernel_initializer,
                    name='value_head')
                self._advantage_head = EncodingNetwork(
                    hidden_spec,
                    last_layer_size=self._num_actions,
                    last_kernel_initializer=kernel_initializer,
                    name='advantage_head')

    @property
    def num_actions(self):
        """int: number of action values."""
        return self._num_actions

    def _call(self, observation, state, outer_rank):
        """Q values of every action.

        Returns:
            ``(q_values, state)``: [B, num_actions] (or [T, B, num_actions])
            float32, and ``()``.
        """
        h, _ = self._encoder(observation)
        if not self._dueling:
            return h, state
        value, _ = self._value_head(h)
        advantage, _ = self._advantage_head(h)
        q = value + advantage - tf.reduce_mean(
            advantage, axis=-1, keepdims=True)
        return q, state
