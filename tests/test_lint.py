"""The linter (ruff) and the type checker (mypy), as configured in
``pyproject.toml``, over the package; ``make test`` runs them through this
file, so a new violation fails the suite.

1. ``ruff check alf_rl tests benchmarks examples`` passes. Its per-file ignores are the
   permanent, reasoned ones of ``_RUFF_PERMANENT_IGNORES`` and nothing else:
   a new violation is fixed (or, where a rule is wrong for one line, gets a
   ``# noqa: CODE`` with the reason), never ignored for a whole file.

2. ``mypy`` (``[tool.mypy]``: ``alf_rl/``) reports no error outside the
   modules of the ``[[tool.mypy.overrides]]`` ignore list, and every module
   of that list still has errors: the list may only shrink, and a module
   whose errors are all fixed must leave it (the test says which). To see
   both at once, mypy runs once with the list taken out of the config and
   the errors are sorted into listed and unlisted modules.

Both tools come with the ``[test]`` extra (``pip install -e '.[test]'``);
mypy's cache (``.mypy_cache``) makes a second run take ~2 s instead of ~20.
"""

import os
import subprocess
import sys
import tomllib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Whole-file ignores that stay (each with its reason in pyproject.toml).
_RUFF_PERMANENT_IGNORES = {
    '__init__.py': ['F401'],  # re-exports
    'alf_rl/environments/py_environment.py': ['B027'],  # optional hooks
    'tests/test_structure.py': ['E501'],  # qualified names in budget lists
}


def _pyproject():
    with open(os.path.join(ROOT, 'pyproject.toml'), 'rb') as f:
        return tomllib.load(f)


def _require(module):
    """Fails (not skips: make test installs both) when a tool is missing."""
    try:
        __import__(module)
    except ImportError:
        pytest.fail("%s is not installed in %s; install the test extra: "
                    "pip install -e '.[test]'" % (module, sys.prefix))


def _toml_value(value):
    """A TOML literal for the str/bool/list values of ``[tool.mypy]``."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, list):
        return '[%s]' % ', '.join(_toml_value(v) for v in value)
    return '"%s"' % value


def _mypy_errors_without_ignore_list(tmp_path):
    """``{module: [error lines]}`` of mypy run with no ignore list."""
    options = dict(_pyproject()['tool']['mypy'])
    options.pop('overrides', None)
    config = tmp_path / 'mypy.toml'
    config.write_text('[tool.mypy]\n' + ''.join(
        '%s = %s\n' % (k, _toml_value(v)) for k, v in options.items()))
    proc = subprocess.run(
        [sys.executable, '-m', 'mypy', '--config-file', str(config)],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    errors = {}
    for line in proc.stdout.splitlines():
        path, _, rest = line.partition(':')
        if ': error: ' in rest and path.endswith('.py'):
            module = path[:-len('.py')].replace('/', '.')
            errors.setdefault(module, []).append(line)
    assert proc.returncode in (0, 1) and (errors or proc.returncode == 0), (
        'mypy did not run: %s%s' % (proc.stdout[-2000:], proc.stderr[-2000:]))
    return errors


def test_ruff_check_passes():
    _require('ruff')
    lint = _pyproject()['tool']['ruff']['lint']
    assert lint.get('per-file-ignores', {}) == _RUFF_PERMANENT_IGNORES, (
        'per-file ignores changed: fix the violations (or `# noqa: CODE` '
        'one line with the reason) instead of ignoring a file')
    proc = subprocess.run(
        [sys.executable, '-m', 'ruff', 'check', '--no-cache',
         '--output-format', 'concise', 'alf_rl', 'tests', 'benchmarks',
         'examples'],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_passes_outside_a_shrinking_ignore_list(tmp_path):
    _require('mypy')
    overrides = _pyproject()['tool']['mypy'].get('overrides', [])
    listed = set()
    for override in overrides:
        assert override.get('ignore_errors') is True, override
        listed.update(override['module'])
    errors = _mypy_errors_without_ignore_list(tmp_path)
    problems = []
    for module in sorted(set(errors) - listed):
        problems.append('%s: new type errors (fix them; the ignore list '
                        'may only shrink):\n  %s' %
                        (module, '\n  '.join(errors[module])))
    for module in sorted(listed - set(errors)):
        problems.append('%s: no type errors now; delete it from '
                        '[[tool.mypy.overrides]] in pyproject.toml' % module)
    assert not problems, '\n'.join(problems)


def _format_check(paths, extra=()):
    """``ruff format --check`` over ``paths``; (exit code, unformatted
    files relative to the repository)."""
    proc = subprocess.run(
        [sys.executable, '-m', 'ruff', 'format', '--check',
         '--output-format', 'concise', *extra, *paths],
        cwd=ROOT, capture_output=True, text=True)
    marker = ': unformatted: '
    files = sorted({line.split(':', 1)[0] for line in
                    proc.stdout.splitlines() if marker in line})
    return proc.returncode, files


def test_ruff_format_check_passes_outside_a_shrinking_list():
    """3. ``ruff format --check alf_rl tests`` passes. The files written
    before the formatter was adopted (yapf-style continuation lines) are in
    ``[tool.ruff.format] exclude``; that list may only shrink: a listed file
    that is formatted now must leave it (the test says which), and a new
    file is formatted from its start. Reformatting the old files in one
    sweep grows the code ~10% (black-style one-argument-per-line calls)
    and would push functions past the structure test's size budgets, so
    they are formatted as they are rewritten."""
    _require('ruff')
    code, files = _format_check(['alf_rl', 'tests'])
    assert code == 0, ('not formatted (run: ruff format FILE): %s' %
                       ', '.join(files))
    listed = _pyproject()['tool']['ruff']['format'].get('exclude', [])
    missing = [f for f in listed if not os.path.exists(os.path.join(ROOT, f))]
    assert not missing, ('[tool.ruff.format] exclude lists files that do '
                         'not exist; delete them: %s' % ', '.join(missing))
    _, unformatted = _format_check(
        listed, ['--config', 'format.exclude = []', '--no-force-exclude'])
    formatted = sorted(set(listed) - set(unformatted))
    assert not formatted, ('formatted now; delete from [tool.ruff.format] '
                           'exclude in pyproject.toml: %s' %
                           ', '.join(formatted))
