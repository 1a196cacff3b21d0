"""What ``DqnAlgorithm`` learns about the return: its mean or its
distribution.

A ``ValueDistribution`` is the one part of the value family that differs
between DQN, C51, QR-DQN and IQN: how the Q network's output is read
(``outputs``: per-action values and their mean Q), what of the bootstrap
action is kept as the target (``to_target``) and the n-step loss
(``loss``). Everything else (ε-greedy or noisy exploration, double Q,
dueling, n-step windows, target networks, prioritized replay) is
``DqnAlgorithm``'s and shared.

- ``ScalarValues`` (default): DQN, Q values ``[B, A]``.
- ``CategoricalValues``: C51 (Bellemare et al. 2017), log-probabilities
  ``[B, A, N]`` on fixed atoms (``CategoricalQNetwork``); cross-entropy to
  the projected n-step target.
- ``QuantileValues``: QR-DQN (Dabney et al. 2018a), N quantiles at the
  midpoints ``(2i + 1) / 2N`` (``QuantileQNetwork``); quantile Huber loss.
- ``ImplicitQuantileValues``: IQN (Dabney et al. 2018b), quantiles at
  fractions sampled for each call (``ImplicitQuantileQNetwork``): N for the
  prediction, N' for the target, K to act.

With a distributional loss, ``DqnLossInfo.td_error`` (the prioritized
replay priority) is the per-row loss itself, as in Rainbow.
"""

from typing import Any, Callable, NamedTuple, Tuple

import gin
import tensorflow as tf

from alf_rl.networks.distributional_q_networks import ImplicitQuantileQNetwork
from alf_rl.ops import distributional as dist
from alf_rl.ops.recurrent_replay import inverse_value_rescale, value_rescale
from alf_rl.ops.td_targets import n_step_returns
from alf_rl.utils.common import make_stateless_seed


class ValueOutputs(NamedTuple):
    """A Q network's output read by a ``ValueDistribution``."""

    values: tf.Tensor  # [B, A] or [B, A, N] float32 the network's output
    q: tf.Tensor  # [B, A] float32 mean Q of every action (acting, argmax)
    tau: Any = ()  # [B, N] float32 IQN's sampled fractions; () otherwise


class ValueDistribution(object):
    """Base: the scalar Q of DQN (see ``ScalarValues``).

    Purposes of ``outputs``: ``'act'`` (rollout, ε-greedy predict),
    ``'greedy'`` (greedy predict), ``'train'`` (the online network in
    training rows), ``'target'`` (the target network).
    """

    _value_rescaling = False  # ScalarValues(value_rescaling=True)

    def check_network(self, owner: str, network: Any) -> None:
        """Raises ValueError if ``network`` does not give this output."""
        if isinstance(network, ImplicitQuantileQNetwork):
            raise ValueError(
                "%s: %s needs fractions tau; use value_distribution="
                "ImplicitQuantileValues()" % (owner, network.name)
            )
        want = self._num_outputs()
        got = getattr(network, 'num_outputs', None)
        if got != want:
            raise ValueError(
                "%s: %s expects a Q network with %s outputs per action, "
                "got %s (%s)"
                % (owner, type(self).__name__, want, got, network.name)
            )

    def _num_outputs(self) -> Any:
        return None

    def outputs(
        self, network: Any, observation: Any, purpose: str, state: Any = ()
    ) -> Tuple[ValueOutputs, Any]:
        """The network's values and mean Q of every action.

        Args:
            network: the online or target Q network.
            observation: nest of [B, ...] tensors.
            purpose: ``'act'``, ``'greedy'``, ``'train'`` or ``'target'``.
            state: the network's state (``()`` if feed-forward).
        Returns:
            ``(ValueOutputs with [B, A] q, the network's new state)``.
        """
        del purpose
        values, state = network(observation, state)
        return ValueOutputs(values=values, q=self.mean(values)), state

    def mean(self, values: tf.Tensor) -> tf.Tensor:
        """The expected return of ``values`` [..., (N)] -> [...]."""
        return values

    def to_target(self, values: tf.Tensor) -> tf.Tensor:
        """What the target keeps of the bootstrap action's ``values``."""
        return values

    def zero_target(self, q_value: tf.Tensor) -> tf.Tensor:
        """Zeros shaped like a row's target (rows that never bootstrap)."""
        return tf.zeros_like(q_value)

    def zero_prediction(self, target_value: tf.Tensor) -> Tuple[Any, Any]:
        """``(q_value, tau)`` zeros of a row that is never trained."""
        return tf.zeros_like(target_value), ()

    def loss(
        self, training_info: Any, gamma: float, td_error_loss_fn: Callable
    ) -> Tuple[tf.Tensor, tf.Tensor]:
        """Loss of rows 0..T-2 against their n-step targets.

        Args:
            training_info: ``TrainingInfo`` of [T, B] ``reward``,
                ``discount`` (0/1 termination mask) and ``step_type``, and
                ``info`` a ``DqnInfo`` of [T, B, ...] tensors.
            gamma: discount factor.
            td_error_loss_fn: the scalar loss (``ScalarValues`` only).
        Returns:
            ``(loss, td_error)``: [T-1, B] float32 each; ``td_error`` (no
            gradient) is the priority's source.
        """
        info = training_info.info
        target_value = info.target_value
        if self._value_rescaling:
            target_value = inverse_value_rescale(target_value)
        returns = _n_step(n_step_returns, training_info, target_value, gamma)
        if self._value_rescaling:
            returns = value_rescale(returns)
        q_value = info.q_value[:-1]
        return (
            td_error_loss_fn(returns, q_value),
            tf.stop_gradient(returns - q_value),
        )


