"""Which optimizer trains which variables of an algorithm tree.

``OptimizerSets`` is the part of ``Algorithm`` that gathers variables: an
algorithm's own variables, those of its non-algorithm modules and of
sub-algorithms without an optimizer of their own go to its optimizer; a
sub-algorithm with its own optimizer trains its own subtree; modules given
to ``add_optimizer`` go to that optimizer. Target networks and their
updaters (``TargetNetwork``, ``PeriodicSoftUpdate``) are skipped by type.
"""

from typing import Any, Dict, List, Optional, Tuple, Union

import tensorflow as tf

from alf_rl.networks.target_network import PeriodicSoftUpdate, TargetNetwork

#: Attributes that hold optimizers and the gathered sets (never walked).
_OWN_ATTRIBUTES = ('_optimizer', '_opt_var_sets', '_module_optimizers')


class OptimizerSets:
    """Mixin of ``Algorithm``: optimizers and the variables each trains.

    The class using it sets ``_optimizer`` (its own optimizer or None),
    ``_module_optimizers = []`` and ``_opt_var_sets = None`` in its
    constructor, and is a ``tf.Module`` (``name``).
    """

    _optimizer: Optional[Any]
    _module_optimizers: List[Tuple[Any, List[Union[tf.Module, tf.Variable]]]]
    _opt_var_sets: Optional[List[Tuple[Any, List[tf.Variable]]]]

    @property
    def optimizer(self) -> Optional[Any]:
        """This algorithm's own optimizer (or None)."""
        return self._optimizer

    def add_optimizer(self, optimizer: Any,
                      modules: List[Union[tf.Module, tf.Variable]]) -> None:
        """Trains the variables of ``modules`` with ``optimizer``.

        For algorithms whose parts learn at different rates (SAC's actor,
        critics and temperature). Variables of these modules are removed
        from the default optimizer's set.

        Args:
            optimizer: a ``tf_keras`` optimizer.
            modules: list of ``tf.Module``s and/or ``tf.Variable``s.
        """
        if optimizer is None:
            raise ValueError("%s.add_optimizer: optimizer is None" %
                             self.name)  # type: ignore[attr-defined]
        if self._opt_var_sets is not None:
            raise ValueError("%s.add_optimizer must be called in the "
                             "constructor, before variables are gathered" %
                             self.name)  # type: ignore[attr-defined]
        self._module_optimizers.append((optimizer, list(modules)))

    def _collect(self):
        """(own variables, [(optimizer, variables)] of subtrees with one)."""
        own, sets, visited = [], [], set()
        for attr in sorted(vars(self)):
            # '_self_*' are tf.Module's own tracking lists (they reference
            # the same children again).
            if attr.startswith('_self_') or attr in _OWN_ATTRIBUTES:
                continue
            for leaf in _flatten_attribute(vars(self)[attr]):
                if isinstance(leaf, (TargetNetwork, PeriodicSoftUpdate)):
                    continue  # targets follow their networks; never trained
                if isinstance(leaf, OptimizerSets):
                    if id(leaf) in visited:
                        continue
                    visited.add(id(leaf))
                    child_own, child_sets = leaf._collect()
                    if leaf._optimizer is not None:
                        sets.append((leaf._optimizer, child_own))
                    else:
                        own.extend(child_own)
                    sets.extend(child_sets)
                elif isinstance(leaf, tf.Variable):
                    if leaf.trainable:
                        own.append(leaf)
                elif isinstance(leaf, tf.Module) and not _is_optimizer(leaf):
                    own.extend(leaf.trainable_variables)
        explicit = [(optimizer, _module_variables(modules))
                    for optimizer, modules in self._module_optimizers]
        claimed = {v.ref() for _, vs in explicit for v in vs}
        own = [v for v in _unique(own) if v.ref() not in claimed]
        return own, explicit + sets

    def get_optimizer_and_variable_sets(
            self) -> List[Tuple[Any, List[tf.Variable]]]:
        """The list of ``(optimizer, [variables])`` this algorithm trains.

        Computed once; networks are built from specs in constructors, so all
        variables exist by then.

        Raises:
            ValueError: if a variable is reachable from two optimizers, or
                variables have no optimizer at all.
        """
        if self._opt_var_sets is not None:
            return self._opt_var_sets
        own, sets = self._collect()
        all_sets = ([(self._optimizer, own)] if own else []) + sets
        seen: Dict[Any, int] = {}
        for i, (opt, variables) in enumerate(all_sets):
            if opt is None and variables:
                raise ValueError(
                    "%s: %d trainable variables (e.g. %s) have no optimizer: "
                    "give this algorithm an optimizer or give its "
                    "sub-algorithms their own" %
                    (self.name,  # type: ignore[attr-defined]
                     len(variables), variables[0].name))
            for v in variables:
                if v.ref() in seen and seen[v.ref()] != i:
                    raise ValueError(
                        "variable %s is trained by two optimizers; each "
                        "variable must belong to exactly one algorithm" %
                        v.name)
                seen[v.ref()] = i
        self._opt_var_sets = [(o, vs) for o, vs in all_sets if vs]
        return self._opt_var_sets

    def build_optimizers(self) -> None:
        """Creates every optimizer's slot variables now.

        Called by drivers before compiling: a ``tf.function`` that creates
        variables on its first call is traced twice, and a checkpoint
        restores slots directly instead of deferring them.
        """
        for optimizer, variables in self.get_optimizer_and_variable_sets():
            _check_hyperparameters(optimizer)
            create_optimizer_slots(optimizer, variables)

    @property
    def trainable_variables(self) -> List[tf.Variable]:
        """All variables this algorithm trains, without duplicates."""
        own, sets = self._collect()
        return _unique(own + [v for _, vs in sets for v in vs])


