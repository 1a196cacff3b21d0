"""Gin files for the commands: a syntax check before TensorFlow, parsing
with one-line errors, and user modules made importable.

``check_gin_syntax`` needs only gin's parser (no TensorFlow, no
configurable registered), so a command can refuse a typo in seconds.
``parse_gin`` registers every configurable (``alf_rl.configurables``) and
parses files, then bindings one by one, so that an error names where it
came from and suggests the nearest known name. ``add_module_paths`` puts
the directories of a user's ``@gin.configurable`` code on ``sys.path`` for
gin ``import`` lines.
"""

import difflib
import inspect
import logging
import os
import re
import sys
import tokenize
from typing import List, Optional, Sequence

from alf_rl.runs.examples import examples_dir, resolve_gin_file


def add_module_paths(module_paths: Sequence[str] = (),
                     include_cwd: bool = True) -> None:
    """Makes user modules importable for gin ``import`` lines.

    Args:
        module_paths: directories put at the front of ``sys.path`` (in
            this order), like ``PYTHONPATH``.
        include_cwd: also append the current directory to ``sys.path``
            (after the installed packages, so a local file cannot shadow
            one of them). A console script such as ``alf-train`` does not
            have it on ``sys.path`` otherwise.

    Raises:
        ValueError: naming a ``module_paths`` entry that is not a directory.
    """
    paths = [os.path.abspath(p) for p in module_paths or ()]
    for given, path in zip(module_paths or (), paths):
        if not os.path.isdir(path):
            raise ValueError("--module_path %s: not a directory" % given)
    for path in reversed(paths):
        if path in sys.path:
            sys.path.remove(path)
        sys.path.insert(0, path)
    cwd = os.getcwd()
    if include_cwd and cwd not in sys.path and '' not in sys.path:
        sys.path.append(cwd)


class _DropMessages(logging.Filter):
    """Drops log records whose message starts with ``prefix``."""

    def __init__(self, prefix: str):
        super().__init__()
        self._prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        """False (drop) for the records starting with the prefix."""
        return not str(record.msg).startswith(self._prefix)


def _add_gin_search_path(directory, last=False):
    """Lets ``include 'other.gin'`` resolve next to the including file.

    Searched before gin's default (the working directory): otherwise gin's
    package-resource lookup logs a spurious 'Path not found' error first.
    ``last``: searched after all others (the shipped examples).
    """
    import gin
    prefixes = getattr(gin.config, '_LOCATION_PREFIXES', None)
    if isinstance(prefixes, list):
        if directory not in prefixes:
            prefixes.insert(len(prefixes) if last else 0, directory)
    else:
        gin.add_config_file_search_path(directory)


def check_gin_syntax(gin_files: Optional[Sequence[str]],
                     gin_params: Optional[Sequence[str]]) -> None:
    """Checks that gin files exist and that they and the bindings parse as
    gin syntax, without importing TensorFlow or any configurable.

    Names are not checked here (that needs the configurables registered;
    ``parse_gin`` does it). ``include`` lines are followed when the
    included file is found next to the including one, in the current
    directory or among the shipped examples (where ``parse_gin`` looks).
    A missing ``examples/NAME.gin`` is the shipped example
    (``alf_rl.runs.examples.resolve_gin_file``).

    Args:
        gin_files: gin file paths.
        gin_params: binding strings (``--gin_param``).

    Raises:
        ValueError: one line naming the file and line, or the
            ``--gin_param``, and what is wrong.
    """
    from gin import config_parser
    seen = set()

    def _check_file(path):
        real = os.path.realpath(path)
        if real in seen:
            return
        seen.add(real)
        if not os.path.isfile(path):
            raise ValueError("gin file not found: %s" % path)
        try:
            with open(path) as f:
                statements = list(_parse(f))
        except OSError as e:
            raise ValueError("gin file %s: %s" %
                             (path, e.strerror or e)) from None
        except (SyntaxError, tokenize.TokenError, ValueError) as e:
            raise ValueError("gin file %s: %s" % (path, _syntax(e))) from None
        for statement in statements:
            if isinstance(statement, config_parser.IncludeStatement):
                for base in (os.path.dirname(path), os.getcwd(),
                             examples_dir()):
                    candidate = os.path.join(base, statement.filename)
                    if os.path.isfile(candidate):
                        _check_file(candidate)
                        break

    for path in gin_files or ():
        _check_file(resolve_gin_file(path))
    for binding in gin_params or ():
        try:
            list(_parse(binding))
        except (SyntaxError, tokenize.TokenError, ValueError) as e:
            raise ValueError("--gin_param %r: %s" %
                             (binding, _syntax(e, with_line=False))) from None


def _parse(source):
    """Gin statements of a file object or string, references unresolved."""
    from gin import config_parser

    class _Unresolved(config_parser.ParserDelegate):

        def configurable_reference(self, scoped_configurable_name, evaluate):
            return scoped_configurable_name

        def macro(self, macro_name):
            return macro_name

    return config_parser.ConfigParser(source, _Unresolved())


def _syntax(error, with_line=True):
    """One line for a gin parser error."""
    if isinstance(error, SyntaxError):
        where = ('line %s: ' % error.lineno) if (with_line and
                                                 error.lineno) else ''
        text = (' in %r' % error.text.strip()) if error.text else ''
        return 'gin syntax error, %s%s%s' % (where, error.msg, text)
    message = error.args[0] if error.args else str(error)
    return 'gin syntax error: %s' % ' '.join(str(message).split())


