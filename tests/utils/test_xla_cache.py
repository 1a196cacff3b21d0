"""The persistent XLA cache: keys, checksums, publishing, a corrupt entry."""

import os
import subprocess
import sys

from alf_rl.utils import xla_cache

# A jit-compiled function, run in a fresh process with the cache enabled.
_SCRIPT = """
import os
import sys
from alf_rl.utils import xla_cache
private = xla_cache.enable(sys.argv[1])
import tensorflow as tf
f = tf.function(lambda x: tf.reduce_sum(tf.sin(x) * 3.0), jit_compile=True)
value = round(float(f(tf.ones([5]))), 4)
# Entries TensorFlow wrote itself (a compile); a load leaves only links.
written = [
    n for n in os.listdir(private) if not os.path.islink(os.path.join(private, n))
]
print(value, len(written))
"""


def _run(root: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')
    env.pop('TF_XLA_FLAGS', None)
    return subprocess.run(
        [sys.executable, '-c', _SCRIPT, root],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def _entries(root: str) -> list:
    return sorted(
        os.path.join(d, n)
        for d, _, names in os.walk(root)
        for n in names
        if n.endswith('.pb') and xla_cache._PRIVATE not in d
    )


def test_cache_key_counts_xla_flags_but_not_the_cache_flag():
    base = xla_cache.cache_key({})
    assert base == xla_cache.cache_key({'TF_XLA_FLAGS': ''})
    assert len(base) == 16
    with_dir = {'TF_XLA_FLAGS': xla_cache._FLAG + '/x'}
    assert xla_cache.cache_key(with_dir) == base
    assert xla_cache.cache_key({'XLA_FLAGS': '--xla_cpu_foo=1'}) != base
    assert xla_cache.cache_key({'TF_XLA_FLAGS': '--tf_xla_auto_jit=2'}) != (
        base
    )


def test_resolve_root(monkeypatch, tmp_path):
    monkeypatch.delenv(xla_cache.ENV_VAR, raising=False)
    assert xla_cache.resolve_root() == xla_cache.default_root()
    monkeypatch.setenv(xla_cache.ENV_VAR, str(tmp_path))
    assert xla_cache.resolve_root() == str(tmp_path)
    assert xla_cache.resolve_root('off') is None
    monkeypatch.setenv(xla_cache.ENV_VAR, 'off')
    assert xla_cache.resolve_root() is None
    assert xla_cache.resolve_root(str(tmp_path / 'a')) == str(tmp_path / 'a')


def test_publish_checksums_and_valid_entries_drop_corrupt(tmp_path):
    shared = tmp_path / 'key'
    private = shared / '.run-host-1'
    private.mkdir(parents=True)
    (private / 'a.pb').write_bytes(b'executable a')
    (private / 'b.pb').write_bytes(b'executable b')
    os.symlink(str(shared / 'old.pb'), str(private / 'old.pb'))
    published = xla_cache.publish(str(private), str(shared))
    assert published == ['a.pb', 'b.pb']
    assert not private.exists()
    assert xla_cache.valid_entries(str(shared)) == ['a.pb', 'b.pb']
    (shared / 'b.pb').write_bytes(b'executable b, truncat')
    (shared / 'c.pb').write_bytes(b'no checksum')
    assert xla_cache.valid_entries(str(shared)) == ['a.pb']
    assert sorted(os.listdir(shared)) == ['a.pb', 'a.pb.sha256']


def test_prune_removes_least_recently_used(tmp_path):
    for i, name in enumerate(('old.pb', 'new.pb')):
        path = tmp_path / 'k' / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b'x' * 10)
        os.utime(path, (1000 + i, 1000 + i))
    removed = xla_cache.prune(str(tmp_path), max_bytes=15)
    assert removed == [str(tmp_path / 'k' / 'old.pb')]
    assert os.listdir(tmp_path / 'k') == ['new.pb']


def test_enable_does_nothing_once_tensorflow_is_imported(tmp_path):
    import tensorflow  # noqa: F401

    assert xla_cache.enable(str(tmp_path)) is None
    assert not os.listdir(tmp_path)


def test_warm_run_loads_and_corrupt_entry_is_recompiled(tmp_path):
    root = str(tmp_path / 'cache')
    cold = _run(root)
    assert cold.returncode == 0, cold.stderr
    assert cold.stdout.split() == ['12.6221', '1']
    (entry,) = _entries(root)
    with open(entry, 'rb') as f:
        good = f.read()
    warm = _run(root)
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout.split() == ['12.6221', '0'] and warm.stderr == ''
    assert os.path.getmtime(entry) >= os.path.getmtime(entry + '.sha256')
    # A truncated entry (a run killed while writing it): recompiled and
    # written again, not a crash, and nothing on stderr.
    with open(entry, 'wb') as f:
        f.write(good[: len(good) // 2])
    again = _run(root)
    assert again.returncode == 0, again.stderr
    assert again.stdout == cold.stdout and again.stderr == ''
    assert _entries(root) == [entry]
    assert xla_cache.valid_entries(os.path.dirname(entry)) == [
        os.path.basename(entry)
    ]
    assert not [d for d in os.listdir(os.path.dirname(entry)) if 'run' in d]
