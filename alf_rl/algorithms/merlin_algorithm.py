"""MERLIN (Wayne et al. 2018, "Unsupervised Predictive Memory in a
Goal-Directed Agent"): a memory-based predictor trained by its own loss
and a policy that reads its latent and its memory (ALF's
``merlin_algorithm.py``).

``MemoryBasedPredictor`` (MBP), one step t:

1. prior ``p(z_t) = N(mu_p, exp(log_var_p))`` from ``(h_{t-1},
   m_{t-1})``, the LSTM's last output and the previous memory read (and
   ``a_{t-1}`` with ``use_action_in_prior``: the action just taken, so
   that the prior can predict the reward it earns);
2. posterior ``q(z_t)`` from the encoded ``(o_t, a_{t-1}, r_t)``, a
   residual over the prior (``VariationalAutoEncoder``); ``z_t`` sampled;
3. ``h_t = LSTM([z_t, a_{t-1}, m_{t-1}], h_{t-1})``; K read keys and
   strengths from ``h_t`` read ``m_t`` from the memory
   (``MemoryWithUsage``); ``z_t`` is written to its least-used slot;
4. decoders reconstruct ``o_t``, ``r_t`` and ``a_{t-1}`` from ``z_t``
   (``DecodingAlgorithm``s); the loss is the decoders' plus ``beta *
   KL(q || p)``.

The policy is any on-policy RL algorithm of the library (default
``ActorCriticAlgorithm``) whose observation is ``[z_t, m_t]``, with the
gradient stopped: as in the paper, the policy's loss does not train the
predictor. With ``num_policy_read_keys`` Kp > 0 the policy also reads the
memory (after the write of ``z_t``) with Kp keys of its own, generated
from ``[z_t, m_t]`` by a layer that the policy's loss trains (the paper's
policy reads): its observation is then ``[z_t, m_t, m~_t]``. Its state
(the LSTM state, the previous read, the memory) travels with the policy
state, carried by the drivers and reset at FIRST steps.

``MerlinAlgorithm`` trains on the on-policy driver's unroll (A2C);
``MerlinPPOAlgorithm`` trains a ``PPOAlgorithm`` policy the way PPO with
an RNN trains here: the rollout state (the predictor's memory included) is
stored with the experience, and every training sequence, a whole unroll
of one environment, starts from it and re-runs the predictor, so that
every mini-batch update trains both the predictor's loss and PPO's.

Simplifications against the paper (as ALF's): no retroactive memory
update, no return prediction in the decoder, the policy has no recurrent
core of its own (its reads come from ``[z_t, m_t]``), one LSTM layer's
output for the prior and the keys.
"""

