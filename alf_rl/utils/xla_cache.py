"""A persistent cache of XLA executables shared by runs, safe to reuse.

TensorFlow saves the executable of every XLA-compiled function to
``--tf_xla_persistent_cache_directory`` (``TF_XLA_FLAGS``, read once when
TensorFlow is imported, so ``enable`` must run before that) and loads it
instead of compiling when the same function is compiled again: the first
iteration of a jit-compiled run drops from tens of seconds to a few.

TensorFlow's own entry name holds a fingerprint of the HLO (the compiled
graph with its shapes and constants, so of every setting that reaches the
graph), and it compares the whole HLO before it loads an entry. What the
HLO does not capture is keyed here: the directory is
``<root>/<key>`` with ``key`` a hash of TensorFlow's version and build,
the XLA flags of the process and the CPU's features (an executable built
for one CPU may not run on another). A changed config or TensorFlow
therefore never loads a stale executable.

TensorFlow writes an entry in place and fails the compiled call when an
entry does not parse (a truncated file from a killed run, a run reading
while another writes). So TensorFlow never sees the shared directory
directly: each process gets a private directory of links to the shared
entries whose checksum (a ``.sha256`` file beside each) is right, and
when the process ends (``atexit``) the entries it wrote are checksummed
and moved into the shared directory atomically. An entry that is corrupt
is removed and compiled again, without a word.

With ``TF_CPP_MIN_LOG_LEVEL`` below 3 (alf_rl sets 3 unless it is set),
TensorFlow logs ``Error parsing text-format
tensorflow.XlaSerializedCacheEntry`` at every cache hit: it tries the text
format before the binary one. The line is harmless.
"""

import atexit
import glob
import hashlib
import os
import platform
import shutil
import socket
import sys
from importlib import metadata
from typing import Dict, List, Optional

# The environment variable that chooses the cache root ('off' disables).
ENV_VAR = 'ALF_RL_XLA_CACHE'
# Entries beyond this many bytes in all are removed, least recently used
# first, when a process publishes its own.
MAX_BYTES = 2 * 1024**3
_FLAG = '--tf_xla_persistent_cache_directory='
_CHECKSUM = '.sha256'
_PRIVATE = '.run-'


def default_root() -> str:
    """``$XDG_CACHE_HOME/alf_rl/xla``, else ``~/.cache/alf_rl/xla``."""
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join(
        os.path.expanduser('~'), '.cache'
    )
    return os.path.join(base, 'alf_rl', 'xla')


def _tensorflow_build() -> str:
    """TensorFlow's version and the size and time of its framework library
    (a rebuild of one version is another build), read without importing
    TensorFlow (nor finding its module, which would use up
    ``quiet_import``'s one-shot hook). The library is looked up in the
    package's directory, not in the ~20k lines of its RECORD (0.006 s
    instead of 0.17 s)."""
    try:
        dist = metadata.distribution('tensorflow')
    except metadata.PackageNotFoundError:
        return 'no tensorflow'
    build = [dist.version]
    pattern = os.path.join(
        str(dist.locate_file('tensorflow')), 'libtensorflow_framework*'
    )
    for path in sorted(glob.glob(pattern)):
        stat = os.stat(path)
        build.append('%d:%d' % (stat.st_size, int(stat.st_mtime)))
    return ' '.join(build)


def _cpu_features() -> str:
    """The CPU's model and feature flags (Linux), else the machine type."""
    try:
        with open('/proc/cpuinfo') as f:
            lines = [
                line
                for line in f
                if line.startswith(('flags', 'model name', 'Features'))
            ]
        return ''.join(sorted(set(lines)))
    except OSError:
        return platform.machine() + platform.processor()


def cache_key(environ: Optional[Dict[str, str]] = None) -> str:
    """The 16-hex-digit key of the executables this process may share.

    Args:
        environ: the environment whose ``XLA_FLAGS`` and ``TF_XLA_FLAGS``
            count (``os.environ`` by default); the cache flag itself does
            not count.
    Returns:
        A hash of TensorFlow's build, the XLA flags and the CPU.
    """
    environ = dict(os.environ if environ is None else environ)
    flags = [
        flag
        for name in ('XLA_FLAGS', 'TF_XLA_FLAGS')
        for flag in environ.get(name, '').split()
        if not flag.startswith(_FLAG)
    ]
    text = '\n'.join(
        [_tensorflow_build(), ' '.join(sorted(flags)), _cpu_features()]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _checksum(path: str) -> str:
    """The sha256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def _read(path: str) -> str:
    """A small file's text, or '' when it cannot be read."""
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ''


def _remove(*paths: str) -> None:
    """Removes files, ignoring those already gone."""
    for path in paths:
        try:
            os.remove(path)
        except OSError:
            pass


def valid_entries(shared: str) -> List[str]:
    """The entries of ``shared`` whose checksum file matches their bytes;
    removes those that do not (corrupt, or written by another tool).

    Args:
        shared: a keyed cache directory.
    Returns:
        The file names (``*.pb``) of the valid entries, sorted.
    """
    valid = []
    for name in sorted(os.listdir(shared)):
        if not name.endswith('.pb'):
            continue
        path = os.path.join(shared, name)
        expected = _read(path + _CHECKSUM)
        try:
            ok = bool(expected) and _checksum(path) == expected
        except OSError:
            ok = False
        if ok:
            valid.append(name)
        else:
            _remove(path, path + _CHECKSUM)
    return valid


def _private_name() -> str:
    """This process's private directory name (host and pid)."""
    return '%s%s-%d' % (_PRIVATE, socket.gethostname(), os.getpid())


def _remove_dead_private_dirs(shared: str) -> None:
    """Removes the private directories of this host's ended processes."""
    prefix = '%s%s-' % (_PRIVATE, socket.gethostname())
    for name in os.listdir(shared):
        pid = name[len(prefix) :]
        if not (name.startswith(prefix) and pid.isdigit()):
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(shared, name), ignore_errors=True)
        except OSError:
            pass  # alive, another user's


