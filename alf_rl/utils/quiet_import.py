"""``import alf_rl`` keeps TensorFlow's start-up notices off the terminal.

TensorFlow 2.21 prints about ten lines when it is imported and its devices
are listed (oneDNN, missing CUDA drivers, ``E0000 ... failed call to
cuInit``) before ``TF_CPP_MIN_LOG_LEVEL`` takes effect. The command-line
tools import it quietly (``alf_rl.runs.quiet.import_tensorflow``); for
Python users, importing ``alf_rl`` installs an import hook that does the
same when TensorFlow is first imported by anyone: its module runs inside
``alf_rl.utils.quiet_stderr.notices_dropped`` (every stderr line that is
not a known notice is written back, so real errors still show) and its
devices are listed there. TensorFlow's runtime is not started, so logical
devices and distribution strategies can still be configured.

Set ``ALF_RL_TF_LOGS=1`` to see TensorFlow's notices; nothing is hooked
when TensorFlow was imported before alf_rl.
"""

import importlib.abc
import importlib.machinery
import os
import sys
from typing import Any, Optional, Sequence

from alf_rl.utils.quiet_stderr import notices_dropped

OPT_OUT = 'ALF_RL_TF_LOGS'


class _QuietLoader(importlib.abc.Loader):
    """Runs the real loader of ``tensorflow`` inside ``notices_dropped``."""

    def __init__(self, loader: Any):
        self._loader = loader

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)  # resources etc.: the real one's

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
        with notices_dropped():
            self._loader.exec_module(module)
            # Device discovery prints the CUDA notices on CPU-only machines.
            module.config.list_physical_devices()
        module.get_logger().setLevel('ERROR')


class QuietTensorFlowFinder(importlib.abc.MetaPathFinder):
    """A ``sys.meta_path`` finder that hands ``tensorflow`` a quiet loader
    once, then removes itself."""

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]], target: Any = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        """The real spec of ``tensorflow`` with ``_QuietLoader``; None for
        every other module.

        Args:
            fullname: the module being imported.
            path: the parent package's ``__path__`` (None at top level).
            target: unused (reloads).
        """
        if fullname != 'tensorflow':
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _QuietLoader(spec.loader)
        return spec


def install() -> bool:
    """Installs the hook unless TensorFlow is already imported, the
    opt-out variable is set, or it is installed.

    Returns:
        Whether the hook is (now) installed.
    """
    if 'tensorflow' in sys.modules or os.environ.get(OPT_OUT) == '1':
        return False
    if not any(isinstance(f, QuietTensorFlowFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, QuietTensorFlowFinder())
    return True
