"""``RNDAlgorithm``: Random Network Distillation (Burda et al. 2018,
"Exploration by Random Network Distillation").

A fixed, randomly initialized target network f and a trained predictor
f^ see the same normalized observation (running mean/std, clipped to
[-5, 5], as the paper); the intrinsic reward is the prediction error
``0.5 ||f^(s') - f(s')||^2`` (summed over outputs; the scale is removed by
the reward normalization), divided by a running std of the intrinsic
return (``ReturnScaleNormalizer``, as the paper). Novel observations are
predicted badly and so rewarded.

An ``IntrinsicRewardModule`` (``alf_rl.algorithms.protocols``: the
contract an ``Agent`` relies on).

RND is stateless (``()``): the reward of step t depends on s' only. The
predictor is trained on every step, FIRST ones included (their
observations are as real as any). The target network is held in a
``TargetNetwork`` (its own random initialization), which variable
collection skips by type: no optimizer ever sees it. Deviations from the
paper: no separate intrinsic value head or non-episodic intrinsic return
(that is the owning agent's business); no fraction of the predictor's
batch is dropped.
"""

from typing import Any, Callable, List, Optional, Union

import gin
import tensorflow as tf

from alf_rl.algorithms.algorithm import Algorithm, info_of
from alf_rl.data_structures import (AlgStep, Experience, LossInfo, TimeStep,
                                    TrainingInfo, namedtuple)
from alf_rl.networks.encoding_network import EncodingNetwork
from alf_rl.networks.network import Network
from alf_rl.networks.target_network import TargetNetwork
from alf_rl.specs import zeros_from_spec
from alf_rl.utils.nest import Nest
from alf_rl.utils.normalizers import (ReturnScaleNormalizer,
                                      StreamingMeanVarNormalizer,
                                      update_reward_normalizer)

RNDInfo = namedtuple(
    'RNDInfo',
    [
        'prediction_loss',  # [B] float32 0.5 ||f^(s') - f(s')||^2
    ],
    default_value=())

#: Hidden layers and output size of the default target and predictor.
DEFAULT_FC_LAYER_PARAMS = (64, 64)
DEFAULT_OUTPUT_SIZE = 64
#: Normalized observations are clipped to [-5, 5] (as the paper).
OBSERVATION_CLIP_VALUE = 5.0


def _default_network(input_tensor_spec: Nest) -> Network:
    """An MLP with ``DEFAULT_FC_LAYER_PARAMS`` hidden layers and a linear
    output of ``DEFAULT_OUTPUT_SIZE``."""
    return EncodingNetwork(input_tensor_spec,
                           fc_layer_params=DEFAULT_FC_LAYER_PARAMS,
                           last_layer_size=DEFAULT_OUTPUT_SIZE,
                           name='RNDNetwork')


def _default_observation_normalizer(observation_spec: Nest) -> Any:
    """Exact running mean/std, normalized values clipped to [-5, 5]."""
    return StreamingMeanVarNormalizer(observation_spec,
                                      clip_value=OBSERVATION_CLIP_VALUE)