import functools
from typing import (
    Any,
    Callable,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import gin
import tensorflow as tf

from alf_rl.algorithms.actor_critic_algorithm import ActorCriticAlgorithm
from alf_rl.algorithms.algorithm import Algorithm, info_of
from alf_rl.algorithms.memory import MemoryWithUsage
from alf_rl.algorithms.on_policy_algorithm import (
    EpochTraining,
    OnPolicyAlgorithm,
)
from alf_rl.algorithms.ppo_algorithm import PPOAlgorithm
from alf_rl.algorithms.rl_algorithm import RLAlgorithm
from alf_rl.algorithms.training_kind import TrainingKind
from alf_rl.algorithms.vae import (
    DecodingAlgorithm,
    VAEInfo,
    VariationalAutoEncoder,
    squared_error_sum,
)
from alf_rl.data_structures import (
    AlgStep,
    Experience,
    LossInfo,
    PolicyStep,
    TimeStep,
    TrainingInfo,
    experience_to_time_step,
)
from alf_rl.networks.encoding_network import EncodingNetwork
from alf_rl.networks.rnn_networks import LSTMEncodingNetwork
from alf_rl.utils.nest import Nest


class MBPState(NamedTuple):
    """Fields (``()`` where absent):"""

    read: Any = ()  # [B, K * Z] float32 m_{t-1}, the previous memory read
    rnn: Any = ()  # the LSTM's state: one ([B, H], [B, H]) pair per layer
    memory: Any = ()  # MemoryState: [B, N, Z] slots, [B, N] usage


class MBPInfo(NamedTuple):
    """Fields (``()`` where absent):"""

    vae: Any = ()  # VAEInfo of [B] / [B, Z] leaves
    observation_loss: Any = ()  # [B] float32 reconstruction of o_t
    reward_loss: Any = ()  # [B] float32 reconstruction of r_t
    action_loss: Any = ()  # [B] float32 reconstruction of a_{t-1}
    read_attention: Any = ()  # [B, K, N] float32 attention of the read m_t


class MerlinState(NamedTuple):
    """Fields (``()`` where absent):"""

    predictor: Any = ()  # MBPState
    rl: Any = ()  # the policy algorithm's state


class MerlinInfo(NamedTuple):
    """Fields (``()`` where absent):"""

    predictor: Any = ()  # MBPInfo
    rl: Any = ()  # the policy algorithm's info


class MerlinLossInfo(NamedTuple):
    """Fields (``()`` where absent):"""

    predictor_loss: Any = ()  # [T, B] the predictor's loss
    rl_loss: Any = ()  # [T, B] the policy algorithm's loss
    predictor: Any = ()  # MBPInfo of its loss terms
    rl: Any = ()  # the policy algorithm's extra


def _action_size(action_spec: Any) -> int:
    """Size of the action input: number of actions (one-hot) or d."""
    if not isinstance(action_spec, tf.TensorSpec):
        raise ValueError(
            'MemoryBasedPredictor: action_spec must be one '
            'BoundedTensorSpec, got %s' % type(action_spec).__name__
        )
    shape = action_spec.shape.as_list()
    if action_spec.dtype.is_integer and not shape:
        return int(action_spec.maximum) - int(action_spec.minimum) + 1
    if not action_spec.dtype.is_integer and len(shape) == 1:
        return shape[0]
    raise ValueError(
        'MemoryBasedPredictor: action_spec must be a scalar discrete or a '
        '(d,) continuous spec, got %s of shape %s'
        % (action_spec.dtype.name, shape)
    )


def _mlp(
    input_tensor_spec: Nest,
    last_layer_size: Optional[int] = None,
    fc_layer_params: Sequence[int] = (64,),
    name: str = 'EncodingNetwork',
) -> EncodingNetwork:
    return EncodingNetwork(
        input_tensor_spec,
        fc_layer_params=fc_layer_params,
        last_layer_size=last_layer_size,
        name=name,
    )


def _cross_entropy(label: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
    """[B] softmax cross-entropy of [B] int labels."""
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(label, tf.int32), logits=logits
    )


def _check_observation_spec(name: str, observation_spec: Any) -> None:
    """ValueError unless one float ``TensorSpec``."""
    if not (
        isinstance(observation_spec, tf.TensorSpec)
        and observation_spec.dtype.is_floating
    ):
        raise ValueError(
            '%s: observation_spec must be one float TensorSpec (the '
            'decoder reconstructs it), got %s' % (name, observation_spec)
        )


def _recurrent_core(
    latent: tf.TensorSpec,
    action_input: tf.TensorSpec,
    read: tf.TensorSpec,
    lstm_size: Union[int, Sequence[int]],
    memory_size: int,
    usage_decay: float,
) -> Tuple[LSTMEncodingNetwork, MemoryWithUsage]:
    """The predictor's LSTM on ``[z, a, m]`` and its memory, whose keys
    come from the LSTM's output."""
    rnn = LSTMEncodingNetwork(
        (latent, action_input, read),
        input_fc_layer_params=(),
        lstm_size=lstm_size,
        name='lstm',
    )
    z_dim = latent.shape[0]
    memory = MemoryWithUsage(
        z_dim,
        memory_size,
        read.shape[0] // z_dim,
        key_input_size=rnn.output_size,
        usage_decay=usage_decay,
    )
    return rnn, memory


@gin.configurable
class MemoryBasedPredictor(Algorithm):
    """MERLIN's memory-based predictor (see the module docstring).

    Args:
        observation_spec: one float ``TensorSpec`` of one observation.
        action_spec: one ``BoundedTensorSpec``: scalar discrete or (d,)
            continuous.
        z_dim: Z, size of the latent (and of a memory slot).
        memory_size: N, slots of the memory (at least the episode length
            keeps every step of an episode).
        num_read_keys: K, keys per memory read.
        lstm_size: units of the LSTM layer(s).
        usage_decay: the memory's usage decay in (0, 1].
        beta: weight of the KL term.
        use_action_in_prior: the prior also sees ``a_{t-1}`` (else only
            ``(h_{t-1}, m_{t-1})``, whose LSTM input stops at ``a_{t-2}``).
        encoding_network_ctor: ``(input_tensor_spec=) -> Network`` encoding
            ``(o_t, a_{t-1}, r_t)`` to [B, F] for the posterior.
        decoder_ctor: ``(input_tensor_spec=, last_layer_size=) -> Network``
            for the three decoders.
        optimizer: a ``tf_keras`` optimizer for the predictor, or None to
            be trained by the owning algorithm's.
        name: module name.

    Raises:
        ValueError: an unsupported observation or action spec.
    """

    def __init__(
        self,
        observation_spec: Any,
        action_spec: Any,
        z_dim: int = 16,
        memory_size: int = 32,
        num_read_keys: int = 2,
        lstm_size: Union[int, Sequence[int]] = (64,),
        usage_decay: float = 1.0,
        beta: float = 1.0,
        use_action_in_prior: bool = False,
        encoding_network_ctor: Callable[..., Any] = _mlp,
        decoder_ctor: Callable[..., Any] = _mlp,
        optimizer: Optional[Any] = None,
        name: str = 'MemoryBasedPredictor',
    ):
        _check_observation_spec(name, observation_spec)
        num_actions = _action_size(action_spec)
        action_input = tf.TensorSpec([num_actions], tf.float32)
        latent = tf.TensorSpec([z_dim], tf.float32)
        read = tf.TensorSpec([num_read_keys * z_dim], tf.float32)
        rnn, memory = _recurrent_core(
            latent, action_input, read, lstm_size, memory_size, usage_decay
        )
        hidden = tf.TensorSpec([rnn.output_size], tf.float32)
        super().__init__(
            train_state_spec=MBPState(
                read=read, rnn=rnn.state_spec, memory=memory.state_spec
            ),
            optimizer=optimizer,
            name=name,
        )
        self._observation_spec = observation_spec
        self._action_spec = action_spec
        self._num_actions = num_actions
        self._rnn = rnn
        self._memory = memory
        self._use_action_in_prior = bool(use_action_in_prior)
        prior_input: Tuple[Any, ...] = (hidden, read)
        if self._use_action_in_prior:
            prior_input += (action_input,)
        self._vae = VariationalAutoEncoder(
            (observation_spec, action_input, tf.TensorSpec([1], tf.float32)),
            z_dim,
            encoding_network_ctor=encoding_network_ctor,
            prior_input_spec=prior_input,
            prior_network_ctor=functools.partial(_mlp, name='prior_network'),
            beta=beta,
        )
        self._build_decoders(latent, decoder_ctor)

    def _build_decoders(
        self, latent: tf.TensorSpec, decoder_ctor: Callable[..., Any]
    ) -> None:
        """The observation, reward and action ``DecodingAlgorithm``s."""
        action_spec, num_actions = self._action_spec, self._num_actions
        observation_spec = self._observation_spec
        size = observation_spec.shape.num_elements()
        decode = functools.partial(
            DecodingAlgorithm, latent, decoder_ctor=decoder_ctor
        )
        self._observation_decoder = decode(size, name='observation_decoder')
        self._reward_decoder = decode(1, name='reward_decoder')
        self._action_decoder = decode(
            num_actions,
            loss_fn=(
                _cross_entropy
                if action_spec.dtype.is_integer
                else squared_error_sum
            ),
            name='action_decoder',
        )

    @property
    def output_spec(self) -> tf.TensorSpec:
        """Spec of the output ``[z_t, m_t]``: [Z + K * Z] float32."""
        return tf.TensorSpec(
            [self._vae.z_dim + self._memory.read_size], tf.float32
        )

    @property
    def memory(self) -> MemoryWithUsage:
        """The memory (its contents are the state's ``memory``)."""
        return self._memory

    @property
    def vae(self) -> VariationalAutoEncoder:
        """The posterior and prior over ``z_t`` (``vae.prior`` takes
        ``(h_{t-1}, m_{t-1})``, plus the one-hot or continuous ``a_{t-1}``
        with ``use_action_in_prior``)."""
        return self._vae

    def _action_input(self, action: tf.Tensor) -> tf.Tensor:
        """[B, A] float32: one-hot discrete action or the action."""
        if self._action_spec.dtype.is_integer:
            index = tf.cast(action, tf.int32) - int(self._action_spec.minimum)
            return tf.one_hot(index, self._num_actions)
        return tf.cast(action, tf.float32)

    def train_step(self, inputs: Any, state: Any) -> AlgStep:
        """One step of the predictor (module docstring, steps 1-4).

        Args:
            inputs: ``TimeStep`` (or ``Experience``) with [B, ...] leaves:
                ``observation`` o_t, ``prev_action`` a_{t-1}, ``reward``
                r_t.
            state: ``MBPState`` with [B, ...] leaves (zeros at FIRST).
        Returns:
            ``AlgStep(output=[B, Z + K * Z] float32 [z_t, m_t], state=
            MBPState, info=MBPInfo)``.
        """
        action = self._action_input(inputs.prev_action)
        reward = tf.cast(inputs.reward, tf.float32)[:, None]
        observation = tf.cast(inputs.observation, tf.float32)
        prior_input: Tuple[Any, ...] = (state.rnn[-1][0], state.read)
        if self._use_action_in_prior:
            prior_input += (action,)
        z, vae_info = self._vae.encode(
            (observation, action, reward), *self._vae.prior(prior_input)
        )
        hidden, rnn_state = self._rnn((z, action, state.read), state.rnn)
        read, attention, memory = self._memory.generate_keys_and_read(
            hidden, state.memory
        )
        memory = self._memory.write(z, memory)
        flat = tf.reshape(observation, [tf.shape(z)[0], -1])
        observation_loss = self._observation_decoder.train_step((z, flat)).info
        reward_loss = self._reward_decoder.train_step((z, reward)).info
        label = (
            tf.cast(inputs.prev_action, tf.int32)
            - int(self._action_spec.minimum)
            if self._action_spec.dtype.is_integer
            else action
        )
        action_loss = self._action_decoder.train_step((z, label)).info
        return AlgStep(
            output=tf.concat([z, read], -1),
            state=MBPState(read=read, rnn=rnn_state, memory=memory),
            info=MBPInfo(
                vae=vae_info,
                observation_loss=observation_loss.loss,
                reward_loss=reward_loss.loss,
                action_loss=action_loss.loss,
                read_attention=attention,
            ),
        )

    def calc_loss(
        self, training_info: Union[TrainingInfo, MBPInfo]
    ) -> LossInfo:
        """Decoders' losses plus ``beta * KL`` per step.

        Args:
            training_info: ``TrainingInfo`` whose ``info`` is the steps'
                ``MBPInfo`` ([T, B] leaves), or that ``MBPInfo``.
        Returns:
            ``LossInfo(loss=[T, B], extra=MBPInfo(vae=VAEInfo(kl),
            observation_loss, reward_loss, action_loss))``.
        """
        info = info_of(training_info, MBPInfo, type(self).__name__)
        kl = self._vae.calc_loss(info.vae)
        loss = (
            kl.loss
            + info.observation_loss
            + info.reward_loss
            + info.action_loss
        )
        return LossInfo(
            loss=loss,
            extra=info._replace(
                vae=VAEInfo(kl=info.vae.kl), read_attention=()
            ),
        )


_POLICY_KINDS = {
    TrainingKind.UNROLL: (
        "on the on-policy driver's unroll (training_kind UNROLL, e.g. "
        'ActorCriticAlgorithm; for PPO use MerlinPPOAlgorithm)'
    ),
    TrainingKind.EPOCHS: (
        'in epochs over what one iteration collected (training_kind '
        'EPOCHS, e.g. PPOAlgorithm; for A2C use MerlinAlgorithm)'
    ),
}


def _check_policy_algorithm(
    name: str, rl: RLAlgorithm, kind: TrainingKind
) -> None:
    """ValueError unless ``rl`` is trained the way its owner is
    (``kind``), without observation transforms."""
    rl_kind = getattr(rl, 'training_kind', None)
    if rl_kind is not kind:
        raise ValueError(
            '%s: rl_algorithm_ctor must build an algorithm trained %s, got '
            '%s with training_kind %s'
            % (name, _POLICY_KINDS[kind], type(rl).__name__, rl_kind)
        )
    if rl.has_observation_transforms:
        raise ValueError(
            '%s: the policy algorithm sees [z, memory read], not the '
            "observation: give observation transforms to %s's own "
            'arguments instead' % (name, name)
        )


def _policy_memory(
    name: str, predictor: MemoryBasedPredictor, num_read_keys: int
) -> Optional[MemoryWithUsage]:
    """The key layer of the policy's own reads of the predictor's memory
    (None for ``num_read_keys`` 0)."""
    if num_read_keys < 0:
        raise ValueError(
            '%s: num_policy_read_keys must be >= 0, got %r'
            % (name, num_read_keys)
        )
    if not num_read_keys:
        return None
    memory = predictor.memory
    return MemoryWithUsage(
        memory.dim,
        memory.size,
        num_read_keys,
        key_input_size=predictor.output_spec.shape[0],
        name='policy_memory',
    )


@gin.configurable
class MerlinAlgorithm(OnPolicyAlgorithm):
    """MERLIN: a ``MemoryBasedPredictor`` and a policy algorithm on its
    output ``[z_t, m_t]`` (see the module docstring).

    Trained by the ``OnPolicyDriver`` (``OnPolicyTrainer``) like A2C: one
    update per unroll of the sum of both losses; the gradient through the
    unroll reaches what the predictor wrote to its memory earlier in it.

    Args:
        observation_spec: one float ``TensorSpec`` of one observation.
        action_spec: one ``BoundedTensorSpec`` (discrete scalar or (d,)).
        predictor_ctor: ``(observation_spec=, action_spec=) ->
            MemoryBasedPredictor``.
        rl_algorithm_ctor: ``(observation_spec=, action_spec=) ->
            RLAlgorithm`` trained on the driver's unroll (``training_kind``
            UNROLL: ``ActorCriticAlgorithm``; PPO goes with
            ``MerlinPPOAlgorithm``), built with the predictor's
            ``output_spec`` (plus ``Kp * Z`` for the policy's reads) as its
            observation spec.
        num_policy_read_keys: Kp >= 0, keys of the policy's own memory
            reads (0: none), trained by the policy's loss.
        optimizer: trains the parts without an optimizer of their own.
        name: module name.
        **kwargs: passed to ``RLAlgorithm`` (reward shaping, gradient
            clipping, ...).

    Raises:
        ValueError: a policy algorithm not trained as this class is (on
            the unroll; ``MerlinPPOAlgorithm``: in epochs), one
            with observation transforms (it sees ``[z_t, m_t]``), or a
            negative ``num_policy_read_keys``.
    """

    def __init__(
        self,
        observation_spec: Any,
        action_spec: Any,
        predictor_ctor: Callable[..., MemoryBasedPredictor] = (
            MemoryBasedPredictor
        ),
        rl_algorithm_ctor: Callable[..., RLAlgorithm] = ActorCriticAlgorithm,
        num_policy_read_keys: int = 0,
        optimizer: Optional[Any] = None,
        name: str = 'MerlinAlgorithm',
        **kwargs: Any,
    ):
        predictor = predictor_ctor(
            observation_spec=observation_spec, action_spec=action_spec
        )
        policy_memory = _policy_memory(name, predictor, num_policy_read_keys)
        size = predictor.output_spec.shape[0]
        if policy_memory is not None:
            size += policy_memory.read_size
        rl = rl_algorithm_ctor(
            observation_spec=tf.TensorSpec([size], tf.float32),
            action_spec=action_spec,
        )
        _check_policy_algorithm(name, rl, self.training_kind)
        super().__init__(
            observation_spec,
            action_spec,
            train_state_spec=MerlinState(
                predictor=predictor.train_state_spec, rl=rl.train_state_spec
            ),
            predict_state_spec=MerlinState(
                predictor=predictor.train_state_spec,
                rl=rl.predict_state_spec,
            ),
            optimizer=optimizer,
            name=name,
            **kwargs,
        )
        self._predictor = predictor
        self._policy_memory = policy_memory
        self._rl = rl

    @property
    def predictor(self) -> MemoryBasedPredictor:
        """The memory-based predictor."""
        return self._predictor

    @property
    def rl_algorithm(self) -> RLAlgorithm:
        """The policy algorithm."""
        return self._rl

    def env_action(self, action: Nest) -> Nest:
        """The policy algorithm's ``env_action``."""
        return self._rl.env_action(action)

    def _policy_input(
        self, time_step: TimeStep, state: MerlinState
    ) -> Tuple[TimeStep, AlgStep]:
        """The predictor's step and the time step the policy sees."""
        step = self._predictor.train_step(time_step, state.predictor)
        observation = tf.stop_gradient(step.output)
        if self._policy_memory is not None:
            # Only the policy's keys learn from this read; its usage is not
            # kept (the predictor's reads alone decide what is replaced).
            memory = tf.nest.map_structure(tf.stop_gradient, step.state.memory)
            read, _, _ = self._policy_memory.generate_keys_and_read(
                observation, memory
            )
            observation = tf.concat([observation, read], -1)
        return time_step._replace(observation=observation), step

    def predict(self, time_step: Any, state: Any) -> PolicyStep:
        """The predictor's step, then the policy's ``predict``.

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: ``MerlinState`` with [B, ...] leaves.
        Returns:
            ``PolicyStep(action, MerlinState, info=())``.
        """
        policy_time_step, step = self._policy_input(time_step, state)
        policy = self._rl.predict(policy_time_step, state.rl)
        return policy._replace(
            state=MerlinState(predictor=step.state, rl=policy.state), info=()
        )

    def rollout(self, time_step: Any, state: Any) -> PolicyStep:
        """The predictor's step, then the policy's ``rollout``.

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: ``MerlinState`` with [B, ...] leaves.
        Returns:
            ``PolicyStep(action, MerlinState, MerlinInfo(predictor=MBPInfo,
            rl=the policy's info))``.
        """
        return self._rollout(time_step, state, predictor_info=True)

    def _rollout(
        self, time_step: Any, state: Any, predictor_info: bool
    ) -> PolicyStep:
        """``rollout``; without ``predictor_info`` its info's
        ``predictor`` is ``()``."""
        policy_time_step, step = self._policy_input(time_step, state)
        policy = self._rl.rollout(policy_time_step, state.rl)
        return PolicyStep(
            action=policy.action,
            state=MerlinState(predictor=step.state, rl=policy.state),
            info=MerlinInfo(
                predictor=step.info if predictor_info else (), rl=policy.info
            ),
        )

    def preprocess_experience(self, experience: Experience) -> Experience:
        """The policy algorithm's ``preprocess_experience`` (PPO: its
        advantages) on its own rollout info.

        Args:
            experience: ``Experience`` with [T, B, ...] leaves whose
                ``rollout_info`` is a ``MerlinInfo``.
        Returns:
            The experience as the policy algorithm returns it, its
            ``rollout_info.rl`` replaced by the policy's.
        """
        info = experience.rollout_info
        rl = self._rl.preprocess_experience(
            experience._replace(rollout_info=info.rl)
        )
        return rl._replace(rollout_info=info._replace(rl=rl.rollout_info))

    def _rl_training_info(self, training_info: TrainingInfo) -> TrainingInfo:
        """``training_info`` with the policy's own ``info`` (and
        ``rollout_info``, where it is a ``MerlinInfo``)."""
        info = info_of(training_info, MerlinInfo, type(self).__name__)
        rollout_info = training_info.rollout_info
        if isinstance(rollout_info, MerlinInfo):
            rollout_info = rollout_info.rl
        return training_info._replace(info=info.rl, rollout_info=rollout_info)

    def calc_loss(self, training_info: TrainingInfo) -> LossInfo:
        """The predictor's loss plus the policy's.

        Args:
            training_info: ``TrainingInfo`` with [T, B] leaves whose
                ``info`` is a ``MerlinInfo``.
        Returns:
            ``LossInfo(loss=[T, B], extra=MerlinLossInfo)``.
        """
        info = info_of(training_info, MerlinInfo, type(self).__name__)
        predictor = self._predictor.calc_loss(info.predictor)
        rl = self._rl.calc_loss(self._rl_training_info(training_info))
        return LossInfo(
            loss=predictor.loss + rl.loss,
            scalar_loss=rl.scalar_loss,
            extra=MerlinLossInfo(
                predictor_loss=predictor.loss,
                rl_loss=rl.loss,
                predictor=predictor.extra,
                rl=rl.extra,
            ),
        )

    def after_train(self, training_info: TrainingInfo) -> None:
        """The policy algorithm's ``after_train`` on its own info.

        Args:
            training_info: ``TrainingInfo`` with [T, B] leaves.
        """
        self._rl.after_train(self._rl_training_info(training_info))


# (EpochTraining declares training_kind as TrainingKind, RLAlgorithm as
# Optional[TrainingKind].)
@gin.configurable
class MerlinPPOAlgorithm(EpochTraining, MerlinAlgorithm):  # type: ignore[misc]
    """MERLIN with a PPO policy: trained in epochs of mini-batches over
    what one iteration collected (``OffPolicyTrainer`` with
    ``TrainerConfig.clear_replay_buffer=True``), as PPO with an RNN.

    The rollout state (the predictor's LSTM state, last read and memory,
    and the policy's) is stored with every step (``use_rollout_state``);
    each training sequence starts from the state stored with its first
    step and re-runs the predictor over the sequence, so each update
    trains the predictor's loss beside PPO's, with gradients through the
    memory written within the sequence. Sequences should be whole unrolls
    (``TrainerConfig.mini_batch_length = unroll_length``): a shorter one
    starts from a stored memory that it cannot train through. Only the
    policy's info is stored (the predictor's is recomputed).

    Args:
        observation_spec: one float ``TensorSpec`` of one observation.
        action_spec: one ``BoundedTensorSpec`` (discrete scalar or (d,)).
        predictor_ctor: as ``MerlinAlgorithm``'s.
        rl_algorithm_ctor: ``(observation_spec=, action_spec=) ->
            RLAlgorithm`` trained in epochs (``training_kind`` EPOCHS:
            ``PPOAlgorithm``; its ``target_kl`` stops the iteration's
            updates as it does alone).
        num_policy_read_keys: as ``MerlinAlgorithm``'s.
        optimizer: as ``MerlinAlgorithm``'s.
        name: module name.
        **kwargs: passed to ``RLAlgorithm`` (``use_rollout_state`` is
            always True).

    Raises:
        ValueError: a policy algorithm not trained in epochs, or
            ``use_rollout_state=False``; as ``MerlinAlgorithm``.
    """

    def __init__(
        self,
        observation_spec: Any,
        action_spec: Any,
        predictor_ctor: Callable[..., MemoryBasedPredictor] = (
            MemoryBasedPredictor
        ),
        rl_algorithm_ctor: Callable[..., RLAlgorithm] = PPOAlgorithm,
        num_policy_read_keys: int = 0,
        optimizer: Optional[Any] = None,
        name: str = 'MerlinPPOAlgorithm',
        **kwargs: Any,
    ):
        if not kwargs.pop('use_rollout_state', True):
            raise ValueError(
                '%s: use_rollout_state must be True (each training '
                'sequence starts from the stored memory), got False' % name
            )
        super().__init__(
            observation_spec,
            action_spec,
            predictor_ctor=predictor_ctor,
            rl_algorithm_ctor=rl_algorithm_ctor,
            num_policy_read_keys=num_policy_read_keys,
            optimizer=optimizer,
            name=name,
            use_rollout_state=True,
            **kwargs,
        )

    def rollout(self, time_step: Any, state: Any) -> PolicyStep:
        """As ``MerlinAlgorithm.rollout``, without the predictor's info
        (``train_step`` recomputes it).

        Args:
            time_step: ``TimeStep`` with [B, ...] leaves.
            state: ``MerlinState`` with [B, ...] leaves.
        Returns:
            ``PolicyStep(action, MerlinState, MerlinInfo(predictor=(),
            rl=the policy's info))``.
        """
        return self._rollout(time_step, state, predictor_info=False)

    def train_step(self, experience: Any, state: Any) -> PolicyStep:
        """``MerlinAlgorithm.rollout`` on the stored step, with the
        predictor's info.

        Args:
            experience: ``Experience`` with [B, ...] leaves.
            state: ``MerlinState`` with [B, ...] leaves.
        Returns:
            ``PolicyStep(action, MerlinState, MerlinInfo(predictor=MBPInfo,
            rl=the policy's info))``.
        """
        return self._rollout(
            experience_to_time_step(experience), state, predictor_info=True
        )

    def continue_training(
        self, training_info: TrainingInfo, valid_masks: tf.Tensor
    ) -> tf.Tensor:
        """The policy algorithm's ``continue_training`` (PPO's
        ``target_kl``) on its own info.

        Args:
            training_info: the [L, b] ``TrainingInfo`` of the update.
            valid_masks: [L, b] float32 mask of the steps that counted.
        Returns:
            bool scalar tensor.
        """
        return self._rl.continue_training(
            self._rl_training_info(training_info), valid_masks
        )