def create_optimizer_slots(optimizer: Any,
                           variables: List[tf.Variable]) -> None:
    """Creates ``optimizer``'s variables for ``variables`` now (its slots,
    hyperparameters and step counter), as its first ``apply_gradients``
    would: a ``tf.function`` that creates variables on its first call is
    traced twice, and a checkpoint restores them directly.

    Args:
        optimizer: a tf_keras optimizer (``build``) or legacy optimizer
            such as ``LegacyAdam`` (``_create_all_weights``).
        variables: the variables it will update.
    """
    if hasattr(optimizer, 'build'):
        optimizer.build(variables)
    elif hasattr(optimizer, '_create_all_weights'):
        optimizer._create_all_weights(variables)


def _check_hyperparameters(optimizer: Any) -> None:
    """Refuses a legacy optimizer's hyperparameter that is not a number.

    tf_keras turns a string into an initializer name when it builds the
    hyperparameter (``learning_rate='fast'`` -> ``Unknown initializer:
    'fast'``); gin bindings are checked earlier (``configurables``), an
    optimizer built in Python is checked here.

    Raises:
        ValueError: naming the optimizer, the hyperparameter and its value.
    """
    for name, value in getattr(optimizer, '_hyper', {}).items():
        if isinstance(value, (str, bytes)):
            raise ValueError(
                "%s.%s: expected a number or a learning-rate schedule, got "
                "%r (%s)" % (type(optimizer).__name__, name, value,
                             type(value).__name__))


def _is_optimizer(obj):
    return hasattr(obj, 'apply_gradients') and hasattr(obj, 'get_config')


def _module_variables(modules):
    """Unique trainable variables of a list of modules and variables."""
    variables = []
    for m in modules:
        if isinstance(m, tf.Variable):
            variables.append(m)
        else:
            variables.extend(m.trainable_variables)
    return _unique(variables)


def _flatten_attribute(value):
    if isinstance(value, (tf.Module, tf.Variable)):
        return [value]
    if isinstance(value, (list, tuple, dict)):
        try:
            return tf.nest.flatten(value)
        except (TypeError, ValueError):
            return []
    return []


def _unique(variables):
    seen, result = set(), []
    for v in variables:
        if v.ref() not in seen:
            seen.add(v.ref())
            result.append(v)
    return result
