"""Rebuilds a finished run: its environment and its restored algorithm.

``alf-play`` and ``alf-export`` (and benchmarks that measure a trained
policy) start from a run directory written by ``alf-train``: its
operative ``config.gin`` and the newest checkpoint in ``ckpt/``.
"""

import os
from typing import Any, List, Optional, Sequence, Tuple


def restore_run(root_dir: str, render: bool = False,
                gin_params: Sequence[str] = (), max_episode_steps: int = 0,
                seed: int = 0, restore_algorithm: bool = True,
                prog: str = 'alf-play',
                module_paths: Sequence[str] = (),
                checkpoint: Optional[int] = None) -> Tuple[Any, Any]:
    """Parses a run's config; builds one environment and the algorithm.

    Args:
        root_dir: a run directory written by ``alf-train``.
        render: build the environment with ``render_mode='rgb_array'``.
        gin_params: extra gin bindings, applied after ``config.gin``.
        max_episode_steps: cap on steps per episode (0: the env default).
        seed: seed of the environment (and of TensorFlow, numpy, Python).
        restore_algorithm: build the algorithm and restore the newest
            checkpoint of ``root_dir/ckpt`` (else the algorithm is None).
        prog: the command named in the "restored" line.
        module_paths: directories searched first for the user modules
            the run imported (``--module_path``; see
            ``alf_rl.trainers.run_modules.find_run_modules``).
        checkpoint: restore ``ckpt/ckpt-<checkpoint>`` (the training
            iteration it was written at) instead of the newest.

    Returns:
        ``(environment with batch size 1, algorithm or None)``.

    Raises:
        ValueError: ``root_dir`` has no ``config.gin``, or a user module
            it imports cannot be found (one line).
        CheckpointError: no checkpoint (or no ``ckpt-<checkpoint>``: the
            line names those there are), or one that does not match.
        NonFiniteStateError: the checkpoint restored holds NaN/Inf (one line
            naming the tensor, and an earlier finite checkpoint to resume
            training from); nothing is played from it.
    """
    import gin
    import alf_rl.configurables  # noqa: F401
    from alf_rl.environments.utils import create_environment
    from alf_rl.trainers.trainer import TrainerConfig
    from alf_rl.utils.common import set_random_seed

    config_file = os.path.join(root_dir, 'config.gin')
    if not os.path.exists(config_file):
        raise ValueError("%s not found: is %s a root_dir written by "
                         "alf-train?" % (config_file, root_dir))
    bindings = list(gin_params or [])
    if render:
        bindings.append("create_environment.render_mode='rgb_array'")
    if max_episode_steps:
        bindings.append('create_environment.max_episode_steps=%d' %
                        max_episode_steps)
    _parse_run_config(root_dir, bindings, module_paths, prog)
    set_random_seed(seed)
    # Played as evaluated: whole games with unclipped rewards for Atari.
    env = create_environment(num_parallel_environments=1,
                             seed=seed,
                             use_subprocess=False, evaluation=True)
    if not restore_algorithm:
        return env, None
    config = TrainerConfig()
    if config.algorithm_ctor is None:
        raise ValueError("%s binds no TrainerConfig.algorithm_ctor: is %s a "
                         "root_dir written by alf-train?" %
                         (config_file, root_dir))
    algorithm = config.algorithm_ctor(observation_spec=env.observation_spec(),
                                      action_spec=env.action_spec())
    path = _restore_checkpoint(os.path.join(root_dir, 'ckpt'), algorithm,
                               checkpoint)
    print('%s: restored %s' % (prog, path))
    return env, algorithm


def _restore_checkpoint(ckpt_dir: str, algorithm: Any,
                        checkpoint: Optional[int]) -> str:
    """Restores the newest checkpoint of ``ckpt_dir`` (or
    ``ckpt-<checkpoint>``) into ``algorithm``; returns its prefix. Raises
    as ``restore_run`` says."""
    from alf_rl.utils.checkpoint import (Checkpointer, CheckpointError,
                                         NonFiniteStateError)
    checkpointer = Checkpointer(ckpt_dir, algorithm=algorithm)
    steps = checkpointer.checkpoints()
    if not steps:
        raise CheckpointError("no checkpoint in %s" % ckpt_dir)
    path = None
    if checkpoint is not None:
        if checkpoint not in steps:
            raise CheckpointError(
                "no checkpoint %d in %s: there are %s" %
                (checkpoint, ckpt_dir, ', '.join(map(str, steps))))
        path = os.path.join(ckpt_dir, 'ckpt-%d' % checkpoint, 'ckpt')
    try:
        restored = checkpointer.restore(path)
    except NonFiniteStateError as e:
        raise NonFiniteStateError('%s: %s' % (e, _finite_advice(
            ckpt_dir, checkpointer.checkpoints(), e.checkpoint)),
            e.variable, e.checkpoint) from None
    assert restored is not None  # there are checkpoints
    return restored


def _finite_advice(ckpt_dir: str, steps: List[int],
                   refused: Optional[str]) -> str:
    """What to do about a refused non-finite checkpoint: resume training
    from the newest earlier finite one (``alf-train --from_checkpoint``),
    or train again."""
    from alf_rl.utils.checkpoint_contents import finite_checkpoint_before
    name = os.path.basename(os.path.dirname(refused or ''))
    before = int(name[5:]) if name[5:].isdigit() else max(steps, default=0)
    step = finite_checkpoint_before(ckpt_dir, steps, before)
    if step is None:
        return 'no earlier checkpoint with finite values is kept'
    return ('ckpt-%d is the newest earlier one with finite values: resume '
            'training from it with alf-train --from_checkpoint %d'
            % (step, step))


def _parse_run_config(root_dir: str, bindings: Sequence[str],
                      module_paths: Sequence[str], prog: str) -> None:
    """Parses ``root_dir/config.gin`` and ``bindings`` after finding the
    user modules the run imported (``find_run_modules``); a module that
    is still missing is named in one line (a ``ValueError``)."""
    import gin
    from alf_rl.trainers.run_modules import find_run_modules
    find_run_modules(root_dir, module_paths, prog)
    config_file = os.path.join(root_dir, 'config.gin')
    try:
        gin.parse_config_files_and_bindings([config_file], bindings,
                                            finalize_config=False)
    except ImportError as e:  # a run without modules.json (older ones)
        raise ValueError("%s: %s imports module %r, which cannot be "
                         "imported here: pass --module_path DIR, DIR the "
                         "directory holding it" % (prog, config_file, e.name)
                         ) from None
