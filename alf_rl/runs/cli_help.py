"""``--help`` for alf_rl's absl command-line tools.

absl's own ``--help`` lists only the flags of the ``__main__`` module; a
console script's main module is its entry point's, so ``alf-train --help``
printed ``USAGE ... Try --helpfull``, and ``--helpfull`` buries the tool's
flags under ~60 of absl's. ``help_text`` writes the tool's summary and
usage (from its module docstring) and its own flags with their one-line
descriptions; absl's flags stay behind ``--helpfull``.
"""

import sys
import textwrap
from typing import List, Sequence

from absl import flags

HELP_ARGS = ('--help', '-h', '--helpshort', '-?')
_REPEAT_NOTE = ';\n    repeat this option to specify a list of values'


def wants_help(argv: Sequence[str]) -> bool:
    """Whether a command line asks for the short help.

    Args:
        argv: the arguments after the program name.
    Returns:
        True when one of ``HELP_ARGS`` is among them (``--helpfull`` is
        absl's and is left to it).
    """
    return any(a in HELP_ARGS for a in argv)


def _usage_block(doc: str) -> List[str]:
    """The indented block after ``Usage::`` in a docstring (dedented)."""
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith('Usage::'):
            block: List[str] = []
            for rest in lines[i + 1 :]:
                if rest.strip() and not rest.startswith((' ', '\t')):
                    break
                block.append(rest)
            return textwrap.dedent('\n'.join(block)).strip().splitlines()
    return []


def _flag_lines(module_name: str) -> List[str]:
    """``--name: description (default: value)`` per flag of a module."""
    lines = []
    defined = flags.FLAGS.get_flags_for_module(module_name)
    for flag in sorted(defined, key=lambda f: f.name):
        # absl appends this to a multi flag's help; one word says it here.
        note = '' if 'repeatable' in flag.help else ' (repeatable)'
        text = ' '.join(flag.help.replace(_REPEAT_NOTE, note).split())
        if flag.default not in (None, []):
            text += ' (default: %s)' % flag.default_as_str
        lines.append('  --%s: %s' % (flag.name, text))
    return lines


def help_text(module_name: str, prog: str) -> str:
    """The short help of a tool.

    Args:
        module_name: the module whose docstring and flags describe the tool
            (``main_fn.__module__`` of ``run_app``).
        prog: the program name to show.
    Returns:
        The docstring's first line, its usage block, the module's flags one
        per line, and a pointer to ``--helpfull``.
    """
    module = sys.modules.get(module_name)
    doc = (module.__doc__ if module is not None else None) or ''
    summary = doc.strip().splitlines()[0] if doc.strip() else prog
    parts = ['%s: %s' % (prog, summary)]
    usage = _usage_block(doc)
    if usage:
        parts += ['', 'Usage:'] + ['  ' + line for line in usage]
    flag_lines = _flag_lines(module_name)
    if flag_lines:
        parts += ['', 'Flags:'] + flag_lines
    parts += ['', "absl's own flags (logging, etc.): %s --helpfull" % prog]
    return '\n'.join(parts)
