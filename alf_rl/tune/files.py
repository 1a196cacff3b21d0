"""The files a search writes, and the JSON helpers that read and write them.

Under the search's directory ``PARENT``: ``grid_search.json`` (the search
record); in each run's directory ``PARENT/<config>/seed<k>``: the
appended logs of ``alf-train``'s output, one line per attempt in
``grid_search_attempts.jsonl`` and, once the run succeeded,
``grid_search_done.json``.
"""

import json
import os
from typing import Any, List, Optional

from alf_rl.utils.checkpoint import atomic_write_text

SEARCH_FILE = 'grid_search.json'
DONE_FILE = 'grid_search_done.json'
ATTEMPTS_FILE = 'grid_search_attempts.jsonl'
STDOUT_LOG = 'grid_search.stdout.log'
STDERR_LOG = 'grid_search.stderr.log'


def write_json(path: str, data: Any) -> None:
    """Writes JSON atomically (``atomic_write_text``), keys sorted.

    Args:
        path: the file to (re)write.
        data: JSON-able data.
    """
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True) +
                      '\n')


def read_json(path: str) -> Optional[Any]:
    """The JSON in a file, or None when it is missing or unreadable."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def listdir(path: str) -> List[str]:
    """The names in a directory ([] when it is not one)."""
    return os.listdir(path) if os.path.isdir(path) else []
