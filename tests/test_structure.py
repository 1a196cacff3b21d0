"""The package's structural rules, checked on the source (``ast``, no imports).

Six rules, each a test; all of them together read every file once and run
in well under 2 s. Each failure prints one line per offence.

1. Import direction (STYLE.md, "Shape of the code"). Every module of
   ``alf_rl`` belongs to a layer of ``_LAYERS`` (its longest matching prefix)
   and may import only modules of a layer of *lower* rank, or of its own
   layer. Two different layers of the same rank are siblings and may not
   import each other (replay and drivers; environments, ops and metrics).
   ``_ALLOWED_IMPORTS`` holds reasoned exceptions (one today). Top-level
   and function-local imports both count, and so do
   ``importlib.import_module`` calls with a literal name. Besides the
   ranks: ``alf_rl.algorithms`` imports neither ``gymnasium`` nor gin's
   parsing functions (``_GIN_PARSING``).

2. Every name is referenced. A definition -- a module-level function, class
   or constant (``NAME = ...``), or a method of a class -- is referenced
   when its name appears, outside its own ``def``/``class`` line or
   assignment target: in ``alf_rl/`` as an identifier (a ``Name``, an
   attribute, an imported name, a keyword argument) or as a word in a
   string literal other than a docstring (``getattr`` protocols); or as
   any word of a file in ``tests/`` or ``benchmarks/`` (not parsed, for
   speed; this file excluded) or of an ``examples/*.gin`` file. So a name
   a package ``__init__`` re-exports, a gin-configurable class an example
   config names, and an ``Algorithm`` hook that some code calls
   (``self.after_train(...)``) all count as referenced. A method that only
   a framework calls (Keras ``call``/``build``/``get_config``, gymnasium
   wrapper hooks, tfp bijector hooks) is in ``_FRAMEWORK_HOOKS``; public
   API that DESIGN.md names but nothing calls is in ``_PUBLIC_API``;
   dunders are never flagged. Name-based matching cannot tell two methods
   of one name apart, so it misses some dead code but reports none that
   is alive. Private definitions (one leading underscore) are checked too:
   dead private code is dead code. ``_PENDING_REMOVAL`` lists dead code in
   files other changes own; it must stay dead-only (the test fails once an
   entry is gone, so the list gets pruned).

3. Size budget: a function or method has at most ``_MAX_CODE_LINES`` (50)
   code lines, counting from its ``def`` line to its last line and leaving
   out its docstring, comment-only lines and blank lines (nested functions
   count toward the function that holds them). ``_OVER_BUDGET`` lists the
   functions over it today with their size then, an upper bound (lower it
   when a function shrinks); the list may only shrink: the test fails when
   a listed function grew past its entry, got within the budget (drop it
   from the list) or no longer exists.

4. Annotations: for each file, the fraction of annotated arguments (not
   ``self``/``cls``; ``*args``/``**kwargs`` count) of its public functions
   and methods (name without a leading underscore, plus ``__init__`` and
   ``__call__``, in a public class) is printed by
   ``test_annotation_coverage``. Files not in ``_NOT_YET_ANNOTATED`` must
   have every such argument and every return (``__init__`` aside)
   annotated; a listed file leaves the list once it is, so coverage only
   grows.

5. One argument name per concept: no ``__init__`` in ``alf_rl/algorithms``
   takes a retired spelling (``_RETIRED_ARGUMENTS``: old name -> new name).

6. Thin command-line files: no file in ``alf_rl/bin`` has more than
   ``_MAX_BIN_FILE_LINES`` (300) lines.

7. Class size: no class in ``alf_rl/`` spans more than ``_MAX_CLASS_LINES``
   (300) lines, from its ``class`` line to its last line, docstrings
   included. ``_CLASSES_OVER_BUDGET`` lists the classes over it today with
   their size then; like ``_OVER_BUDGET`` it may only shrink (a listed
   class that grew, got within the budget or is gone fails the test).
"""

import ast
import functools
import os
import re

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE = 'alf_rl'

