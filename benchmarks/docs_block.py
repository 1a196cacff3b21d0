"""Writes a benchmark's output into a markdown page, between markers.

A page holds ``<!-- begin NAME -->`` and ``<!-- end NAME -->`` lines; the
text between them is replaced by what the benchmark printed, so that no
figure there is typed by hand (``benchmarks/multi_seed.py --write``,
``benchmarks/startup.py --write``).
"""

from typing import List


def write_block(path: str, name: str, lines: List[str]) -> None:
    """Replaces the block ``name`` of the page ``path`` with ``lines``.

    Args:
        path: the markdown page.
        name: the block's name in its markers.
        lines: the new text, one string per line.
    Raises:
        ValueError: the page has no such pair of markers.
    """
    begin, end = '<!-- begin %s -->' % name, '<!-- end %s -->' % name
    with open(path) as f:
        text = f.read()
    if begin not in text or end not in text:
        raise ValueError('%s: no %s ... %s block' % (path, begin, end))
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, 'w') as f:
        f.write(head + begin + '\n' + '\n'.join(lines) + '\n' + end + tail)
