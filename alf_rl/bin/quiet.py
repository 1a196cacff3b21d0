"""Quiet TensorFlow import for the commands: ``alf_rl.runs.quiet``.

Kept so that ``from alf_rl.bin.quiet import import_tensorflow`` (scripts,
benchmarks) goes on working; the code lives in ``alf_rl.runs.quiet``.
"""

from alf_rl.runs.quiet import (import_tensorflow, run_app,  # noqa: F401
                               start_runtime)
