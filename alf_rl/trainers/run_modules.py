"""The user modules a run imported, recorded in its run directory.

A gin file's ``import my_module`` line loads the user's own code (an
environment loader, a network). ``alf-train`` writes the modules it
imported so, and the directory each was found in, to
``root_dir/modules.json``; ``alf-play``, ``alf-export`` and
``alf_rl.load`` read it back (``find_run_modules``), search those
directories, and name a module that is still missing in one line with how
to provide it (``--module_path DIR``).
"""

import importlib
import json
import os
import sys
from typing import Dict, List, Sequence

#: The file in a run directory that lists the run's user modules.
MODULES_FILE = 'modules.json'


def _installed(path: str) -> bool:
    """Whether ``path`` is inside the Python installation (site-packages,
    the standard library) or alf_rl itself: not user code."""
    import alf_rl

    roots = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        os.path.dirname(os.path.dirname(os.path.abspath(alf_rl.__file__))),
    }
    path = os.path.abspath(path)
    return any(path == r or path.startswith(r + os.sep) for r in roots)


def imported_user_modules() -> List[Dict[str, str]]:
    """The modules the current gin configuration's ``import`` lines named
    that live outside the Python installation: ``[{'name': module,
    'directory': the sys.path entry it was found in}]``."""
    import gin.config

    found = []
    for statement in sorted(gin.config._IMPORTS, key=lambda s: s.module):
        name = statement.module
        top = sys.modules.get(name.split('.')[0])
        path = getattr(top, '__file__', None)
        if not path:
            continue
        directory = os.path.dirname(os.path.abspath(path))
        if os.path.basename(path) == '__init__.py':
            directory = os.path.dirname(directory)
        if not _installed(directory):
            found.append({'name': name, 'directory': directory})
    return found


def write_run_modules(root_dir: str) -> None:
    """Writes ``root_dir/modules.json``: the user modules of the current
    gin configuration (``imported_user_modules``), atomically."""
    path = os.path.join(root_dir, MODULES_FILE)
    with open(path + '.tmp', 'w') as f:
        json.dump({'modules': imported_user_modules()}, f, indent=1)
    os.replace(path + '.tmp', path)


def find_run_modules(
    root_dir: str, module_paths: Sequence[str] = (), prog: str = 'alf-play'
) -> None:
    """Makes the modules a run imported importable again and imports them.

    ``module_paths`` go first on ``sys.path``, then the directories the
    modules were found in when the run trained (when they still exist),
    then the current directory.

    Args:
        root_dir: the run directory (without ``modules.json``, e.g. a run
            from an older version: nothing is recorded, nothing to do).
        module_paths: directories searched first (``--module_path``).
        prog: the command the error message names.
    Raises:
        ValueError: one line naming a module that cannot be imported, the
            directory it was in and how to provide it.
    """
    for path in reversed([os.path.abspath(p) for p in module_paths]):
        if path not in sys.path:
            sys.path.insert(0, path)
    path = os.path.join(root_dir, MODULES_FILE)
    modules = []
    if os.path.exists(path):
        with open(path) as f:
            modules = json.load(f).get('modules', [])
    for directory in [m['directory'] for m in modules] + [os.getcwd()]:
        if os.path.isdir(directory) and directory not in sys.path:
            sys.path.append(directory)
    for module in modules:
        try:
            importlib.import_module(module['name'])
        except ImportError as e:
            raise ValueError(
                "%s: the run in %s imports module %r (found in %s when it "
                "trained), which cannot be imported here (%s): pass "
                "--module_path DIR, DIR the directory holding it"
                % (prog, root_dir, module['name'], module['directory'], e)
            ) from None
