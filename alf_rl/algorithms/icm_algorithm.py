"""``IcmAlgorithm``: the Intrinsic Curiosity Module (Pathak et al. 2017,
"Curiosity-driven Exploration by Self-supervised Prediction").

A feature encoder phi, a forward model ``f(phi(s), a) -> phi(s')`` and an
inverse model ``g(phi(s), phi(s')) -> a``. The loss is ``(1 - beta) L_I +
beta L_F`` (beta = 0.2, as the paper); the intrinsic reward is the forward
model's error ``0.5 ||f(phi(s), a) - phi(s')||^2`` (summed over features),
optionally divided by a running scale (``reward_normalizer_ctor``, as ALF).

An ``IntrinsicRewardModule`` (``alf_rl.algorithms.protocols``: the
contract an ``Agent`` relies on).

Deviations from the paper: the state carries the previous *observation*
(not its feature), so ``train_step`` on replayed data recomputes phi of
both observations with the current encoder and the encoder gets gradients
through both; the forward loss stops the gradient at its target
``phi(s')`` (as ALF), so the encoder cannot shrink features to make the
forward error vanish; continuous actions use a mean-squared inverse loss.
"""

import functools
from typing import Any, Callable, List, Optional, Union

import gin
import tensorflow as tf

from alf_rl.algorithms.algorithm import Algorithm, info_of
from alf_rl.data_structures import (AlgStep, Experience, LossInfo, TimeStep,
                                    TrainingInfo, namedtuple)
from alf_rl.networks.encoding_network import EncodingNetwork
from alf_rl.networks.network import Network
from alf_rl.specs import zeros_from_spec
from alf_rl.utils.nest import Nest
from alf_rl.utils.normalizers import (AdaptiveScalarNormalizer,
                                      update_reward_normalizer)

ICMInfo = namedtuple(
    'ICMInfo',
    [
        'forward_loss',  # [B] float32 0.5 ||f(phi(s), a) - phi(s')||^2
        'inverse_loss',  # [B] float32 cross-entropy (discrete) or MSE
    ],
    default_value=())

#: Hidden layers of the default encoder, forward and inverse models.
DEFAULT_FC_LAYER_PARAMS = (64, )


def _default_network(input_tensor_spec: Nest,
                     last_layer_size: Optional[int] = None,
                     name: str = 'ICMEncodingNetwork') -> Network:
    """An MLP with ``DEFAULT_FC_LAYER_PARAMS`` hidden layers."""
    return EncodingNetwork(input_tensor_spec,
                           fc_layer_params=DEFAULT_FC_LAYER_PARAMS,
                           last_layer_size=last_layer_size, name=name)


def _output_size(network: Network, input_spec: Nest, what: str) -> int:
    """D of a network mapping [1, ...] inputs to [1, D]; ValueError else."""
    out, _ = network(zeros_from_spec(input_spec, [1]))
    if out.shape.rank != 2:
        raise ValueError("IcmAlgorithm: the %s must output [B, D] vectors, "
                         "got shape %s for B=1" % (what, out.shape.as_list()))
    return int(out.shape[-1])


def _check_action_spec(action_spec: Any) -> int:
    """Size of the inverse model's output for a supported action spec."""
    if not isinstance(action_spec, tf.TensorSpec):
        raise ValueError("IcmAlgorithm: action_spec must be one "
                         "BoundedTensorSpec, got %s" %
                         type(action_spec).__name__)
    shape = action_spec.shape.as_list()
    if action_spec.dtype.is_integer:
        if shape:
            raise ValueError("IcmAlgorithm: a discrete action_spec must be "
                             "scalar (shape ()), got shape %s" % shape)
        return int(action_spec.maximum) - int(action_spec.minimum) + 1
    if len(shape) != 1:
        raise ValueError("IcmAlgorithm: a continuous action_spec must have "
                         "shape (d,), got %s" % shape)
    return shape[0]


