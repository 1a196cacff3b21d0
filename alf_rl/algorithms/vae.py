"""``VariationalAutoEncoder``: a VAE as a sub-algorithm (Kingma & Welling
2014, "Auto-Encoding Variational Bayes"), and ``DecodingAlgorithm``: a
decoder trained by a loss the caller gives (ALF's
``decoding_algorithm.py``).

The VAE encodes an input to a diagonal Gaussian posterior
``q(z | x) = N(mu, exp(log_var))``, samples ``z`` by reparameterization
and reports ``KL(q || p)``; its loss is ``beta * KL``. The prior ``p`` is
N(0, I), the output of a learned prior network on a prior input, or a
diagonal Gaussian the caller gives to ``encode``. With a prior other than
N(0, I) the posterior is a residual over it (``mu = mu_p + d_mu``,
``log_var = log_var_p + d_log_var``, the head seeing the prior's
parameters), as in MERLIN. The reconstruction term of the ELBO is the
decoder's: a ``DecodingAlgorithm`` (or any loss) on ``z``, added by the
caller, so ``-ELBO = reconstruction + KL`` (beta = 1).

Deviation from ALF: the VAE is an ``Algorithm`` on ``tf.Module`` networks
(ALF's was a Keras model returning its KL as a Keras loss).
"""

from typing import Any, Callable, NamedTuple, Optional, Tuple

import gin
import tensorflow as tf

from alf_rl.algorithms.algorithm import Algorithm, info_of
from alf_rl.data_structures import AlgStep, LossInfo
from alf_rl.networks.encoding_network import EncodingNetwork
from alf_rl.networks.network import Network
from alf_rl.ops.gaussian import diagonal_gaussian_kl, reparameterized_sample
from alf_rl.utils.common import make_stateless_seed
from alf_rl.utils.nest import Nest


class VAEInfo(NamedTuple):
    """Fields (``()`` where absent):"""

    z_mean: Any = ()  # [B, Z] float32 posterior mean
    z_log_var: Any = ()  # [B, Z] float32 posterior log-variance
    kl: Any = ()  # [B] float32 KL(q || p)


class DecodingInfo(NamedTuple):
    """Fields (``()`` where absent):"""

    loss: Any = ()  # [B] float32 the decoder's loss


#: Hidden layers of the default encoder.
DEFAULT_FC_LAYER_PARAMS = (64,)


def _mlp(
    input_tensor_spec: Nest,
    fc_layer_params: Tuple[int, ...] = DEFAULT_FC_LAYER_PARAMS,
    last_layer_size: Optional[int] = None,
    name: str = 'EncodingNetwork',
) -> Network:
    """An ``EncodingNetwork`` MLP."""
    return EncodingNetwork(
        input_tensor_spec,
        fc_layer_params=fc_layer_params,
        last_layer_size=last_layer_size,
        name=name,
    )


def _check_arguments(
    name: str,
    z_dim: int,
    beta: float,
    prior_input_spec: Optional[Nest],
    prior_network_ctor: Optional[Callable[..., Network]],
    use_given_prior: bool,
) -> None:
    """The constructor's checks of ``VariationalAutoEncoder``."""
    if int(z_dim) < 1:
        raise ValueError('%s: z_dim must be >= 1, got %r' % (name, z_dim))
    if not beta >= 0:
        raise ValueError('%s: beta must be >= 0, got %r' % (name, beta))
    if (prior_network_ctor is None) != (prior_input_spec is None):
        raise ValueError(
            '%s: prior_network_ctor and prior_input_spec go together '
            '(got %s and %s)' % (name, prior_network_ctor, prior_input_spec)
        )
    if prior_network_ctor is not None and use_given_prior:
        raise ValueError(
            '%s: use_given_prior=True with a prior_network_ctor: the '
            'prior is either learned here or given, not both' % name
        )


