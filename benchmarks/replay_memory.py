"""Memory and speed of an Atari-sized replay buffer, with and without
``frame_stack`` (each [84, 84, 4] stack's newest frame stored once).

Usage::

    python benchmarks/replay_memory.py [--capacity 1000000] [--plain]
        [--fill 20000] [--checkpoint DIR] [--refill 1000]

Builds a ``ReplayBuffer`` of ``--capacity`` DQN transitions (uint8
[84, 84, 4] observation, step type, action, reward, discount) for one
environment, and reports the bytes its variables hold, the process's
resident memory after building it (and its peak), then the time of
``add_batch`` over ``--fill`` steps (episodes of 500 steps, as Atari
life-loss episodes are short) and of ``get_batch(32, 2)`` (the zoo's DQN
batch). ``--plain`` builds the whole-stack buffer instead (28 GB at 1M:
more than this machine has).

``--checkpoint DIR`` then saves the buffer with a ``Checkpointer`` into
``DIR`` (time, bytes on disk), adds ``--refill`` more steps and saves it
again (time, and the bytes the second checkpoint added to the disk: chunk
files whose content did not change are shared), and restores it in a
fresh process (time, resident memory after building the buffer, after
restoring it, and the peak): what checkpointing and resuming a run cost.
"""

import argparse
import os
import resource
import subprocess
import sys
import time
from typing import Callable

import numpy as np

from alf_rl.bin.quiet import import_tensorflow

tf = import_tensorflow()  # quietly, with alf-train's thread settings

from alf_rl.data_structures import Experience, StepType  # noqa: E402
from alf_rl.replay import ReplayBuffer  # noqa: E402
from alf_rl.utils.checkpoint import Checkpointer  # noqa: E402


def _rss_gb() -> float:
    """Resident memory of this process now, in GB (from /proc)."""
    with open('/proc/self/statm') as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf('SC_PAGE_SIZE') / 1e9


def _peak_gb() -> float:
    """Peak resident memory of this process, in GB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


def _build(capacity: int, plain: bool) -> ReplayBuffer:
    """The DQN Atari buffer: [84, 84, 4] uint8 observations, 1 env."""
    spec = Experience(step_type=tf.TensorSpec((), tf.int32),
                      reward=tf.TensorSpec((), tf.float32),
                      discount=tf.TensorSpec((), tf.float32),
                      observation=tf.TensorSpec((84, 84, 4), tf.uint8),
                      action=tf.TensorSpec((), tf.int64))
    return ReplayBuffer(
        spec, 1, capacity, seed=0,
        frame_stack=None if plain else 'experience.observation')


def _restore(directory: str, capacity: int, plain: bool) -> None:
    """Builds the buffer, restores it from ``directory`` and reports the
    memory and time (run in a fresh process by ``--checkpoint``)."""
    buffer = _build(capacity, plain)
    built = _rss_gb()
    start = time.time()
    Checkpointer(directory, replayer=buffer).restore()
    print('restore (fresh process): %.1f s; resident %.2f GB after building '
          'the buffer, %.2f GB after restoring it, peak %.2f GB '
          '(buffer %.2f GB, %d steps back)' %
          (time.time() - start, built, _rss_gb(), _peak_gb(),
           buffer.nbytes / 1e9, int(buffer.total_size)))


def _disk_bytes(directory: str) -> int:
    """Bytes of the files under ``directory``, each file (inode) once."""
    seen = {}
    for root, _, names in os.walk(directory):
        for name in names:
            st = os.stat(os.path.join(root, name))
            seen[(st.st_dev, st.st_ino)] = st.st_size
    return sum(seen.values())


def _checkpoint(buffer: ReplayBuffer, directory: str, capacity: int,
                plain: bool, fill: Callable[[int], None],
                refill: int) -> None:
    """Saves ``buffer`` into ``directory``, adds ``refill`` steps with
    ``fill`` and saves it again, then restores it in a fresh process."""
    checkpointer = Checkpointer(directory, replayer=buffer)
    start = time.time()
    checkpointer.save(1)
    saved = time.time() - start
    size = _disk_bytes(directory)
    print('save: %.1f s, %.2f GB on disk; peak resident %.2f GB' %
          (saved, size / 1e9, _peak_gb()))
    fill(refill)
    start = time.time()
    checkpointer.save(2)
    print('save after %d more steps: %.1f s, %.2f GB more on disk' %
          (refill, time.time() - start, (_disk_bytes(directory) - size) / 1e9))
    subprocess.run([sys.executable, os.path.abspath(__file__), '--capacity',
                    str(capacity), '--restore', directory] +
                   (['--plain'] if plain else []), check=True)


def _filler(buffer: ReplayBuffer) -> Callable[[int], None]:
    """``fill(n)``: adds ``n`` more steps of random frames to ``buffer``
    (episodes of 500 steps, as Atari life-loss episodes are short)."""
    add = tf.function(buffer.add_batch)
    rng = np.random.RandomState(0)
    state = dict(t=0, frames=None)
    env_ids = tf.constant([0])

    def fill(n: int) -> None:
        for _ in range(n):
            t = state['t']
            first = t % 500 == 0
            frame = rng.randint(0, 256, (84, 84), np.uint8)
            frames = [frame] * 4 if first else state['frames'][1:] + [frame]
            add(Experience(
                step_type=tf.constant(
                    [StepType.FIRST if first else StepType.MID]),
                reward=tf.constant([1.0]),
                discount=tf.constant([1.0]),
                observation=tf.constant(np.stack(frames, -1)[None]),
                action=tf.constant([t % 6], tf.int64)), env_ids)
            state.update(t=t + 1, frames=frames)

    return fill


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--capacity', type=int, default=1000000)
    parser.add_argument('--fill', type=int, default=20000)
    parser.add_argument('--plain', action='store_true')
    parser.add_argument('--checkpoint', metavar='DIR',
                        help='save into DIR, restore in a fresh process')
    parser.add_argument('--refill', type=int, default=1000,
                        help='steps added before the second save')
    parser.add_argument('--restore', metavar='DIR', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.restore:
        _restore(args.restore, args.capacity, args.plain)
        return
    before = _rss_gb()
    start = time.time()
    buffer = _build(args.capacity, args.plain)
    print('%s buffer of %d transitions: %.2f GB in variables (%d B per '
          'transition), process +%.2f GB resident (peak %.2f GB), built in '
          '%.1f s' % ('whole-stack' if args.plain else 'frame_stack',
                      args.capacity, buffer.nbytes / 1e9,
                      buffer.bytes_per_item, _rss_gb() - before, _peak_gb(),
                      time.time() - start))

    fill = _filler(buffer)
    fill(100)  # compiles add_batch
    start = time.time()
    fill(args.fill - 100)
    add_us = (time.time() - start) / (args.fill - 100) * 1e6
    sample = tf.function(lambda: buffer.get_batch(32, 2))
    sample()
    start = time.time()
    for _ in range(200):
        data, _ = sample()
    sample_us = (time.time() - start) / 200 * 1e6
    print('add_batch (1 env): %.0f us/step; get_batch(32, 2): %.0f us; '
          'peak resident %.2f GB' % (add_us, sample_us, _peak_gb()))
    assert data.observation.shape == (2, 32, 84, 84, 4)
    if args.checkpoint:
        _checkpoint(buffer, args.checkpoint, args.capacity, args.plain, fill,
                    args.refill)


if __name__ == '__main__':
    main()
