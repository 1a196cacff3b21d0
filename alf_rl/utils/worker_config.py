"""``WorkerConfig``: the configuration a worker process needs to build
what the learner builds (subprocess environment workers, Ray actors).

A worker is a fresh interpreter: it has none of the learner's gin
bindings and none of its ``--module_path`` directories. The caller (the
command line, a trainer, a user's script) captures them once with
``WorkerConfig.capture`` and passes the value to
``create_environment(worker_config=...)``, ``ParallelPyEnvironment`` or
``RayActorPool``; the worker calls ``apply`` before it builds anything,
so a user's ``@gin.configurable`` (an ``env_load_fn``, a network) is bound
there exactly as in the learner. Library code never looks the
configuration up on its own: where no value is passed, the class that
starts the workers documents that it captures this process's.

Pure Python (gin, no TensorFlow): environment workers import it.
"""

import dataclasses
import importlib
import os
import pickle
import sys
from typing import Sequence, Tuple

import gin

#: Packages whose gymnasium ids a fresh worker registers on its own.
_SELF_REGISTERING = ('gymnasium', 'ale_py')


def _user_paths() -> Tuple[str, ...]:
    """This process's ``sys.path`` entries outside the Python installation
    (``--module_path`` directories, a script's or a test's directory)."""
    prefixes = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})
    paths = [os.path.abspath(p or os.getcwd()) for p in sys.path]
    return tuple(dict.fromkeys(p for p in paths if not p.startswith(prefixes)))


def _entry_point_name(entry_point: object) -> str:
    """A gymnasium entry point as ``'module:name'`` (a callable is named by
    its module and qualified name), or ``''`` when a fresh process could
    not import it by name (defined in ``__main__`` or a function)."""
    if isinstance(entry_point, str):
        return entry_point
    module = getattr(entry_point, '__module__', None)
    name = getattr(entry_point, '__qualname__', '')
    if not module or module == '__main__' or '<' in name:
        return ''
    return '%s:%s' % (module, name)


def _user_gym_registrations() -> Tuple[Tuple[str, bytes], ...]:
    """``(id, pickled EnvSpec)`` of the gymnasium ids this process
    registered outside gymnasium and ale_py (a user's ``gym.register`` in
    their module), entry points named ``'module:name'``; none when
    gymnasium was never imported. An entry point defined in a script
    (``__main__``) cannot be imported by a worker: pass the class itself
    to ``create_environment`` instead (pickled by value)."""
    gymnasium = sys.modules.get('gymnasium')
    if gymnasium is None:
        return ()
    found = []
    for env_id, spec in list(gymnasium.registry.items()):
        entry_point = _entry_point_name(spec.entry_point)
        package = entry_point.split('.')[0].split(':')[0]
        if not entry_point or package in _SELF_REGISTERING:
            continue
        try:
            spec = dataclasses.replace(spec, entry_point=entry_point)
            found.append((env_id, pickle.dumps(spec)))
        except Exception:  # kwargs that do not pickle: not carried
            continue
    return tuple(found)


def _register_gym_ids(registrations: Sequence[Tuple[str, bytes]]) -> None:
    """Registers the ids of ``registrations`` this process does not know
    (with their spec, as in the learner)."""
    if not registrations:
        return
    import gymnasium
    for env_id, payload in registrations:
        if env_id not in gymnasium.registry:
            gymnasium.registry[env_id] = pickle.loads(payload)


@dataclasses.dataclass(frozen=True)
class WorkerConfig(object):
    """What a worker applies before it builds environments or algorithms.

    Args:
        gin_config: gin text (``gin.config_str()`` of the learner: its
            ``import`` lines and every binding), or ``''`` for none.
        module_paths: directories put at the front of the worker's
            ``sys.path`` (in this order) before anything is imported, so
            that the gin text's ``import`` lines and pickled user code find
            their modules.
        modules: modules imported before the gin text is parsed, so that
            the configurables they define are registered (e.g.
            ``'alf_rl.configurables'`` for a worker that builds algorithms).
        scope: the gin scope the worker's constructors run under (e.g.
            ``'eval'`` for an environment created inside
            ``gin.config_scope('eval')``); ``''``: none.
        gym_registrations: ``(id, pickled EnvSpec)`` of the gymnasium ids
            the learner registered outside gymnasium (a user's
            ``gym.register``), registered in the worker too before it
            builds anything (entry points by ``'module:name'``, found
            through ``module_paths``).
    """

    gin_config: str = ''
    module_paths: Tuple[str, ...] = ()
    modules: Tuple[str, ...] = ()
    scope: str = ''
    gym_registrations: Tuple[Tuple[str, bytes], ...] = ()

    @classmethod
    def capture(cls, module_paths: Sequence[str] = (),
                modules: Sequence[str] = ()) -> 'WorkerConfig':
        """This process's configuration: its gin text, the current gin
        scope, ``module_paths`` and then every ``sys.path`` entry outside
        the Python installation.

        Args:
            module_paths: directories to put first (``--module_path``).
            modules: modules the worker imports before parsing the text.
        Returns:
            A ``WorkerConfig`` that pickles (plain strings).
        """
        paths = [os.path.abspath(p) for p in module_paths]
        return cls(gin_config=gin.config_str(),
                   module_paths=tuple(dict.fromkeys(paths +
                                                    list(_user_paths()))),
                   modules=tuple(modules),
                   scope=gin.current_scope_str(),
                   gym_registrations=_user_gym_registrations())

    def add_paths(self) -> None:
        """Puts ``module_paths`` at the front of ``sys.path`` (those already
        there stay where they are)."""
        for path in reversed(self.module_paths):
            if path not in sys.path:
                sys.path.insert(0, path)

    def apply(self, skip_unknown: bool = False) -> None:
        """Makes this process configured as the learner: ``add_paths``,
        imports ``modules``, parses ``gin_config``, registers the
        learner's own gymnasium ids.

        Args:
            skip_unknown: skip bindings of configurables no imported module
                registered (an environment worker imports only what its
                environment needs, not TensorFlow's half of the library).
        Raises:
            ImportError, ValueError: a module or binding the worker cannot
                load (gin's message names it).
        """
        self.add_paths()
        for name in self.modules:
            importlib.import_module(name)
        if self.gin_config:
            gin.parse_config(self.gin_config, skip_unknown=skip_unknown)
        _register_gym_ids(self.gym_registrations)
