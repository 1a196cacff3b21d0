"""Large variables (replay buffers) checkpointed chunk by chunk, beside
TensorFlow's bundle, so that restoring one needs its size once.

``tf.train.Checkpoint`` restores every variable of a device with one
``RestoreV2`` op: the saved values are all read into new tensors before
they are assigned, and the memory freed afterwards stays with the process.
A 7 GB Atari replay buffer that trains in 8 GB resumed in 15 GB and kept
them. The ``Checkpointer`` leaves the variables of ``ChunkedVariables``
modules out of the bundle (``chunks_written_apart``) and writes them with
``write_chunks`` into ``<prefix>.chunks/``:

    <prefix>.chunks/<sha256>.bin    the rows of one chunk (``CHUNK_BYTES``)
                                    of a variable, raw, C order, named by
                                    the SHA-256 of its bytes
    <prefix>.chunks/manifest.json   per variable: its key, dtype, shape,
                                    rows per chunk, and each chunk's
                                    SHA-256 (its file) and CRC-32 (checked
                                    when read; written last)

A chunk file is named by its content, so a checkpoint shares the chunks
that did not change since the checkpoint before (``reuse``): they are hard
links to its files, not copies (a replay buffer adds a tenth of its
capacity between two checkpoints of an Atari run: the rest is not written
again), and chunks with the same bytes (the rows not filled yet) are one
file. Files are never changed once written, so a crash, a kill or a full
disk during a save cannot damage the checkpoints sharing them; and a save
links only files that this process wrote or read and checked when it
restored them, and that were not written into since (size and
modification time as then). ``chunks_left_out`` restores a checkpoint
without its chunk files (e.g. one of them is damaged).

Keys are the ones ``tf.train.Checkpoint`` gave these variables before
(``replayer/_buffer/_flat_data/0``): a checkpoint written before this
module existed is restored from its bundle (``read_chunks`` falls back to
it, a whole variable at a time, as before), and one of the first format
(``<i>.bin``: a variable's rows in one file, a CRC-32 per chunk) is read
as it was. Reading back (``check_chunks``) and restoring (``read_chunks``)
go one chunk at a time and check each chunk's checksum; floating chunks
are checked for NaN/Inf.

This module imports TensorFlow: ``alf_rl.utils.checkpoint`` (imported by
``alf-train`` before TensorFlow) imports it inside its methods.
"""

import contextlib
import hashlib
import json
import os
import re
import threading
import zlib
from typing import (
    Any,
    ContextManager,
    Dict,
    Iterator,
    List,
    Optional,
    Set,
    Tuple,
)

import numpy as np
import tensorflow as tf

from alf_rl.utils.checkpoint_contents import (
    _KEY_SUFFIX,
    ReadBack,
    non_finite_kind,
    problem_line,
)

#: Bytes of one chunk read or written at a time (whole rows; at least one).
#: Under glibc's largest mmap threshold (32 MiB), so that numpy reuses the
#: memory of the chunk before instead of faulting fresh pages in: measured
#: 2.3 s to write a 1.4 GB buffer in 16 MiB chunks, 3.6 s in 64 MiB ones.
CHUNK_BYTES = 16 << 20
#: The directory of chunk files beside a checkpoint prefix.
CHUNKS_SUFFIX = '.chunks'
MANIFEST = 'manifest.json'
#: The manifest's format: 1, a file per variable with a CRC-32 per chunk;
#: 2, a file per distinct chunk, named by its SHA-256 (and a CRC-32 per
#: chunk, quicker to check when reading).
_FORMAT = 2
_DIGEST = re.compile('^[0-9a-f]{64}$')
_FIELDS = {
    1: ('key', 'file', 'dtype', 'shape', 'rows_per_chunk', 'crc32'),
    2: ('key', 'dtype', 'shape', 'rows_per_chunk', 'chunks', 'crc32'),
}


_local = threading.local()
#: ``(st_dev, st_ino)`` of the chunk directories this process wrote, or
#: restored from whole (every file read and checked): a save hard-links
#: unchanged chunk files only from these. A checkpoint restored without its
#: chunk files (``chunks_left_out``) is not vouched for: the next save
#: writes its chunks again rather than link files that may be damaged.
_VOUCHED: Set[Tuple[int, int]] = set()
#: ``(st_dev, st_ino)`` -> ``(st_size, st_mtime_ns)`` of each chunk file
#: this process wrote, or read and found whole: a save links a file only
#: while both are unchanged, so one written into since (damaged in place
#: between two saves) is written again. (Damage that leaves its time
#: alone, a disk error at rest, is found by the checksums when read.)
_FILES: Dict[Tuple[int, int], Tuple[int, int]] = {}