@gin.configurable
class VariationalAutoEncoder(Algorithm):
    """Encoder to a diagonal Gaussian latent, reparameterized sample and
    ``beta * KL(q || p)`` (see the module docstring).

    Args:
        input_tensor_spec: nest of specs of one input x.
        z_dim: Z, size of the latent.
        encoding_network_ctor: ``(input_tensor_spec=) -> Network`` mapping
            [B, ...] inputs to [B, F] features (default: an MLP with
            ``DEFAULT_FC_LAYER_PARAMS``); a linear head maps them (with the
            prior's parameters when there is a prior) to mean and
            log-variance.
        prior_input_spec: nest of specs of the prior network's input; with
            ``prior_network_ctor``.
        prior_network_ctor: ``(input_tensor_spec=, last_layer_size=2 Z) ->
            Network`` giving the prior's ``[mu_p, log_var_p]``; None: N(0,
            I) unless ``use_given_prior``.
        use_given_prior: the caller gives the prior's parameters to
            ``encode`` (MERLIN's predictor does); the head then sees them.
        beta: weight of the KL term (beta-VAE, Higgins et al. 2017).
        optimizer: a ``tf_keras`` optimizer, or None to be trained by the
            owning algorithm's.
        name: module name.

    Raises:
        ValueError: ``z_dim < 1``, ``beta < 0``, a prior network without
            its input spec, or both a prior network and ``use_given_prior``.
    """

    def __init__(
        self,
        input_tensor_spec: Nest,
        z_dim: int,
        encoding_network_ctor: Callable[..., Network] = _mlp,
        prior_input_spec: Optional[Nest] = None,
        prior_network_ctor: Optional[Callable[..., Network]] = None,
        use_given_prior: bool = False,
        beta: float = 1.0,
        optimizer: Optional[Any] = None,
        name: str = 'VariationalAutoEncoder',
    ):
        _check_arguments(
            name,
            z_dim,
            beta,
            prior_input_spec,
            prior_network_ctor,
            use_given_prior,
        )
        super().__init__(optimizer=optimizer, name=name)
        self._z_dim = int(z_dim)
        self._beta = float(beta)
        self._input_tensor_spec = input_tensor_spec
        self._prior_input_spec = prior_input_spec
        self._has_prior = prior_network_ctor is not None or use_given_prior
        self._use_given_prior = use_given_prior
        self._encoding_network = encoding_network_ctor(
            input_tensor_spec=input_tensor_spec
        )
        feature_spec = tf.TensorSpec(
            [self._encoding_network.output_size], tf.float32
        )
        params_spec = tf.TensorSpec([2 * self._z_dim], tf.float32)
        self._posterior_head = _mlp(
            (feature_spec, params_spec) if self._has_prior else feature_spec,
            fc_layer_params=(),
            last_layer_size=2 * self._z_dim,
            name='posterior_head',
        )
        self._prior_network = (
            prior_network_ctor(
                input_tensor_spec=prior_input_spec,
                last_layer_size=2 * self._z_dim,
            )
            if prior_network_ctor is not None
            else None
        )

    @property
    def z_dim(self) -> int:
        """Z, size of the latent."""
        return self._z_dim

    @property
    def beta(self) -> float:
        """Weight of the KL term."""
        return self._beta

    def prior(self, prior_input: Nest) -> Tuple[tf.Tensor, tf.Tensor]:
        """The learned prior's parameters.

        Args:
            prior_input: nest of [B, ...] tensors of ``prior_input_spec``.
        Returns:
            ``(mu_p [B, Z], log_var_p [B, Z])``.
        Raises:
            ValueError: no prior network.
        """
        if self._prior_network is None:
            raise ValueError(
                '%s.prior: built without a prior_network_ctor' % self.name
            )
        params, _ = self._prior_network(prior_input)
        mu_p, log_var_p = tf.split(params, 2, axis=-1)
        return mu_p, log_var_p

    def encode(
        self,
        x: Nest,
        prior_mean: Optional[tf.Tensor] = None,
        prior_log_var: Optional[tf.Tensor] = None,
    ) -> Tuple[tf.Tensor, VAEInfo]:
        """Posterior, reparameterized sample and KL to the prior.

        Args:
            x: nest of [B, ...] inputs of ``input_tensor_spec``.
            prior_mean: [B, Z] float32 mu_p when the prior is given (or
                learned: from ``prior``); None for N(0, I).
            prior_log_var: [B, Z] float32 log_var_p, with ``prior_mean``.
        Returns:
            ``(z [B, Z], VAEInfo(z_mean, z_log_var, kl [B]))``.
        Raises:
            ValueError: a prior given to a VAE without one, or none given
                to one with one.
        """
        if (prior_mean is not None) != self._has_prior:
            raise ValueError(
                '%s.encode: %s'
                % (
                    self.name,
                    'expected the prior mean and log-variance'
                    if self._has_prior
                    else 'a prior was given '
                    'but the VAE was built for N(0, I) (use_given_prior=False)',
                )
            )
        features, _ = self._encoding_network(x)
        if self._has_prior:
            prior = tf.concat([prior_mean, prior_log_var], -1)
            params, _ = self._posterior_head((features, prior))
            params = params + prior
        else:
            params, _ = self._posterior_head(features)
        mu, log_var = tf.split(params, 2, axis=-1)
        noise = tf.random.stateless_normal(
            tf.shape(mu), seed=make_stateless_seed()
        )
        z = reparameterized_sample(mu, log_var, noise)
        kl = diagonal_gaussian_kl(mu, log_var, prior_mean, prior_log_var)
        return z, VAEInfo(z_mean=mu, z_log_var=log_var, kl=kl)

    def train_step(self, inputs: Any, state: Any = ()) -> AlgStep:
        """One encoding: ``inputs`` is x, or ``(x, prior_input)`` with a
        prior network.

        Args:
            inputs: nest of [B, ...] tensors.
            state: ``()`` (stateless).
        Returns:
            ``AlgStep(output=z [B, Z], state=(), info=VAEInfo)``.
        """
        del state
        if self._use_given_prior:
            raise ValueError(
                '%s.train_step: use_given_prior=True: call encode() with '
                'the prior' % self.name
            )
        if self._prior_network is not None:
            x, prior_input = inputs
            z, info = self.encode(x, *self.prior(prior_input))
        else:
            z, info = self.encode(inputs)
        return AlgStep(output=z, state=(), info=info)

    def calc_loss(self, training_info: Any) -> LossInfo:
        """``beta * KL`` per sample.

        Args:
            training_info: ``TrainingInfo`` whose ``info`` is a ``VAEInfo``
                ([T, B] or [B] ``kl``), or that ``VAEInfo``.
        Returns:
            ``LossInfo(loss=beta * kl, extra=VAEInfo(kl=kl))``.
        """
        info = info_of(training_info, VAEInfo, type(self).__name__)
        return LossInfo(loss=self._beta * info.kl, extra=VAEInfo(kl=info.kl))