# ---------------------------------------------------------------------------
# 1. Layers. Longest prefix wins. Lower rank = lower in the chain.
# ---------------------------------------------------------------------------
_LAYERS = {
    # The nests and their path-naming helpers: imported from anywhere.
    'alf_rl.data_structures': 0,
    'alf_rl.utils.nest': 0,
    'alf_rl.specs': 1,
    # Every other utils module (common, normalizers, schedules, checkpoint,
    # summary, curves): small helpers over data_structures/specs that any
    # layer from environments up may use; a utils module imports nothing
    # above specs (no ops, algorithms, drivers, bin...).
    'alf_rl.utils': 2,
    # environments/ imports only data_structures, specs and utils (STYLE.md):
    # rank 3, a sibling of ops and metrics, so it sees ranks 0-2 only.
    'alf_rl.environments': 3,
    'alf_rl.ops': 3,
    # Step metrics (tf.Module counters) need only data_structures; drivers
    # use them.
    'alf_rl.metrics': 3,
    'alf_rl.networks': 4,
    'alf_rl.algorithms': 5,
    'alf_rl.replay': 6,
    'alf_rl.drivers': 6,
    # Future: policy export (SavedModel of an algorithm's predict step)
    # needs algorithms/networks, never drivers or trainers.
    'alf_rl.export': 6,
    # Future: async and distributed collection builds on drivers and replay;
    # trainers may use it.
    'alf_rl.distributed': 7,
    # Offline RL datasets: stream into replay, collect from an algorithm
    # and an environment; the offline trainer builds on them.
    'alf_rl.offline': 7,
    'alf_rl.trainers': 8,
    # Registers every gin-configurable for the command line (imports the
    # packages above); only bin/ imports it.
    'alf_rl.configurables': 9,
    # What the commands share (quiet TensorFlow import, gin files with
    # one-line errors, restoring a run, plotting runs): uses configurables,
    # trainers and everything below; bin/ and tune/ build on it.
    'alf_rl.runs': 10,
    # The hyperparameter search behind alf-grid-search: runs alf-train as
    # subprocesses and summarizes them; only bin/ imports it.
    'alf_rl.tune': 11,
    # The model objects (alf_rl.PPO, alf_rl.load): build on runs/ and
    # trainers/; alf_rl/__init__ imports them lazily.
    'alf_rl.api': 11,
    # The console scripts: flag parsing and a call. Nothing imports bin/.
    'alf_rl.bin': 12,
    # The package itself (alf_rl/__init__.py) imports nothing of alf_rl but
    # the hook in _ALLOWED_IMPORTS.
    'alf_rl': 0,
}

_GIN_PARSING = {'parse_config', 'parse_config_file',
                'parse_config_files_and_bindings', 'parse_value',
                'bind_parameter'}

# Import-direction violations that live in files another change owns; each
# with a reason. Keys are ``(importing module, imported module)``.
_ALLOWED_IMPORTS = {
    # ``import alf_rl`` installs the import hook that keeps TensorFlow's
    # start-up notices off the terminal (pure Python, imports no TF).
    ('alf_rl', 'alf_rl.utils'): 'quiet TensorFlow import hook',
    ('alf_rl', 'alf_rl.api'): 'alf_rl.PPO etc., imported on first use',
}

# ---------------------------------------------------------------------------
# 2. Names only a framework calls (never referenced from alf_rl's code).
# ---------------------------------------------------------------------------
_FRAMEWORK_HOOKS = {
    # Keras layers/schedules and tf.Module.
    'call', 'build', 'get_config', 'from_config',
    'compute_output_shape',
    # gymnasium.Wrapper hooks.
    'observation', 'action', 'reward', 'step', 'reset', 'render', 'close',
    # logging.Filter (alf-train drops gin's spurious 'Path not found').
    'filter',
    # tf.TensorSpec's API, overridden by BoundedTensorSpec so that the
    # inherited classmethod builds a valid bounded spec.
    'from_spec',
    # tf.TypeSpec serialization (BoundedTensorSpec).
    '_serialize',
    # tfp.bijectors.Bijector (StableTanh).
    '_forward', '_inverse', '_forward_log_det_jacobian',
    '_inverse_log_det_jacobian',
    # tf.train.Checkpoint's Trackable protocol (non-variable state).
    '_serialize_to_tensors', '_restore_from_tensors',
}

