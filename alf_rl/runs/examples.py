"""The example gin files that ship with alf_rl, found by name.

A source checkout holds them in ``examples/``; an installed package holds
the same files as ``alf_rl/examples/`` (``setup.py`` maps the directory
into the wheel), so ``alf-train --example ppo_cart_pole`` works from any
directory. Names are the files' paths under the examples directory
without ``.gin``: ``ppo_cart_pole``, ``offline/bc_cart_pole``.

Gin files may ``include`` an example by its file name (``include
'sac_pendulum.gin'``): a name that is not next to the including file nor
in the current directory is looked up here (``parse_gin``). A
``--gin_file examples/NAME.gin`` that is not under the current directory
is the shipped one, so the documentation's commands work anywhere.
"""

import difflib
import os
from typing import List, Sequence

_SUFFIX = '.gin'
_PREFIX = 'examples' + os.sep


def examples_dir() -> str:
    """The directory of the shipped example gin files: the installed
    package's ``alf_rl/examples``, else a source checkout's top-level
    ``examples/``."""
    import alf_rl

    package = os.path.dirname(os.path.abspath(alf_rl.__file__))
    installed = os.path.join(package, 'examples')
    if os.path.isdir(installed):
        return installed
    return os.path.join(os.path.dirname(package), 'examples')


def example_names() -> List[str]:
    """The names of the shipped examples (sorted; sub-directories with
    ``/``, e.g. ``offline/bc_cart_pole``)."""
    root = examples_dir()
    names = []
    for directory, _, files in os.walk(root):
        relative = os.path.relpath(directory, root)
        for name in files:
            if name.endswith(_SUFFIX):
                path = os.path.normpath(os.path.join(relative, name))
                names.append(path[: -len(_SUFFIX)].replace(os.sep, '/'))
    return sorted(names)


def find_example(name: str, flag: str = '--example') -> str:
    """The path of the shipped example ``name``.

    Args:
        name: e.g. ``'ppo_cart_pole'`` (``.gin`` and a leading
            ``examples/`` may be given too).
        flag: what the name was given as, for the error.
    Returns:
        The gin file's absolute path.
    Raises:
        ValueError: one line naming ``name`` and the closest example
            names (or the examples directory when none is close).
    """
    wanted = name[: -len(_SUFFIX)] if name.endswith(_SUFFIX) else name
    wanted = wanted.replace(os.sep, '/')
    if wanted.startswith('examples/'):
        wanted = wanted[len('examples/') :]
    names = example_names()
    if wanted in names:
        return os.path.join(examples_dir(), *wanted.split('/')) + _SUFFIX
    close = difflib.get_close_matches(wanted, names, n=5, cutoff=0.5)
    hint = (
        'close names: %s' % ', '.join(close)
        if close
        else 'none is close; the %d examples are the .gin files in %s'
        % (len(names), examples_dir())
    )
    raise ValueError('%s %r: no such example; %s' % (flag, name, hint))


def resolve_gin_file(path: str) -> str:
    """``path`` itself when it exists; else, for ``examples/NAME.gin``,
    the shipped example of that name when there is one; else ``path``
    (for the caller's 'not found' error).

    Args:
        path: a gin file path as given (``--gin_file``).
    """
    if os.path.exists(path):
        return path
    relative = os.path.normpath(path)
    if relative.startswith(_PREFIX):
        shipped = os.path.join(examples_dir(), relative[len(_PREFIX) :])
        if os.path.isfile(shipped):
            return shipped
    return path


def gin_files_with_examples(
    gin_files: Sequence[str], examples: Sequence[str]
) -> List[str]:
    """The gin files of a command: the shipped ``examples`` by name
    (``--example``) first, then ``gin_files`` (``--gin_file``, resolved
    by ``resolve_gin_file``), so that a file given after an example
    overrides its settings.

    Raises:
        ValueError: an unknown example name (see ``find_example``).
    """
    return [find_example(name) for name in examples] + [
        resolve_gin_file(path) for path in gin_files
    ]