@gin.configurable
class IcmAlgorithm(Algorithm):
    """Curiosity from a forward model's error (see the module docstring).

    Args:
        observation_spec: nest of ``tf.TensorSpec`` of one observation.
        action_spec: one ``BoundedTensorSpec``: discrete scalar or
            continuous ``(d,)``.
        encoding_network_ctor: ``ctor(input_tensor_spec=observation_spec)``
            builds phi, mapping [B, ...] observations to [B, D] features
            (default: an MLP with ``DEFAULT_FC_LAYER_PARAMS``).
        forward_network_ctor: ``ctor(input_tensor_spec=(feature_spec,
            action_input_spec), last_layer_size=D)`` builds f (the action
            one-hot for discrete actions).
        inverse_network_ctor: ``ctor(input_tensor_spec=(feature_spec,
            feature_spec), last_layer_size=n)`` builds g; n is the number
            of actions (logits) or the action size.
        beta: weight of the forward loss, in [0, 1].
        reward_normalizer_ctor: ``() -> normalizer`` of [B] scalar rewards
            (``alf_rl.utils.normalizers``), updated at rollout only; a
            normalizer with ``uses_step_type`` receives the step types.
            None: raw forward errors.
        optimizer: a ``tf_keras`` optimizer, or None to let the owning
            algorithm's optimizer train the networks.
        name: module name.

    Raises:
        ValueError: unsupported ``action_spec``, ``beta`` outside [0, 1],
            networks whose outputs are not [B, D] vectors.
    """

    def __init__(self,
                 observation_spec: Nest,
                 action_spec: Any,
                 encoding_network_ctor: Callable[..., Network] = _default_network,
                 forward_network_ctor: Callable[..., Network] = (
                     functools.partial(_default_network,
                                       name='ICMForwardNetwork')),
                 inverse_network_ctor: Callable[..., Network] = (
                     functools.partial(_default_network,
                                       name='ICMInverseNetwork')),
                 beta: float = 0.2,
                 reward_normalizer_ctor: Optional[Callable[[], Any]] = (
                     AdaptiveScalarNormalizer),
                 optimizer: Optional[Any] = None,
                 name: str = 'IcmAlgorithm'):
        if not 0.0 <= beta <= 1.0:
            raise ValueError("%s: beta must be in [0, 1], got %r" %
                             (name, beta))
        num_outputs = _check_action_spec(action_spec)
        super().__init__(train_state_spec=observation_spec,
                         optimizer=optimizer, name=name)
        self._observation_spec = observation_spec
        self._action_spec = action_spec
        self._discrete = action_spec.dtype.is_integer
        self._beta = float(beta)
        self._encoding_network = encoding_network_ctor(
            input_tensor_spec=observation_spec)
        size = _output_size(self._encoding_network, observation_spec,
                            'encoding network')
        feature_spec = tf.TensorSpec([size], tf.float32)
        action_input_spec = tf.TensorSpec(
            [num_outputs] if self._discrete else action_spec.shape,
            tf.float32)
        self._forward_network = forward_network_ctor(
            input_tensor_spec=(feature_spec, action_input_spec),
            last_layer_size=size)
        self._inverse_network = inverse_network_ctor(
            input_tensor_spec=(feature_spec, feature_spec),
            last_layer_size=num_outputs)
        self._num_outputs = num_outputs
        if _output_size(self._forward_network,
                        (feature_spec, action_input_spec),
                        'forward network') != size:
            raise ValueError("%s: the forward network must output the "
                             "feature size %d" % (name, size))
        self._reward_normalizer = (reward_normalizer_ctor()
                                   if reward_normalizer_ctor else None)

    @property
    def encoding_network(self) -> Network:
        """phi: [B, ...] observations -> [B, D] features."""
        return self._encoding_network

    @property
    def forward_network(self) -> Network:
        """f: ([B, D] features, [B, A] action inputs) -> [B, D]."""
        return self._forward_network

    @property
    def inverse_network(self) -> Network:
        """g: ([B, D], [B, D]) features -> [B, n] action logits/values."""
        return self._inverse_network

    def rollout_owned_variables(self) -> List[tf.Variable]:
        """The reward normalizer's statistics, which only ``rollout``
        updates (see ``Algorithm.rollout_owned_variables``)."""
        if self._reward_normalizer is None:
            return []
        return list(self._reward_normalizer.variables)

    # ------------------------------------------------------------ steps
    def _action_input(self, action: tf.Tensor) -> tf.Tensor:
        """[B, A] float32 input of f: one-hot index or the action."""
        if self._discrete:
            index = tf.cast(action, tf.int32) - int(self._action_spec.minimum)
            return tf.one_hot(index, self._num_outputs)
        return tf.cast(action, tf.float32)

    def _inverse_loss(self, prediction: tf.Tensor,
                      action: tf.Tensor) -> tf.Tensor:
        """[B] cross-entropy of the logits or mean squared error."""
        if self._discrete:
            index = tf.cast(action, tf.int32) - int(self._action_spec.minimum)
            return tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=index, logits=prediction)
        return tf.reduce_mean(
            tf.square(prediction - tf.cast(action, tf.float32)), -1)

    def _step(self, inputs: Union[TimeStep, Experience], state: Nest,
              update_normalizer: bool) -> AlgStep:
        """Losses and reward of the transitions (state -> inputs)."""
        valid = 1.0 - tf.cast(inputs.is_first(), tf.float32)
        both = tf.nest.map_structure(lambda p, o: tf.concat([p, o], 0),
                                     state, inputs.observation)
        features, _ = self._encoding_network(both)
        prev_feature, feature = tf.split(features, 2)
        predicted, _ = self._forward_network(
            (prev_feature, self._action_input(inputs.prev_action)))
        forward_loss = valid * 0.5 * tf.reduce_sum(
            tf.square(predicted - tf.stop_gradient(feature)), -1)
        prediction, _ = self._inverse_network((prev_feature, feature))
        inverse_loss = valid * self._inverse_loss(prediction,
                                                  inputs.prev_action)
        reward = tf.stop_gradient(forward_loss)
        if self._reward_normalizer is not None:
            if update_normalizer:
                update_reward_normalizer(self._reward_normalizer, reward,
                                         inputs.step_type)
            reward = valid * self._reward_normalizer.normalize(reward)
        return AlgStep(output=reward, state=inputs.observation,
                       info=ICMInfo(forward_loss=forward_loss,
                                    inverse_loss=inverse_loss))

    def predict(self, inputs: Union[TimeStep, Experience],
                state: Nest) -> AlgStep:
        """As ``rollout`` without updating the reward normalizer."""
        return self._step(inputs, state, update_normalizer=False)

    def rollout(self, inputs: Union[TimeStep, Experience],
                state: Nest) -> AlgStep:
        """One collection step; folds the raw rewards into the normalizer.

        Args:
            inputs: ``TimeStep`` (or ``Experience``) with [B, ...] leaves:
                ``observation`` (s'), ``prev_action`` (a), ``step_type``.
            state: nest matching ``observation_spec`` with [B, ...] leaves,
                the previous observation s (any value at FIRST steps).
        Returns:
            ``AlgStep(output=[B] float32 intrinsic reward (gradient
            stopped, 0 at FIRST), state=the observation s', info=ICMInfo
            of [B] losses, 0 at FIRST)``.
        """
        return self._step(inputs, state, update_normalizer=True)

    def train_step(self, inputs: Union[TimeStep, Experience],
                   state: Nest) -> AlgStep:
        """As ``rollout`` (on replayed rows) without updating statistics.

        Args/returns as ``rollout``.
        """
        return self._step(inputs, state, update_normalizer=False)

    # ------------------------------------------------------------ training
    def calc_loss(self, training_info: Union[TrainingInfo, ICMInfo]
                  ) -> LossInfo:
        """``(1 - beta) inverse_loss + beta forward_loss`` per step.

        Args:
            training_info: ``TrainingInfo`` whose ``info`` is the steps'
                ``ICMInfo`` ([T, B] leaves), or that ``ICMInfo`` itself.
        Returns:
            ``LossInfo(loss=[T, B], extra=ICMInfo(forward_loss,
            inverse_loss))``.
        """
        info = info_of(training_info, ICMInfo, type(self).__name__)
        loss = ((1.0 - self._beta) * info.inverse_loss +
                self._beta * info.forward_loss)
        return LossInfo(loss=loss, extra=info)