# Public API that DESIGN.md names for users although alf_rl does not call it.
_PUBLIC_API = {
    'alf_rl.data_structures._StepTypeMixin.is_mid',  # TimeStep.is_mid()
}

# Dead definitions inside files owned by other changes of issue 11 (the
# algorithm and environment refactors); they are removed there. The test
# fails once one is gone or referenced again: then drop its entry.
_PENDING_REMOVAL = {
    # Called by nothing; environments/ belongs to another change.
    'alf_rl.environments.py_environment.map_nest',
}

# ---------------------------------------------------------------------------
# 3. Size budget.
# ---------------------------------------------------------------------------
# 50 code lines: a function that reads on one screen with its docstring.
# 90% of the package's functions have at most 25; the ones over 50 are
# constructors that wire many options and the replay/sampling loops issue
# 11 points 4 and 7 split up.
_MAX_CODE_LINES = 50

# {qualified name: code lines when listed}. May only shrink (see the
# docstring). Long keys are kept whole so that a search finds them.
_OVER_BUDGET = {
    'alf_rl.networks.encoding_network.EncodingNetwork.__init__': 81,
    'alf_rl.networks.projection_networks.NormalProjectionNetwork.__init__': 64,
    'alf_rl.replay.prioritized_replay_buffer.PrioritizedReplayBuffer._sample_starts': 68,
}

# ---------------------------------------------------------------------------
# 4. Files whose public signatures are fully annotated (paths from the
#    repository root). Coverage only grows: add files, never remove them.
# ---------------------------------------------------------------------------
#: Files whose public signatures are not fully annotated yet. Every other
#: file under alf_rl/ must be complete; this list may only shrink (a listed
#: file that became complete fails the test, so the entry gets removed).
_NOT_YET_ANNOTATED = {
    'alf_rl/environments/gym_wrappers.py',
    'alf_rl/environments/suite_tf.py',
}

# ---------------------------------------------------------------------------
# 5. Retired argument spellings -> the one name now used.
# ---------------------------------------------------------------------------
_RETIRED_ARGUMENTS = {
    'td_errors_loss_fn': 'td_error_loss_fn',
    'td_loss_fn': 'td_error_loss_fn',
    'target_update_tau': 'tau',
}


# ---------------------------------------------------------------------------
# Reading the sources (once).
# ---------------------------------------------------------------------------
def _py_files(top):
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(_ROOT, top)):
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith('.') and d != '__pycache__')
        out.extend(os.path.join(dirpath, f) for f in sorted(filenames)
                   if f.endswith('.py'))
    return out


def _module_name(path):
    rel = os.path.relpath(path, _ROOT)[:-len('.py')].split(os.sep)
    if rel[-1] == '__init__':
        rel = rel[:-1]
    return '.'.join(rel)


@functools.lru_cache(maxsize=None)
def _sources():
    """{relative path: (module name, source text, ast.Module)} of alf_rl/."""
    out = {}
    for path in _py_files(_PACKAGE):
        with open(path, encoding='utf-8') as f:
            text = f.read()
        rel = os.path.relpath(path, _ROOT)
        out[rel] = (_module_name(path), text, ast.parse(text, rel))
    return out


@functools.lru_cache(maxsize=None)
def _other_texts():
    """{relative path: source text} of tests/ and benchmarks/."""
    out = {}
    for top in ('tests', 'benchmarks'):
        for path in _py_files(top):
            if os.path.abspath(path) == os.path.abspath(__file__):
                continue  # this file's lists name dead code on purpose
            with open(path, encoding='utf-8') as f:
                out[os.path.relpath(path, _ROOT)] = f.read()
    return out


def _layer(module):
    best = None
    for prefix in _LAYERS:
        if module == prefix or module.startswith(prefix + '.'):
            if best is None or len(prefix) > len(best):
                best = prefix
    return best


def _resolve(module, level, name, is_package):
    """Absolute name of ``from <level dots><name> import``."""
    if not level:
        return name
    parts = module.split('.')
    base = parts if is_package else parts[:-1]
    base = base[:len(base) - (level - 1)]
    return '.'.join(base + ([name] if name else []))