def _n_step(targets_fn: Callable, training_info: Any, *args: Any) -> tf.Tensor:
    """``targets_fn(reward, discount, step_type, *args)`` of the [T, B]
    ``training_info``."""
    return targets_fn(
        training_info.reward,
        training_info.discount,
        training_info.step_type,
        *args,
    )


class _ReturnDistribution(ValueDistribution):
    """A distribution of the return, trained by ``distribution_loss``,
    which is also the priority (as in Rainbow)."""

    def loss(
        self, training_info: Any, gamma: float, td_error_loss_fn: Callable
    ) -> Tuple[tf.Tensor, tf.Tensor]:
        """``(loss, loss without gradient)`` (see the base)."""
        del td_error_loss_fn
        loss = self.distribution_loss(training_info, gamma)
        return loss, tf.stop_gradient(loss)

    def distribution_loss(self, training_info: Any, gamma: float) -> tf.Tensor:
        """[T-1, B] loss of rows 0..T-2 (see ``loss``)."""
        raise NotImplementedError()


@gin.configurable
class ScalarValues(ValueDistribution):
    """DQN's expected return: one Q value per action (the default).

    With ``value_rescaling`` (R2D2, Kapturowski et al. 2019) the network
    estimates ``h(Q)`` and the n-step targets are ``h(G_t)``, with ``G_t``
    computed on ``h⁻¹`` of the bootstrap values
    (``alf_rl.ops.recurrent_replay.value_rescale``). ``mean`` (acting, the
    reported ``q_value``) is then ``h(Q)``: h is increasing, so the greedy
    action is the same.

    Args:
        value_rescaling: train on R2D2's rescaled targets.
    """

    def __init__(self, value_rescaling: bool = False):
        self._value_rescaling = bool(value_rescaling)


@gin.configurable
class CategoricalValues(_ReturnDistribution):
    """C51: probabilities on ``num_atoms`` atoms evenly spaced in
    ``[v_min, v_max]``.

    Args:
        num_atoms: N >= 2, as the ``CategoricalQNetwork``'s.
        v_min: the lowest atom.
        v_max: the highest atom (> v_min).

    Raises:
        ValueError: fewer than 2 atoms or ``v_min >= v_max``.
    """

    def __init__(
        self, num_atoms: int = 51, v_min: float = -10.0, v_max: float = 10.0
    ):
        if int(num_atoms) < 2 or not v_min < v_max:
            raise ValueError(
                "CategoricalValues: expected num_atoms >= 2 and v_min < "
                "v_max, got %r, %r, %r" % (num_atoms, v_min, v_max)
            )
        self._num_atoms = int(num_atoms)
        self._v_min, self._v_max = float(v_min), float(v_max)

    def _num_outputs(self) -> Any:
        return self._num_atoms

    @property
    def atoms(self) -> tf.Tensor:
        """[N] float32 the support z."""
        return tf.linspace(self._v_min, self._v_max, self._num_atoms)

    def mean(self, values: tf.Tensor) -> tf.Tensor:
        """``sum_i p_i z_i`` of log-probabilities [..., N]."""
        return tf.reduce_sum(tf.exp(values) * self.atoms, axis=-1)

    def to_target(self, values: tf.Tensor) -> tf.Tensor:
        """Probabilities of the bootstrap action, [B, N]."""
        return tf.exp(values)

    def distribution_loss(self, training_info: Any, gamma: float) -> tf.Tensor:
        """Cross-entropy to ``categorical_n_step_targets``."""
        info = training_info.info
        target = _n_step(
            dist.categorical_n_step_targets,
            training_info,
            info.target_value,
            self.atoms,
            gamma,
        )
        return dist.categorical_cross_entropy(target, info.q_value[:-1])


