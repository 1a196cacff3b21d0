"""Imports every module that registers gin configurables.

gin only knows a name once the module defining it was imported; the
training and play scripts import this module before parsing configs. The
external configurables registered here (``tf_keras`` optimizers and
initializers) have no annotations: their parameters' types are declared
(``declare_param_types``), so that a binding such as
``LegacyAdam.learning_rate = 'fast'`` is refused with one line before
anything is built.
"""

from typing import Annotated, Any, Callable, Literal, Optional, Union

import tf_keras  # noqa: F401
import gin

import alf_rl.algorithms  # noqa: F401
# RayConfig (imports neither Ray nor TensorFlow).
import alf_rl.distributed.ray_actors  # noqa: F401
import alf_rl.environments  # noqa: F401
import alf_rl.environments.gym_wrappers  # noqa: F401
# suite_minatar.load (MinAtar's options, e.g. sticky_action_prob).
import alf_rl.environments.suite_minatar  # noqa: F401
import alf_rl.environments.suite_unittest  # noqa: F401
import alf_rl.networks  # noqa: F401
import alf_rl.ops.losses as _losses
import alf_rl.trainers  # noqa: F401
import alf_rl.trainers.tracking  # noqa: F401
import alf_rl.utils.normalizers  # noqa: F401
import alf_rl.utils.schedules  # noqa: F401
from alf_rl.utils.config_types import declare_param_types

# A learning rate: a number, or a schedule (``step -> rate``: a tf_keras
# ``LearningRateSchedule``, bound as ``@Name()``).
LearningRate = Annotated[Union[float, Callable[[Any], Any]],
                         'a number or a learning-rate schedule']

gin.external_configurable(tf_keras.optimizers.Adam, module='tf_keras.optimizers')
gin.external_configurable(tf_keras.optimizers.RMSprop,
                          module='tf_keras.optimizers')
gin.external_configurable(tf_keras.optimizers.SGD, module='tf_keras.optimizers')
# tf_keras' legacy Adam: the same update as Adam, applied by one fused kernel
# (ResourceApplyAdam) per variable where Adam builds ~20 small ops per
# variable -- less tracing, and per iteration ~18% less time for PPO
# CartPole and ~10% for SAC Pendulum on 2 CPU cores (measured side by side
# in one process). `@LegacyAdam()`; its name avoids clashing with `Adam`.
gin.external_configurable(tf_keras.optimizers.legacy.Adam, name='LegacyAdam',
                          module='tf_keras.optimizers.legacy')
# Kernel initializers for the networks' ``kernel_initializer`` (the names
# in strings, e.g. 'orthogonal', take no arguments). PyTorch's default for
# nn.Linear, which SB3 uses with ``ortho_init=False``, is
# ``@VarianceScaling()`` with scale=1/3, mode='fan_in',
# distribution='uniform'.
gin.external_configurable(tf_keras.initializers.VarianceScaling,
                          module='tf_keras.initializers')
gin.external_configurable(tf_keras.initializers.Orthogonal,
                          module='tf_keras.initializers')
gin.external_configurable(_losses.element_wise_squared_loss,
                          module='alf_rl.ops.losses')
gin.external_configurable(_losses.element_wise_huber_loss,
                          module='alf_rl.ops.losses')

# The optimizers' parameters (tf_keras 2.21's signatures; ``lr``, an old
# name of ``learning_rate``, and the legacy optimizer's clipping arguments
# and ``decay`` arrive through **kwargs). A name not declared here is
# refused.
_CLIPPING = dict(clipnorm=Optional[float], clipvalue=Optional[float],
                 global_clipnorm=Optional[float])
_OPTIMIZER = dict(learning_rate=LearningRate, lr=LearningRate, epsilon=float,
                  weight_decay=Optional[float], use_ema=bool,
                  ema_momentum=float, ema_overwrite_frequency=Optional[int],
                  jit_compile=bool, name=str, **_CLIPPING)
declare_param_types(tf_keras.optimizers.Adam, beta_1=float, beta_2=float,
                    amsgrad=bool, adaptive_epsilon=bool, **_OPTIMIZER)
declare_param_types(tf_keras.optimizers.RMSprop, rho=float, momentum=float,
                    centered=bool, **_OPTIMIZER)
declare_param_types(tf_keras.optimizers.SGD, momentum=float, nesterov=bool,
                    **_OPTIMIZER)
declare_param_types(tf_keras.optimizers.legacy.Adam,
                    learning_rate=LearningRate, beta_1=float, beta_2=float,
                    epsilon=float, amsgrad=bool, name=str, decay=float,
                    lr=LearningRate, **_CLIPPING)
declare_param_types(
    tf_keras.initializers.VarianceScaling, scale=float,
    mode=Literal['fan_in', 'fan_out', 'fan_avg'],
    distribution=Literal['truncated_normal', 'untruncated_normal', 'normal',
                         'uniform'],
    seed=Optional[int])
declare_param_types(tf_keras.initializers.Orthogonal, gain=float,
                    seed=Optional[int])