def _import_target(module, node, alias, is_package):
    """The module an ``ImportFrom`` alias imports (a submodule if it is)."""
    base = _resolve(module, node.level, node.module, is_package)
    sub = base + '.' + alias.name
    # ``from alf_rl import specs`` imports alf_rl.specs.
    return sub if _layer(sub) and _layer(sub) != _layer(base) else base


@functools.lru_cache(maxsize=None)
def _scan(rel):
    """One walk over a module of alf_rl/.

    Returns:
        ``(imports, names, gin_parsing)``: ``[(line, module)]`` of every
        import at any depth (``importlib.import_module`` of a literal
        included); the identifiers it uses (see ``_references``); the lines
        using one of ``_GIN_PARSING``.
    """
    module, _, tree = _sources()[rel]
    is_package = rel.endswith('__init__.py')
    imports, names, gin_lines, docstrings = [], set(), [], set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                             ast.AsyncFunctionDef)):
            # ast.walk is breadth-first: a docstring is seen after its owner.
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and
                    isinstance(body[0].value, ast.Constant) and
                    isinstance(body[0].value.value, str)):
                docstrings.add(id(body[0].value))
        elif isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Store):
                names.add(node.id)
            if node.id in _GIN_PARSING:
                gin_lines.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
            if node.attr in _GIN_PARSING:
                gin_lines.append((node.lineno, node.attr))
        elif isinstance(node, ast.Import):
            for a in node.names:
                imports.append((node.lineno, a.name))
                names.update(a.name.split('.'))
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                imports.append((node.lineno, _import_target(
                    module, node, a, is_package)))
                names.add(a.name)
                if a.name in _GIN_PARSING:
                    gin_lines.append((node.lineno, a.name))
        elif isinstance(node, ast.keyword):
            if node.arg:
                names.add(node.arg)
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, str) and id(node) not in docstrings:
                names.update(_WORD.findall(node.value))
        elif (isinstance(node, ast.Call) and
              isinstance(node.func, ast.Attribute) and
              node.func.attr == 'import_module' and node.args and
              isinstance(node.args[0], ast.Constant) and
              isinstance(node.args[0].value, str)):
            name = node.args[0].value
            level = len(name) - len(name.lstrip('.'))
            imports.append((node.lineno, _resolve(module, level, name[level:],
                                                  is_package)))
    return imports, names, gin_lines


def _import_violations():
    lines = []
    for rel, (module, _, _) in sorted(_sources().items()):
        src = _layer(module)
        imports, _, gin_lines = _scan(rel)
        for lineno, target in imports:
            top = target.split('.')[0]
            if src == 'alf_rl.algorithms' and top == 'gymnasium':
                lines.append('%s:%d imports gymnasium (algorithms never do)'
                             % (rel, lineno))
            if top != _PACKAGE:
                continue
            dst = _layer(target)
            if dst is None:
                lines.append('%s:%d imports %s, which has no layer in '
                             '_LAYERS' % (rel, lineno, target))
                continue
            if dst == src or _LAYERS[dst] < _LAYERS[src]:
                continue
            if (module, target) in _ALLOWED_IMPORTS:
                continue
            lines.append('%s imports %s (rank %d -> rank %d)' %
                         (rel, target, _LAYERS[src], _LAYERS[dst]))
        if src == 'alf_rl.algorithms':
            lines.extend('%s:%d uses gin.%s (algorithms never parse gin)' %
                         (rel, lineno, name) for lineno, name in gin_lines)
    return lines


def test_imports_point_one_way():
    violations = _import_violations()
    assert not violations, 'imports against STYLE.md:\n' + '\n'.join(
        violations)


def test_layer_table_covers_every_module():
    missing = sorted(module for module, _, _ in _sources().values()
                     if _layer(module) is None)
    assert not missing, 'modules without a layer in _LAYERS: %s' % missing


# ---------------------------------------------------------------------------
# 2. Dead names.
# ---------------------------------------------------------------------------
_WORD = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')