@gin.configurable
class QuantileValues(_ReturnDistribution):
    """QR-DQN: ``num_quantiles`` quantiles at fixed midpoint fractions.

    Args:
        num_quantiles: N >= 1, as the ``QuantileQNetwork``'s.
        kappa: the quantile Huber loss's κ >= 0 (1 in the paper).

    Raises:
        ValueError: ``num_quantiles < 1`` or ``kappa < 0``.
    """

    def __init__(self, num_quantiles: int = 200, kappa: float = 1.0):
        if int(num_quantiles) < 1 or kappa < 0:
            raise ValueError(
                "%s: expected num_quantiles >= 1 and kappa >= 0, got %r, %r"
                % (type(self).__name__, num_quantiles, kappa)
            )
        self._num_quantiles = int(num_quantiles)
        self._kappa = float(kappa)

    def _num_outputs(self) -> Any:
        return self._num_quantiles

    def mean(self, values: tf.Tensor) -> tf.Tensor:
        """The mean of quantiles [..., N]."""
        return tf.reduce_mean(values, axis=-1)

    def _fractions(self, info: Any) -> tf.Tensor:
        del info
        return dist.quantile_midpoints(self._num_quantiles)

    def distribution_loss(self, training_info: Any, gamma: float) -> tf.Tensor:
        """Quantile Huber loss to ``quantile_n_step_targets``."""
        info = training_info.info
        targets = _n_step(
            dist.quantile_n_step_targets,
            training_info,
            info.target_value,
            gamma,
        )
        return dist.quantile_huber_loss(
            info.q_value[:-1], targets, self._fractions(info), self._kappa
        )


@gin.configurable
class ImplicitQuantileValues(QuantileValues):
    """IQN: quantiles at fractions τ ~ U[0, 1] drawn for every call.

    Args:
        num_tau_samples: N fractions of the trained prediction (64).
        num_tau_prime_samples: N' fractions of the target (64).
        num_quantile_samples: K fractions to act (32).
        kappa: the quantile Huber loss's κ >= 0.

    Raises:
        ValueError: a sample count below 1 or ``kappa < 0``.
    """

    def __init__(
        self,
        num_tau_samples: int = 64,
        num_tau_prime_samples: int = 64,
        num_quantile_samples: int = 32,
        kappa: float = 1.0,
    ):
        super().__init__(num_tau_samples, kappa)
        if min(num_tau_prime_samples, num_quantile_samples) < 1:
            raise ValueError(
                "ImplicitQuantileValues: sample counts must be >= 1, got "
                "%r, %r" % (num_tau_prime_samples, num_quantile_samples)
            )
        self._samples = {
            'train': int(num_tau_samples),
            'target': int(num_tau_prime_samples),
            'act': int(num_quantile_samples),
        }

    def check_network(self, owner: str, network: Any) -> None:
        """Raises ValueError unless ``network`` takes ``tau``."""
        if not isinstance(network, ImplicitQuantileQNetwork):
            raise ValueError(
                "%s: ImplicitQuantileValues needs an "
                "ImplicitQuantileQNetwork, got %s"
                % (owner, type(network).__name__)
            )

    def outputs(
        self, network: Any, observation: Any, purpose: str, state: Any = ()
    ) -> Tuple[ValueOutputs, Any]:
        """Quantiles at fresh fractions (count by ``purpose``); for
        ``'greedy'`` at the K fixed midpoints ``(2i + 1) / 2K`` instead, a
        deterministic estimate of the mean (``predict``, export)."""
        batch = tf.shape(tf.nest.flatten(observation)[0])[0]
        if purpose == 'greedy':
            k = self._samples['act']
            tau = tf.broadcast_to(dist.quantile_midpoints(k), [batch, k])
        else:
            tau = tf.random.stateless_uniform(
                [batch, self._samples[purpose]], make_stateless_seed()
            )
        values, state = network(observation, state, tau=tau)
        return ValueOutputs(values=values, q=self.mean(values), tau=tau), state

    def zero_target(self, q_value: tf.Tensor) -> tf.Tensor:
        """[B, N'] zeros."""
        return tf.zeros([tf.shape(q_value)[0], self._samples['target']])

    def zero_prediction(self, target_value: tf.Tensor) -> Tuple[Any, Any]:
        """``(q_value, tau)``: [B, N] zeros each."""
        zeros = tf.zeros([tf.shape(target_value)[0], self._samples['train']])
        return zeros, zeros

    def _fractions(self, info: Any) -> tf.Tensor:
        return info.tau[:-1]
