"""The specification of a search: grid, seeds, configurations, runs.

A configuration is one combination of the ``--grid`` values (the
cartesian product, or ``random_samples`` of it drawn with a seed); each is
run once per seed (``TrainerConfig.random_seed``) as an ``alf-train``
subprocess in its own root_dir ``PARENT/<config>/seed<k>``, where
``<config>`` names the values (``gamma=0.98,learning_rate=0.001``; a hash
is appended when it would be long or not a safe file name). The search
record (``PARENT/grid_search.json``) keeps a different search from reusing
the same directory.
"""

import ast
import collections
import hashlib
import itertools
import json
import os
import random
import re
import sys
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from alf_rl.tune.files import SEARCH_FILE, write_json

_MAX_NAME = 80
_SEED_BINDING = 'TrainerConfig.random_seed'


class Config(NamedTuple):
    """One combination of grid values.

    Attributes:
        name: its directory name under the parent (``config_name``).
        values: ``{gin name: value}`` in ``--grid`` order.
    """
    name: str
    values: Dict[str, Any]

    def bindings(self) -> List[str]:
        """The gin bindings (``'PPOLoss.gamma=0.98'``) of the values."""
        return ['%s=%s' % (name, gin_value_text(value))
                for name, value in self.values.items()]


_GIN_REFERENCE = re.compile(r'[@%][A-Za-z_][\w./]*(\(\))?')


def gin_value_text(value: Any) -> str:
    """A grid value as gin text: a string that is a gin reference or
    macro (``'@ReturnScaleNormalizer'``, ``'@VarianceScaling()'``,
    ``'%GAMMA'``) is written as is; anything else as its Python ``repr``
    (which gin parses back: numbers, quoted strings, booleans, None,
    tuples, lists)."""
    if isinstance(value, str) and _GIN_REFERENCE.fullmatch(value):
        return value
    return repr(value)


class Run(NamedTuple):
    """One ``alf-train`` run: a configuration and a seed (or, with
    ``num_seeds > 1``, the seeds ``seed .. seed + num_seeds - 1`` trained
    as one population, ``TrainerConfig.num_seeds``)."""
    config: Config
    seed: int
    root_dir: str
    num_seeds: int = 1

    def label(self) -> str:
        """``'<config>/seed<k>'`` (``'<config>/seeds<a>-<b>'`` for a
        population), how progress lines name the run."""
        if self.num_seeds > 1:
            return '%s/seeds%d-%d' % (self.config.name, self.seed,
                                      self.seed + self.num_seeds - 1)
        return '%s/seed%d' % (self.config.name, self.seed)


def parse_grid(specs: Sequence[str]) -> Dict[str, List[Any]]:
    """Parses ``--grid`` arguments.

    Args:
        specs: strings ``'Configurable.param=[v1, v2, ...]'``; the values a
            Python list (or tuple) of literals (numbers, strings, booleans,
            None, tuples); a string like ``'@Name'``, ``'@Name()'`` or
            ``'%MACRO'`` stands for that gin reference (``gin_value_text``).
    Returns:
        ``{gin name: [values]}`` in the order given.
    Raises:
        ValueError: one line naming the ``--grid`` and what is wrong.
    """
    grid = {}
    for spec in specs or ():
        name, sep, text = spec.partition('=')
        name = name.strip()
        if not sep or not re.fullmatch(r'[\w./]+\.\w+', name):
            raise ValueError("--grid %r: expected 'Configurable.param=[v1, "
                             "v2]'" % spec)
        try:
            values = ast.literal_eval(text.strip())
        except (SyntaxError, ValueError):
            raise ValueError("--grid %r: the values must be a Python list "
                             "of literals, e.g. [0.98, 0.99] or ['a', 'b']"
                             % spec) from None
        if not isinstance(values, (list, tuple)) or not values:
            raise ValueError('--grid %r: expected a non-empty list of '
                             'values, got %r' % (spec, values))
        if name in grid:
            raise ValueError('--grid %r: %s is given twice' % (spec, name))
        if name == _SEED_BINDING:
            raise ValueError('--grid %r: give seeds with --seeds' % spec)
        grid[name] = list(values)
    return grid


