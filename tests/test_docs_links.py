"""Every relative link of README.md, CONTRIBUTING.md, CHANGELOG.md and
docs/*.md resolves: to a file or directory of this repository (never
outside it) and, with a ``#anchor`` into a markdown page, to one of that
page's headings."""

import glob
import os
import re

import pytest

REPO = os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))

# Pages that are linked before they are written; honoured only while the
# file is missing (once it exists, links to it are checked as any other).
PENDING = set()

_FENCE = re.compile(r'^```.*?^```', re.DOTALL | re.MULTILINE)
_INLINE_CODE = re.compile(r'`[^`\n]*`')
_INLINE_LINK = re.compile(r'\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
_REFERENCE = re.compile(r'^\s*\[[^\]]+\]:\s*(\S+)', re.MULTILINE)
_HEADING = re.compile(r'^#{1,6}\s+(.*?)\s*#*\s*$', re.MULTILINE)


def _pages() -> list:
    """The checked pages, relative to the repository root."""
    pages = ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md'] + sorted(
        os.path.relpath(p, REPO)
        for p in glob.glob(os.path.join(REPO, 'docs', '*.md')))
    return [p.replace(os.sep, '/') for p in pages]


def _read(page: str) -> str:
    """The text of a page (relative to the repository root)."""
    with open(os.path.join(REPO, page), encoding='utf-8') as f:
        return f.read()


def _links(text: str) -> list:
    """The link targets of a markdown text, code blocks and spans left
    out (link text that is inline code still counts)."""
    text = _FENCE.sub('', text)
    text = _INLINE_CODE.sub('code', text)
    return _INLINE_LINK.findall(text) + _REFERENCE.findall(text)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, inline-code backticks and
    punctuation dropped, spaces to hyphens."""
    text = heading.replace('`', '').strip().lower()
    text = re.sub(r'[^\w\- ]', '', text)
    return text.replace(' ', '-')


def _anchors(page: str) -> set:
    """The anchors of a markdown page's headings (repeats get -1, -2...)."""
    seen, anchors = {}, set()
    for heading in _HEADING.findall(_FENCE.sub('', _read(page))):
        slug = _slug(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else '%s-%d' % (slug, count))
    return anchors


def _problem(page: str, target: str) -> str | None:
    """What is wrong with one link of ``page``, or None."""
    if re.match(r'^[a-z][a-z0-9+.-]*:', target):  # http:, mailto:, ...
        return None
    path, _, anchor = target.partition('#')
    if path:
        resolved = os.path.normpath(
            os.path.join(REPO, os.path.dirname(page), path))
        relative = os.path.relpath(resolved, REPO).replace(os.sep, '/')
        if relative.startswith('../') or os.path.isabs(path):
            return 'points outside the repository'
        if not os.path.exists(resolved):
            return None if relative in PENDING else 'no such file'
    else:
        relative = page
    if anchor and relative.endswith('.md') and os.path.isfile(
            os.path.join(REPO, relative)):
        if anchor not in _anchors(relative):
            return 'no heading with anchor #%s in %s' % (anchor, relative)
    return None


@pytest.mark.parametrize('page', _pages())
def test_relative_links_resolve(page):
    problems = ['%s: %s' % (target, _problem(page, target))
                for target in _links(_read(page))
                if _problem(page, target)]
    assert not problems, problems


def test_the_checker_finds_broken_links(tmp_path):
    assert _links('[a](x.md) `[b](y.md)` [`c`](z.md#h)\n```\n[d](w)\n```'
                  ) == ['x.md', 'z.md#h']
    assert _problem('README.md', 'docs/no_such_page.md') == 'no such file'
    assert _problem('README.md', '../outside.md') == (
        'points outside the repository')
    assert _problem('README.md', 'https://example.org/x') is None
    assert _problem('README.md', '#no-such-heading').startswith('no heading')
    assert _slug('Environments in TensorFlow ops (`suite_tf`)') == (
        'environments-in-tensorflow-ops-suite_tf')
