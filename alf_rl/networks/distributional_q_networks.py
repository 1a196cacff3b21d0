"""Q networks with several outputs per action: atoms, quantiles, and IQN.

Each is an encoder (``EncodingNetwork`` by default; its arguments pass
through the head, as for ``QNetwork``) followed by a head of fully
connected streams:

- ``DistributionalQNetwork``: ``[..., A, N]`` values per action (or
  ``[..., A]`` with ``num_outputs=None``: scalar Q values with noisy or
  dueling streams); the base of the two below.
- ``CategoricalQNetwork`` (C51, Bellemare et al. 2017):
  ``[..., A, N]`` log-probabilities, a softmax over the atoms of each
  action.
- ``QuantileQNetwork`` (QR-DQN, Dabney et al. 2018a): ``[..., A, N]``
  quantile values.
- ``ImplicitQuantileQNetwork`` (IQN, Dabney et al. 2018b): called with
  sampled fractions ``tau`` [..., K], returns ``[..., A, K]`` quantile
  values at them.

``dueling=True`` (Wang et al. 2016) splits the head into a value stream
V [..., 1, N] and an advantage stream A [..., A, N] combined per output as
``V + A - mean_a A`` (for the categorical head, on the logits before the
softmax, as in Rainbow). ``noisy=True`` makes every layer of the head a
``NoisyDense`` (Fortunato et al. 2018; Rainbow keeps the encoder
deterministic); ``resample_noise()`` draws new noise for all of them.
"""

import functools
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import gin
import tensorflow as tf
import tf_keras

from alf_rl import specs as alf_specs
from alf_rl.networks.encoder_head import EncoderCtor, EncoderHead
from alf_rl.networks.encoding_network import Activation, EncodingNetwork
from alf_rl.networks.network import _ctor_args, build_layer, make_initializer
from alf_rl.networks.noisy import NoisyDense
from alf_rl.ops.distributional import cosine_embedding
from alf_rl.utils.nest import Nest

Layer = Callable[[tf.Tensor], tf.Tensor]


def dueling_combine(
    value: tf.Tensor, advantage: tf.Tensor, action_axis: int
) -> tf.Tensor:
    """``Q = V + A - mean_a A`` (Wang et al. 2016, eq. 9), per output.

    Args:
        value: [..., 1, N] (or [..., 1]) state values.
        advantage: [..., A, N] (or [..., A]) advantages.
        action_axis: the axis of A: -2 (with N outputs) or -1.
    Returns:
        [..., A, N] (or [..., A]).
    """
    return (
        value
        + advantage
        - tf.reduce_mean(advantage, axis=action_axis, keepdims=True)
    )


class _Stream(tf.Module):
    """Hidden layers then an output layer, dense or noisy."""

    def __init__(
        self,
        input_size: int,
        hidden: Sequence[int],
        output_size: int,
        activation: Activation,
        noisy: bool,
        sigma0: float,
        kernel_initializer: Any,
        name: str,
    ):
        super().__init__(name=name)
        self.layers: List[Layer] = []
        activation_fn = tf_keras.activations.get(activation)
        sizes = list(hidden) + [output_size]
        with self.name_scope:
            for i, units in enumerate(sizes):
                act = activation_fn if i < len(hidden) else None
                layer_name = 'fc%d' % i if i < len(hidden) else 'output'
                if noisy:
                    layer: Any = NoisyDense(
                        input_size, units, act, sigma0, name=layer_name
                    )
                else:
                    layer = tf_keras.layers.Dense(
                        units,
                        activation=act,
                        kernel_initializer=make_initializer(
                            kernel_initializer
                        ),
                        name=layer_name,
                    )
                    build_layer(layer, (None, input_size))
                self.layers.append(layer)
                input_size = units

    def __call__(self, h: tf.Tensor) -> tf.Tensor:
        for layer in self.layers:
            h = layer(h)
        return h


