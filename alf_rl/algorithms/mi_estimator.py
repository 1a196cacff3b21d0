"""``MIEstimator``: a trained lower bound on the mutual information I(x; y)
(ALF's ``MIEstimator``, reimplemented).

A statistics network ``T(x, y)`` scores pairs drawn from the joint (the
pairs as given) and from the product of the marginals (each ``x_i`` with
another sample's ``y``); training maximizes one of the variational bounds of
``alf_rl.ops.mutual_information``:

* ``'DV'``: Donsker-Varadhan, trained as MINE (Belghazi et al. 2018): the
  gradient's denominator ``E_q[e^T]`` is an exponential moving average
  across updates (``averager_rate``), which removes most of the minibatch
  bias of the plain DV gradient;
* ``'KL'``: the NWJ (Nguyen-Wainwright-Jordan) f-divergence bound
  ``E_p[T] - E_q[e^(T-1)]``, unbiased but of higher variance;
* ``'JSD'``: the Jensen-Shannon bound of Deep InfoMax (Hjelm et al. 2019);
  its optimal ``T`` is the log density ratio, so ``T(x_i, y_i)`` is the
  per-sample MI estimate and its mean the MI estimate (the bound itself is
  ``2 JSD - 2 log 2``, not an MI).

The step's output is the per-sample (pointwise) MI estimate [B], whose
batch mean is the estimate of I(x; y): use it as an intrinsic reward (stop
its gradient there) or train through ``calc_loss``, whose minimization
maximizes the bound. The gradient also reaches whatever produced x and y.

Marginal samples (``sampler``): ``'shuffle'`` pairs each x with the y of a
random permutation of the batch (about one sample keeps its own y, a small
bias towards the joint); ``'shift'`` with the y of the next sample (no
sample keeps its own, but consecutive samples must be independent);
or a callable ``y -> y'`` drawing from p(y) itself (e.g. a known prior).

Deviations from ALF: no replay buffer of past y's as a marginal sampler;
the moving average is of ``E_q[e^T]`` in log space (ALF averaged it in
linear space), updated in ``after_train`` once per update.
"""

from typing import Any, Callable, Optional, Union

import gin
import tensorflow as tf

from alf_rl.algorithms.algorithm import Algorithm, info_of
from alf_rl.data_structures import AlgStep, LossInfo, TrainingInfo, namedtuple
from alf_rl.networks.encoding_network import EncodingNetwork
from alf_rl.networks.network import Network
from alf_rl.ops import mutual_information as mi_ops
from alf_rl.utils.common import make_stateless_seed
from alf_rl.utils.nest import Nest, check_nest_matches_spec

MIEstimatorInfo = namedtuple(
    'MIEstimatorInfo',
    [
        't_joint',  # [B] float32 T(x_i, y_i)
        't_marginal',  # [B] float32 T(x_i, y'_i), y' from the sampler
    ],
    default_value=())

MIEstimatorLossInfo = namedtuple(
    'MIEstimatorLossInfo',
    [
        'mi',  # [T, B] float32 per-sample MI estimate, gradient stopped
        'log_denominator',  # [] float32 DV's averaged log E_q[e^T] (DV only)
    ],
    default_value=())

ESTIMATOR_TYPES = ('DV', 'KL', 'JSD')
SAMPLERS = ('shuffle', 'shift')

#: Hidden layers of the default statistics network.
DEFAULT_FC_LAYER_PARAMS = (64, 64)


def _default_network(input_tensor_spec: Nest) -> Network:
    """An MLP over the concatenated (x, y) with a scalar output."""
    return EncodingNetwork(input_tensor_spec,
                           fc_layer_params=DEFAULT_FC_LAYER_PARAMS,
                           last_layer_size=1,
                           name='StatisticsNetwork')


def _check_arguments(name: str, estimator_type: str, sampler: Any,
                     averager_rate: float) -> None:
    """ValueError/TypeError for the arguments ``MIEstimator`` refuses."""
    if estimator_type not in ESTIMATOR_TYPES:
        raise ValueError("%s: estimator_type must be one of %s, got %r" %
                         (name, ESTIMATOR_TYPES, estimator_type))
    if isinstance(sampler, str):
        if sampler not in SAMPLERS:
            raise ValueError(
                "%s: sampler must be one of %s or a callable y -> y', got "
                "%r" % (name, SAMPLERS, sampler))
    elif not callable(sampler):
        raise TypeError("%s: sampler must be one of %s or a callable y -> "
                        "y', got %s" % (name, SAMPLERS,
                                        type(sampler).__name__))
    if not 0.0 < averager_rate <= 1.0:
        raise ValueError("%s: averager_rate must be in (0, 1], got %s" %
                         (name, averager_rate))