def _identity(directory: str) -> Optional[Tuple[int, int]]:
    try:
        st = os.stat(directory)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _vouch(directory: str, good: bool = True) -> None:
    """Adds the chunk ``directory`` to ``_VOUCHED`` (``good``) or takes it
    out."""
    identity = _identity(directory)
    if identity is not None:
        if good:
            _VOUCHED.add(identity)
        else:
            _VOUCHED.discard(identity)


def _known(st: os.stat_result) -> None:
    """Records the chunk file of ``st`` as whole as it is now."""
    _FILES[(st.st_dev, st.st_ino)] = (st.st_size, st.st_mtime_ns)


def _unchanged(st: os.stat_result) -> bool:
    """Whether the chunk file of ``st`` is as when ``_known`` last saw it."""
    return _FILES.get((st.st_dev, st.st_ino)) == (st.st_size, st.st_mtime_ns)


def _apart() -> bool:
    return getattr(_local, 'apart', False)


def _left_out() -> bool:
    return getattr(_local, 'left_out', False)


@contextlib.contextmanager
def _thread_flag(name: str) -> Iterator[None]:
    """Sets the flag ``name`` of this thread inside (as it was after)."""
    before = getattr(_local, name, False)
    setattr(_local, name, True)
    try:
        yield
    finally:
        setattr(_local, name, before)


def chunks_written_apart() -> ContextManager[None]:
    """Within it (in this thread), ``tf.train.Checkpoint`` does not see the
    chunked variables of ``ChunkedVariables`` modules: it neither saves nor
    restores nor expects them (the ``Checkpointer`` writes and reads them
    in chunk files itself)."""
    return _thread_flag('apart')


def chunks_left_out() -> ContextManager[None]:
    """Within it (in this thread), restoring leaves the chunked variables
    out: ``read_state`` restores everything else and leaves them as they
    are, and ``chunks_restored`` is False (reading a checkpoint back skips
    its chunk files). For resuming from a checkpoint whose chunk files are
    damaged, or without its stored experience: the caller then makes the
    module's restored counters agree with what its chunked variables hold
    (an online run clears its replay buffer; an offline one holds the
    dataset again, as it was when the checkpoint was written)."""
    return _thread_flag('left_out')


def chunks_restored(checkpoint: Any) -> bool:
    """Whether restoring ``checkpoint`` (a ``tf.train.Checkpoint``) reads
    chunk files: it holds chunked variables and they are not left out
    (``chunks_left_out``)."""
    return not _left_out() and bool(find_chunked(checkpoint))


class ChunkedVariables(object):
    """A mixin for ``tf.Module``s holding large variables (replay buffers)
    that a ``Checkpointer`` saves chunk by chunk, outside TensorFlow's
    bundle.

    The variables stay ordinary tracked attributes: a plain
    ``tf.train.Checkpoint`` saves and restores them in its bundle as
    before. Within ``chunks_written_apart`` the module hides them from
    checkpoints (``_trackable_children``, ``_lookup_dependency``).

    Subclasses set ``_chunked_attributes``: the names of the attributes
    (a variable, or a list of variables) to chunk.
    """

    _chunked_attributes: Tuple[str, ...] = ()

    def _trackable_children(
        self, save_type: Any = 'checkpoint', **kwargs: Any
    ) -> Dict[str, Any]:
        children = super()._trackable_children(  # type: ignore[misc]
            save_type, **kwargs
        )
        if _apart():
            children = {
                name: child
                for name, child in children.items()
                if name not in self._chunked_attributes
            }
        return children

    def _lookup_dependency(
        self, name: str, cached_dependencies: Any = None
    ) -> Any:
        if _apart() and name in self._chunked_attributes:
            return None
        return super()._lookup_dependency(  # type: ignore[misc]
            name, cached_dependencies
        )

    def chunked_variables(self) -> Dict[str, Any]:
        """``{name: tf.Variable}`` of the chunked variables, named as
        ``tf.train.Checkpoint`` names them under this module
        (``'_flat_data/0'``, ``'_frame_first'``)."""
        found = {}
        for attribute in self._chunked_attributes:
            value = getattr(self, attribute, None)
            if isinstance(value, tf.Variable):
                found[attribute] = value
            elif value is not None:
                for i, var in enumerate(value):
                    found['%s/%d' % (attribute, i)] = var
        for name, var in found.items():
            if var.shape.rank is None or var.shape.rank < 1:
                raise ValueError(
                    '%s: chunked variable %s must have rank >= '
                    '1 (rows), got shape %s'
                    % (type(self).__name__, name, var.shape)
                )
        return found