@gin.configurable
class DistributionalQNetwork(EncoderHead):
    """Q network with ``num_outputs`` values per action.

    ``net(observation, state=()) -> ([B, A, N] (or [T, B, A, N]), state)``,
    column a the outputs of action ``minimum + a``; ``[B, A]`` when
    ``num_outputs`` is None (a scalar Q network whose head can be noisy).

    Args:
        input_tensor_spec: nest of ``tf.TensorSpec`` of one observation.
        action_spec: scalar ``BoundedTensorSpec`` with an integer dtype.
        num_outputs: N values per action, or None for one (no last dim).
        head_fc_layer_params: hidden sizes of each stream of the head
            (after the encoder).
        dueling: a value and an advantage stream (see the module doc).
        noisy: make the head's layers ``NoisyDense``.
        sigma0: ``NoisyDense``'s σ0.
        activation: activation of the head's hidden layers.
        kernel_initializer: kernel initializer of the head's dense layers
            (and the encoder's, which it is also passed to).
        encoding_network_ctor: builds the encoder (see ``EncoderCtor``);
            default an ``EncodingNetwork`` with ``fc_layer_params=(64,
            64)``.
        name: module name.
        **encoder_kwargs: the encoder's arguments (``fc_layer_params``,
            ``conv_layer_params``, ...).

    Raises:
        ValueError: a bad ``action_spec``, ``num_outputs`` or ``sigma0``.
    """

    def __init__(
        self,
        input_tensor_spec: Nest,
        action_spec: alf_specs.BoundedTensorSpec,
        num_outputs: Optional[int] = None,
        head_fc_layer_params: Sequence[int] = (),
        dueling: bool = False,
        noisy: bool = False,
        sigma0: float = 0.5,
        activation: Activation = tf.nn.relu,
        kernel_initializer: Any = None,
        encoding_network_ctor: EncoderCtor = functools.partial(
            EncodingNetwork, fc_layer_params=(64, 64)
        ),
        name: str = 'DistributionalQNetwork',
        **encoder_kwargs: Any,
    ):
        super().__init__(
            input_tensor_spec, _ctor_args(locals(), 'encoder_kwargs'), name
        )
        self._check_args(action_spec, num_outputs, sigma0)
        self._num_actions = alf_specs.num_discrete_actions(action_spec)
        self._num_outputs = num_outputs
        self._dueling = bool(dueling)
        with self.name_scope:
            self._encoder = self._make_encoder(
                encoding_network_ctor,
                dict(
                    encoder_kwargs,
                    activation=activation,
                    kernel_initializer=kernel_initializer,
                ),
            )
            self._build_head(
                self._head_input_size(activation),
                head_fc_layer_params,
                activation,
                noisy,
                sigma0,
                kernel_initializer,
            )

    def _init_head(
        self,
        ctor_args: Dict[str, Any],
        own: str,
        minimum: int,
        num_outputs: Optional[int],
    ) -> None:
        """The constructor of a head with one integer argument of its own.

        Args:
            ctor_args: the head's ``_ctor_args(locals(), 'kwargs')``, taken
                on its constructor's first line (kept for ``copy()``).
            own: the name of its own argument (the others are this
                class's).
            minimum: the smallest value it may take.
            num_outputs: the ``num_outputs`` it implies.
        Raises:
            ValueError: the argument is below ``minimum``.
        """
        if int(ctor_args[own]) < minimum:
            raise ValueError(
                "%s: %s must be >= %d, got %r"
                % (ctor_args['name'], own, minimum, ctor_args[own])
            )
        args = {k: v for k, v in ctor_args.items() if k != own}
        DistributionalQNetwork.__init__(self, num_outputs=num_outputs, **args)
        self._set_ctor_args(ctor_args)

    def _check_args(
        self, action_spec: Any, num_outputs: Optional[int], sigma0: float
    ) -> None:
        if (
            not alf_specs.is_bounded(action_spec)
            or action_spec.shape.rank
            or not action_spec.dtype.is_integer
        ):
            raise ValueError(
                "%s: action_spec must be a scalar BoundedTensorSpec with an "
                "integer dtype, got %s" % (self.name, action_spec)
            )
        if num_outputs is not None and int(num_outputs) < 1:
            raise ValueError(
                "%s: num_outputs must be >= 1 or None, got %r"
                % (self.name, num_outputs)
            )
        if sigma0 < 0:
            raise ValueError(
                "%s: sigma0 must be >= 0, got %r" % (self.name, sigma0)
            )

    def _head_input_size(self, activation: Activation) -> int:
        """D of the features the streams take (the encoder's)."""
        del activation
        return self._encoder.output_size

    def _build_head(
        self,
        size: int,
        hidden: Sequence[int],
        activation: Activation,
        noisy: bool,
        sigma0: float,
        kernel_initializer: Any,
    ) -> None:
        n = self._num_outputs or 1
        stream = functools.partial(
            _Stream,
            size,
            hidden,
            activation=activation,
            noisy=noisy,
            sigma0=sigma0,
            kernel_initializer=kernel_initializer,
        )
        self._advantage_stream = stream(
            self._num_actions * n,
            name='advantage_stream' if self._dueling else 'q_stream',
        )
        self._value_stream = (
            stream(n, name='value_stream') if self._dueling else None
        )

    @property
    def num_actions(self) -> int:
        """int: A, the number of actions."""
        return self._num_actions

    @property
    def num_outputs(self) -> Optional[int]:
        """N values per action (None: one, without a last dim)."""
        return self._num_outputs

    @property
    def noisy_layers(self) -> List[NoisyDense]:
        """The head's ``NoisyDense`` layers (empty unless ``noisy``)."""
        return [m for m in self.submodules if isinstance(m, NoisyDense)]

    def resample_noise(self) -> None:
        """Draws new noise for every ``NoisyDense`` layer (none: no-op)."""
        for layer in self.noisy_layers:
            layer.resample()

    def _per_action(self, x: tf.Tensor, n: int) -> tf.Tensor:
        """[..., k * n] -> [..., k, n] (or [..., k] without outputs)."""
        if self._num_outputs is None:
            return x
        shape = tf.concat([tf.shape(x)[:-1], [-1, n]], 0)
        out = tf.reshape(x, shape)
        out.set_shape(x.shape[:-1].concatenate([None, n]))
        return out

    def _values(self, h: tf.Tensor) -> tf.Tensor:
        """Per-action outputs of the features ``h`` [..., D]."""
        n = self._num_outputs or 1
        advantage = self._per_action(self._advantage_stream(h), n)
        if self._value_stream is None:
            return advantage
        value = self._per_action(self._value_stream(h), n)
        return dueling_combine(
            value, advantage, -1 if self._num_outputs is None else -2
        )

    def _head(self, h: tf.Tensor) -> tf.Tensor:
        """[..., A, N] (or [..., A]) outputs of the encoding [..., D]."""
        return self._values(h)