@gin.configurable
class MIEstimator(Algorithm):
    """Estimates I(x; y) with a trained statistics network ``T(x, y)``.

    See the module docstring for the bounds and samplers. The DV moving
    average lives in non-trainable variables (checkpointed, never touched
    by an optimizer): ``calc_loss`` uses the average that this update's
    batch gives and ``after_train`` stores it.

    Args:
        x_spec: nest of ``tf.TensorSpec`` of one x (no batch dim).
        y_spec: nest of ``tf.TensorSpec`` of one y.
        network_ctor: ``network_ctor(input_tensor_spec=(x_spec, y_spec))``
            builds ``T``: a ``Network`` mapping ``(x, y)`` ([B, ...] leaves)
            to [B, 1] or [B] scores. None: an ``EncodingNetwork`` over the
            concatenation with hidden layers ``DEFAULT_FC_LAYER_PARAMS`` and
            ``last_layer_size=1``.
        estimator_type: ``'DV'``, ``'KL'`` or ``'JSD'``.
        sampler: ``'shuffle'``, ``'shift'`` or a callable mapping a y nest
            of [B, ...] leaves to marginal samples of the same structure.
        averager_rate: weight of each batch in DV's moving average of
            ``E_q[e^T]``, in (0, 1]; 1 is the plain (biased) DV gradient.
        optimizer: a ``tf_keras`` optimizer, or None to let the owning
            algorithm's optimizer train ``T``.
        name: module name.

    Raises:
        ValueError: unknown ``estimator_type`` or ``sampler``,
            ``averager_rate`` outside (0, 1], a network whose output is not
            one score per sample.
        TypeError: a ``sampler`` that is neither a name nor callable.
    """

    def __init__(self,
                 x_spec: Nest,
                 y_spec: Nest,
                 network_ctor: Optional[Callable[..., Network]] = None,
                 estimator_type: str = 'DV',
                 sampler: Union[str, Callable[[Nest], Nest]] = 'shuffle',
                 averager_rate: float = 0.01,
                 optimizer: Optional[Any] = None,
                 name: str = 'MIEstimator'):
        super().__init__(optimizer=optimizer, name=name)
        _check_arguments(name, estimator_type, sampler, averager_rate)
        self._x_spec, self._y_spec = x_spec, y_spec
        self._estimator_type = estimator_type
        self._sampler = sampler
        self._averager_rate = float(averager_rate)
        ctor = _default_network if network_ctor is None else network_ctor
        self._network = ctor(input_tensor_spec=(x_spec, y_spec))
        self._check_network_output()
        self._log_denominator = tf.Variable(0.0, trainable=False,
                                            name='log_denominator')
        self._num_averaged = tf.Variable(0, trainable=False, dtype=tf.int64,
                                         name='num_averaged')

    def _check_network_output(self):
        """ValueError unless the network gives one score per sample."""
        zeros = tf.nest.map_structure(
            lambda s: tf.zeros([2] + s.shape.as_list(), s.dtype),
            (self._x_spec, self._y_spec))
        out, _ = self._network(zeros)
        if out.shape.as_list() not in ([2], [2, 1]):
            raise ValueError(
                "%s: the statistics network must give one score per sample, "
                "[B, 1] or [B], got %s for B=2 -- does network_ctor set "
                "last_layer_size=1?" % (self.name, out.shape.as_list()))

    @property
    def estimator_type(self) -> str:
        """str: ``'DV'``, ``'KL'`` or ``'JSD'``."""
        return self._estimator_type

    @property
    def log_denominator(self) -> tf.Variable:
        """tf.Variable [] float32 (non-trainable): DV's moving average of
        ``log E_q[e^T]`` (meaningful once an update was made)."""
        return self._log_denominator

    # ------------------------------------------------------------ step
    def _marginal_y(self, y: Nest) -> Nest:
        """Samples of p(y) to pair with each x: [B, ...] leaves."""
        if callable(self._sampler):
            return self._sampler(y)
        if self._sampler == 'shift':
            return tf.nest.map_structure(lambda t: tf.roll(t, 1, axis=0), y)
        batch_size = tf.shape(tf.nest.flatten(y)[0])[0]
        keys = tf.random.stateless_uniform([batch_size],
                                           seed=make_stateless_seed())
        permutation = tf.argsort(keys)
        return tf.nest.map_structure(lambda t: tf.gather(t, permutation), y)

    def _scores(self, x: Nest, y: Nest) -> MIEstimatorInfo:
        """Joint and marginal scores from one network call on [2B] rows."""
        y_marginal = self._marginal_y(y)
        if callable(self._sampler):
            check_nest_matches_spec(y_marginal, self._y_spec, 'y_marginal',
                                    hint='what the sampler returned')
        both = tf.nest.map_structure(lambda a, b: tf.concat([a, b], 0),
                                     (x, y), (x, y_marginal))
        scores, _ = self._network(both)
        scores = tf.reshape(scores, [-1])
        t_joint, t_marginal = tf.split(scores, 2)
        return MIEstimatorInfo(t_joint=t_joint, t_marginal=t_marginal)

    def _pointwise_mi(self, info: MIEstimatorInfo) -> tf.Tensor:
        """Per-sample MI estimate of ``t_joint``'s shape."""
        if self._estimator_type == 'DV':
            return mi_ops.dv_pointwise_mi(info.t_joint, info.t_marginal)
        if self._estimator_type == 'KL':
            return mi_ops.nwj_pointwise_mi(info.t_joint, info.t_marginal)
        return info.t_joint  # JSD: the optimal T is the log density ratio

    def train_step(self, inputs: Nest, state: Nest = ()) -> AlgStep:
        """Scores a batch of pairs and its marginal samples.

        Args:
            inputs: ``(x, y)``, nests matching ``x_spec`` and ``y_spec``
                with [B, ...] leaves, B >= 2.
            state: ``()`` (stateless).
        Returns:
            ``AlgStep(output=[B] float32 per-sample MI estimate (nats),
            state=(), info=MIEstimatorInfo)``.
        Raises:
            ValueError: ``inputs`` not a pair matching the specs (at trace
                time, naming the leaf).
        """
        if not isinstance(inputs, (tuple, list)) or len(inputs) != 2:
            raise ValueError("%s.train_step: inputs must be a pair (x, y), "
                             "got %s" % (self.name, type(inputs).__name__))
        x, y = inputs
        check_nest_matches_spec(x, self._x_spec, 'x')
        check_nest_matches_spec(y, self._y_spec, 'y')
        info = self._scores(x, y)
        return AlgStep(output=self._pointwise_mi(info), state=state,
                       info=info)

    # ------------------------------------------------------------ training
    def _next_log_denominator(self, t_marginal: tf.Tensor) -> tf.Tensor:
        """DV's moving average of ``log E_q[e^T]`` after this batch."""
        return mi_ops.next_log_moving_average(
            self._log_denominator, mi_ops.log_mean_exp(t_marginal),
            self._averager_rate, self._num_averaged > 0)

    def calc_loss(self, training_info: Union[TrainingInfo, MIEstimatorInfo]
                  ) -> LossInfo:
        """Per-sample losses whose minimization maximizes the bound.

        Changes no state (``after_train`` stores DV's moving average).

        Args:
            training_info: ``TrainingInfo`` whose ``info`` is the steps'
                ``MIEstimatorInfo`` ([T, B] or [B] leaves), or that
                ``MIEstimatorInfo`` itself. The bounds' means run over
                every element (all T and B).
        Returns:
            ``LossInfo(loss=[T, B] (or [B]) per-sample loss whose mean is
            minus the bound, extra=MIEstimatorLossInfo)``.
        """
        info = info_of(training_info, MIEstimatorInfo, 'MIEstimator')
        t_joint, t_marginal = info.t_joint, info.t_marginal
        log_denominator = ()
        if self._estimator_type == 'DV':
            log_denominator = self._next_log_denominator(t_marginal)
            loss = mi_ops.dv_loss(t_joint, t_marginal, log_denominator)
        elif self._estimator_type == 'KL':
            loss = mi_ops.nwj_loss(t_joint, t_marginal)
        else:
            loss = mi_ops.jsd_loss(t_joint, t_marginal)
        extra = MIEstimatorLossInfo(
            mi=tf.stop_gradient(self._pointwise_mi(info)),
            log_denominator=log_denominator)
        return LossInfo(loss=loss, extra=extra)

    def after_train(self, training_info: Union[TrainingInfo, MIEstimatorInfo]
                    ) -> None:
        """Stores DV's moving average of ``log E_q[e^T]`` (the value
        ``calc_loss`` used); nothing for the other bounds.

        Args:
            training_info: as ``calc_loss``.
        """
        if self._estimator_type != 'DV':
            return
        info = info_of(training_info, MIEstimatorInfo, 'MIEstimator')
        self._log_denominator.assign(
            self._next_log_denominator(info.t_marginal))
        self._num_averaged.assign_add(1)