@gin.configurable
class RNDAlgorithm(Algorithm):
    """Novelty as the error of predicting a random network's output.

    Args:
        observation_spec: nest of ``tf.TensorSpec`` of one observation.
        action_spec: unused (the ``IntrinsicRewardModule`` constructor
            takes it; the reward depends on the observation only).
        predictor_network_ctor: ``ctor(input_tensor_spec=observation_spec)``
            builds f^, mapping [B, ...] observations to [B, D] (default: an
            MLP with ``DEFAULT_FC_LAYER_PARAMS`` and a linear output of
            ``DEFAULT_OUTPUT_SIZE``).
        target_network_ctor: builds f the same way, with the same D (its
            weights are the initialization, never trained); None: the
            predictor's ctor.
        observation_normalizer_ctor: ``(observation_spec) -> normalizer``
            (``alf_rl.utils.normalizers``), updated at rollout only; None:
            raw observations.
        reward_normalizer_ctor: ``() -> normalizer`` of [B] scalar rewards,
            updated at rollout only; a normalizer with ``uses_step_type``
            receives the step types. None: raw prediction errors.
        optimizer: a ``tf_keras`` optimizer, or None to let the owning
            algorithm's optimizer train the predictor.
        name: module name.

    Raises:
        ValueError: target and predictor outputs that are not [B, D]
            vectors of the same D.
    """

    def __init__(self,
                 observation_spec: Nest,
                 action_spec: Any = None,
                 predictor_network_ctor: Callable[..., Network] = (
                     _default_network),
                 target_network_ctor: Optional[Callable[..., Network]] = None,
                 observation_normalizer_ctor: Optional[Callable[[Nest], Any]] = (
                     _default_observation_normalizer),
                 reward_normalizer_ctor: Optional[Callable[[], Any]] = (
                     ReturnScaleNormalizer),
                 optimizer: Optional[Any] = None,
                 name: str = 'RNDAlgorithm'):
        del action_spec
        super().__init__(optimizer=optimizer, name=name)
        self._observation_spec = observation_spec
        self._predictor_network = predictor_network_ctor(
            input_tensor_spec=observation_spec)
        target_ctor = target_network_ctor or predictor_network_ctor
        # The copy gets its own random initialization; the type keeps its
        # variables out of every optimizer.
        self._target_network = TargetNetwork(
            target_ctor(input_tensor_spec=observation_spec),
            name='target_random_network')
        zeros = zeros_from_spec(observation_spec, [1])
        shapes = [net(zeros)[0].shape.as_list()
                  for net in (self._predictor_network, self._target_network)]
        if len(shapes[0]) != 2 or shapes[0] != shapes[1]:
            raise ValueError(
                "%s: predictor and target must output [B, D] of the same D, "
                "got %s and %s for B=1" % (name, shapes[0], shapes[1]))
        self._observation_normalizer = (
            observation_normalizer_ctor(observation_spec)
            if observation_normalizer_ctor else None)
        self._reward_normalizer = (reward_normalizer_ctor()
                                   if reward_normalizer_ctor else None)

    @property
    def predictor_network(self) -> Network:
        """f^: [B, ...] normalized observations -> [B, D] (trained)."""
        return self._predictor_network

    @property
    def target_network(self) -> Network:
        """f: [B, ...] normalized observations -> [B, D] (fixed)."""
        return self._target_network.network

    def rollout_owned_variables(self) -> List[tf.Variable]:
        """The observation and reward normalizers' statistics, which only
        ``rollout`` updates (see ``Algorithm.rollout_owned_variables``)."""
        return [v for n in (self._observation_normalizer,
                            self._reward_normalizer) if n is not None
                for v in n.variables]

    # ------------------------------------------------------------ steps
    def _step(self, inputs: Union[TimeStep, Experience],
              update_normalizers: bool) -> AlgStep:
        """Prediction loss and reward of the observations of ``inputs``."""
        observation = inputs.observation
        if self._observation_normalizer is not None:
            if update_normalizers:
                self._observation_normalizer.update(observation)
            observation = self._observation_normalizer.normalize(observation)
        target, _ = self._target_network(observation)
        predicted, _ = self._predictor_network(observation)
        prediction_loss = 0.5 * tf.reduce_sum(
            tf.square(predicted - tf.stop_gradient(target)), -1)
        valid = 1.0 - tf.cast(inputs.is_first(), tf.float32)
        reward = valid * tf.stop_gradient(prediction_loss)
        if self._reward_normalizer is not None:
            if update_normalizers:
                update_reward_normalizer(self._reward_normalizer, reward,
                                         inputs.step_type)
            reward = valid * self._reward_normalizer.normalize(reward)
        return AlgStep(output=reward, state=(),
                       info=RNDInfo(prediction_loss=prediction_loss))

    def predict(self, inputs: Union[TimeStep, Experience],
                state: Nest = ()) -> AlgStep:
        """As ``rollout`` without updating the normalizers."""
        return self._step(inputs, update_normalizers=False)

    def rollout(self, inputs: Union[TimeStep, Experience],
                state: Nest = ()) -> AlgStep:
        """One collection step; folds the observations and the raw rewards
        into the normalizers first.

        Args:
            inputs: ``TimeStep`` (or ``Experience``) with [B, ...] leaves:
                ``observation`` (s') and ``step_type``.
            state: ``()`` (stateless).
        Returns:
            ``AlgStep(output=[B] float32 intrinsic reward (gradient
            stopped, 0 at FIRST), state=(), info=RNDInfo of [B] losses)``.
        """
        return self._step(inputs, update_normalizers=True)

    def train_step(self, inputs: Union[TimeStep, Experience],
                   state: Nest = ()) -> AlgStep:
        """As ``rollout`` (on replayed rows) without updating statistics.

        Args/returns as ``rollout``.
        """
        return self._step(inputs, update_normalizers=False)

    # ------------------------------------------------------------ training
    def calc_loss(self, training_info: Union[TrainingInfo, RNDInfo]
                  ) -> LossInfo:
        """The predictor's per-step loss.

        Args:
            training_info: ``TrainingInfo`` whose ``info`` is the steps'
                ``RNDInfo`` ([T, B] leaves), or that ``RNDInfo`` itself.
        Returns:
            ``LossInfo(loss=[T, B] prediction_loss, extra=RNDInfo)``.
        """
        info = info_of(training_info, RNDInfo, type(self).__name__)
        return LossInfo(loss=info.prediction_loss, extra=info)
