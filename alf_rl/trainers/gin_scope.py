"""Gin configurations that do not leak between runs of one process.

gin keeps one global configuration. Two trainings in one Python process
(``alf_rl.bin.train.train``, a ``Trainer``, a model's ``learn``) would
otherwise share it: a binding the first run parsed (PPO's
``TrainerConfig.mini_batch_length = 1``) stays bound for the second (A2C:
``TrainerConfig.mini_batch_length must be >= 2``).

``GinState`` is a saved copy of that global configuration (bindings,
singletons, imports, the operative configuration and the search paths of
``include`` lines); ``own_gin_config()`` runs a block with a configuration
of its own and puts the caller's back afterwards, whatever happens in the
block.
"""

import contextlib
from typing import Any, Dict, Iterator, List, Optional, Set

import gin
from gin import config as _gin_config


class GinState(object):
    """A copy of gin's global configuration (what ``parse_config`` and
    ``bind_parameter`` change; the registry of configurables and gin's
    constants are shared by all).

    Args:
        bindings: ``{(scope, selector): {parameter: value}}``.
        singletons: gin's ``@singleton`` values by key.
        imports: the modules gin ``import`` lines named.
        operative: the operative configuration (what was called).
        search_paths: the directories ``include`` lines are searched in.
        locked: whether the configuration was finalized (locked).
    """

    def __init__(
        self,
        bindings: Dict[Any, Dict[str, Any]],
        singletons: Dict[str, Any],
        imports: Set[Any],
        operative: Dict[Any, Dict[str, Any]],
        search_paths: List[str],
        locked: bool,
    ):
        self.bindings = bindings
        self.singletons = singletons
        self.imports = imports
        self.operative = operative
        self.search_paths = search_paths
        self.locked = locked

    @classmethod
    def capture(cls) -> 'GinState':
        """A copy of the current global configuration."""
        with _gin_config._OPERATIVE_CONFIG_LOCK:
            operative = {
                k: dict(v) for k, v in _gin_config._OPERATIVE_CONFIG.items()
            }
        return cls(
            {k: dict(v) for k, v in _gin_config._CONFIG.items()},
            dict(_gin_config._SINGLETONS),
            set(_gin_config._IMPORTS),
            operative,
            list(_gin_config._LOCATION_PREFIXES),
            bool(_gin_config._CONFIG_IS_LOCKED),
        )

    @classmethod
    def empty(cls) -> 'GinState':
        """A configuration with no bindings (gin's state at start-up)."""
        return cls({}, {}, set(), {}, [''], False)

    def install(self) -> None:
        """Makes this the global configuration (a copy of it: later
        changes to the global one do not change this object)."""
        gin.clear_config()
        _gin_config._CONFIG.update(
            {k: dict(v) for k, v in self.bindings.items()}
        )
        _gin_config._SINGLETONS.update(self.singletons)
        _gin_config._IMPORTS.update(self.imports)
        with _gin_config._OPERATIVE_CONFIG_LOCK:
            _gin_config._OPERATIVE_CONFIG.update(
                {k: dict(v) for k, v in self.operative.items()}
            )
        _gin_config._LOCATION_PREFIXES[:] = self.search_paths
        _gin_config._set_config_is_locked(self.locked)


@contextlib.contextmanager
def own_gin_config(
    state: Optional[GinState] = None, keep: Optional[List[GinState]] = None
) -> Iterator[None]:
    """Runs the block with a gin configuration of its own.

    Args:
        state: the configuration the block starts from; None: an empty
            one (no bindings: gin files parsed in the block alone count).
        keep: when given, the configuration the block ended with is
            appended to it (e.g. to run the next block from there).

    The caller's configuration is restored when the block ends, also on
    an error, so nothing the block parsed reaches code that runs later.
    """
    saved = GinState.capture()
    (state or GinState.empty()).install()
    try:
        yield
    finally:
        if keep is not None:
            keep.append(GinState.capture())
        saved.install()