@gin.configurable
class CategoricalQNetwork(DistributionalQNetwork):
    """C51's head: log-probabilities over ``num_atoms`` atoms per action.

    ``net(observation) -> ([B, A, N] (or [T, B, A, N]) log p, state)``,
    a log-softmax over the last axis. The atoms' values are the
    algorithm's (``CategoricalValues``).

    Args:
        input_tensor_spec: nest of ``tf.TensorSpec`` of one observation.
        action_spec: scalar ``BoundedTensorSpec`` with an integer dtype.
        num_atoms: N >= 2 (51 in the paper).
        name: module name.
        **kwargs: ``DistributionalQNetwork``'s other arguments (dueling,
            noisy, the encoder's).
    """

    def __init__(
        self,
        input_tensor_spec: Nest,
        action_spec: alf_specs.BoundedTensorSpec,
        num_atoms: int = 51,
        name: str = 'CategoricalQNetwork',
        **kwargs: Any,
    ):
        ctor_args = _ctor_args(locals(), 'kwargs')
        self._init_head(ctor_args, 'num_atoms', 2, int(num_atoms))

    def _head(self, h: tf.Tensor) -> tf.Tensor:
        return tf.nn.log_softmax(self._values(h), axis=-1)


@gin.configurable
class QuantileQNetwork(DistributionalQNetwork):
    """QR-DQN's head: ``num_quantiles`` quantile values per action.

    ``net(observation) -> ([B, A, N] (or [T, B, A, N]), state)``; output n
    estimates the quantile at fraction ``(2n + 1) / (2N)``.

    Args:
        input_tensor_spec: nest of ``tf.TensorSpec`` of one observation.
        action_spec: scalar ``BoundedTensorSpec`` with an integer dtype.
        num_quantiles: N >= 1 (200 in the paper).
        name: module name.
        **kwargs: ``DistributionalQNetwork``'s other arguments.
    """

    def __init__(
        self,
        input_tensor_spec: Nest,
        action_spec: alf_specs.BoundedTensorSpec,
        num_quantiles: int = 200,
        name: str = 'QuantileQNetwork',
        **kwargs: Any,
    ):
        ctor_args = _ctor_args(locals(), 'kwargs')
        self._init_head(ctor_args, 'num_quantiles', 1, int(num_quantiles))


