"""``RunSummaries``: what a training run writes for TensorBoard and people.

Under ``root_dir``: ``train/`` and (when evaluating) ``eval/`` event files,
each scalar of ``Metrics/`` also against environment steps
(``Metrics_vs_EnvironmentSteps/``), and ``config.gin``, the operative gin
configuration. An event file is created with its first summary, so a start
that writes none leaves none. After a resume, the summaries written after
the checkpoint resumed from are removed first (their iterations run
again); an event file found corrupt then is set aside whole
(``*.corrupt``) and said so, never cut short silently.
"""

import glob
import os
import re
import stat
import sys
import tempfile
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import gin
import tensorflow as tf

from alf_rl.utils import summary as summary_utils
from alf_rl.utils.checkpoint import RunDirError, describe_os_error

_METRICS = 'Metrics/'
_VS_STEPS = 'Metrics_vs_EnvironmentSteps/'
#: TensorBoard reads every file whose name contains this.
_EVENTS = 'tfevents'


class RunSummaries(object):
    """The event writers and summary files of one run.

    Building writes nothing; an event writer (and its file) is created with
    the first summary it writes.

    Args:
        root_dir: the run's directory.
        flush_secs: flush period of the event writers.
        evaluate: also write ``eval/`` (``write_eval``).
    """

    def __init__(self, root_dir: str, flush_secs: float, evaluate: bool):
        self._root_dir = root_dir
        self._flush_secs = flush_secs
        self._evaluate = evaluate
        self._writers: Dict[str, Any] = {}
        #: The run's ``CallbackList`` (set by ``PeriodicWork``): told of
        #: every write (``on_summaries``, e.g. experiment trackers).
        self.callbacks: Any = None

    def open(self) -> None:
        """Starts new event files for a ``train()`` call: closes those of
        an earlier call; the new ones are created with their first
        summary (a call that writes none leaves no empty file)."""
        self.close()

    def _writer(self, sub: str) -> Any:
        """The event writer of ``root_dir/sub``, created on first use.

        Raises:
            RunDirError: ``root_dir`` cannot be written.
        """
        writer = self._writers.get(sub)
        if writer is None:
            try:
                writer = tf.summary.create_file_writer(
                    os.path.join(self._root_dir, sub),
                    flush_millis=int(self._flush_secs * 1000))
            except tf.errors.OpError as e:
                raise RunDirError(describe_os_error(
                    self._root_dir,
                    OSError(' '.join(e.message.split())))) from None
            self._writers[sub] = writer
        return writer

    def flush(self) -> None:
        """Flushes the open writers."""
        for writer in self._writers.values():
            writer.flush()

    def close(self) -> None:
        """Flushes and closes the open writers (a later summary opens a new
        event file)."""
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    def write_train(self, scalars: Dict[str, float], iteration: int,
                    env_steps: int) -> None:
        """Writes ``scalars`` under ``train/`` at ``iteration``, and those
        tagged ``Metrics/...`` also at ``env_steps``."""
        self._write('train', scalars, iteration, env_steps)

    def write_eval(self, scalars: Dict[str, float], iteration: int,
                   env_steps: int) -> None:
        """Like ``write_train``, under ``eval/``.

        Raises:
            ValueError: built with ``evaluate=False``.
        """
        if not self._evaluate:
            raise ValueError("RunSummaries(evaluate=False) writes no eval/ "
                             "summaries")
        self._write('eval', scalars, iteration, env_steps)

    def _write(self, split, scalars, iteration, env_steps):
        with self._writer(split).as_default():
            summary_utils.write_scalars(scalars, iteration)
            for tag, value in scalars.items():
                if tag.startswith(_METRICS):
                    tf.summary.scalar(_VS_STEPS + tag[len(_METRICS):],
                                      value, step=env_steps)
        if self.callbacks is not None:
            self.callbacks.call('on_summaries', iteration, split,
                                {k: float(v) for k, v in scalars.items()},
                                iteration, env_steps)

    def write_config(self) -> None:
        """Writes ``config.gin`` (the operative gin configuration),
        atomically.

        Raises:
            RunDirError: it cannot be written.
        """
        path = os.path.join(self._root_dir, 'config.gin')
        tmp = path + '.tmp'
        try:
            with open(tmp, 'w') as f:
                f.write(gin.operative_config_str())
            os.replace(tmp, path)
        except OSError as e:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise RunDirError(describe_os_error(path, e)) from None

    def drop_after(self, wall_time: Optional[float]) -> None:
        """Removes from ``train/`` and ``eval/`` the summaries written after
        ``wall_time``, the checkpoint being resumed from (all of them when
        None: starting from iteration 0): the iterations they describe run
        again, and TensorBoard would otherwise show two values for their
        steps. Each file changed is said in one line on stderr; a corrupt
        one is set aside (see ``drop_summaries_after``).

        Same effect as TensorBoard's purge on a restart (``SessionLog.START``)
        but for every series: the ``Metrics_vs_EnvironmentSteps`` series are
        indexed by env steps, which a purge by iteration would wipe.

        Args:
            wall_time: ``time.time()`` of the checkpoint's save, or None.
        """
        for sub in ('train', 'eval'):
            for path in sorted(glob.glob(os.path.join(self._root_dir, sub,
                                                      '*' + _EVENTS + '*'))):
                # mtime may be a clock tick behind the last write: a margin.
                if (wall_time is not None
                        and os.path.getmtime(path) < wall_time - 1):
                    continue
                line = drop_summaries_after(path, wall_time).describe(
                    path, 'the start (no checkpoint)' if wall_time is None
                    else 'the checkpoint')
                if line:
                    print(line, file=sys.stderr, flush=True)


