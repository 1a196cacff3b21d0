"""Atomic, resumable checkpoints of a training run, and the run's lock.

Layout under ``ckpt_dir``::

    ckpt-<step>/ckpt.index, ckpt-<step>/ckpt.data-*   one directory per save
    ckpt-<step>/ckpt.chunks/                           large variables (replay
                                                       buffers), chunk by chunk
                                                       (``chunked_state``)
    ckpt-<step>/wall_time                              when it was saved
    latest                                             name of the newest one
    ckpt-<step>.corrupt                                moved aside, never read
    ckpt-<step>.set_aside                              set aside by a rescue

A save writes into a hidden temporary directory, renames it into place
(atomic on POSIX) and then atomically replaces ``latest``. A crash or kill at
any point leaves the previous checkpoint and ``latest`` intact; a save that
fails (e.g. a full disk) removes its temporary directory and raises
``CheckpointSaveError`` in one line, keeping the last good checkpoint.

Restoring (``Checkpointer.restore``) starts from the newest ``ckpt-<step>``
directory (``latest`` is only a hint: when it is missing, unreadable or names
a missing checkpoint, the directories are scanned, and that is said). A
checkpoint must read back completely (every tensor, with its checksum)
before it is restored into the model; one that does not is reported in one
line (which, why) and, for the run that owns the directory, moved aside to
``ckpt-<step>.corrupt``; the next older one is tried. Checkpoints on disk of
which none is usable raise ``NoUsableCheckpointError``: the trainer never
silently starts from iteration 0 next to them.

Values are checked both ways (``alf_rl.utils.checkpoint_contents``): a save
from objects holding NaN or Inf (a model, its optimizer slots, a replay
buffer) raises ``NonFiniteStateError`` and writes nothing, and a checkpoint
that holds NaN or Inf is refused on restore with one line naming the
tensor (``NonFiniteStateError``; it is kept, never moved aside).

Rescuing a run: ``Checkpointer.restore_from(step)`` resumes from an earlier
checkpoint and renames the newer ones ``ckpt-<step>.set_aside``;
``set_aside_run`` moves a whole earlier run (``ckpt/``, ``train/``,
``eval/``, ``config.gin``) into ``root_dir/set_aside-<k>/``. Neither
deletes anything.

``RunDirLock`` is an exclusive ``fcntl.flock`` on ``<root_dir>/.alf_rl.lock``
held by the training process (released by the kernel when it dies, so a
killed run leaves no stale lock); readers such as ``alf-play`` take none.

TensorFlow is imported inside the checkpoint methods only: ``alf-train``
takes the lock before it imports TensorFlow (errors in seconds, not tens of
seconds).
"""

import errno
import fcntl
import os
import re
import shutil
import socket
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from alf_rl.utils.checkpoint_contents import read_back

_NAME = re.compile(r'^ckpt-(\d+)$')
_MOVED_ASIDE = re.compile(r'^ckpt-\d+\.corrupt(-\d+)?$')
_WALL_TIME_FILE = 'wall_time'
LOCK_FILE = '.alf_rl.lock'
#: What a run writes under its ``root_dir`` (the lock aside), in the order
#: ``set_aside_run`` names them.
RUN_OUTPUTS = ('ckpt', 'train', 'eval', 'config.gin')


class CheckpointError(ValueError):
    """A checkpoint that cannot be restored into the current model."""


class NoUsableCheckpointError(CheckpointError):
    """Checkpoints are on disk but none of them reads back completely.

    Attributes:
        problems: ``[(name, reason)]`` for each checkpoint tried, newest
            first (``name`` as it is on disk now, e.g. ``ckpt-9.corrupt``).
    """

    def __init__(self, message: str, problems: List[Tuple[str, str]]):
        super().__init__(message)
        self.problems = list(problems)


class RunDirError(OSError):
    """The run directory cannot be used: it cannot be created or written
    (the message names the path and the OS reason), the disk is full, or
    another process holds its lock."""


class RunDirLockedError(RunDirError):
    """Another process holds the run directory's lock.

    Attributes:
        owner: what the lock file says about the holder (``'pid 12 on host
            h'``), or ``'pid unknown'``.
    """

    def __init__(self, message: str, owner: str):
        super().__init__(message)
        self.owner = owner


