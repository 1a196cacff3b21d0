"""``DIAYNAlgorithm``: the skill discriminator of DIAYN (Eysenbach et al.
2018, "Diversity is All You Need: Learning Skills without a Reward
Function").

A discriminator q(z | s) predicts which of K skills produced state s; the
intrinsic reward for arriving at s_t under skill z is ``log q(z | s_t) -
log p(z)``, with the uniform prior p(z) = 1/K of ``SkillGenerator``: so
``log_softmax(logits(s_t))[z] + log K``, positive when the discriminator
does better than chance. The discriminator is trained by the cross-entropy
``-log q(z | s_t)``. The policy sees the skill (the owning ``Agent`` gives
the skill generator's output to the RL algorithm and to this module as the
second half of the observation pair); the discriminator sees the state
only.

Intrinsic-reward module contract (as ``IcmAlgorithm`` and
``RNDAlgorithm``; what an ``Agent`` relies on):

- ``rollout(time_step, state)``, ``predict(time_step, state)`` and
  ``train_step(time_step_or_experience, state)`` take a ``TimeStep`` or an
  ``Experience`` with [B, ...] leaves (``observation`` -- here the pair
  ``(observation, skill)`` -- and ``step_type`` are read) and return
  ``AlgStep(output=[B] float32 intrinsic reward with stopped gradient,
  state=(), info=DIAYNInfo)``. The reward returned at step t is for the
  transition INTO step t (the library's convention for ``reward[t]``), and
  0 at FIRST steps.
- No normalizer: the log-ratio is already on a fixed scale (at most
  ``log K``); ``rollout``, ``predict`` and ``train_step`` compute the same.
- ``calc_loss(info)`` takes a ``TrainingInfo`` whose ``info`` holds the
  steps' ``DIAYNInfo`` with [T, B] leaves (or that info itself) and returns
  a per-step ``LossInfo`` (``loss`` [T, B] = ``discriminator_loss``;
  ``extra`` the ``DIAYNInfo``, with ``accuracy``).
- Stateless (``()``); FIRST steps are masked inside: a reset observation
  says nothing about the skill just drawn, so it neither earns a reward
  nor trains the discriminator (its loss and accuracy are 0 there; a
  caller averaging ``extra`` over all steps, FIRST ones included, sees an
  accuracy diluted by their fraction).
- ``optimizer``: the discriminator's own, or ``None`` to let the owning
  algorithm's optimizer train it.

Deviations from the paper: none in the reward or the loss; the paper's SAC
with its entropy bonus is the owning agent's business.
"""

import math
from typing import Any, Callable, Optional, Union

import gin
import tensorflow as tf

from alf_rl.algorithms.algorithm import Algorithm, info_of
from alf_rl.data_structures import (AlgStep, Experience, LossInfo, TimeStep,
                                    TrainingInfo, namedtuple)
from alf_rl.networks.encoding_network import EncodingNetwork
from alf_rl.networks.network import Network
from alf_rl.specs import zeros_from_spec
from alf_rl.utils.nest import Nest

DIAYNInfo = namedtuple(
    'DIAYNInfo',
    [
        'discriminator_loss',  # [B] float32 -log q(z | s), 0 at FIRST
        'accuracy',  # [B] float32 1 where argmax q(. | s) = z, 0 at FIRST
    ],
    default_value=())

#: Hidden layers of the default discriminator.
DEFAULT_FC_LAYER_PARAMS = (64, 64)


def _default_discriminator(input_tensor_spec: Nest,
                           last_layer_size: int) -> Network:
    """An MLP with ``DEFAULT_FC_LAYER_PARAMS`` hidden layers and K logits."""
    return EncodingNetwork(input_tensor_spec,
                           fc_layer_params=DEFAULT_FC_LAYER_PARAMS,
                           last_layer_size=last_layer_size,
                           name='DIAYNDiscriminator')


def _num_skills(observation_spec: Any, name: str) -> int:
    """K of an ``(observation_spec, skill_spec)`` pair; ValueError else."""
    if not isinstance(observation_spec, (tuple, list)) or len(
            observation_spec) != 2:
        raise ValueError(
            "%s: observation_spec must be the pair (observation_spec, "
            "skill_spec), got %s -- does the Agent have a skill generator?" %
            (name, type(observation_spec).__name__))
    skill_spec = observation_spec[1]
    if (not isinstance(skill_spec, tf.TensorSpec)
            or skill_spec.shape.rank != 1 or skill_spec.dtype != tf.float32):
        raise ValueError("%s: observation_spec[1] must be the one-hot skill "
                         "spec TensorSpec([K], float32), got %s" %
                         (name, skill_spec))
    num_skills = skill_spec.shape[0]
    if num_skills is None or num_skills < 2:
        raise ValueError("%s: observation_spec[1]: the number of skills K "
                         "must be >= 2, got shape %s" %
                         (name, skill_spec.shape.as_list()))
    return int(num_skills)