def parse_seeds(text: str) -> List[int]:
    """``'0,1,2'`` or ``'0-4'`` (inclusive) -> list of distinct ints.

    Raises:
        ValueError: not integers, or a seed given twice.
    """
    seeds = []
    for part in str(text).split(','):
        part = part.strip()
        match = re.fullmatch(r'(\d+)-(\d+)', part)
        try:
            seeds += (list(range(int(match.group(1)), int(match.group(2)) +
                                 1)) if match else [int(part)])
        except ValueError:
            raise ValueError("--seeds %r: expected integers like '0,1,2' "
                             "or '0-4'" % text) from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError('--seeds %r: expected distinct seeds' % text)
    return seeds


def _value_text(value: Any) -> str:
    """A short text of a grid value for a directory name."""
    if isinstance(value, (list, tuple)):
        return '-'.join(_value_text(v) for v in value)
    return value if isinstance(value, str) else repr(value)


def config_name(values: Dict[str, Any]) -> str:
    """A short, readable, file-name-safe name of a configuration.

    Parameters are named by their last part (``PPOLoss.gamma`` ->
    ``gamma``) unless two share it. When the text has characters outside
    ``[A-Za-z0-9._=,+-]`` (replaced by ``_``) or is longer than 80
    characters (cut), an 8-hex-digit hash of the values keeps it unique.

    Args:
        values: ``{gin name: value}``.
    Returns:
        e.g. ``'gamma=0.98,learning_rate=0.001'``; ``'default'`` for none.
    """
    if not values:
        return 'default'
    short = [name.split('.')[-1] for name in values]
    parts = ['%s=%s' % (s if short.count(s) == 1 else name, _value_text(v))
             for s, (name, v) in zip(short, values.items())]
    text = ','.join(parts)
    safe = re.sub(r'[^A-Za-z0-9._=,+-]', '_', text)
    if safe == text and len(safe) <= _MAX_NAME:
        return safe
    digest = hashlib.sha1(json.dumps(
        [[k, repr(v)] for k, v in values.items()]).encode()).hexdigest()[:8]
    return '%s-%s' % (safe[:_MAX_NAME - 9], digest)


def expand_grid(grid: Dict[str, List[Any]],
                random_samples: Optional[int] = None,
                sample_seed: int = 0) -> List[Config]:
    """The configurations of a grid.

    Args:
        grid: ``{gin name: [values]}`` (``parse_grid``).
        random_samples: when given, this many distinct configurations drawn
            uniformly from the cartesian product (``random.Random(
            sample_seed)``), kept in product order.
        sample_seed: seed of that draw.
    Returns:
        List of ``Config``, the first grid name varying slowest.
    Raises:
        ValueError: ``random_samples`` < 1 or more than the product has.
    """
    names = list(grid)
    product = [dict(zip(names, combo))
               for combo in itertools.product(*(grid[n] for n in names))]
    if random_samples is not None:
        if not 1 <= random_samples <= len(product):
            raise ValueError('--random_samples %d: expected 1 to %d (the '
                             'grid has %d configurations)' %
                             (random_samples, len(product), len(product)))
        picked = random.Random(sample_seed).sample(range(len(product)),
                                                   random_samples)
        product = [product[i] for i in sorted(picked)]
    configs = [Config(config_name(values), values) for values in product]
    names_seen = collections.Counter(c.name for c in configs)
    clash = [n for n, count in names_seen.items() if count > 1]
    if clash:
        raise ValueError('--grid: values %s give the same directory name; '
                         'make them differ in text' % clash[0])
    return configs


def plan_runs(parent: str, configs: Sequence[Config],
              seeds: Sequence[int], population: bool = False) -> List[Run]:
    """The runs, seed by seed: every configuration's first seed first.

    Args:
        parent: the search's directory (``--root_dir``).
        configs: the configurations.
        seeds: the seeds.
        population: train each run of consecutive seeds ``a .. b`` as one
            population (``TrainerConfig.num_seeds``) in
            ``parent/<config>/seeds<a>-<b>``.
    Returns:
        List of ``Run`` with root_dir ``parent/<config>/seed<k>``.
    """
    if population:
        return [Run(config, a, os.path.join(parent, config.name,
                                            'seeds%d-%d' % (a, b)), b - a + 1)
                for a, b in seed_ranges(seeds) for config in configs]
    return [Run(config, seed, os.path.join(parent, config.name,
                                           'seed%d' % seed))
            for seed in seeds for config in configs]