@functools.lru_cache(maxsize=None)
def _all_references():
    """Every name used in alf_rl/, tests/, benchmarks/ and examples/*.gin.

    In alf_rl/ (parsed): identifiers that are read (``Name`` not assigned
    to, attributes, imported names, keyword arguments) and the words of
    string literals other than docstrings; a ``def``/``class`` line or an
    assignment target is not a use. In tests/ and benchmarks/ (not parsed,
    to stay fast): every word of the file, as is every word of a gin file.
    """
    names = set()
    for rel in _sources():
        names |= _scan(rel)[1]
    for text in _other_texts().values():
        names.update(_WORD.findall(text))
    examples = os.path.join(_ROOT, 'examples')
    for f in sorted(os.listdir(examples)):
        if f.endswith('.gin'):
            with open(os.path.join(examples, f), encoding='utf-8') as gin:
                names.update(_WORD.findall(gin.read()))
    return names


def _definitions():
    """[(qualified name, short name, file:line)] of every definition."""
    out = []
    for rel, (module, _, tree) in sorted(_sources().items()):
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                 ast.ClassDef)):
                out.append((module + '.' + node.name, node.name,
                            '%s:%d' % (rel, node.lineno)))
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef,
                                         ast.AsyncFunctionDef)):
                        out.append(('%s.%s.%s' % (module, node.name,
                                                  item.name), item.name,
                                    '%s:%d' % (rel, item.lineno)))
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if (isinstance(target, ast.Name) and
                            target.id != '__all__'):
                        out.append((module + '.' + target.id, target.id,
                                    '%s:%d' % (rel, node.lineno)))
    return out


def _dead_names():
    used = _all_references()
    dead = []
    for qualified, name, where in _definitions():
        if name.startswith('__') and name.endswith('__'):
            continue
        if (name in used or name in _FRAMEWORK_HOOKS or
                qualified in _PUBLIC_API):
            continue
        dead.append((qualified, where))
    return dead


def test_every_name_is_referenced():
    dead = [(q, w) for q, w in _dead_names() if q not in _PENDING_REMOVAL]
    assert not dead, 'definitions nothing references:\n' + '\n'.join(
        '%s  %s' % (w, q) for q, w in dead)


def test_pending_removal_lists_only_dead_names():
    still = {q for q, _ in _dead_names()}
    alive = sorted(_PENDING_REMOVAL - still)
    assert not alive, ('in _PENDING_REMOVAL but gone or referenced now; '
                       'drop them from the list: %s' % alive)


# ---------------------------------------------------------------------------
# 3. Function sizes.
# ---------------------------------------------------------------------------
def _code_line_numbers(text):
    """Line numbers (1-based) that hold more than a comment or whitespace.

    Line-based: a line inside a multi-line string that is blank or starts
    with ``#`` is not counted either (close enough for a budget).
    """
    return {i for i, line in enumerate(text.splitlines(), 1)
            if line.strip() and not line.lstrip().startswith('#')}