class EventsRewrite(NamedTuple):
    """What ``drop_summaries_after`` did to an event file.

    Attributes:
        dropped: summaries removed (stamped after the checkpoint).
        kept: summaries left in the file.
        cut_short: an incomplete last record (a kill mid-write) was
            dropped.
        corrupt: why the file is corrupt (e.g. ``'corrupted record at
            2741'``), or None.
        set_aside: where the corrupt file went (kept whole), or None.
    """
    dropped: int = 0
    kept: int = 0
    cut_short: bool = False
    corrupt: Optional[str] = None
    set_aside: Optional[str] = None

    def describe(self, path: str, after: str) -> Optional[str]:
        """The line saying what was done to ``path``, or None (nothing).

        Args:
            path: the event file.
            after: what the removed summaries came after, e.g. ``'the
                checkpoint'``.
        """
        left = ('%d summaries before it stay in %s' % (self.kept, path)
                if self.kept else 'no summary before it is left')
        if self.corrupt is not None:
            return ("alf_rl: TensorBoard: event file %s is corrupt (%s); "
                    "moved aside whole to %s (kept; TensorBoard skips it); "
                    "%s" % (path, self.corrupt, self.set_aside, left))
        if not (self.dropped or self.cut_short):
            return None
        return ("alf_rl: TensorBoard: removed %d summaries written after %s "
                "from %s (their iterations run again)%s%s" % (
                    self.dropped, after, path,
                    '; and an incomplete last record (cut short by a kill)'
                    if self.cut_short else '',
                    '' if self.kept else '; no summary left: file removed'))


def _read_events(path: str, wall_time: Optional[float]
                 ) -> Tuple[List[bytes], int, int, Optional[str]]:
    """Reads an event file's records up to the end or the first damaged
    one.

    Returns:
        ``(kept records, summaries kept, summaries dropped, error)``:
        ``error`` is None, ``'cut short'`` (an incomplete last record) or
        why the file is corrupt.
    """
    from google.protobuf.message import DecodeError
    from tensorflow.core.util import event_pb2
    kept: List[bytes] = []
    summaries = dropped = 0
    error = None
    try:
        for record in tf.data.TFRecordDataset(path):
            raw = record.numpy()
            event = event_pb2.Event.FromString(raw)
            if not event.HasField('summary'):
                kept.append(raw)
            elif wall_time is None or event.wall_time > wall_time:
                dropped += 1
            else:
                kept.append(raw)
                summaries += 1
    except tf.errors.DataLossError as e:
        found = re.search(r'(corrupted|truncated) record at \d+', e.message)
        error = (found.group(0) if found else ' '.join(e.message.split())[
            :200])
        if error.startswith('truncated'):
            error = 'cut short'
    except DecodeError as e:
        error = 'an undecodable event (%s)' % e
    return kept, summaries, dropped, error


def drop_summaries_after(path: str, wall_time: Optional[float]
                         ) -> EventsRewrite:
    """Rewrites an event file without its summaries stamped after
    ``wall_time`` (all of them when it is None); other events (the file
    version header) are kept, and so is the file's mode. An incomplete
    last record (a kill mid-write) is dropped; a file left with no
    summary is removed.

    A damaged record (a checksum that fails: a flipped bit) makes the file
    corrupt: it is renamed whole to ``<name>.corrupt``, with ``tfevents``
    in its name spelled ``tf-events`` so that TensorBoard does not read it
    (``-1``, ``-2``... if taken), and the summaries read before the damage
    (and not dropped) are written to ``path`` again.

    Args:
        path: an ``events.out.tfevents.*`` file (TFRecords of ``Event``).
        wall_time: ``time.time()`` of the checkpoint resumed from, or None.

    Returns:
        an ``EventsRewrite`` (the file is untouched when nothing was
        dropped, cut short or damaged).
    """
    kept, summaries, dropped, error = _read_events(path, wall_time)
    cut_short = error == 'cut short'
    if not dropped and error is None:
        return EventsRewrite(kept=summaries)
    mode = stat.S_IMODE(os.stat(path).st_mode)
    set_aside = None
    if not cut_short and error is not None:
        set_aside = _corrupt_name(path)
        os.rename(path, set_aside)
    elif not summaries:
        os.remove(path)
    if summaries:
        _write_records(path, kept, mode)
    return EventsRewrite(dropped, summaries, cut_short,
                         None if cut_short else error, set_aside)


def _corrupt_name(path: str) -> str:
    """A free name for a corrupt event file that TensorBoard skips."""
    base = path[:len(path) - len(os.path.basename(path))] + \
        os.path.basename(path).replace(_EVENTS, 'tf-events') + '.corrupt'
    aside, n = base, 0
    while os.path.lexists(aside):
        n += 1
        aside = '%s-%d' % (base, n)
    return aside


def _write_records(path: str, records: List[bytes], mode: int) -> None:
    """Writes ``records`` to ``path`` atomically, with file mode
    ``mode``."""
    # Not named '*tfevents*' while being written: TensorBoard reads those.
    fd, tmp = tempfile.mkstemp(prefix='.tmp-events-',
                               dir=os.path.dirname(path))
    os.close(fd)
    try:
        with tf.io.TFRecordWriter(tmp) as writer:
            for raw in records:
                writer.write(raw)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