def rows_per_chunk(var: Any, chunk_bytes: Optional[int] = None) -> int:
    """Rows of ``var`` ([rows, ...]) in one chunk of ``chunk_bytes``
    (default ``CHUNK_BYTES``; at least 1 row)."""
    row = var.shape[1:].num_elements() * var.dtype.size
    chunk = CHUNK_BYTES if chunk_bytes is None else chunk_bytes
    return max(1, chunk // max(1, row))


def find_chunked(checkpoint: Any) -> List[Tuple[str, Any]]:
    """The chunked variables under a ``tf.train.Checkpoint``.

    Args:
        checkpoint: a ``tf.train.Checkpoint``.

    Returns:
        ``[(key, variable)]`` in traversal order, each variable once;
        ``key`` is the one ``tf.train.Checkpoint`` gives the variable
        (``replayer/_buffer/_flat_data/0``: the path of its module, first
        found breadth first, and its name there).
    """
    view = tf.train.TrackableView(checkpoint)
    found, seen_nodes, seen_vars = [], {id(checkpoint)}, set()
    queue = [('', checkpoint)]
    while queue:
        path, obj = queue.pop(0)
        if isinstance(obj, ChunkedVariables):
            for name, var in obj.chunked_variables().items():
                if id(var) not in seen_vars:
                    seen_vars.add(id(var))
                    found.append(('%s/%s' % (path, name), var))
        for name, child in view.children(obj).items():
            if id(child) not in seen_nodes:
                seen_nodes.add(id(child))
                queue.append(('%s/%s' % (path, name) if path else name, child))
    return found


def _read_rows(var: Any, lo: int, hi: int) -> Any:
    """Rows ``[lo, hi)`` of ``var`` as numpy, by a gather: never a
    whole-variable read, which copies a variable in copy-on-read mode (as
    replay buffers, written by scatters, are)."""
    return var.sparse_read(np.arange(lo, hi, dtype=np.int64)).numpy()


def _write_rows(var: Any, lo: int, rows: Any) -> None:
    """``rows`` (numpy) into rows ``lo, lo + 1, ...`` of ``var``."""
    var.scatter_update(
        tf.IndexedSlices(
            tf.constant(rows),
            tf.constant(np.arange(lo, lo + len(rows), dtype=np.int64)),
        )
    )


def _spans(rows: int, per_chunk: int) -> List[Tuple[int, int]]:
    return [
        (lo, min(rows, lo + per_chunk)) for lo in range(0, rows, per_chunk)
    ]


def non_finite_chunked(found: List[Tuple[str, Any]]) -> Optional[str]:
    """The name of the first floating chunked variable holding NaN or Inf
    (read a chunk at a time; ``var.name``, as ``non_finite_variable``
    names the others), or None.

    Args:
        found: ``find_chunked``'s list.
    """
    for _, var in found:
        if not var.dtype.is_floating:
            continue
        for lo, hi in _spans(int(var.shape[0]), rows_per_chunk(var)):
            if non_finite_kind(_read_rows(var, lo, hi)) is not None:
                return var.name
    return None


def _put_chunk(directory: str, rows: Any, earlier: Optional[str]) -> str:
    """Makes ``<sha256>.bin`` of ``rows`` (numpy) exist in ``directory``:
    already there (the same bytes earlier in this checkpoint), a hard link
    to the file of the same name and size in ``earlier`` (the checkpoint
    before) unchanged since this process wrote or checked it, or written
    and synced. Returns the SHA-256 (hex)."""
    digest = hashlib.sha256(rows.data).hexdigest()
    path = os.path.join(directory, digest + '.bin')
    if os.path.exists(path):
        return digest
    if earlier is not None:
        source = os.path.join(earlier, digest + '.bin')
        try:
            st = os.stat(source)
            if st.st_size == rows.nbytes and _unchanged(st):
                os.link(source, path)
                return digest
        except OSError:
            pass  # not there, or no hard links here: written below
    with open(path, 'wb') as f:
        rows.tofile(f)
        f.flush()
        os.fsync(f.fileno())
        _known(os.fstat(f.fileno()))
    return digest


def write_chunks(
    found: List[Tuple[str, Any]], prefix: str, reuse: Optional[str] = None
) -> None:
    """Writes the chunked variables beside the checkpoint at ``prefix``
    (into ``<prefix>.chunks/``, a file per distinct chunk, the manifest
    last; each file synced).

    Args:
        found: ``find_chunked``'s list (nothing is written when empty).
        prefix: the checkpoint prefix being written (in its temporary
            directory: the caller makes the whole checkpoint appear at
            once).
        reuse: the prefix of a complete earlier checkpoint, or None: its
            chunk files whose content is unchanged are hard-linked, not
            written again, when this process wrote them or restored from
            them (else they are written).

    Raises:
        OSError: writing failed (e.g. the disk is full).
    """
    if not found:
        return
    directory = prefix + CHUNKS_SUFFIX
    os.makedirs(directory)
    earlier = None if reuse is None else reuse + CHUNKS_SUFFIX
    if earlier is not None and _identity(earlier) not in _VOUCHED:
        earlier = None  # not written nor checked here: written again
    entries = []
    for key, var in found:
        per_chunk = rows_per_chunk(var)
        chunks, crcs = [], []
        for lo, hi in _spans(int(var.shape[0]), per_chunk):
            rows = _read_rows(var, lo, hi)
            chunks.append(_put_chunk(directory, rows, earlier))
            crcs.append(zlib.crc32(rows.data))
        entries.append(
            dict(
                key=key,
                dtype=var.dtype.name,
                shape=var.shape.as_list(),
                rows_per_chunk=per_chunk,
                chunks=chunks,
                crc32=crcs,
            )
        )
    with open(os.path.join(directory, MANIFEST), 'w') as f:
        json.dump(dict(format=_FORMAT, variables=entries), f)
        f.flush()
        os.fsync(f.fileno())
    _vouch(directory)


def read_manifest(prefix: str) -> Optional[List[Dict[str, Any]]]:
    """The manifest entries of the checkpoint at ``prefix``, or None when
    it has no chunk files (written before them, or holding no chunked
    variable).

    Raises:
        ValueError: the chunk directory exists but its manifest is missing
            or malformed.
    """
    directory = prefix + CHUNKS_SUFFIX
    if not os.path.isdir(directory):
        return None
    path = os.path.join(directory, MANIFEST)
    try:
        with open(path) as f:
            manifest = json.load(f)
        entries = manifest['variables']
        fields = _FIELDS.get(manifest.get('format'))
        if fields is None:
            raise ValueError(
                'format %r, expected one of %s'
                % (manifest.get('format'), sorted(_FIELDS))
            )
        for e in entries:
            for field in fields:
                if field not in e:
                    raise ValueError('an entry lacks %r' % field)
            for digest in e.get('chunks', ()):
                if not _DIGEST.match(str(digest)):
                    raise ValueError('a chunk named %r' % (digest,))
    except FileNotFoundError:
        raise ValueError('%s is missing' % path) from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError('%s is unreadable (%s)' % (path, e)) from None
    return list(entries)


def _entry_layout(
    entry: Dict[str, Any], sums: str
) -> Tuple[Any, List[int], int, List[Tuple[int, int]]]:
    """``(dtype, shape, values per row, spans)`` of a manifest entry whose
    lists ``sums`` and ``crc32`` have one item per chunk.

    Raises:
        ValueError: a list's length differs from the number of chunks.
    """
    dtype = np.dtype(tf.as_dtype(entry['dtype']).as_numpy_dtype)
    shape = [int(d) for d in entry['shape']]
    row = int(np.prod(shape[1:], dtype=np.int64))
    spans = _spans(shape[0], int(entry['rows_per_chunk']))
    for field in (sums, 'crc32'):
        if len(spans) != len(entry[field]):
            raise ValueError(
                '%s: manifest lists %d %s for %d chunks'
                % (entry['key'], len(entry[field]), field, len(spans))
            )
    return dtype, shape, row, spans


def _check_size(f: Any, path: str, expected: int) -> None:
    """Raises ValueError naming ``path`` unless the open file ``f`` holds
    ``expected`` bytes."""
    size = os.fstat(f.fileno()).st_size
    if size != expected:
        raise ValueError(
            '%s holds %d bytes, expected %d' % (path, size, expected)
        )


def _check_crc(rows: Any, crc: int, path: str, lo: int, hi: int) -> None:
    """Raises ValueError naming ``path`` and rows ``lo..hi`` unless the
    CRC-32 of ``rows`` (numpy) is ``crc``."""
    if zlib.crc32(rows.data) != crc:
        raise ValueError(
            '%s: checksum mismatch in rows %d..%d' % (path, lo, hi)
        )


def _read_entry(
    directory: str, entry: Dict[str, Any]
) -> Iterator[Tuple[int, int, Any]]:
    """Yields ``(lo, hi, rows)`` of a manifest entry, a chunk at a time,
    each checked against its checksum and size.

    Raises:
        ValueError: a missing, short, long or corrupt file (naming it).
    """
    if 'chunks' not in entry:
        yield from _read_entry_v1(directory, entry)
        return
    dtype, shape, row, spans = _entry_layout(entry, 'chunks')
    # (name, crc, rows in it, the rows): chunks alike in a row read once.
    last = None
    for (lo, hi), digest, crc in zip(spans, entry['chunks'], entry['crc32']):
        if last is not None and last[:3] == (digest, crc, hi - lo):
            yield lo, hi, last[3]
            continue
        path = os.path.join(directory, digest + '.bin')
        try:
            f = open(path, 'rb')
        except FileNotFoundError:
            raise ValueError('%s is missing' % path) from None
        with f:
            _check_size(f, path, (hi - lo) * row * dtype.itemsize)
            rows = np.fromfile(f, dtype, count=(hi - lo) * row)
            st = os.fstat(f.fileno())
        _check_crc(rows, crc, path, lo, hi)
        _known(st)
        last = (digest, crc, hi - lo, rows.reshape([hi - lo] + shape[1:]))
        yield lo, hi, last[3]


def _read_entry_v1(
    directory: str, entry: Dict[str, Any]
) -> Iterator[Tuple[int, int, Any]]:
    """``_read_entry`` for the first format: the variable's rows in one
    file, a CRC-32 per chunk."""
    dtype, shape, row, spans = _entry_layout(entry, 'crc32')
    path = os.path.join(directory, entry['file'])
    with open(path, 'rb') as f:
        _check_size(f, path, shape[0] * row * dtype.itemsize)
        for (lo, hi), crc in zip(spans, entry['crc32']):
            rows = np.fromfile(f, dtype, count=(hi - lo) * row)
            if rows.size != (hi - lo) * row:
                raise ValueError(
                    '%s: checksum mismatch in rows %d..%d' % (path, lo, hi)
                )
            _check_crc(rows, crc, path, lo, hi)
            yield lo, hi, rows.reshape([hi - lo] + shape[1:])


def check_chunks(prefix: str) -> ReadBack:
    """Reads every chunk file of the checkpoint at ``prefix`` back, a chunk
    at a time, checking sizes and checksums, and floating values for
    NaN/Inf.

    Args:
        prefix: the checkpoint prefix.

    Returns:
        A ``ReadBack`` (``non_finite`` naming the variable's key; all None
        when there are no chunk files).
    """
    try:
        entries = read_manifest(prefix)
        if entries is None:
            return ReadBack()
        bad = None
        for entry in entries:
            for _, _, rows in _read_entry(prefix + CHUNKS_SUFFIX, entry):
                kind = non_finite_kind(rows)
                if bad is None and kind is not None:
                    bad = ReadBack(non_finite=entry['key'], value=kind)
    except (OSError, ValueError, TypeError) as e:
        _vouch(prefix + CHUNKS_SUFFIX, False)
        return ReadBack(problem=problem_line(e))
    return bad or ReadBack()


def check_matches(found: List[Tuple[str, Any]], prefix: str) -> None:
    """Checks, before anything is restored, that the checkpoint at
    ``prefix`` holds each chunked variable with its shape and dtype (in its
    chunk files, or in the bundle for a checkpoint written before them).

    Raises:
        ValueError: one that is missing or differs (named).
    """
    entries = {e['key']: e for e in read_manifest(prefix) or []}
    bundle = None
    for key, var in found:
        entry = entries.get(key)
        if entry is not None:
            shape, dtype = list(entry['shape']), entry['dtype']
        else:
            if bundle is None:
                reader = tf.train.load_checkpoint(prefix)
                bundle = (
                    reader.get_variable_to_shape_map(),
                    reader.get_variable_to_dtype_map(),
                )
            if key + _KEY_SUFFIX not in bundle[0]:
                raise ValueError(
                    'it holds no %s%s' % (key, _gone(prefix, key, bundle[0]))
                )
            shape = list(bundle[0][key + _KEY_SUFFIX])
            dtype = bundle[1][key + _KEY_SUFFIX].name
        if shape != var.shape.as_list() or dtype != var.dtype.name:
            raise ValueError(
                '%s is saved as %s %s, the model has %s %s'
                % (key, dtype, shape, var.dtype.name, var.shape.as_list())
            )


def _gone(prefix: str, key: str, bundled: Dict[str, Any]) -> str:
    """``' (its chunk files ... are gone: ...)'`` when the checkpoint at
    ``prefix`` holds the module owning ``key`` (other keys under its top
    name, e.g. ``replayer/``) but neither ``key`` nor a chunk directory:
    its chunk files were deleted; else ``''``."""
    owner = key.split('/')[0] + '/'
    if os.path.isdir(prefix + CHUNKS_SUFFIX) or not any(
        name.startswith(owner) for name in bundled
    ):
        return ''
    return (
        ' (its chunk files, %s, are gone: restore the rest with '
        'restore_replay=False, alf-train --without_replay)'
        % os.path.basename(prefix + CHUNKS_SUFFIX)
    )


def read_chunks(found: List[Tuple[str, Any]], prefix: str) -> None:
    """Restores the chunked variables from the checkpoint at ``prefix``: a
    chunk at a time from its chunk files, or whole from the bundle when it
    was written before them. Call ``check_matches`` first.

    Raises:
        ValueError: a chunk file is short, long or corrupt.
    """
    entries = {e['key']: e for e in read_manifest(prefix) or []}
    for key, var in found:
        entry = entries.get(key)
        if entry is None:
            # Read by TensorFlow into a tensor the variable takes over (no
            # numpy copy): the variable's size twice, as before chunks.
            var.assign(
                tf.raw_ops.RestoreV2(
                    prefix=prefix,
                    tensor_names=[key + _KEY_SUFFIX],
                    shape_and_slices=[''],
                    dtypes=[var.dtype],
                )[0]
            )
            continue
        for lo, _, rows in _read_entry(prefix + CHUNKS_SUFFIX, entry):
            _write_rows(var, lo, rows)
    if entries and set(entries) == {key for key, _ in found}:
        _vouch(prefix + CHUNKS_SUFFIX)  # every file read and checked


def non_finite_state(checkpoint: Any) -> Optional[str]:
    """The name of the first floating variable under a
    ``tf.train.Checkpoint`` holding NaN or Inf (chunked ones a chunk at a
    time), or None: then it is fit to save.

    Args:
        checkpoint: a ``tf.train.Checkpoint``.
    """
    from alf_rl.utils.checkpoint_contents import (
        checkpoint_variables,
        non_finite_variable,
    )

    with chunks_written_apart():
        bundled = checkpoint_variables(checkpoint)
    return non_finite_variable(bundled) or non_finite_chunked(
        find_chunked(checkpoint)
    )


def write_state(
    checkpoint: Any, prefix: str, reuse: Optional[str] = None
) -> None:
    """Writes a ``tf.train.Checkpoint`` at ``prefix``: its bundle without
    the chunked variables, then those into chunk files (``write_chunks``,
    sharing the unchanged chunk files of the checkpoint at ``reuse``).

    Raises:
        OSError, tf.errors.OpError: writing failed.
    """
    with chunks_written_apart():
        checkpoint.write(prefix)
    write_chunks(find_chunked(checkpoint), prefix, reuse)


def read_state(checkpoint: Any, prefix: str) -> None:
    """Restores a ``tf.train.Checkpoint`` from ``prefix`` (written by
    ``write_state``, or before chunks with the chunked variables in its
    bundle). Shapes and dtypes of the chunked variables are checked before
    anything is assigned; every other object must match the checkpoint.
    Within ``chunks_left_out`` the chunked variables are neither checked
    nor assigned.

    Raises:
        ValueError: a chunked variable is missing or differs, or a chunk
            file is corrupt.
        AssertionError, tf.errors.OpError: the bundle does not match.
    """
    found = [] if _left_out() else find_chunked(checkpoint)
    if _left_out():  # its files may be damaged: a save writes its own
        _vouch(prefix + CHUNKS_SUFFIX, False)
    check_matches(found, prefix)
    with chunks_written_apart():
        status = checkpoint.read(prefix)
        status.assert_existing_objects_matched()
        # A checkpoint written before chunks holds the chunked variables in
        # its bundle: read_chunks reads them there.
        status.expect_partial()
    read_chunks(found, prefix)
