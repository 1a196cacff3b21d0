"""Atomic, resumable checkpoints of a training run.

Layout under ``ckpt_dir``::

    ckpt-<step>/ckpt.index, ckpt-<step>/ckpt.data-*   one directory per save
    latest                                             name of the newest one

A save writes into a hidden temporary directory, renames it into place
(atomic on POSIX) and then atomically replaces ``latest``. A crash or kill at
any point leaves the previous checkpoint and ``latest`` intact; stale
temporary directories are removed on the next start.
"""

import os
import re
import shutil
import tempfile
from typing import Any, List, Optional

import tensorflow as tf

_NAME = re.compile(r'^ckpt-(\d+)$')


class CheckpointError(ValueError):
    """A checkpoint that cannot be restored into the current model."""


class Checkpointer(object):
    """Saves and restores trackable objects atomically.

    Args:
        ckpt_dir: directory of the checkpoints (created if missing).
        max_to_keep: number of newest checkpoints kept.
        **objects: trackable objects (``tf.Module``, optimizers,
            ``tf.Variable``) to save, by name.
    """

    def __init__(self, ckpt_dir: str, max_to_keep: int = 3, **objects: Any):
        if max_to_keep < 1:
            raise ValueError("max_to_keep must be >= 1, got %s" % max_to_keep)
        self._dir = ckpt_dir
        self._max_to_keep = max_to_keep
        self._checkpoint = tf.train.Checkpoint(**objects)
        os.makedirs(ckpt_dir, exist_ok=True)
        for name in os.listdir(ckpt_dir):
            if name.startswith('.tmp-'):
                stale = os.path.join(ckpt_dir, name)
                if os.path.isdir(stale):
                    shutil.rmtree(stale, ignore_errors=True)
                else:
                    os.remove(stale)

    def checkpoints(self) -> List[int]:
        """Steps of the complete checkpoints on disk, oldest first."""
        steps = []
        for name in os.listdir(self._dir):
            m = _NAME.match(name)
            if m and os.path.exists(os.path.join(self._dir, name,
                                                 'ckpt.index')):
                steps.append(int(m.group(1)))
        return sorted(steps)

    def latest_path(self) -> Optional[str]:
        """Prefix of the newest checkpoint, or None when there is none.

        Raises:
            CheckpointError: when the ``latest`` file does not name a
                checkpoint.
        """
        latest = os.path.join(self._dir, 'latest')
        if not os.path.exists(latest):
            return None
        with open(latest) as f:
            name = f.read().strip()
        if not _NAME.match(name):
            raise CheckpointError(
                "%s is corrupt: expected a name like 'ckpt-100', got %r" %
                (latest, name[:80]))
        return os.path.join(self._dir, name, 'ckpt')

    def save(self, step: int) -> str:
        """Writes a checkpoint for ``step`` atomically.

        Args:
            step: int, the training iteration (names the checkpoint).
        Returns:
            The checkpoint prefix written.
        """
        step = int(step)
        tmp = tempfile.mkdtemp(prefix='.tmp-', dir=self._dir)
        self._checkpoint.write(os.path.join(tmp, 'ckpt'))
        final = os.path.join(self._dir, 'ckpt-%d' % step)
        if os.path.exists(final):
            shutil.rmtree(final)
        os.rename(tmp, final)
        _atomic_write(os.path.join(self._dir, 'latest'), 'ckpt-%d' % step)
        for old in self.checkpoints()[:-self._max_to_keep]:
            shutil.rmtree(os.path.join(self._dir, 'ckpt-%d' % old),
                          ignore_errors=True)
        return os.path.join(final, 'ckpt')

    def restore(self, path: Optional[str] = None) -> Optional[str]:
        """Restores the newest (or the given) checkpoint.

        Args:
            path: checkpoint prefix; None for the newest.
        Returns:
            The prefix restored, or None when there is no checkpoint.
        Raises:
            CheckpointError: when the checkpoint is corrupt or does not match
                the objects being restored (different networks, specs...).
        """
        path = path or self.latest_path()
        if path is None:
            return None
        try:
            status = self._checkpoint.read(path)
            status.assert_existing_objects_matched()
        except (tf.errors.DataLossError, tf.errors.NotFoundError,
                tf.errors.InvalidArgumentError, IndexError, OSError) as e:
            raise CheckpointError(
                "checkpoint %s is corrupt or unreadable (%s: %s); remove it "
                "or use another root_dir" %
                (path, type(e).__name__, _first_line(e)))
        except (AssertionError, ValueError) as e:
            raise CheckpointError(
                "checkpoint %s does not match the model being restored: %s. "
                "Was it written with a different configuration (networks, "
                "observation or action spec)? Use a new root_dir or the "
                "original config." % (path, _first_line(e, 600)))
        return path


def _first_line(e, limit=300):
    text = str(e).strip()
    return text[:limit]


def _atomic_write(path, text):
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix='.tmp-latest-', dir=directory)
    with os.fdopen(fd, 'w') as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