@gin.configurable
class DIAYNAlgorithm(Algorithm):
    """A skill discriminator whose log-likelihood ratio is the intrinsic
    reward (see the module docstring).

    Args:
        observation_spec: the pair ``(observation_spec, skill_spec)``: a
            nest of ``tf.TensorSpec`` of the state the discriminator sees
            (the environment's or an encoder's observation) and
            ``tf.TensorSpec([K], tf.float32)`` of the one-hot skill.
        action_spec: unused (the common intrinsic-module signature).
        discriminator_network_ctor: ``ctor(input_tensor_spec=
            observation_spec[0], last_layer_size=K)`` builds q's network,
            mapping [B, ...] observations to [B, K] logits (default: an MLP
            with ``DEFAULT_FC_LAYER_PARAMS``).
        optimizer: a ``tf_keras`` optimizer, or None to let the owning
            algorithm's optimizer train the discriminator.
        name: module name.

    Raises:
        ValueError: ``observation_spec`` is not such a pair, K < 2, or the
            discriminator does not output [B, K] logits.
    """

    def __init__(self,
                 observation_spec: Nest,
                 action_spec: Any = None,
                 discriminator_network_ctor: Callable[..., Network] = (
                     _default_discriminator),
                 optimizer: Optional[Any] = None,
                 name: str = 'DIAYNAlgorithm'):
        del action_spec
        num_skills = _num_skills(observation_spec, name)
        super().__init__(optimizer=optimizer, name=name)
        self._num_skills = num_skills
        state_spec = observation_spec[0]
        self._discriminator_network = discriminator_network_ctor(
            input_tensor_spec=state_spec, last_layer_size=num_skills)
        logits, _ = self._discriminator_network(
            zeros_from_spec(state_spec, [1]))
        if logits.shape.as_list() != [1, num_skills]:
            raise ValueError(
                "%s: the discriminator must output [B, K=%d] logits, got "
                "shape %s for B=1 -- does discriminator_network_ctor pass "
                "last_layer_size on?" %
                (name, num_skills, logits.shape.as_list()))

    @property
    def discriminator_network(self) -> Network:
        """q: [B, ...] observations -> [B, K] skill logits."""
        return self._discriminator_network

    @property
    def num_skills(self) -> int:
        """K, the number of skills."""
        return self._num_skills

    # ------------------------------------------------------------ steps
    def _step(self, inputs: Union[TimeStep, Experience]) -> AlgStep:
        """Reward, loss and accuracy of the pairs (s_t, z) of ``inputs``."""
        observation, skill = inputs.observation
        logits, _ = self._discriminator_network(observation)
        valid = 1.0 - tf.cast(inputs.is_first(), tf.float32)
        log_q = tf.reduce_sum(skill * tf.nn.log_softmax(logits), -1)
        reward = valid * (tf.stop_gradient(log_q) + math.log(self._num_skills))
        hit = tf.equal(tf.argmax(logits, -1), tf.argmax(skill, -1))
        return AlgStep(output=reward, state=(),
                       info=DIAYNInfo(
                           discriminator_loss=-valid * log_q,
                           accuracy=valid * tf.cast(hit, tf.float32)))

    def predict(self, inputs: Union[TimeStep, Experience],
                state: Nest = ()) -> AlgStep:
        """As ``rollout``."""
        return self._step(inputs)

    def rollout(self, inputs: Union[TimeStep, Experience],
                state: Nest = ()) -> AlgStep:
        """One collection step.

        Args:
            inputs: ``TimeStep`` (or ``Experience``) with [B, ...] leaves:
                ``observation`` the pair ([B, ...] observation s_t, [B, K]
                float32 one-hot skill z) and ``step_type``.
            state: ``()`` (stateless).
        Returns:
            ``AlgStep(output=[B] float32 reward log q(z | s_t) + log K
            (gradient stopped, 0 at FIRST), state=(), info=DIAYNInfo of
            [B] losses and accuracies, 0 at FIRST)``.
        """
        return self._step(inputs)

    def train_step(self, inputs: Union[TimeStep, Experience],
                   state: Nest = ()) -> AlgStep:
        """As ``rollout``, on replayed rows.

        Args/returns as ``rollout``.
        """
        return self._step(inputs)

    # ------------------------------------------------------------ training
    def calc_loss(self, training_info: Union[TrainingInfo, DIAYNInfo]
                  ) -> LossInfo:
        """The discriminator's per-step cross-entropy.

        Args:
            training_info: ``TrainingInfo`` whose ``info`` is the steps'
                ``DIAYNInfo`` ([T, B] leaves), or that ``DIAYNInfo``
                itself.
        Returns:
            ``LossInfo(loss=[T, B] discriminator_loss, extra=DIAYNInfo)``.
        """
        info = info_of(training_info, DIAYNInfo, type(self).__name__)
        return LossInfo(loss=info.discriminator_loss, extra=info)


def discriminator_accuracy(algorithm: DIAYNAlgorithm, observations: Nest,
                           skills: tf.Tensor) -> tf.Tensor:
    """Fraction of observations whose most likely skill is the true one.

    For measuring a trained discriminator on fresh rollouts (chance is
    1/K). FIRST observations should be left out by the caller (they carry
    no skill information).

    Args:
        algorithm: the ``DIAYNAlgorithm`` whose discriminator is measured.
        observations: nest matching ``observation_spec[0]`` with [N, ...]
            leaves (no skill); tensors or arrays.
        skills: [N] integer skill indices in [0, K), the skill each
            observation was collected under (an index outside the range
            counts as a miss).
    Returns:
        [] float32 accuracy in [0, 1]: mean of ``argmax q(. | s) == z``.
    Raises:
        TypeError: ``skills`` is not an integer tensor.
        ValueError: ``skills`` is not a vector.
    """
    skills = tf.convert_to_tensor(skills)
    if not skills.dtype.is_integer:
        raise TypeError("discriminator_accuracy: skills must be [N] integer "
                        "indices, got dtype %s" % skills.dtype.name)
    if skills.shape.rank != 1:
        raise ValueError("discriminator_accuracy: skills must be [N] "
                         "integer indices, got shape %s" %
                         skills.shape.as_list())
    logits, _ = algorithm.discriminator_network(
        tf.nest.map_structure(tf.convert_to_tensor, observations))
    hit = tf.equal(tf.argmax(logits, -1), tf.cast(skills, tf.int64))
    return tf.reduce_mean(tf.cast(hit, tf.float32))
