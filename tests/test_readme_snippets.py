"""Every Python snippet of the README runs as written: each one either runs
here, on its own (a fresh namespace: no snippet leans on another's
imports), or is the very block another test runs."""

import os
import re

import pytest

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')


def _python_blocks(path):
    """[(line number, code)] of the ```python blocks of a markdown file."""
    with open(path) as f:
        text = f.read()
    return [(text[:m.start()].count('\n') + 1, m.group(1))
            for m in re.finditer(r'```python\n(.*?)```', text, re.DOTALL)]


def _plain_tf_player():
    """The program of docs/export.md that
    tests/export/test_plain_tensorflow.py runs."""
    with open(os.path.join(REPO, 'docs', 'export.md')) as f:
        text = f.read()
    return re.search(r'<!-- plain-tf-player -->\s*```python\n(.*?)```',
                     text, re.DOTALL).group(1)


def _run_elsewhere(code):
    """The test that runs ``code`` as written, or None."""
    if code == _plain_tf_player():
        return 'tests/export/test_plain_tensorflow.py'
    if 'class SimHashCountBonus(Algorithm)' in code:
        return 'tests/test_readme_intrinsic_module.py'
    return None


README_BLOCKS = _python_blocks(os.path.join(REPO, 'README.md'))
RUN_HERE = [(line, code) for line, code in README_BLOCKS
            if _run_elsewhere(code) is None]


def test_snippets_run_elsewhere_are_those_tests_blocks():
    elsewhere = [_run_elsewhere(code) for _, code in README_BLOCKS]
    assert 'tests/export/test_plain_tensorflow.py' in elsewhere
    assert 'tests/test_readme_intrinsic_module.py' in elsewhere
    assert RUN_HERE  # the "Using the library" snippets


@pytest.mark.parametrize('line, code', RUN_HERE,
                         ids=['README.md:%d' % line for line, _ in RUN_HERE])
def test_readme_snippet_runs_on_its_own(line, code, monkeypatch):
    monkeypatch.chdir(REPO)
    exec(compile(code, 'README.md:%d' % line, 'exec'),
         {'__name__': '__readme__'})
