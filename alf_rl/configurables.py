"""Imports every module that registers gin configurables.

gin only knows a name once the module defining it was imported; the
training and play scripts import this module before parsing configs.
"""

import tf_keras  # noqa: F401
import gin

import alf_rl.algorithms  # noqa: F401
# RayConfig (imports neither Ray nor TensorFlow).
import alf_rl.distributed.ray_actors  # noqa: F401
import alf_rl.environments  # noqa: F401
import alf_rl.environments.gym_wrappers  # noqa: F401
import alf_rl.networks  # noqa: F401
import alf_rl.ops.losses as _losses
import alf_rl.trainers  # noqa: F401
import alf_rl.utils.normalizers  # noqa: F401
import alf_rl.utils.schedules  # noqa: F401

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