def publish(private: str, shared: str) -> List[str]:
    """Moves the entries TensorFlow wrote to ``private`` into ``shared``
    (checksum first, then an atomic rename; an entry already there is
    kept) and removes ``private``.

    Args:
        private: this process's directory (``enable``'s return value).
        shared: the keyed directory it belongs to.
    Returns:
        The names of the entries published.
    """
    published = []
    for name in sorted(os.listdir(private)):
        path = os.path.join(private, name)
        if not name.endswith('.pb') or os.path.islink(path):
            continue
        target = os.path.join(shared, name)
        try:
            if not os.path.exists(target):
                with open(path + _CHECKSUM, 'w') as f:
                    f.write(_checksum(path))
                os.replace(path + _CHECKSUM, target + _CHECKSUM)
                os.replace(path, target)
                published.append(name)
        except OSError:
            pass  # a full disk: the entry is compiled again next time
    shutil.rmtree(private, ignore_errors=True)
    try:
        prune(os.path.dirname(shared))
    except OSError:
        pass  # another process pruning at the same time
    return published


def prune(root: str, max_bytes: int = MAX_BYTES) -> List[str]:
    """Removes the least recently used entries of every key under ``root``
    until they take at most ``max_bytes``.

    Args:
        root: the cache root.
        max_bytes: the size to keep.
    Returns:
        The paths removed.
    """
    entries = []
    for key in os.listdir(root):
        directory = os.path.join(root, key)
        if os.path.isdir(directory):
            for name in os.listdir(directory):
                path = os.path.join(directory, name)
                try:
                    stat = os.stat(path)
                except OSError:
                    continue  # removed meanwhile
                if name.endswith('.pb') and os.path.isfile(path):
                    entries.append((stat.st_mtime, stat.st_size, path))
    total = sum(size for _, size, _ in entries)
    removed = []
    for _, size, path in sorted(entries):
        if total <= max_bytes:
            break
        _remove(path, path + _CHECKSUM)
        total -= size
        removed.append(path)
    return removed


def resolve_root(directory: Optional[str] = None) -> Optional[str]:
    """The cache root: ``directory``, else ``$ALF_RL_XLA_CACHE``, else
    ``default_root()``; ``None`` when the choice is ``'off'`` (or ``''``).

    Args:
        directory: an explicit choice (e.g. ``alf-train --xla_cache``).
    """
    choice = directory if directory is not None else os.environ.get(ENV_VAR)
    if choice is None:
        return default_root()
    if choice.strip().lower() in ('', 'off', 'none', '0', 'false'):
        return None
    return os.path.abspath(os.path.expanduser(choice))


def enable(directory: Optional[str] = None) -> Optional[str]:
    """Points TensorFlow's persistent XLA cache at a private directory of
    valid shared entries, and publishes this process's new entries at
    exit. Call before TensorFlow is imported.

    Does nothing (returns ``None``) when the cache is off, when
    TensorFlow is already imported (its flags are read then), when
    ``TF_XLA_FLAGS`` already names a cache directory (the user's choice)
    or when the directory cannot be created.

    Args:
        directory: the cache root (see ``resolve_root``).
    Returns:
        The private directory TensorFlow uses, or ``None``.
    """
    root = resolve_root(directory)
    xla_flags = os.environ.get('TF_XLA_FLAGS', '')
    if root is None or 'tensorflow' in sys.modules or _FLAG in xla_flags:
        return None
    shared = os.path.join(root, cache_key())
    private = os.path.join(shared, _private_name())
    try:
        os.makedirs(private, exist_ok=True)
        _remove_dead_private_dirs(shared)
        for name in valid_entries(shared):
            os.utime(os.path.join(shared, name))  # recently used
            link = os.path.join(private, name)
            if not os.path.lexists(link):
                os.symlink(os.path.join(shared, name), link)
    except OSError:
        return None
    os.environ['TF_XLA_FLAGS'] = (xla_flags + ' ' + _FLAG + private).strip()
    atexit.register(publish, private, shared)
    return private