def _functions(module, tree):
    """[(qualified name, node)] of module-level functions and methods."""
    out = []

    def visit(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((prefix + node.name, node))
            elif isinstance(node, ast.ClassDef):
                visit(node.body, prefix + node.name + '.')

    visit(tree.body, module + '.')
    return out


def _code_lines(node, code_lines):
    lines = set(range(node.lineno, node.end_lineno + 1)) & code_lines
    body = node.body
    if (body and isinstance(body[0], ast.Expr) and
            isinstance(body[0].value, ast.Constant) and
            isinstance(body[0].value.value, str)):
        lines -= set(range(body[0].lineno, body[0].end_lineno + 1))
    return len(lines)


@functools.lru_cache(maxsize=None)
def _function_sizes():
    sizes = {}
    for module, text, tree in _sources().values():
        code = _code_line_numbers(text)
        for qualified, node in _functions(module, tree):
            sizes[qualified] = _code_lines(node, code)
    return sizes


def test_functions_fit_the_size_budget():
    sizes = _function_sizes()
    problems = []
    for name, size in sorted(sizes.items()):
        if size > _MAX_CODE_LINES and name not in _OVER_BUDGET:
            problems.append('%s: %d code lines > %d' %
                            (name, size, _MAX_CODE_LINES))
    for name, listed in sorted(_OVER_BUDGET.items()):
        if name not in sizes:
            problems.append('%s: in _OVER_BUDGET but gone; drop it' % name)
        elif sizes[name] > listed:
            problems.append('%s: grew from %d to %d code lines' %
                            (name, listed, sizes[name]))
        elif sizes[name] <= _MAX_CODE_LINES:
            problems.append('%s: %d code lines, within budget now; drop it '
                            'from _OVER_BUDGET' % (name, sizes[name]))
    assert not problems, '\n'.join(problems)


# ---------------------------------------------------------------------------
# 4. Annotations.
# ---------------------------------------------------------------------------
def _public_signatures(tree):
    """[(name, FunctionDef, is_method)] of public functions and methods."""
    out = []

    def visit(body, prefix, in_class):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                public = (not node.name.startswith('_') or
                          (in_class and node.name in ('__init__',
                                                      '__call__')))
                if public:
                    out.append((prefix + node.name, node, in_class))
            elif (isinstance(node, ast.ClassDef) and
                  not node.name.startswith('_')):
                visit(node.body, prefix + node.name + '.', True)

    visit(tree.body, '', False)
    return out


def _arguments(node, is_method):
    args = node.args
    positional = args.posonlyargs + args.args
    static = any(isinstance(d, ast.Name) and d.id == 'staticmethod'
                 for d in node.decorator_list)
    if is_method and not static and positional and positional[0].arg in (
            'self', 'cls'):
        positional = positional[1:]
    out = positional + ([args.vararg] if args.vararg else []) + (
        args.kwonlyargs)
    if args.kwarg:
        out.append(args.kwarg)
    return out


def _annotation_gaps(tree):
    """(annotated, total, [missing 'name(arg)' or 'name -> return'])."""
    annotated, total, missing = 0, 0, []
    for name, node, is_method in _public_signatures(tree):
        for a in _arguments(node, is_method):
            total += 1
            if a.annotation is not None:
                annotated += 1
            else:
                missing.append('%s(%s)' % (name, a.arg))
        if node.returns is None and node.name != '__init__':
            missing.append('%s -> return' % name)
    return annotated, total, missing


def test_annotation_coverage():
    """Prints coverage per file; every file not in _NOT_YET_ANNOTATED must
    be complete, and every listed file must still have gaps."""
    problems = []
    for rel, (_, _, tree) in sorted(_sources().items()):
        annotated, total, missing = _annotation_gaps(tree)
        if total:
            print('%-45s %3d/%3d annotated arguments' % (rel, annotated,
                                                        total))
        if rel not in _NOT_YET_ANNOTATED:
            problems.extend('%s: %s not annotated' % (rel, m)
                            for m in missing)
        elif not missing:
            problems.append('%s is fully annotated now: remove it from '
                            '_NOT_YET_ANNOTATED' % rel)
    gone = sorted(f for f in _NOT_YET_ANNOTATED if f not in _sources())
    assert not gone, ('_NOT_YET_ANNOTATED lists files that do not exist: %s'
                      % gone)
    assert not problems, '\n'.join(problems)


# ---------------------------------------------------------------------------
# 5. Argument names.
# ---------------------------------------------------------------------------
def test_algorithms_use_one_argument_name_per_concept():
    problems = []
    for rel, (module, _, tree) in sorted(_sources().items()):
        if _layer(module) != 'alf_rl.algorithms':
            continue
        for qualified, node in _functions(module, tree):
            if node.name != '__init__':
                continue
            for a in _arguments(node, True):
                if a.arg in _RETIRED_ARGUMENTS:
                    problems.append(
                        '%s:%d %s takes %r; the name is %r' %
                        (rel, node.lineno, qualified, a.arg,
                         _RETIRED_ARGUMENTS[a.arg]))
    assert not problems, '\n'.join(problems)


# ---------------------------------------------------------------------------
# 6. Thin command-line files.
# ---------------------------------------------------------------------------
# Lines (all of them) of a file in alf_rl/bin: a console script is flag
# parsing and a call; a subsystem lives in the package (alf_rl/tune,
# alf_rl/runs).
_MAX_BIN_FILE_LINES = 300


# Lines of a class, ``class`` line to last line, docstrings included: a
# class past this holds more than one concern (split it into helpers,
# mixins or module functions).
_MAX_CLASS_LINES = 300

# {qualified class name: lines when listed}. May only shrink.
_CLASSES_OVER_BUDGET = {
}


def _class_sizes():
    """{qualified name: lines} of every class in alf_rl/ (nested classes
    named through their enclosing classes)."""
    sizes = {}

    def visit(prefix, body):
        for node in body:
            if isinstance(node, ast.ClassDef):
                name = '%s.%s' % (prefix, node.name)
                sizes[name] = node.end_lineno - node.lineno + 1
                visit(name, node.body)

    for module, _, tree in _sources().values():
        visit(module, tree.body)
    return sizes


def test_classes_fit_the_size_budget():
    sizes = _class_sizes()
    problems = ['%s: %d lines > %d' % (name, size, _MAX_CLASS_LINES)
                for name, size in sorted(sizes.items())
                if size > _MAX_CLASS_LINES
                and name not in _CLASSES_OVER_BUDGET]
    for name, listed in sorted(_CLASSES_OVER_BUDGET.items()):
        if name not in sizes:
            problems.append('%s: in _CLASSES_OVER_BUDGET but gone; drop it'
                            % name)
        elif sizes[name] > listed:
            problems.append('%s: grew from %d to %d lines' %
                            (name, listed, sizes[name]))
        elif sizes[name] <= _MAX_CLASS_LINES:
            problems.append('%s: %d lines, within budget now; drop it from '
                            '_CLASSES_OVER_BUDGET' % (name, sizes[name]))
    assert not problems, '\n'.join(problems)


def test_command_line_files_stay_thin():
    long = []
    for rel, (module, text, _) in sorted(_sources().items()):
        lines = len(text.splitlines())
        if (_layer(module) == 'alf_rl.bin' and
                lines > _MAX_BIN_FILE_LINES):
            long.append('%s: %d lines > %d; move the logic into a package '
                        'module' % (rel, lines, _MAX_BIN_FILE_LINES))
    assert not long, '\n'.join(long)


@pytest.mark.parametrize('source, expected', [
    ('from alf_rl.bin.quiet import x', ['alf_rl/utils/z.py imports '
                                        'alf_rl.bin.quiet (rank 2 -> rank '
                                        '12)']),
    ('def f():\n    from alf_rl import trainers', [
        'alf_rl/utils/z.py imports alf_rl.trainers (rank 2 -> rank 8)']),
    ('from alf_rl.utils import nest\nfrom . import common', []),
    ('from alf_rl import specs\nimport alf_rl.data_structures', []),
])
def test_import_rule_on_snippets(source, expected, monkeypatch):
    """The checker itself: local imports count, same layer is fine."""
    tree = ast.parse(source)
    monkeypatch.setitem(
        globals(), '_sources',
        lambda: {'alf_rl/utils/z.py': ('alf_rl.utils.z', source, tree)})
    _scan.cache_clear()  # _scan caches by path, and this path is made up
    try:
        assert _import_violations() == expected
    finally:
        _scan.cache_clear()


def test_size_and_annotation_rules_on_a_snippet():
    """The checkers themselves, on functions with known counts."""
    source = (
        'def f(a, b: int, *args, c=1, **kw) -> int:\n'
        '    """Doc.\n\n    More doc.\n    """\n'
        '    # a comment\n'
        '\n'
        '    x = (a +\n'
        '         b)\n'
        '    return x\n'
        'class C:\n'
        '    def m(self, y: int):\n'
        '        return y\n'
        '    def _p(self, z):\n'
        '        return z\n')
    tree = ast.parse(source)
    code = _code_line_numbers(source)
    sizes = {name: _code_lines(node, code)
             for name, node in _functions('m', tree)}
    assert sizes == {'m.f': 4, 'm.C.m': 2, 'm.C._p': 2}
    annotated, total, missing = _annotation_gaps(tree)
    assert (annotated, total) == (2, 6)
    assert missing == ['f(a)', 'f(args)', 'f(c)', 'f(kw)', 'C.m -> return']


# ---------------------------------------------------------------------------
# 7. Declared protocols (alf_rl/algorithms/protocols.py): every class that
#    claims one conforms, and a class that overrides a replay hook declares
#    the capability that goes with it.
# ---------------------------------------------------------------------------
_PROTOCOL_CLAIMS = {
    'ReplayHooks': [
        'actor_critic_algorithm.ActorCriticAlgorithm',
        'ppo_algorithm.PPOAlgorithm', 'sac_algorithm.SacAlgorithm',
        'ddpg_algorithm.DdpgAlgorithm', 'td3_algorithm.Td3Algorithm',
        'dqn_algorithm.DqnAlgorithm', 'sarsa_algorithm.SarsaAlgorithm',
        'trac_algorithm.TracAlgorithm', 'agent.Agent'],
    'IntrinsicRewardModule': [
        'icm_algorithm.IcmAlgorithm', 'rnd_algorithm.RNDAlgorithm',
        'diayn_algorithm.DIAYNAlgorithm'],
    'GoalGenerator': ['skill_generator.SkillGenerator'],
}

# Hook -> the capability flag a class overriding it declares True.
_HOOK_CAPABILITIES = {'first_train_step': 'has_first_train_step',
                      'calc_priority': 'gives_priorities',
                      'train_complete': 'has_own_update'}

# Classes whose hooks forward to a wrapped algorithm: their capabilities are
# the wrapped one's (read through, not declared), not the class's.
_FORWARDING_WRAPPERS = {'Agent', 'TracAlgorithm', 'AgentTraining',
                        'DelegatedHooks', 'Algorithm', 'RLAlgorithm',
                        'ReplayTrainingMixin', 'ReplayHooks'}


def _class_table():
    """{class name: (names its body defines, its base class names)} of every
    class in alf_rl/ (by AST: no TensorFlow import, so this stays fast)."""
    table = {}
    for _, _, tree in _sources().values():
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            names = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign):
                    names.add(item.target.id)
                elif isinstance(item, ast.Assign):
                    names.update(t.id for t in item.targets
                                 if isinstance(t, ast.Name))
            bases = [b.id if isinstance(b, ast.Name) else b.attr
                     for b in node.bases
                     if isinstance(b, (ast.Name, ast.Attribute))]
            table[node.name] = (names, bases)
    return table


