"""Every Python snippet of the README, and of the docs pages whose
snippets are meant to run (``PAGES``), runs as written: each one either
runs here, on its own (a fresh namespace: no snippet leans on another's
imports), is the very block another test runs (``_run_elsewhere``), or is
listed in ``NOT_RUN`` with the reason."""

import os
import re

import pytest

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')

# The pages whose ```python blocks are programs a reader runs. The other
# docs pages have none (or only fragments that need a trained run).
PAGES = ['README.md', 'docs/composition.md', 'docs/export.md']

# (page, a line that identifies the block): why it does not run here.
NOT_RUN = {
    ('docs/export.md', 'reader = tf.train.load_checkpoint(prefix)'):
        'reads a trained run in ~/runs/ppo_cart; '
        'tests/export/test_plain_tensorflow.py::'
        'test_documented_checkpoint_lookup checks the same lookup',
}


def _python_blocks(page: str) -> list:
    """[(line number, code)] of the ```python blocks of a markdown page
    (``page`` relative to the repository root)."""
    with open(os.path.join(REPO, page)) as f:
        text = f.read()
    return [(text[:m.start()].count('\n') + 1, m.group(1))
            for m in re.finditer(r'```python\n(.*?)```', text, re.DOTALL)]


def _export_player(marker: str = 'plain-tf-player') -> str:
    """A program of docs/export.md that tests/export/test_plain_tensorflow.py
    runs (``plain-tf-player`` or ``onnx-player``)."""
    with open(os.path.join(REPO, 'docs', 'export.md')) as f:
        text = f.read()
    return re.search(r'<!-- %s -->\s*```python\n(.*?)```' % marker,
                     text, re.DOTALL).group(1)


def _run_elsewhere(code: str) -> str | None:
    """The test that runs ``code`` as written, or None."""
    if code in (_export_player(), _export_player('onnx-player')):
        return 'tests/export/test_plain_tensorflow.py'
    if 'class SimHashCountBonus(Algorithm)' in code:
        return 'tests/test_docs_intrinsic_module.py'
    return None


def _not_run(page: str, code: str) -> tuple | None:
    """The ``NOT_RUN`` key of this block, or None."""
    for key in NOT_RUN:
        if key[0] == page and key[1] in code:
            return key
    return None


BLOCKS = [(page, line, code) for page in PAGES
          for line, code in _python_blocks(page)]
RUN_HERE = [(page, line, code) for page, line, code in BLOCKS
            if _run_elsewhere(code) is None and _not_run(page, code) is None]


def test_snippets_run_elsewhere_are_those_tests_blocks():
    elsewhere = {(page, _run_elsewhere(code)) for page, _, code in BLOCKS}
    assert ('docs/export.md',
            'tests/export/test_plain_tensorflow.py') in elsewhere
    assert ('docs/composition.md',
            'tests/test_docs_intrinsic_module.py') in elsewhere
    # The "Using the library" snippets.
    assert [line for page, line, _ in RUN_HERE if page == 'README.md']


def test_every_not_run_entry_names_exactly_one_block():
    for key in NOT_RUN:
        matches = [line for page, line, code in BLOCKS
                   if _not_run(page, code) == key]
        assert len(matches) == 1, (key, matches)


@pytest.mark.parametrize('page, line, code', RUN_HERE,
                         ids=['%s:%d' % (page, line)
                              for page, line, _ in RUN_HERE])
def test_snippet_runs_on_its_own(page, line, code, monkeypatch):
    monkeypatch.chdir(REPO)
    exec(compile(code, '%s:%d' % (page, line), 'exec'),
         {'__name__': '__readme__'})