def parse_gin(gin_files: Optional[Sequence[str]],
              gin_params: Optional[Sequence[str]],
              root_dir: Optional[str] = None) -> None:
    """Parses gin files and bindings with a clear error on a bad binding.

    A gin file may ``include`` another one by a path relative to its own
    directory (e.g. ``include 'sac_pendulum.gin'`` in ``examples/``), the
    current directory or the shipped examples (``alf_rl.runs.examples``),
    searched in this order; its ``import my_module`` lines find modules
    next to it too (its directory is searched after the installed
    packages and ``--module_path``). A missing ``examples/NAME.gin`` is
    the shipped example (``resolve_gin_file``). The
    files are parsed first, then each binding on its own, so an error says
    where it came from; an unknown name gets the nearest known one
    suggested. Then every bound value is checked against its parameter's
    type (``alf_rl.runs.binding_checks.check_bindings``), before anything
    is built.

    Args:
        gin_files: list of gin file paths.
        gin_params: list of binding strings.
        root_dir: bound to ``TrainerConfig.root_dir`` when given.
    Raises:
        ValueError: naming the file or the ``--gin_param`` that failed and
            why, e.g. ``--gin_param 'TrainerConfig.num_env_step=5':
            Configurable 'TrainerConfig' doesn't have a parameter named
            'num_env_step'; did you mean num_env_steps?``, or a binding of
            the wrong type: ``PPOLoss.gamma: expected a number, got 'high'
            (str)``.
    """
    import gin
    import alf_rl.configurables  # noqa: F401 (registers gin names)
    gin_files = [resolve_gin_file(path) for path in gin_files or []]
    for path in gin_files:
        if not os.path.exists(path):
            raise ValueError("gin file not found: %s" % path)
        directory = os.path.dirname(os.path.abspath(path))
        _add_gin_search_path(directory)
        if directory not in sys.path:  # for the file's `import` lines
            sys.path.append(directory)
    _add_gin_search_path(examples_dir(), last=True)
    # Absolute paths: gin then opens them directly instead of trying every
    # search path (and logging a spurious error for each miss).
    gin_files = [os.path.abspath(path) for path in gin_files or []]
    errors = (ValueError, KeyError, SyntaxError, ImportError, TypeError,
              OSError)
    # An ``include`` is tried in every search path in turn; gin logs an
    # error for each miss, also when a later path has the file.
    miss_filter = _DropMessages('Path not found: ')
    logging.getLogger().addFilter(miss_filter)
    try:
        gin.parse_config_files_and_bindings(gin_files, [],
                                            finalize_config=False)
    except errors as e:
        raise ValueError("bad gin configuration (%s): %s" %
                         (', '.join(gin_files), explain_gin_error(e))) from e
    finally:
        logging.getLogger().removeFilter(miss_filter)
    for binding in gin_params or []:
        try:
            gin.parse_config(binding)
        except errors as e:
            raise ValueError("--gin_param %r: %s" % (binding, explain_gin_error(
                e, with_location=False))) from e
    if root_dir:
        gin.parse_config("TrainerConfig.root_dir=%r" % root_dir)
    from alf_rl.runs.binding_checks import check_bindings
    check_bindings()


_NO_PARAMETER = re.compile(
    r"Configurable '(?P<owner>[^']+)' doesn't have a parameter named "
    r"'(?P<name>[^']+)'")
_NO_CONFIGURABLE = re.compile(
    r"No configurable matching (?:reference )?'@?(?P<name>[^'(]+)")


def explain_gin_error(error: BaseException,
                      with_location: bool = True) -> str:
    """One line for a gin parse error, with the nearest known name
    suggested for an unknown parameter or configurable.

    Args:
        error: what gin raised.
        with_location: keep gin's 'In file ... line N' part.

    Returns:
        e.g. ``"Configurable 'TrainerConfig' doesn't have a parameter named
        'num_env_step'; did you mean num_env_steps?"``.
    """
    lines = [line.strip() for line in str(error).split('\n') if line.strip()]
    text = lines[0] if lines else type(error).__name__
    suggestion = _suggest(text)
    if suggestion:
        text = '%s; did you mean %s?' % (text.rstrip('.'), suggestion)
    if with_location and len(lines) > 1:
        text += ' (%s)' % ' '.join(lines[1:])
    return text


def _suggest(text: str) -> Optional[str]:
    """The known gin name nearest to the unknown one ``text`` names."""
    import gin
    registry = gin.config._REGISTRY  # no public listing of configurables
    match = _NO_PARAMETER.search(text)
    if match:
        configurable = registry.get_match(match.group('owner'))
        if configurable is None:
            return None
        try:
            names = list(inspect.signature(
                configurable.wrapped).parameters)
        except (TypeError, ValueError):
            return None
        return _nearest(match.group('name'), names)
    match = _NO_CONFIGURABLE.search(text)
    if match:
        wanted = match.group('name').strip().split('.')[-1]
        return _nearest(wanted, _registered_names(registry))
    return None


def _registered_names(registry) -> List[str]:
    return sorted({configurable.name for _, configurable in registry.items()})


def _nearest(name: str, candidates: Sequence[str]) -> Optional[str]:
    close = difflib.get_close_matches(name, list(candidates), n=1,
                                      cutoff=0.6)
    return close[0] if close else None