class CheckpointSaveError(RunDirError):
    """Writing a checkpoint failed; the previous checkpoints are intact."""


class NonFiniteStateError(CheckpointError):
    """A checkpoint not written, or refused on restore, because a value
    in it is NaN or Inf.

    Args:
        message: the one-line message.
        variable: the variable (live) or tensor key (on disk) named.
        checkpoint: the prefix refused on restore, or None for a save.
    """

    def __init__(self, message: str, variable: str,
                 checkpoint: Optional[str] = None):
        super().__init__(message)
        self.variable = variable
        self.checkpoint = checkpoint


def describe_os_error(path: str, error: BaseException) -> str:
    """One line for an ``OSError`` met while writing under ``path``.

    Args:
        path: the path the caller was writing (named in the line).
        error: the ``OSError`` (or a TensorFlow error whose text says
            "No space left on device").

    Returns:
        ``'no space left on device at PATH'`` for ENOSPC, else ``'PATH:
        <OS reason>'`` (plus the failing file when it is another path).
    """
    text = str(error)
    if (getattr(error, 'errno', None) == errno.ENOSPC
            or 'No space left on device' in text):
        return 'no space left on device at %s' % path
    reason = getattr(error, 'strerror', None) or _one_line(error)
    filename = getattr(error, 'filename', None)
    if filename and os.path.abspath(str(filename)) != os.path.abspath(path):
        return '%s: %s (%s)' % (path, reason, filename)
    return '%s: %s' % (path, reason)


def _save_failure(path: str, error: Exception) -> str:
    """What made a save under ``path`` fail, in one line:
    ``describe_os_error`` for an ``OSError`` or TensorFlow error, else the
    error's type and (array-free) text."""
    import tensorflow as tf

    if isinstance(error, (OSError, tf.errors.OpError)):
        return describe_os_error(path, error)
    return '%s: %s' % (type(error).__name__, summarize_error(error, 300))


# ------------------------------------------------------------------ lock
class _Held(object):
    """A lock this process holds: its file descriptor, how many
    ``RunDirLock.acquire`` calls hold it, the directories it created and
    whether it created the lock file."""

    def __init__(self, fd: int, created: List[str],
                 created_file: bool = False):
        self.fd = fd
        self.count = 1
        self.created = created
        self.created_file = created_file