def squared_error_sum(target: tf.Tensor, prediction: tf.Tensor) -> tf.Tensor:
    """``sum_d (prediction_d - target_d)^2`` over all but the first axis.

    Args:
        target: [B, ...] float32.
        prediction: [B, ...] float32, same shape.
    Returns:
        [B] float32.
    """
    error = tf.square(
        tf.cast(prediction, tf.float32) - tf.cast(target, tf.float32)
    )
    return tf.reduce_sum(tf.reshape(error, [tf.shape(error)[0], -1]), -1)


@gin.configurable
class DecodingAlgorithm(Algorithm):
    """A decoder ``decoder(input) -> prediction`` trained by
    ``loss_fn(target, prediction)`` (ALF's ``DecodingAlgorithm``).

    Args:
        input_tensor_spec: nest of specs of the decoder's input (e.g. a
            VAE's ``[Z]`` latent).
        output_size: size of the [B, output_size] prediction.
        decoder_ctor: ``(input_tensor_spec=, last_layer_size=) ->
            Network`` (default: an MLP with one hidden layer of 64).
        loss_fn: ``(target [B, ...], prediction [B, output_size]) -> [B]``
            (default ``squared_error_sum``).
        optimizer: a ``tf_keras`` optimizer, or None to be trained by the
            owning algorithm's.
        name: module name.
    """

    def __init__(
        self,
        input_tensor_spec: Nest,
        output_size: int,
        decoder_ctor: Callable[..., Network] = _mlp,
        loss_fn: Callable[[Any, tf.Tensor], tf.Tensor] = squared_error_sum,
        optimizer: Optional[Any] = None,
        name: str = 'DecodingAlgorithm',
    ):
        super().__init__(optimizer=optimizer, name=name)
        self._decoder = decoder_ctor(
            input_tensor_spec=input_tensor_spec,
            last_layer_size=int(output_size),
        )
        self._loss_fn = loss_fn

    @property
    def decoder(self) -> Network:
        """The decoder network."""
        return self._decoder

    def train_step(self, inputs: Any, state: Any = ()) -> AlgStep:
        """Decodes ``inputs[0]`` and scores it against ``inputs[1]``.

        Args:
            inputs: ``(decoder input nest of [B, ...], target [B, ...])``.
            state: ``()`` (stateless).
        Returns:
            ``AlgStep(output=prediction [B, output_size], state=(),
            info=DecodingInfo(loss [B]))``.
        """
        del state
        x, target = inputs
        prediction, _ = self._decoder(x)
        loss = self._loss_fn(target, prediction)
        return AlgStep(
            output=prediction, state=(), info=DecodingInfo(loss=loss)
        )

    def calc_loss(self, training_info: Any) -> LossInfo:
        """The decoder's loss per sample.

        Args:
            training_info: ``TrainingInfo`` whose ``info`` is a
                ``DecodingInfo``, or that ``DecodingInfo``.
        Returns:
            ``LossInfo(loss=[T, B] or [B], extra=DecodingInfo)``.
        """
        info = info_of(training_info, DecodingInfo, type(self).__name__)
        return LossInfo(loss=info.loss, extra=info)