def seed_ranges(seeds: Sequence[int]) -> List[Tuple[int, int]]:
    """The seeds as runs of consecutive values: ``[0, 1, 2, 5]`` ->
    ``[(0, 2), (5, 5)]`` (in the order given)."""
    ranges: List[Tuple[int, int]] = []
    for seed in seeds:
        if ranges and seed == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], seed)
        else:
            ranges.append((seed, seed))
    return ranges


def train_command(run: Run, gin_files: Sequence[str],
                  gin_params: Sequence[str], module_paths: Sequence[str] = (),
                  base: Optional[Sequence[str]] = None) -> List[str]:
    """The command line of one run.

    Args:
        run: the run.
        gin_files: ``--gin_file`` paths.
        gin_params: fixed ``--gin_param`` bindings (before the grid's; the
            seed binding comes last).
        module_paths: ``--module_path`` directories.
        base: the program (default: this Python's ``-m alf_rl.bin.train``).
    Returns:
        The argument list.
    """
    command = list(base or [sys.executable, '-m', 'alf_rl.bin.train'])
    command += ['--root_dir', run.root_dir]
    for path in gin_files:
        command += ['--gin_file', path]
    bindings = list(gin_params) + run.config.bindings() + [
        '%s=%d' % (_SEED_BINDING, run.seed)]
    if run.num_seeds > 1:
        bindings.append('TrainerConfig.num_seeds=%d' % run.num_seeds)
    for binding in bindings:
        command += ['--gin_param', binding]
    for path in module_paths:
        command += ['--module_path', os.path.abspath(path)]
    return command


def binding_check_command(gin_files: Sequence[str],
                          gin_params: Sequence[str],
                          grid: Dict[str, List[Any]],
                          module_paths: Sequence[str] = ()) -> List[str]:
    """The command that checks a search's gin names and values against
    the configurables (``python -m alf_rl.runs.binding_checks``, this
    Python): the gin files and fixed bindings, then each grid value alone.

    Args:
        gin_files: ``--gin_file`` paths.
        gin_params: fixed bindings.
        grid: ``{gin name: [values]}`` (``parse_grid``).
        module_paths: ``--module_path`` directories.
    Returns:
        The argument list.
    """
    command = [sys.executable, '-m', 'alf_rl.runs.binding_checks']
    for path in gin_files:
        command += ['--gin_file', path]
    for binding in gin_params:
        command += ['--gin_param', binding]
    for name, values in grid.items():
        for value in values:
            command += ['--grid_param', '%s=%s' % (name,
                                                   gin_value_text(value))]
    for path in module_paths:
        command += ['--module_path', os.path.abspath(path)]
    return command


def check_search_record(parent: str, record: Dict[str, Any], force: bool,
                        write: bool = True) -> None:
    """Checks ``record`` against ``parent/grid_search.json`` and writes it.

    Everything but ``seeds`` must equal the recorded search; the recorded
    seeds are the union over reruns.

    Args:
        parent: the search's directory.
        record: JSON-able description of the search (``seeds`` a list).
        force: replace a different recorded search instead of refusing.
        write: write the (merged) record (False for ``--dry_run``).
    Raises:
        ValueError: one line naming what differs, when not ``force``.
    """
    record = json.loads(json.dumps(record))
    path = os.path.join(parent, SEARCH_FILE)
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        differ = sorted(key for key in set(old) | set(record)
                        if key != 'seeds' and old.get(key) != record.get(key))
        if differ and not force:
            key = differ[0]
            raise ValueError(
                '%s holds a different search (differs in %s; %s: recorded '
                '%s, now %s); use another --root_dir, or --force to reuse it'
                % (parent, ', '.join(differ), key, json.dumps(old.get(key)),
                   json.dumps(record.get(key))))
        if not differ:
            record['seeds'] = sorted(set(old.get('seeds', [])) |
                                     set(record.get('seeds', [])))
    if write:
        os.makedirs(parent, exist_ok=True)
        write_json(path, record)
