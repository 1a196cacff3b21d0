"""``alf-collect --from_replay``: the replay buffer of a run's newest
checkpoint written as a dataset (``alf_rl.offline.replay_export``)."""

import os
from typing import Any, Dict, Optional, Sequence


def collect_replay(
    root_dir: str,
    out: str,
    gin_params: Sequence[str] = (),
    references: Optional[Dict[str, float]] = None,
) -> int:
    """Writes the replay buffer of a run's newest checkpoint to ``out``.

    ``references`` (``random_return``, ``expert_return``: those of the
    normalized score) go into the dataset's metadata.

    Returns:
        the number of steps written.

    Raises:
        ValueError: a run without ``config.gin`` or without a replay
            buffer, or a dataset at ``out`` with other specs.
        CheckpointError: no checkpoint.
    """
    import gin

    from alf_rl.offline.replay_export import write_replay
    from alf_rl.runs.training import build_gin_trainer
    from alf_rl.trainers.gin_scope import own_gin_config
    from alf_rl.utils.checkpoint import CheckpointError, Checkpointer

    config = os.path.join(root_dir, 'config.gin')
    if not os.path.exists(config):
        raise ValueError(
            "%s not found: is %s a root_dir written by "
            "alf-train?" % (config, root_dir)
        )
    with own_gin_config():
        trainer = build_gin_trainer(
            root_dir,
            [config],
            list(gin_params) + ['TrainerConfig.evaluate=False'],
        )
        metadata = dict(references or {}, env_name=_env_name(gin))
    try:
        replayer = getattr(trainer, '_replayer', None)
        if replayer is None:
            raise ValueError(
                "%s: its trainer keeps no replay buffer" % root_dir
            )
        ckpt = os.path.join(root_dir, 'ckpt')
        if Checkpointer(ckpt, replayer=replayer).restore() is None:
            raise CheckpointError("no checkpoint in %s" % ckpt)
        dataset = write_replay(
            replayer,
            out,
            dict(metadata, source_run=root_dir, policy='replay'),
        )
    finally:
        trainer.close()
    print(
        'alf-collect: wrote %d steps (%d episodes) of the replay buffer '
        'of %s to %s'
        % (dataset.num_steps, dataset.num_episodes, root_dir, out)
    )
    return dataset.num_steps


def _env_name(gin: Any) -> Optional[str]:
    try:
        return str(gin.query_parameter('create_environment.env_name'))
    except ValueError:
        return None