class RunDirLock(object):
    """An exclusive lock on a run directory, one holder process at a time.

    ``acquire`` creates ``root_dir`` when missing, then takes
    ``fcntl.flock(LOCK_EX | LOCK_NB)`` on ``root_dir/.alf_rl.lock`` and
    writes its pid and host into it. The kernel releases the lock when the
    process ends, however it ends (a SIGKILLed run leaves no stale lock).
    Within one process the lock is re-entrant: ``alf-train`` takes it before
    importing TensorFlow and the trainer takes it again.

    Args:
        root_dir: the run directory.
    """

    _held: Dict[str, _Held] = {}

    def __init__(self, root_dir: str):
        self._root = os.path.abspath(os.path.expanduser(root_dir))
        self._key = os.path.realpath(self._root)
        self._acquired = False

    @property
    def path(self) -> str:
        """The lock file's path."""
        return os.path.join(self._root, LOCK_FILE)

    def acquire(self) -> 'RunDirLock':
        """Takes the lock (creating ``root_dir`` if needed).

        Returns:
            ``self``.

        Raises:
            RunDirLockedError: another process holds it (the message names
                its pid and host).
            RunDirError: ``root_dir`` cannot be created or written (the
                message names the path and the OS reason).
        """
        if self._acquired:
            return self
        held = self._held.get(self._key)
        if held is not None:
            held.count += 1
            self._acquired = True
            return self
        created = _make_dirs(self._root)
        created_file = not os.path.lexists(self.path)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                         0o644)
        except OSError as e:
            _remove_dirs(created)
            raise RunDirError(_unwritable(self._root, e)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            owner = _read_owner(fd)
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise RunDirLockedError(
                    'root_dir %s is in use by another training run (%s); '
                    '%s' % (self._root, owner, _advice(owner)),
                    owner) from None
            raise RunDirError('cannot lock %s' %
                              describe_os_error(self.path, e)) from None
        try:
            os.ftruncate(fd, 0)
            os.write(fd, ('pid %d on host %s\n' %
                          (os.getpid(), socket.gethostname())).encode())
            os.fsync(fd)
        except OSError as e:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            if created:
                _remove_quietly(self.path)
            _remove_dirs(created)
            raise RunDirError(_unwritable(self._root, e)) from None
        self._held[self._key] = _Held(fd, created, created_file)
        self._acquired = True
        return self

    def release(self, remove_if_unused: bool = False) -> None:
        """Releases this hold (the lock itself when it is the last one).

        Args:
            remove_if_unused: when the lock is released, remove the lock
                file if ``acquire`` created it, and the directories it
                created if ``root_dir`` is empty then (a failed start
                leaves ``root_dir`` as it found it).
        """
        if not self._acquired:
            return
        self._acquired = False
        held = self._held[self._key]
        held.count -= 1
        if held.count > 0:
            return
        del self._held[self._key]
        if remove_if_unused and held.created_file:
            # Unlinked before unlocking: a process that opens the path
            # from now on creates a new file and locks that.
            _remove_quietly(self.path)
        if remove_if_unused and held.created:
            try:
                unused = os.listdir(self._root) == []
            except OSError:
                unused = False
            if unused:
                _remove_dirs(held.created)
        fcntl.flock(held.fd, fcntl.LOCK_UN)
        os.close(held.fd)


def _unwritable(root: str, error: OSError) -> str:
    """One line for a failure to write the lock file in ``root``."""
    if error.errno == errno.ENOSPC:
        return describe_os_error(root, error)
    return 'cannot write in root_dir %s' % describe_os_error(root, error)


def _make_dirs(root: str) -> List[str]:
    """Creates ``root`` and its missing parents.

    Returns:
        the directories created, outermost first.
    Raises:
        RunDirError: naming the path and the OS reason.
    """
    missing = []
    path = root
    while not os.path.lexists(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    if not os.path.isdir(path):
        what = 'root_dir %s' % root
        if path == root:
            raise RunDirError('%s: exists and is not a directory' % what)
        raise RunDirError('%s: %s is not a directory' % (what, path))
    created: List[str] = []
    for path in reversed(missing):
        try:
            os.mkdir(path)
        except FileExistsError:
            continue  # made meanwhile by someone else: not ours to remove
        except OSError as e:
            _remove_dirs(created)
            raise RunDirError('cannot create root_dir %s' %
                              describe_os_error(root, e)) from None
        created.append(path)
    return created


def _remove_dirs(created: List[str]) -> None:
    """Removes the (empty) directories ``_make_dirs`` created, innermost
    first; stops at the first that is not empty."""
    for path in reversed(created):
        try:
            os.rmdir(path)
        except OSError:
            return


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _advice(owner: str) -> str:
    """What to do about a held lock; notices a holder that has exited but
    left a child (e.g. a forked environment worker) holding the lock."""
    match = re.match(r'pid (\d+) on host (\S+)$', owner)
    if match and match.group(2) == socket.gethostname():
        try:
            os.kill(int(match.group(1)), 0)
        except ProcessLookupError:
            return ('that process has exited, but a process it started '
                    '(e.g. an environment worker) still holds the lock: end '
                    'it, or use another root_dir')
        except OSError:
            pass
    return 'wait for it to end, stop it, or use another root_dir'


def _read_owner(fd: int) -> str:
    """What the lock file says about its holder (``'pid N on host H'``)."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 200).decode('utf-8', 'replace').strip()
    except OSError:
        text = ''
    return text if text.startswith('pid ') else 'pid unknown'


def set_aside_run(root_dir: str) -> Tuple[Optional[str], List[str]]:
    """Moves what an earlier run wrote in ``root_dir`` (``RUN_OUTPUTS``:
    checkpoints with their replay buffers, summaries, ``config.gin``) into
    a new ``root_dir/set_aside-<k>/`` (``k`` = 1, 2, ...: the first free
    one), renaming each; nothing is deleted. Call it holding the run's
    lock.

    Args:
        root_dir: the run directory.

    Returns:
        ``(the directory they went to, their names)``, or ``(None, [])``
        when there is nothing to move.

    Raises:
        RunDirError: a rename failed (the path and the OS reason).
    """
    present = [name for name in RUN_OUTPUTS
               if os.path.lexists(os.path.join(root_dir, name))]
    if not present:
        return None, []
    k = 1
    while os.path.lexists(os.path.join(root_dir, 'set_aside-%d' % k)):
        k += 1
    dest = os.path.join(root_dir, 'set_aside-%d' % k)
    try:
        os.mkdir(dest)
        for name in present:
            os.rename(os.path.join(root_dir, name), os.path.join(dest, name))
    except OSError as e:
        raise RunDirError('cannot set the earlier run aside: %s' %
                          describe_os_error(dest, e)) from None
    return dest, present


# ------------------------------------------------------------ checkpoints
class Checkpointer(object):
    """Saves and restores trackable objects atomically.

    Constructing one touches nothing on disk (readers such as ``alf-play``
    use it too); the training run calls ``remove_stale_temporaries`` once it
    holds the run's lock.

    Args:
        ckpt_dir: directory of the checkpoints (created by the first save).
        max_to_keep: number of newest checkpoints kept.
        **objects: trackable objects (``tf.Module``, optimizers,
            ``tf.Variable``) to save, by name.
    """

    def __init__(self, ckpt_dir: str, max_to_keep: int = 3, **objects: Any):
        import tensorflow as tf
        if max_to_keep < 1:
            raise ValueError("max_to_keep must be >= 1, got %s" % max_to_keep)
        self._dir = ckpt_dir
        self._max_to_keep = max_to_keep
        self._checkpoint = tf.train.Checkpoint(**objects)

    @property
    def directory(self) -> str:
        """The checkpoint directory."""
        return self._dir

    def remove_stale_temporaries(self) -> None:
        """Removes what interrupted saves left (``.tmp-*``); call it only
        while holding the run's lock (a save may be in progress otherwise)."""
        for name in self._listdir():
            if name.startswith('.tmp-replaced-'):
                # A save of an existing step killed between its renames:
                # the old checkpoint goes back into place.
                final = os.path.join(self._dir, name[len('.tmp-replaced-'):])
                if _NAME.match(os.path.basename(final)) and not os.path.exists(
                        final):
                    os.rename(os.path.join(self._dir, name), final)
                    continue
            if name.startswith('.tmp-'):
                stale = os.path.join(self._dir, name)
                if os.path.isdir(stale):
                    shutil.rmtree(stale, ignore_errors=True)
                else:
                    _remove_quietly(stale)

    def checkpoints(self) -> List[int]:
        """Steps of the complete checkpoints on disk, oldest first."""
        return sorted(step for step in self._steps() if os.path.exists(
            os.path.join(self._dir, 'ckpt-%d' % step, 'ckpt.index')))

    def latest_path(self) -> Optional[str]:
        """Prefix of the newest checkpoint on disk, or None when there is
        none (by ``latest``, else by scanning; not read back)."""
        steps = self.checkpoints()
        if not steps:
            return None
        return os.path.join(self._dir, 'ckpt-%d' % steps[-1], 'ckpt')

    def save(self, step: int) -> str:
        """Writes a checkpoint for ``step`` atomically.

        Args:
            step: int, the training iteration (names the checkpoint).
        Returns:
            The checkpoint prefix written.
        Raises:
            CheckpointSaveError: the save failed (e.g. "no space left on
                device at PATH"); its temporary directory is removed and
                the previous checkpoints and ``latest`` are intact.
            NonFiniteStateError: a variable to save holds NaN or Inf
                (named); nothing was written.
        """
        from alf_rl.utils.chunked_state import non_finite_state, write_state
        step = int(step)
        name = 'ckpt-%d' % step
        bad = non_finite_state(self._checkpoint)
        if bad is not None:
            raise NonFiniteStateError(
                'checkpoint %s not written: %s holds NaN/Inf values' %
                (name, bad), bad)
        final = os.path.join(self._dir, name)
        tmp = replaced = None
        try:
            os.makedirs(self._dir, exist_ok=True)
            tmp = tempfile.mkdtemp(prefix='.tmp-', dir=self._dir)
            # Taken after the summaries of this iteration were written:
            # summaries stamped later belong to iterations after it.
            wall_time = time.time()
            # Unchanged replay chunks: hard links to the newest's files.
            write_state(self._checkpoint, os.path.join(tmp, 'ckpt'),
                        self.latest_path())
            with open(os.path.join(tmp, _WALL_TIME_FILE), 'w') as f:
                f.write(repr(wall_time))
            if os.path.exists(final):
                replaced = os.path.join(self._dir, '.tmp-replaced-' + name)
                os.rename(final, replaced)
            os.rename(tmp, final)
            tmp = None
            atomic_write_text(os.path.join(self._dir, 'latest'), name)
        except Exception as e:  # noqa: BLE001 -- any failure: kept as is
            # Not only OSError / OpError: whatever fails inside a save (a
            # bug included) leaves the earlier checkpoints as they were and
            # ends in one line naming it, never a raw traceback.
            if replaced is not None and not os.path.exists(final):
                os.rename(replaced, final)  # put the old one back
                replaced = None
            kept = [s for s in self.checkpoints() if s != step]
            raise CheckpointSaveError(
                'checkpoint %s not written: %s; %s' %
                (name, _save_failure(self._dir, e),
                 ('the last good checkpoint ckpt-%d is kept' % kept[-1])
                 if kept else 'no earlier checkpoint exists')) from None
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            if replaced is not None:
                shutil.rmtree(replaced, ignore_errors=True)
        for old in self.checkpoints()[:-self._max_to_keep]:
            shutil.rmtree(os.path.join(self._dir, 'ckpt-%d' % old),
                          ignore_errors=True)
        return os.path.join(final, 'ckpt')

    def saved_wall_time(self, path: str) -> float:
        """When the checkpoint at prefix ``path`` was saved (``time.time()``
        at the start of its save; the index file's mtime for checkpoints
        written before this was recorded)."""
        try:
            with open(os.path.join(os.path.dirname(path),
                                   _WALL_TIME_FILE)) as f:
                return float(f.read().strip())
        except (OSError, ValueError):
            return os.path.getmtime(path + '.index')

    def restore(self, path: Optional[str] = None,
                move_corrupt: bool = False) -> Optional[str]:
        """Restores the newest checkpoint that reads back (or ``path``).

        Every checkpoint tried is first read back completely; one that
        does not is reported on stderr in one line and skipped (with
        ``move_corrupt``, renamed to ``ckpt-<step>.corrupt``, never
        deleted).

        Args:
            path: checkpoint prefix; None for the newest usable one.
            move_corrupt: move unreadable checkpoints aside; only for the
                process that holds the run's lock.
        Returns:
            The prefix restored, or None when the directory holds no
            checkpoint at all.
        Raises:
            NoUsableCheckpointError: checkpoints (or ``latest``, or ones
                moved aside before) are on disk and none reads back.
            CheckpointError: ``path`` is unreadable, or the checkpoint does
                not match the objects being restored (different networks,
                specs...): names and shapes, no values.
            NonFiniteStateError: the checkpoint holds NaN or Inf (naming
                the tensor); nothing was restored.
        """
        if path is not None:
            problem = self._unreadable(path)
            if problem is not None:
                raise CheckpointError('checkpoint %s is corrupt or unreadable '
                                      '(%s)' % (path, problem))
            self._read(path)
            return path
        steps, notes = _candidates(self._dir, self._steps())
        for note in notes:
            _say(note)
        problems = []
        for step in steps:
            name = 'ckpt-%d' % step
            prefix = os.path.join(self._dir, name, 'ckpt')
            problem = self._unreadable(prefix)
            if problem is None:
                self._read(prefix)
                return prefix
            if move_corrupt:
                aside = self._move_aside(name)
                _say('alf_rl: checkpoint %s is corrupt (%s); moved aside to '
                     '%s (kept), trying the next older one' %
                     (os.path.join(self._dir, name), problem, aside))
                problems.append((aside, problem))
            else:
                _say('alf_rl: checkpoint %s is corrupt (%s); skipped' %
                     (os.path.join(self._dir, name), problem))
                problems.append((name, problem))
        listing = self._listdir()
        if not problems and 'latest' not in listing and not any(
                _MOVED_ASIDE.match(n) for n in listing):
            return None
        raise _no_usable_checkpoint(self._dir, problems)

    def restore_from(self, step: int) -> Tuple[str, List[str]]:
        """Restores the checkpoint ``ckpt-<step>`` and then renames every
        newer one (complete or not) ``ckpt-<k>.set_aside`` (``-1``, ``-2``
        ... if taken) and points ``latest`` at ``ckpt-<step>``: a rescue
        from an earlier checkpoint when the newer ones hold bad state.
        Nothing is moved when ``ckpt-<step>`` cannot be restored. Only for
        the process that holds the run's lock.

        Args:
            step: the iteration of the checkpoint to resume from.

        Returns:
            ``(the prefix restored, the new names of those set aside)``,
            oldest first.

        Raises:
            CheckpointError: there is no ``ckpt-<step>`` (naming those
                there are), it does not read back completely, or it does
                not match the objects being restored.
            NonFiniteStateError: it holds NaN or Inf.
        """
        name = 'ckpt-%d' % step
        steps = self._steps()
        if step not in steps:
            raise CheckpointError(
                'from_checkpoint=%d: there is no checkpoint %s in %s (it '
                'holds %s)' % (step, name, self._dir, ', '.join(
                    'ckpt-%d' % s for s in steps) or 'none'))
        prefix = os.path.join(self._dir, name, 'ckpt')
        problem = self._unreadable(prefix)
        if problem is not None:
            raise CheckpointError(
                'from_checkpoint=%d: checkpoint %s is corrupt or unreadable '
                '(%s); choose another (%s holds %s)' % (
                    step, prefix, problem, self._dir,
                    ', '.join('ckpt-%d' % s for s in steps)))
        self._read(prefix)
        moved = [self._move_aside('ckpt-%d' % s, '.set_aside')
                 for s in steps if s > step]
        atomic_write_text(os.path.join(self._dir, 'latest'), name)
        return prefix, moved

    def set_aside(self, step: int, suffix: str = '.non_finite') -> str:
        """Renames ``ckpt-<step>`` to ``ckpt-<step><suffix>`` (kept, never
        read again) and points ``latest`` at the newest checkpoint left
        (removing it when none is). Only for the process that holds the
        run's lock.

        Args:
            step: the checkpoint's iteration.
            suffix: what the new name ends with.

        Returns:
            The new name.
        """
        aside = self._move_aside('ckpt-%d' % step, suffix)
        left = self.checkpoints()
        latest = os.path.join(self._dir, 'latest')
        if left:
            atomic_write_text(latest, 'ckpt-%d' % left[-1])
        else:
            _remove_quietly(latest)
        return aside

    # ------------------------------------------------------------ internals
    def _listdir(self) -> List[str]:
        return _listdir(self._dir)

    def _steps(self) -> List[int]:
        """Steps of every ``ckpt-<step>`` directory, complete or not."""
        return sorted(int(m.group(1)) for m in map(_NAME.match,
                                                   self._listdir()) if m)

    def _move_aside(self, name: str, suffix: str = '.corrupt') -> str:
        """Renames ``ckpt-<step>`` to ``ckpt-<step><suffix>`` (``-1``,
        ``-2`` ... if taken); returns the new name."""
        aside = name + suffix
        n = 0
        while os.path.lexists(os.path.join(self._dir, aside)):
            n += 1
            aside = '%s%s-%d' % (name, suffix, n)
        os.rename(os.path.join(self._dir, name),
                  os.path.join(self._dir, aside))
        return aside

    def _unreadable(self, prefix: str) -> Optional[str]:
        """``_unreadable`` for the objects this restores: the chunk files
        (replay data) are read back only when one of them keeps its data
        there and they are not left out; a reader of the policy alone
        (``alf-play``, export) skips them (~10 s for a 7 GB Atari buffer)."""
        from alf_rl.utils.chunked_state import chunks_restored

        return _unreadable(prefix, chunks=chunks_restored(self._checkpoint))

    def _read(self, prefix: str) -> None:
        """Restores a checkpoint that reads back into the objects."""
        import tensorflow as tf

        from alf_rl.utils.chunked_state import read_state
        try:
            read_state(self._checkpoint, prefix)
        except (AssertionError, ValueError, tf.errors.OpError) as e:
            raise CheckpointError(
                "checkpoint %s does not match the model being restored: %s. "
                "Was it written with a different configuration (networks, "
                "observation or action spec)? Use a new root_dir or the "
                "original config." % (prefix, summarize_error(e).rstrip('.'))) from None


def _unreadable(prefix: str, chunks: bool = True) -> Optional[str]:
    """Why the checkpoint at ``prefix`` does not read back completely, or
    None when every tensor in it reads (TensorFlow checks each tensor's
    checksum as it reads it); its chunk files only with ``chunks``.

    Raises:
        NonFiniteStateError: it reads back and holds NaN or Inf.
    """
    found = read_back(prefix, chunks=chunks)
    if found.non_finite is not None:
        raise NonFiniteStateError(
            'checkpoint %s holds %s values in %s; refusing to restore it'
            % (prefix, found.value, found.non_finite), found.non_finite,
            prefix)
    return found.problem


def _listdir(ckpt_dir: str) -> List[str]:
    try:
        return os.listdir(ckpt_dir)
    except FileNotFoundError:
        return []


def _no_usable_checkpoint(ckpt_dir: str, problems: List[Tuple[str, str]]
                          ) -> NoUsableCheckpointError:
    """The error for a directory whose checkpoints are all unusable.

    Args:
        ckpt_dir: the checkpoint directory.
        problems: ``[(name, reason)]`` of the checkpoints just tried.
    """
    tried = dict(problems)
    earlier = sorted(n for n in _listdir(ckpt_dir)
                     if _MOVED_ASIDE.match(n) and n not in tried)
    found = []
    if problems:
        found.append('corrupt: ' + ', '.join('%s (%s)' % p
                                             for p in problems))
    if earlier:
        found.append('moved aside earlier: ' + ', '.join(earlier))
    if not found:
        found.append("only 'latest' is left")
    return NoUsableCheckpointError(
        'no usable checkpoint in %s (%s). Refusing to start from '
        'iteration 0 next to them: to start over in this root_dir, rerun '
        'with --fresh_start (TrainerConfig.fresh_start=True: the earlier '
        'run is moved aside to root_dir/set_aside-<k>, nothing is '
        'deleted), or use another root_dir' %
        (ckpt_dir, '; '.join(found)), problems)


def put_back_replay_damaged(ckpt_dir: str,
                            names: Sequence[str]) -> List[str]:
    """Of the checkpoints a restore just moved aside as corrupt, puts back
    those damaged in their chunk files alone (the replay data: every other
    tensor reads back, with finite values), as ``ckpt-<step>`` again, and
    points ``latest`` at the newest of them: a restore that leaves the
    chunk files out (``chunked_state.chunks_left_out``) resumes from it.
    Only for the process that holds the run's lock.

    Args:
        ckpt_dir: the checkpoint directory.
        names: the names they were moved aside to (``ckpt-9.corrupt``,
            ``NoUsableCheckpointError.problems``), newest first.

    Returns:
        The names put back (``ckpt-9``), newest first.
    """
    back = []
    for name in names:
        match = re.match(r'^(ckpt-\d+)\.corrupt(-\d+)?$', name)
        if match is None or os.path.lexists(os.path.join(ckpt_dir,
                                                         match.group(1))):
            continue
        found = read_back(os.path.join(ckpt_dir, name, 'ckpt'), chunks=False)
        if found.problem is None and found.non_finite is None:
            os.rename(os.path.join(ckpt_dir, name),
                      os.path.join(ckpt_dir, match.group(1)))
            back.append(match.group(1))
    if back:
        atomic_write_text(os.path.join(ckpt_dir, 'latest'), back[0])
    return back


def rerun_advice(fresh_start: bool = False, from_checkpoint: bool = False,
                 without_replay: bool = False) -> str:
    """How to resume a run later, in words: ``'rerun the same command'``,
    or ``'rerun without --from_checkpoint and --without_replay'`` for the
    rescue settings given, which would act again.

    Args:
        fresh_start: ``--fresh_start`` was given.
        from_checkpoint: ``--from_checkpoint N`` was given.
        without_replay: ``--without_replay`` was given.
    """
    rescue = [flag for flag, given in (
        ('--fresh_start', fresh_start), ('--from_checkpoint', from_checkpoint),
        ('--without_replay', without_replay)) if given]
    return ('rerun without ' + ' and '.join(rescue) if rescue else
            'rerun the same command')


def _candidates(ckpt_dir: str, steps: List[int]
                ) -> Tuple[List[int], List[str]]:
    """The checkpoint steps to try (of ``steps``, those on disk), newest
    first, and notes about ``latest``."""
    steps = sorted(steps, reverse=True)
    notes: List[str] = []
    latest = os.path.join(ckpt_dir, 'latest')
    if not steps:
        return steps, notes
    found = ('; found %s by scanning %s' %
             (', '.join('ckpt-%d' % s for s in steps), ckpt_dir))
    try:
        with open(latest) as f:
            name = f.read(200).strip()
    except FileNotFoundError:
        notes.append('alf_rl: %s is missing%s' % (latest, found))
        return steps, notes
    except (OSError, UnicodeDecodeError) as e:
        notes.append('alf_rl: %s is unreadable (%s)%s' %
                     (latest, _one_line(e, 100), found))
        return steps, notes
    if not _NAME.match(name):
        notes.append("alf_rl: %s is corrupt (expected a name like "
                     "'ckpt-100', got %r)%s" % (latest, name[:40], found))
    elif not os.path.isdir(os.path.join(ckpt_dir, name)):
        notes.append('alf_rl: %s names %s, which is missing%s' %
                     (latest, name, found))
    return steps, notes


# A numpy array's repr, possibly nested: "array([[1., 2.], ...], dtype=...)".
_ARRAY = re.compile(r'array\(\[.*?\]\s*(?:,\s*dtype=[\w.]+)?\)', re.DOTALL)
# A long bracketed run of numbers (an array printed without "array(").
_NUMBERS = re.compile(r'\[[-+0-9.eEnaifNIF,\s\[\]]{40,}\]')
# A variable's repr: "<tf.Variable 'name:0' shape=(8,) dtype=float32,
# numpy=...>" (after _ARRAY) -> "name:0 shape=(8,) float32".
_VARIABLE = re.compile(
    r"<tf\.Variable '([^']+)' shape=(\([^)]*\)) dtype=(\w+)[^>]*>")


def summarize_error(error: BaseException, limit: int = 600) -> str:
    """One line of an error's text with array values elided.

    TensorFlow's restore errors can paste whole tensors; names and shapes
    are what a user needs.

    Args:
        error: the exception.
        limit: maximum length of the result.
    """
    text = _ARRAY.sub('array(...)', str(error))
    text = _VARIABLE.sub(r'\1 shape=\2 \3', text)
    text = _NUMBERS.sub('[...]', text)
    text = ' '.join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + '...'


def _one_line(e: BaseException, limit: int = 300) -> str:
    text = ' '.join(str(e).split())
    return text[:limit]


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def atomic_write_text(path: str, text: str) -> None:
    """Writes ``text`` to ``path`` so that a reader (or a crash) sees the
    old file or the new one, never a part: a synced temporary file beside
    it (``.tmp-<name>-*``, removed on failure), then a rename.

    Args:
        path: the file to write.
        text: its whole new content.
    """
    directory = os.path.dirname(path) or '.'
    fd, tmp = tempfile.mkstemp(prefix='.tmp-%s-' % os.path.basename(path),
                               dir=directory)
    try:
        with os.fdopen(fd, 'w') as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _remove_quietly(tmp)
        raise
