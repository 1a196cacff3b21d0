"""``RunSummaries``: what a training run writes for TensorBoard and people.

Under ``root_dir``: ``train/`` and (when evaluating) ``eval/`` event files,
each scalar of ``Metrics/`` also against environment steps
(``Metrics_vs_EnvironmentSteps/``), and ``config.gin``, the operative gin
configuration. After a resume, the summaries written after the checkpoint
resumed from are removed first (their iterations run again).
"""

import glob
import os
import sys
import tempfile
from typing import Dict, Optional

import gin
import tensorflow as tf

from alf_rl.utils import summary as summary_utils
from alf_rl.utils.checkpoint import RunDirError, describe_os_error

_METRICS = 'Metrics/'
_VS_STEPS = 'Metrics_vs_EnvironmentSteps/'


class RunSummaries(object):
    """The event writers and summary files of one run.

    Writers are created by ``open()`` (building writes nothing).

    Args:
        root_dir: the run's directory.
        flush_secs: flush period of the event writers.
        evaluate: also write ``eval/``.
    """

    def __init__(self, root_dir: str, flush_secs: float, evaluate: bool):
        self._root_dir = root_dir
        self._flush_secs = flush_secs
        self._evaluate = evaluate
        self.train_writer = None
        self.eval_writer = None

    def open(self) -> None:
        """Creates the ``train/`` (and ``eval/``) writers.

        Raises:
            RunDirError: ``root_dir`` cannot be written.
        """
        flush_millis = int(self._flush_secs * 1000)
        try:
            self.train_writer = tf.summary.create_file_writer(
                os.path.join(self._root_dir, 'train'),
                flush_millis=flush_millis)
            if self._evaluate:
                self.eval_writer = tf.summary.create_file_writer(
                    os.path.join(self._root_dir, 'eval'),
                    flush_millis=flush_millis)
        except tf.errors.OpError as e:
            raise RunDirError(describe_os_error(
                self._root_dir, OSError(' '.join(e.message.split())))) from None

    def flush(self) -> None:
        """Flushes the open writers."""
        for writer in (self.train_writer, self.eval_writer):
            if writer is not None:
                writer.flush()

    def write_train(self, scalars: Dict[str, float], iteration: int,
                    env_steps: int) -> None:
        """Writes ``scalars`` under ``train/`` at ``iteration``, and those
        tagged ``Metrics/...`` also at ``env_steps``."""
        self._write(self.train_writer, scalars, iteration, env_steps)

    def write_eval(self, scalars: Dict[str, float], iteration: int,
                   env_steps: int) -> None:
        """Like ``write_train``, under ``eval/``."""
        self._write(self.eval_writer, scalars, iteration, env_steps)

    @staticmethod
    def _write(writer, scalars, iteration, env_steps):
        with writer.as_default():
            summary_utils.write_scalars(scalars, iteration)
            for tag, value in scalars.items():
                if tag.startswith(_METRICS):
                    tf.summary.scalar(_VS_STEPS + tag[len(_METRICS):],
                                      value, step=env_steps)

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
        steps. Says so on stderr.

        Same effect as TensorBoard's purge on a restart (``SessionLog.START``)
        but for every series: the ``Metrics_vs_EnvironmentSteps`` series are
        indexed by env steps, which a purge by iteration would wipe.

        Args:
            wall_time: ``time.time()`` of the checkpoint's save, or None.
        """
        for sub in ('train', 'eval'):
            for path in sorted(glob.glob(os.path.join(self._root_dir, sub,
                                                      '*tfevents*'))):
                # mtime may be a clock tick behind the last write: a margin.
                if (wall_time is not None
                        and os.path.getmtime(path) < wall_time - 1):
                    continue
                dropped = drop_summaries_after(path, wall_time)
                if dropped:
                    print("alf_rl: TensorBoard: removed %d summaries written "
                          "after %s from %s (their iterations run again)" %
                          (dropped, 'the start (no checkpoint)' if
                           wall_time is None else 'the checkpoint', path),
                          file=sys.stderr, flush=True)


def drop_summaries_after(path: str, wall_time: Optional[float]) -> int:
    """Rewrites an event file without its summaries stamped after
    ``wall_time`` (all of them when it is None); other events (the file
    version header) are kept. A record cut short by a kill is dropped.

    Args:
        path: an ``events.out.tfevents.*`` file (TFRecords of ``Event``).
        wall_time: ``time.time()`` of the checkpoint resumed from, or None.

    Returns:
        the number of summary events removed (the file is untouched when
        there are none and nothing was cut short).
    """
    from tensorflow.core.util import event_pb2
    kept, dropped, truncated = [], 0, False
    try:
        for record in tf.data.TFRecordDataset(path):
            raw = record.numpy()
            event = event_pb2.Event.FromString(raw)
            if event.HasField('summary') and (wall_time is None or
                                              event.wall_time > wall_time):
                dropped += 1
            else:
                kept.append(raw)
    except tf.errors.DataLossError:
        truncated = True
    if not dropped and not truncated:
        return 0
    # Not named '*tfevents*' while being written: TensorBoard reads those.
    fd, tmp = tempfile.mkstemp(prefix='.tmp-events-',
                               dir=os.path.dirname(path))
    os.close(fd)
    try:
        with tf.io.TFRecordWriter(tmp) as writer:
            for raw in kept:
                writer.write(raw)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return dropped
