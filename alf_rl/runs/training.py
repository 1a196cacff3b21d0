"""Building the trainer of a gin-configured run, as ``alf-train`` does.

``alf_rl.bin.train.train`` (and the model classes of ``alf_rl.api``) call
``build_gin_trainer`` inside a gin configuration of their own
(``alf_rl.trainers.gin_scope.own_gin_config``), so that bindings parsed
for one run never reach another run in the same process.
"""

from typing import Any, Optional, Sequence

from alf_rl.runs.gin_files import add_module_paths, parse_gin
from alf_rl.runs.quiet import start_runtime


def start_training_runtime(config: Any) -> None:
    """Starts TensorFlow's runtime for a gin-configured ``TrainerConfig``:
    right after parsing gin, before anything runs a TensorFlow op, it
    creates ``config.strategy`` (logical devices and collective ops are
    configured at start-up only) and lets the trainer class set what it
    needs first (``configure_runtime``: the thread actors' inter-op
    threads of ``AsyncOffPolicyTrainer``).

    Args:
        config: the ``TrainerConfig``.
    """
    from alf_rl.distributed.strategy import create_strategy

    def _before_runtime():
        create_strategy(config.strategy, config.num_logical_cpu_devices)
        configure = getattr(config.trainer, 'configure_runtime', None)
        if configure is not None:
            import gin

            configure(gin.get_bindings(config.trainer))

    start_runtime(_before_runtime)


def build_gin_trainer(
    root_dir: str,
    gin_files: Sequence[str] = (),
    gin_params: Sequence[str] = (),
    module_paths: Sequence[str] = (),
    fresh_start: bool = False,
    from_checkpoint: Optional[int] = None,
) -> Any:
    """Parses the gin files and bindings into the current gin
    configuration and builds the configured trainer (see
    ``alf_rl.bin.train.train`` for the arguments).

    Returns:
        The ``Trainer`` (call ``train()``, then ``close()``).
    """
    add_module_paths(module_paths)
    params = list(gin_params or [])
    if fresh_start:
        params.append('TrainerConfig.fresh_start=True')
    if from_checkpoint is not None:
        params.append('TrainerConfig.from_checkpoint=%d' % from_checkpoint)
    parse_gin(gin_files, params, root_dir)
    from alf_rl.trainers import TrainerConfig, create_trainer

    config = TrainerConfig()
    start_training_runtime(config)
    # The trainer named by TrainerConfig.trainer, else the one of the
    # algorithm's training_kind.
    return create_trainer(config)
