"""Dropping TensorFlow's start-up notices from stderr, keeping real errors.

TensorFlow 2.21 prints INFO lines (oneDNN, missing CUDA drivers) through
absl before ``TF_CPP_MIN_LOG_LEVEL`` takes effect. ``notices_dropped``
sends file descriptor 2 to a temporary file while TensorFlow starts, then
writes back every line that is not one of those known notices, so genuine
errors and warnings still reach the terminal. Pure Python: the command
line (``alf_rl.bin.quiet``) and Ray actor processes
(``alf_rl.distributed.ray_actors``) use it before TensorFlow is imported.
"""

import contextlib
import os
import re
import sys
import tempfile
from typing import Iterator, List

_NOISE = [
    re.compile(r'^WARNING: All log messages before absl::InitializeLog'),
    re.compile(r'^I\d{4} .*'),  # glog-style INFO lines
    re.compile(r'^E\d{4} .*(cuInit|cuda_platform|cuda_executor|cudart)'),
    re.compile(r'^W\d{4} .*(cuda|TensorRT|TF-TRT)'),
    re.compile(r'^To enable the following instructions: .*rebuild '
               r'TensorFlow'),
]


def is_noise(line: str) -> bool:
    """True for a known TensorFlow start-up notice (not an error).

    Args:
        line: one line of stderr, without its newline.
    """
    return any(p.match(line) for p in _NOISE)


@contextlib.contextmanager
def stderr_captured() -> Iterator[List[str]]:
    """Sends file descriptor 2 (C++ libraries' output included) to a
    temporary file inside the block.

    Yields:
        A list that receives the captured lines (without newlines) when the
        block ends, also when it raises.
    """
    lines: List[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode='w+b') as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield lines
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            lines.extend(
                capture.read().decode('utf-8', 'replace').splitlines())


def write_back(lines: List[str]) -> None:
    """Prints to stderr every line that is not blank or a known notice.

    Args:
        lines: captured stderr lines (``stderr_captured``).
    """
    for line in lines:
        if line.strip() and not is_noise(line):
            print(line, file=sys.stderr)


@contextlib.contextmanager
def notices_dropped() -> Iterator[None]:
    """Sends file descriptor 2 to a temporary file inside the block, then
    writes back every line that is not a known start-up notice."""
    captured: List[str] = []
    try:
        with stderr_captured() as captured:
            yield
    finally:
        write_back(captured)
