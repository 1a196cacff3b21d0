"""``OfflineToOnlineTrainer``: continues an offline run online.

An ``OffPolicyTrainer`` whose run starts from another run's weights: when
it starts from iteration 0 (no checkpoint of its own yet, or
``fresh_start``), it first restores the algorithm's model (networks, target
networks, normalizers, temperatures, counters) from the newest checkpoint
of ``init_from``, e.g. an ``OfflineTrainer`` run, and, if
``dataset`` is given, writes that dataset's episodes into the replay
buffer before anything is collected (then ``initial_collect_steps`` is
skipped: the buffer is not empty). The optimizers are not restored: their
state (moments, step counts) and learning rates are those this run's
configuration gives. A resumed run restores its own
checkpoint (weights and replay buffer) and does neither.

With ``alf-train``::

    alf-train --gin_file online.gin --root_dir NEW --init_from OFFLINE_ROOT

(which binds ``TrainerConfig.trainer = @OfflineToOnlineTrainer`` and
``OfflineToOnlineTrainer.init_from``), and optionally::

    OfflineToOnlineTrainer.dataset = '/path/to/dataset'

The online algorithm must hold the offline one's variables under the same
names: the same class and networks, or a class the offline one extends
(an offline ``CqlDqnAlgorithm`` continues as a ``DqnAlgorithm``).
"""

import os
from typing import Any, Dict, List, Optional

import gin
import tensorflow as tf

from alf_rl.offline.dataset import Dataset
from alf_rl.offline.replay_feed import fill_replayer
from alf_rl.trainers.config import TrainerConfig
from alf_rl.trainers.env_sources import EnvSource
from alf_rl.trainers.off_policy_trainer import OffPolicyTrainer
from alf_rl.trainers.run_setup import BuiltRun
from alf_rl.utils.checkpoint import CheckpointError, Checkpointer
from alf_rl.utils.checkpoint_contents import checkpoint_variables


def _optimizer_state(algorithm: Any) -> List[Any]:
    """The variables of ``algorithm``'s optimizers that are not the
    model's: step counts, moments, learning rates (of ``tf_keras`` and of
    Keras 3 optimizers, whose variables are not ``tf.Variable``s)."""
    optimizers = [o for o, _ in algorithm.get_optimizer_and_variable_sets()]
    # An optimizer tracks the variables it updates: those are the model's.
    model = {id(v) for v in algorithm.trainable_variables}
    found: Dict[int, Any] = {}
    for v in checkpoint_variables(
        tf.train.Checkpoint(optimizers=optimizers)
    ) + [v for o in optimizers for v in getattr(o, 'variables', [])]:
        if id(v) not in model:
            found.setdefault(id(v), v)
    return list(found.values())


@gin.configurable
class OfflineToOnlineTrainer(OffPolicyTrainer):
    """An online off-policy run initialized from another run's checkpoint.

    Args:
        config: a ``TrainerConfig`` (as ``OffPolicyTrainer``'s; a replay
            buffer, not ``clear_replay_buffer``).
        env: the training environment (see ``Trainer``).
        eval_env: the evaluation environment (see ``Trainer``).
        built: the run already built (see ``Trainer``).
        init_from: the ``root_dir`` of the run whose newest checkpoint
            initializes the algorithm.
        dataset: None, or a dataset directory (``alf_rl.offline``) whose
            episodes are written into the replay buffer at the start; its
            specs must be the environment's and the buffer must hold it.

    Raises:
        ValueError: no ``init_from``, no checkpoint under it, a dataset of
            other specs than the environment's, or ``clear_replay_buffer``
            with a dataset (one line each).
        DatasetError: an unreadable dataset.
    """

    def __init__(
        self,
        config: TrainerConfig,
        env: Optional[EnvSource] = None,
        eval_env: Optional[EnvSource] = None,
        built: Optional[BuiltRun] = None,
        init_from: Optional[str] = None,
        dataset: Optional[str] = None,
    ):
        if not init_from:
            raise ValueError(
                "OfflineToOnlineTrainer.init_from is required: the "
                "root_dir of the run to continue (alf-train --init_from)"
            )
        ckpt_dir = os.path.join(os.path.expanduser(init_from), 'ckpt')
        if not Checkpointer(ckpt_dir).latest_path():
            raise ValueError(
                "OfflineToOnlineTrainer.init_from=%r: no checkpoint in %s; "
                "expected the root_dir of a run written by alf-train"
                % (init_from, ckpt_dir)
            )
        if dataset and config.replay.clear_replay_buffer:
            raise ValueError(
                "OfflineToOnlineTrainer.dataset: a dataset seeds a "
                "replay buffer; clear_replay_buffer=True keeps none"
            )
        super().__init__(config, env, eval_env, built)
        self._init_dir = ckpt_dir
        self._seed_dataset = Dataset(dataset) if dataset else None
        if self._seed_dataset is not None:
            try:
                self._seed_dataset.check_specs(
                    self._env.observation_spec(), self._env.action_spec()
                )
            except ValueError:
                self.close()
                raise

    def _starts_fresh(self) -> bool:
        """Whether this start begins at iteration 0 (nothing of its own to
        resume from)."""
        c = self._config.checkpoint
        return c.fresh_start or (
            c.from_checkpoint is None and not self._checkpointer.latest_path()
        )

    def warm_start(self) -> Dict[str, Any]:
        """Restores the algorithm (not its optimizers' state) from
        ``init_from`` and seeds the replay buffer from ``dataset``
        (``train()`` calls it when the run starts from iteration 0).

        Returns:
            ``{'checkpoint': the prefix restored, 'seeded_steps': steps
            written into the replay buffer (0 without a dataset)}``.

        Raises:
            CheckpointError: the checkpoint does not match the algorithm.
        """
        # The algorithm tracks its optimizers: put their state back.
        kept = [(v, v.numpy()) for v in _optimizer_state(self._algorithm)]
        restored = Checkpointer(
            self._init_dir, algorithm=self._algorithm
        ).restore()
        if restored is None:  # checked in __init__; moved away since
            raise CheckpointError("no checkpoint in %s" % self._init_dir)
        for variable, value in kept:
            variable.assign(value)
        print('alf_rl: initialized the algorithm from %s' % restored)
        steps = 0
        if self._seed_dataset is not None:
            steps = fill_replayer(
                self._seed_dataset,
                self._replayer,
                self._algorithm.experience_spec,
            )
            print(
                'alf_rl: seeded the replay buffer with %d steps (%d '
                'episodes) of %s'
                % (
                    steps,
                    self._seed_dataset.num_episodes,
                    self._seed_dataset.path,
                ),
                flush=True,
            )
        return {'checkpoint': restored, 'seeded_steps': steps}

    def _train_locked(self) -> Dict[str, Any]:
        if self._starts_fresh():
            self.warm_start()
        return super()._train_locked()