@gin.configurable
class ImplicitQuantileQNetwork(DistributionalQNetwork):
    """IQN's head: quantile values at sampled fractions ``tau``.

    ``net(observation, tau=tau) -> ([B, A, K] (or [T, B, A, K]), state)``
    for ``tau`` [B, K] (or [T, B, K]). The encoding ψ(s) [..., D] is
    multiplied element-wise by ``φ(τ) = ReLU(W cos(π i τ) + b)``
    (``cosine_embedding``, i = 0..n-1) [..., K, D]; the head maps each
    product to A values (IQN eq. 4).

    Args:
        input_tensor_spec: nest of ``tf.TensorSpec`` of one observation.
        action_spec: scalar ``BoundedTensorSpec`` with an integer dtype.
        embedding_dim: n, the cosine features of one fraction (64 in the
            paper).
        name: module name.
        **kwargs: ``DistributionalQNetwork``'s other arguments.
    """

    def __init__(
        self,
        input_tensor_spec: Nest,
        action_spec: alf_specs.BoundedTensorSpec,
        embedding_dim: int = 64,
        name: str = 'ImplicitQuantileQNetwork',
        **kwargs: Any,
    ):
        ctor_args = _ctor_args(locals(), 'kwargs')
        self._embedding_dim = int(embedding_dim)
        self._init_head(ctor_args, 'embedding_dim', 1, None)

    def _head_input_size(self, activation: Activation) -> int:
        del activation
        size = self._encoder.output_size
        # φ(τ): built here, between the encoder and the streams.
        self._tau_embedding = tf_keras.layers.Dense(
            size, activation=tf.nn.relu, name='tau_embedding'
        )
        build_layer(self._tau_embedding, (None, self._embedding_dim))
        return size

    def __call__(
        self,
        observation: Nest,
        state: Nest = (),
        tau: Optional[tf.Tensor] = None,
    ) -> Tuple[Any, Nest]:
        """Quantile values at ``tau``.

        Args:
            observation: nest of [B, ...] (or [T, B, ...]) tensors.
            state: ``()`` (or the encoder's state).
            tau: [B, K] (or [T, B, K]) float32 fractions in [0, 1].
        Returns:
            ``([B, A, K] (or [T, B, A, K]) float32, state)``.
        Raises:
            ValueError: ``tau`` not given.
        """
        if tau is None:
            raise ValueError(
                "%s: tau (the [B, K] sampled fractions) must "
                "be given" % self.name
            )
        self._check_input(observation)
        psi, state = self._encoder(observation, state)
        phi = self._tau_embedding(cosine_embedding(tau, self._embedding_dim))
        values = self._values(psi[..., None, :] * phi)  # [..., K, A]
        return tf.linalg.matrix_transpose(values), state