def _members(table, name):
    """Names a class defines or inherits from classes of alf_rl/."""
    if name not in table:
        return set()
    names, bases = table[name]
    out = set(names)
    for base in bases:
        out |= _members(table, base)
    return out


def test_modules_that_claim_a_protocol_conform():
    table = _class_table()
    problems = []
    for protocol_name, claims in sorted(_PROTOCOL_CLAIMS.items()):
        members = _members(table, protocol_name) - {'Protocol'}
        assert members, protocol_name
        for claim in claims:
            cls_name = claim.rsplit('.', 1)[1]
            missing = sorted(members - _members(table, cls_name))
            if missing:
                problems.append('%s claims %s but lacks %s' %
                                (cls_name, protocol_name, missing))
    assert not problems, '\n'.join(problems)


def test_overridden_hooks_declare_their_capability():
    problems = []
    for module, _, tree in sorted(_sources().values()):
        if not module.startswith('alf_rl.algorithms.'):
            continue
        for node in tree.body:
            if (not isinstance(node, ast.ClassDef)
                    or node.name in _FORWARDING_WRAPPERS):
                continue
            defined = {n.name for n in node.body
                       if isinstance(n, ast.FunctionDef)}
            declared = {t.id for n in node.body if isinstance(n, ast.Assign)
                        and isinstance(n.value, ast.Constant)
                        and n.value.value is True for t in n.targets
                        if isinstance(t, ast.Name)}
            for hook, flag in sorted(_HOOK_CAPABILITIES.items()):
                if hook in defined and flag not in declared:
                    problems.append('%s.%s overrides %s but does not declare '
                                    '%s = True' % (module, node.name, hook,
                                                   flag))
    assert not problems, '\n'.join(problems)
