"""``TFEnvironment`` and ``TFPyEnvironment``: batched environments for TF.

``TFEnvironment`` is the interface drivers use: ``reset()`` and
``step(action)`` return ``TimeStep``s of [B, ...] tensors and work eagerly
and inside ``tf.function``/``tf.while_loop``.

``TFPyEnvironment`` bridges a batched numpy ``PyEnvironment`` into the graph
with exactly one ``tf.numpy_function`` per ``reset``/``step`` call (never
one per environment). Its callback validates the incoming action (shape,
dtype, bounds, NaN) and the returned ``TimeStep`` (structure, shapes,
dtypes) against the specs with a cheap fast path, and keeps the Python
exception in ``last_error`` (declared on ``TFEnvironment``): inside a graph
TensorFlow wraps it into an ``OpError`` whose text is harder to read, so
trainers report ``env.last_error``.

``check_finite`` (on by default; opt out with
``create_environment.check_finite=False``): every ``reset``/``step`` output
is checked for NaN/Inf, and the first non-finite reward, discount or
observation leaf is reported as a ``ValueError`` naming the leaf, the
environment (index and ``env_name``) and the element, so that non-finite
experience never reaches a loss or a replay buffer. ``TFPyEnvironment``
checks in its existing callback (a few microseconds per step); in-graph
environments (``suite_tf``) reduce one all-finite flag per call and fail an
``Assert`` naming the leaf and the environment index (read back by
``failed_finite_check``); XLA compiles that ``Assert`` away, so an
XLA-compiled in-graph rollout relies on the loss and update checks.
"""

import json
import re
import threading
from typing import Any, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from alf_rl import specs as specs_lib
from alf_rl.data_structures import TimeStep
from alf_rl.environments.batched_environment import BatchedPyEnvironment
from alf_rl.environments.py_environment import (PyEnvironment, flatten_nest,
                                                pack_nest_as)
from alf_rl.utils import nest as nest_utils


class TFEnvironment(object):
    """Abstract batched environment producing ``TimeStep``s of tensors.

    Subclasses implement ``_reset()`` and ``_step(action)``; the public
    ``step`` first checks (in Python, at trace time inside ``tf.function``)
    that the action nest matches ``action_spec()``, casting within a dtype
    kind (e.g. int32 -> int64).

    Args:
        time_step_spec: ``TimeStep`` spec nest (no batch dimension).
        action_spec: action spec nest (no batch dimension).
        batch_size: B, the number of environments.

    Attributes:
        last_error: the Python exception behind the latest failed
            ``reset``/``step`` whose error TensorFlow reports only as an
            ``OpError`` (a Python callback inside a graph), else ``None``.
            ``TFPyEnvironment`` sets it; trainers read it to report the
            original error, and clear it before each training call.
    """

    last_error: Optional[BaseException] = None
    #: The environment's name in ``check_finite``'s errors (e.g.
    #: ``'CartPole-v1'``; ``create_environment`` sets it), or None.
    env_name: Optional[str] = None
    _check_finite: bool = False

    def __init__(self, time_step_spec: Any, action_spec: Any,
                 batch_size: int):
        self._time_step_spec = time_step_spec
        self._action_spec = action_spec
        self._batch_size = int(batch_size)
        self.last_error = None

    @property
    def batched(self) -> bool:
        """Always True: every ``TFEnvironment`` is batched."""
        return True

    @property
    def batch_size(self) -> int:
        """int B, the number of environments."""
        return self._batch_size

    @property
    def in_graph(self) -> bool:
        """True when ``reset``/``step`` are TensorFlow ops only (no Python
        callback), so loops over them can be XLA-compiled. False for
        ``TFPyEnvironment``."""
        return True

    @property
    def check_finite(self) -> bool:
        """Raise ``ValueError`` naming the leaf, environment and element
        of the first NaN/Inf in a ``reset``/``step`` output (reward,
        discount, float observations); in a graph an ``OpError`` (see the
        module docstring). Off here; ``TFPyEnvironment`` and
        ``create_environment`` turn it on by default."""
        return self._check_finite

    @check_finite.setter
    def check_finite(self, value: bool) -> None:
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError("check_finite: expected a bool, got %r (%s)" %
                            (value, type(value).__name__))
        self._check_finite = bool(value)

    def time_step_spec(self) -> TimeStep:
        """The ``TimeStep`` spec nest (no batch dimension)."""
        return self._time_step_spec

    def action_spec(self) -> Any:
        """The action spec nest (no batch dimension)."""
        return self._action_spec

    def observation_spec(self) -> Any:
        """The observation spec nest (no batch dimension)."""
        return self._time_step_spec.observation

    def reset(self) -> TimeStep:
        """Resets every environment.

        Returns:
            FIRST ``TimeStep`` of tensors: ``step_type`` [B] int32,
            ``reward`` [B] float32, ``discount`` [B] float32,
            ``observation`` nest of [B, ...], ``prev_action`` nest of [B, ...]
            zeros, ``env_id`` [B] int32.

        Raises:
            ValueError: with ``check_finite``, for a non-finite output
                (inside a graph: an ``OpError``, the ``ValueError`` in
                ``last_error``).
        """
        time_step = self._reset()
        if self._check_finite:
            time_step = self._checked_finite(time_step, 'reset')
        return time_step

    def step(self, action: Any) -> TimeStep:
        """Steps every environment with its row of ``action``.

        Args:
            action: nest of [B, ...] tensors matching ``action_spec()``.
                Environments whose last step was LAST ignore their row and
                reset.

        Returns:
            ``TimeStep`` of [B, ...] tensors (as ``reset``).

        Raises:
            ValueError: naming the path if ``action`` does not match the
                spec's structure, shape or dtype kind; with
                ``check_finite``, for a non-finite output (inside a graph:
                an ``OpError``, the ``ValueError`` in ``last_error``).
        """
        time_step = self._step(self._check_action(action))
        if self._check_finite:
            time_step = self._checked_finite(time_step, 'step')
        return time_step

    def _checked_finite(self, time_step, what):
        """``time_step`` after a NaN/Inf check of its float leaves.

        Eagerly the check runs at once (``raise_if_not_finite``); in a
        graph one all-finite flag is reduced per leaf and an ``Assert``
        names the first non-finite leaf and environment (the returned
        leaves depend on it).
        """
        leaves = [(path.lstrip('.'), x) for path, x in
                  nest_utils.flatten_with_path(time_step)
                  if x.dtype.is_floating
                  and not path.startswith('.prev_action')]
        if not leaves:
            return time_step
        if tf.executing_eagerly():
            try:
                raise_if_not_finite([p for p, _ in leaves],
                                    [x.numpy() for _, x in leaves], what,
                                    self.env_name)
            except ValueError as e:
                self.last_error = e
                raise
            return time_step
        checks = []
        for path, x in leaves:
            # [B]: environment b's values of this leaf are all finite.
            rows = tf.reduce_all(tf.reshape(tf.math.is_finite(x),
                                            [tf.shape(x)[0], -1]), axis=1)
            checks.append(tf.debugging.Assert(tf.reduce_all(rows), [
                _FINITE_HEAD % (path, what, self.env_name or 'environment'),
                tf.argmin(tf.cast(rows, tf.int32)), _FINITE_TAIL]))
        with tf.control_dependencies(checks):
            return tf.nest.map_structure(tf.identity, time_step)

    def _check_action(self, action):
        spec = self._action_spec
        nest_utils.assert_same_structure(action, spec, 'action',
                                         'action_spec', prefix='action')
        flat = []
        for (path, a), s in zip(nest_utils.flatten_with_path(action, 'action'),
                                tf.nest.flatten(spec)):
            a = tf.convert_to_tensor(a)
            if a.dtype != s.dtype:
                same_kind = ((a.dtype.is_integer and s.dtype.is_integer) or
                             (a.dtype.is_floating and s.dtype.is_floating))
                if not same_kind:
                    raise ValueError(
                        "%s: expected %s from action_spec, got %s (cast the "
                        "action; only int->int and float->float casts are "
                        "automatic)" % (path, s.dtype.name, a.dtype.name))
                a = tf.cast(a, s.dtype)
            if a.shape.rank is not None and a.shape.rank >= 1 and \
                    a.shape[0] is not None and a.shape[0] != self._batch_size:
                raise ValueError(
                    "%s: expected batch size %d (the environment's), got "
                    "shape %s" % (path, self._batch_size, a.shape.as_list()))
            flat.append(a)
        action = tf.nest.pack_sequence_as(spec, flat)
        nest_utils.check_nest_matches_spec(
            action, spec, 'action', outer_rank=1,
            hint='actions need a leading batch dimension B=%d' %
            self._batch_size)
        return action

    def _reset(self):
        raise NotImplementedError()

    def _step(self, action):
        raise NotImplementedError()

    def render(self) -> Optional[np.ndarray]:
        """Environment 0's frame ([H, W, 3] uint8 numpy) or ``None``."""
        return None

    def checkpoint_state(self) -> Optional[Any]:
        """The environment's state as a trackable for ``tf.train.Checkpoint``.

        Restoring it puts the environment back where it was when it was
        saved, so that, with the last ``TimeStep`` it returned, a resumed
        run continues its episodes exactly (trainers checkpoint both).
        ``None`` when the state cannot be saved: after a resume such an
        environment is reset and its episodes restart.

        Returns:
            A trackable (e.g. a ``tf.Module`` of the state variables), the
            same object on every call, or ``None`` (this default).
        """
        return None

    @property
    def reports_game_scores(self) -> bool:
        """Whether ``pop_game_scores`` reports games (see
        ``PyEnvironment.pop_game_scores``); False here."""
        return False

    def pop_game_scores(self) -> List[float]:
        """Scores of the games that ended since the last call (Python,
        outside the graph; ``[]`` here). A trainer calls it after each
        compiled call and reports them as ``Metrics/GameScore``."""
        return []

    def close(self) -> None:
        """Frees the environment's resources."""

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
        return False


def _describe_value(x):
    return 'NaN' if isinstance(x, float) and x != x else repr(x)


# The in-graph check's Assert: "<leaf>: NaN/Inf in the <step|reset> output of
# <env name>, at env] [<index>] [(found by check_finite)".
_FINITE_HEAD = '%s: NaN/Inf in the %s output of %s, at env'
_FINITE_TAIL = '(found by check_finite)'
_FINITE_FORM = re.compile(
    r'(?P<path>\w[\w.\[\]\'"-]*): NaN/Inf in the (?P<what>step|reset) output '
    r'of (?P<name>[^\[\]]+?), at env\]? \[?(?P<env>\d+)\]? \[?' +
    re.escape(_FINITE_TAIL))


def failed_finite_check(error: BaseException) -> Optional[ValueError]:
    """The in-graph ``check_finite`` failure behind ``error`` as the
    ``ValueError`` an eager check would raise, or None.

    Args:
        error: what a compiled call raised.
    """
    match = _FINITE_FORM.search(getattr(error, 'message', str(error)))
    if match is None:
        return None
    path, name = match.group('path'), match.group('name')
    return ValueError(
        "%s: NaN/Inf at env %s in the %s output of %s (found by "
        "check_finite) -- the environment returned a non-finite %s" %
        (path, match.group('env'), match.group('what'), name,
         path.split('.')[0].split('[')[0]))


def raise_if_not_finite(paths: Sequence[str], arrays: Sequence[np.ndarray],
                        what: str = 'step',
                        env_name: Optional[str] = None) -> None:
    """Raises ``ValueError`` at the first array holding NaN or Inf.

    Args:
        paths: names of the arrays (``'observation'``, ``'reward'``...).
        arrays: [B, ...] float numpy arrays, one per path.
        what: the call that produced them (``'reset'``/``'step'``).
        env_name: the environment's name for the message, or None.

    Raises:
        ValueError: e.g. ``observation: NaN at env 1, element (2,) in the
            step output of CartPole-v1 (1 of 8 values non-finite; ...)``.
    """
    for path, a in zip(paths, arrays):
        a = np.asarray(a)
        if np.isfinite(a).all():
            continue
        bad = ~np.isfinite(a)
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        where = 'at env %d' % index[0]
        if index[1:]:
            where += ', element %s' % (index[1:], )
        output = ("the environment's %s output" % what if env_name is None
                  else 'the %s output of %s' % (what, env_name))
        raise ValueError(
            "%s: %s %s in %s (%d of %d values non-finite; found by "
            "check_finite) -- the environment returned a non-finite %s" %
            (path, _describe_value(a[index].item()), where, output,
             int(bad.sum()), a.size, path.split('.')[0].split('[')[0]))


class _LeafCheck(object):
    """Precomputed facts about one spec leaf, for the fast path."""

    __slots__ = ('path', 'spec', 'dtype', 'shape', 'lo', 'hi', 'scalar_bounds',
                 'is_float', 'check_bounds')

    def __init__(self, path, spec, batch_size):
        self.path = path
        self.spec = spec
        self.dtype = np.dtype(spec.dtype.as_numpy_dtype)
        self.shape = (batch_size, ) + tuple(spec.shape.as_list())
        self.is_float = self.dtype.kind == 'f'
        bounded = specs_lib.is_bounded(spec)
        self.check_bounds = bounded or self.is_float
        if bounded:
            lo, hi = spec.minimum, spec.maximum
            self.scalar_bounds = lo.size == 0 or (
                np.all(lo == lo.flat[0]) and np.all(hi == hi.flat[0]))
            if self.scalar_bounds and lo.size:
                lo, hi = lo.flat[0].item(), hi.flat[0].item()
            self.lo, self.hi = lo, hi
        else:
            self.scalar_bounds = True
            self.lo, self.hi = -np.inf, np.inf


class _PyEnvironmentState(tf.__internal__.tracking.Trackable):
    """Checkpoints a ``PyEnvironment`` through ``get_state``/``set_state``.

    The state is one string tensor of JSON text (never pickle: restoring a
    checkpoint must not run code from it).
    """

    def __init__(self, env, lock):
        self._env = env
        self._lock = lock

    def _serialize_to_tensors(self):
        with self._lock:
            state = self._env.get_state()
        try:
            text = json.dumps(state)
        except TypeError as e:
            raise TypeError(
                "%s.get_state() must return JSON-serializable values (lists, "
                "not numpy arrays): %s" % (type(self._env).__name__, e)) from e
        with tf.init_scope():
            return {'json': tf.constant(text, tf.string)}

    def _restore_from_tensors(self, restored_tensors):
        text = restored_tensors['json'].numpy().decode('utf-8')
        with self._lock:
            self._env.set_state(json.loads(text))


def _bounds_str(check):
    return '[%s, %s]' % (specs_lib._short(np.asarray(check.lo)),
                         specs_lib._short(np.asarray(check.hi)))


def _check_action_arrays(flat_actions: Sequence[np.ndarray],
                         checks: Sequence['_LeafCheck']) -> None:
    """The callback's action check: every [B, ...] array of the flat
    action has its leaf's shape and dtype and lies within its bounds (NaN
    fails), or a ``ValueError`` naming the leaf (and, out of bounds, the
    environment and element).

    Args:
        flat_actions: the flattened action, [B, ...] numpy arrays.
        checks: one ``_LeafCheck`` per action leaf, in the same order.
    """
    for a, c in zip(flat_actions, checks):
        if a.shape != c.shape or a.dtype != c.dtype:
            raise ValueError(
                "%s: expected [B=%d%s] %s from action_spec, got %s %s" %
                (c.path, c.shape[0], ''.join(', %d' % d
                                             for d in c.shape[1:]),
                 c.dtype.name, list(a.shape), a.dtype.name))
        if not c.check_bounds:
            continue
        # Small arrays (the usual [B] discrete action) are checked in
        # Python: tolist() + min/max costs ~1 us, numpy reductions ~5.
        if c.scalar_bounds and a.size <= 256:
            values = a.ravel().tolist()
            lo, hi = c.lo, c.hi
            if c.is_float:
                # Chained comparisons are False for NaN.
                ok = all([lo <= x <= hi for x in values])
            else:
                ok = not values or (min(values) >= lo and
                                    max(values) <= hi)
        else:
            # Comparisons with NaN are False, so NaN fails here too.
            ok = bool(((a >= c.lo) & (a <= c.hi)).all())
        if not ok:
            _raise_out_of_bounds(a, c)


class NonFiniteActionError(ValueError):
    """An action holding NaN or Inf reached the environment: the policy
    (the model) computes non-finite values."""


def _raise_out_of_bounds(a, c):
    """The ``ValueError`` of an action ``a`` outside ``c``'s bounds."""
    lo = np.broadcast_to(np.asarray(c.lo, a.dtype), c.shape)
    hi = np.broadcast_to(np.asarray(c.hi, a.dtype), c.shape)
    bad = ~((a >= lo) & (a <= hi))
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    env, element = index[0], index[1:]
    value = a[index].item()
    where = 'at env %d' % env
    if element:
        where += ', element %s' % (element, )
    error = ValueError if np.isfinite(value) else NonFiniteActionError
    raise error(
        "%s: value %s %s outside action_spec bounds %s (%d of %d "
        "values out of bounds) -- check the policy's output or clip it "
        "to the spec" % (c.path, _describe_value(value), where,
                         _bounds_str(c), int(bad.sum()), a.size))


class TFPyEnvironment(TFEnvironment):
    """Runs a batched numpy ``PyEnvironment`` as a ``TFEnvironment``.

    Each ``reset()``/``step()`` is exactly one ``tf.numpy_function`` whose
    outputs get static shapes [B] + spec shape. Called eagerly, the same
    callback runs directly, so errors surface as the original Python
    exceptions. Inside a graph they surface as a ``tf.errors.OpError``; the
    Python exception is kept in ``last_error``.

    Args:
        py_env: a batched ``PyEnvironment`` (an unbatched one is wrapped in
            ``BatchedPyEnvironment([py_env])``).
        check_actions: validate actions in the callback (shape, dtype, bounds,
            NaN). Leave on: the cost is a few microseconds per step.
        check_finite: also check the environment's rewards, discounts
            and float observations for NaN/Inf in the callback and raise
            ``ValueError`` naming the leaf, env index and ``env_name`` (see
            ``TFEnvironment.check_finite``). On by default.
        env_name: the name in those errors (e.g. ``'CartPole-v1'``), or
            None.
    """

    @property
    def in_graph(self) -> bool:
        """False: every step calls back into Python."""
        return False

    def __init__(self, py_env: PyEnvironment, check_actions: bool = True,
                 check_finite: bool = True, env_name: Optional[str] = None):
        if not isinstance(py_env, PyEnvironment):
            raise ValueError("TFPyEnvironment expects a PyEnvironment, got %r"
                             % (py_env, ))
        if not py_env.batched:
            py_env = BatchedPyEnvironment([py_env])
        self._env = py_env
        batch_size = py_env.batch_size
        action_spec = py_env.action_spec()
        time_step_spec = specs_lib.time_step_spec(py_env.observation_spec(),
                                                  action_spec)
        super().__init__(time_step_spec, action_spec, batch_size)
        self._check_actions = check_actions
        self._lock = threading.Lock()
        self._state = None  # built by checkpoint_state()

        self._action_structure = (action_spec if isinstance(
            action_spec, (dict, list, tuple)) else None)
        self._action_checks = [
            _LeafCheck(p, s, batch_size)
            for p, s in nest_utils.flatten_with_path(action_spec, 'action')
        ]
        self._obs_is_leaf = not isinstance(time_step_spec.observation,
                                           (dict, list, tuple))
        self._prev_action_is_leaf = self._action_structure is None
        paths = [p.lstrip('.') for p, _ in
                 nest_utils.flatten_with_path(time_step_spec)]
        flat_specs = tf.nest.flatten(time_step_spec)
        self._time_step_checks = [
            _LeafCheck(p, s, batch_size) for p, s in zip(paths, flat_specs)
        ]
        self._fast_checks = [(c.shape, c.dtype) for c in self._time_step_checks]
        # (index in the flat TimeStep, path) of the leaves check_finite
        # looks at; prev_action is the (already checked) action.
        self._finite_leaves = [
            (i, c.path) for i, c in enumerate(self._time_step_checks)
            if c.is_float and not c.path.startswith('prev_action')
        ]
        self.check_finite = check_finite
        self.env_name = env_name
        self._out_dtypes = [s.dtype for s in flat_specs]
        self._out_shapes = [[batch_size] + s.shape.as_list()
                            for s in flat_specs]
        # The graph callback returns all TimeStep leaves packed into ONE
        # uint8 buffer: each numpy_function output costs ~10 us of fixed
        # overhead (measured with TF 2.21), more than the packing and the
        # split/bitcast ops that unpack it.
        self._out_nbytes = [
            int(np.prod(shape)) * dtype.size
            for shape, dtype in zip(self._out_shapes, self._out_dtypes)
        ]
        self._packed_size = sum(self._out_nbytes)

    def _checked_finite(self, time_step, what):
        # The callback (_np_step/_np_reset) checked the arrays already.
        return time_step

    def _check_flat_finite(self, flat, what):
        """``check_finite`` on the flat numpy ``TimeStep`` of a callback."""
        for i, path in self._finite_leaves:
            if not np.isfinite(flat[i]).all():
                raise_if_not_finite([path], [flat[i]], what, self.env_name)

    @property
    def pyenv(self) -> PyEnvironment:
        """The wrapped batched ``PyEnvironment``."""
        return self._env

    # --- numpy side (the tf.numpy_function callbacks) --------------------
    def _flatten_time_step(self, ts):
        """Flat list of ``TimeStep`` leaves, validated and cast."""
        try:
            flat = [ts.step_type, ts.reward, ts.discount]
            if self._obs_is_leaf:
                flat.append(ts.observation)
            else:
                flat.extend(flatten_nest(ts.observation))
            if self._prev_action_is_leaf:
                flat.append(ts.prev_action)
            else:
                flat.extend(flatten_nest(ts.prev_action))
            flat.append(ts.env_id)
        except AttributeError:
            raise ValueError(
                "the PyEnvironment returned %s, expected a TimeStep" %
                type(ts).__name__) from None
        checks = self._fast_checks
        if len(flat) == len(checks):
            for x, (shape, dtype) in zip(flat, checks):
                if type(x) is not np.ndarray or x.dtype != dtype or \
                        x.shape != shape:
                    break
            else:
                return flat
        return self._slow_check_time_step(ts)

    def _slow_check_time_step(self, ts):
        spec = self._time_step_spec
        hint = ('is the PyEnvironment batched (arrays need a leading batch '
                'dimension B=%d)?' % self._batch_size)
        if not isinstance(ts, TimeStep):
            raise ValueError("the PyEnvironment returned %s, expected a "
                             "TimeStep" % type(ts).__name__)
        fields = []
        for name in TimeStep._fields:
            value = getattr(ts, name)
            field_spec = getattr(spec, name)
            nest_utils.assert_same_structure(value, field_spec, name,
                                             name + '_spec', prefix=name)
            flat = [np.asarray(v) for v in flatten_nest(value)]
            flat_spec = flatten_nest(field_spec)
            for i, (v, s) in enumerate(zip(flat, flat_spec)):
                want = np.dtype(s.dtype.as_numpy_dtype)
                if v.dtype != want and (v.dtype.kind == want.kind or
                                        (v.dtype.kind in 'iub' and
                                         want.kind in 'iub')):
                    flat[i] = v.astype(want)
            value = pack_nest_as(value, flat)
            nest_utils.check_nest_matches_spec(value, field_spec, name,
                                               outer_rank=1, hint=hint)
            for (path, v), _ in zip(
                    nest_utils.flatten_with_path(value, name), flat_spec):
                if v.shape[0] != self._batch_size:
                    raise ValueError(
                        "%s: expected batch size %d, got shape %s -- %s" %
                        (path, self._batch_size, list(v.shape), hint))
            fields.append(flat)
        return [x for flat in fields for x in flat]

    def _np_step(self, *flat_actions):
        """Validates the actions, steps the PyEnvironment.

        Args:
            *flat_actions: [B, ...] numpy arrays, the flattened action.

        Returns:
            list of [B, ...] numpy arrays, the flattened ``TimeStep``.
        """
        try:
            with self._lock:
                if self._check_actions:
                    _check_action_arrays(flat_actions, self._action_checks)
                if self._action_structure is None:
                    action = flat_actions[0]
                else:
                    action = pack_nest_as(self._action_structure,
                                          flat_actions)
                flat = self._flatten_time_step(self._env.step(action))
                if self._check_finite:
                    self._check_flat_finite(flat, 'step')
                return flat
        except Exception as e:
            self.last_error = e
            raise

    def _np_reset(self):
        """Resets the PyEnvironment; returns the flattened ``TimeStep``."""
        try:
            with self._lock:
                flat = self._flatten_time_step(self._env.reset())
                if self._check_finite:
                    self._check_flat_finite(flat, 'reset')
                return flat
        except Exception as e:
            self.last_error = e
            raise

    @staticmethod
    def _pack_bytes(flat):
        """Concatenates the raw bytes of C-contiguous arrays: [N] uint8."""
        return np.frombuffer(b''.join([x.tobytes() for x in flat]), np.uint8)

    def _packed_step(self, *flat_actions):
        return self._pack_bytes(self._np_step(*flat_actions))

    def _packed_reset(self):
        return self._pack_bytes(self._np_reset())

    def _unpack(self, packed):
        """[N] uint8 tensor -> list of [B, ...] tensors of the leaf dtypes."""
        packed.set_shape([self._packed_size])
        flat = []
        for part, shape, dtype in zip(tf.split(packed, self._out_nbytes),
                                      self._out_shapes, self._out_dtypes):
            if dtype == tf.bool:
                flat.append(tf.reshape(tf.not_equal(part, 0), shape))
            elif dtype.size == 1:
                flat.append(tf.reshape(tf.bitcast(part, dtype), shape))
            else:
                flat.append(
                    tf.bitcast(tf.reshape(part, shape + [dtype.size]),
                               dtype))
        return flat

    # --- TF side -----------------------------------------------------------
    def _to_time_step(self, flat):
        for t, shape in zip(flat, self._out_shapes):
            t.set_shape(shape)
        return tf.nest.pack_sequence_as(self._time_step_spec, flat)

    def _call(self, fn, packed_fn, flat_inputs, name):
        if tf.executing_eagerly():
            # Eagerly run the callback directly: the original exception
            # (not an OpError) reaches the caller.
            flat = fn(*[np.asarray(x) for x in flat_inputs])
            return tf.nest.pack_sequence_as(
                self._time_step_spec,
                [tf.convert_to_tensor(x) for x in flat])
        packed = tf.numpy_function(packed_fn, list(flat_inputs), tf.uint8,
                                   stateful=True, name=name)
        return self._to_time_step(self._unpack(packed))

    def _reset(self):
        return self._call(self._np_reset, self._packed_reset, [], 'reset')

    def _step(self, action):
        return self._call(self._np_step, self._packed_step,
                          tf.nest.flatten(action), 'step')

    def render(self) -> Optional[np.ndarray]:
        """Environment 0's frame ([H, W, 3] uint8 numpy) or ``None``."""
        return self._env.render()

    def checkpoint_state(self) -> Optional[Any]:
        """The wrapped environment's state, when it can give it.

        A ``PyEnvironment`` that defines ``get_state()`` (returning a
        JSON-serializable value) and ``set_state(value)`` (e.g. the
        ``suite_unittest`` environments) is checkpointed through them;
        others (gymnasium environments, whose state cannot be saved in
        general) give ``None``: a resumed run resets them.

        Returns:
            A trackable (the same object on every call), or ``None``.
        """
        if not (callable(getattr(self._env, 'get_state', None))
                and callable(getattr(self._env, 'set_state', None))):
            return None
        if self._state is None:
            self._state = _PyEnvironmentState(self._env, self._lock)
        return self._state

    @property
    def reports_game_scores(self) -> bool:
        """Whether the wrapped ``PyEnvironment`` reports game scores."""
        return self._env.reports_game_scores

    def pop_game_scores(self) -> List[float]:
        """The wrapped ``PyEnvironment``'s finished games' scores."""
        with self._lock:
            return self._env.pop_game_scores()

    def close(self) -> None:
        """Closes the wrapped ``PyEnvironment``."""
        self._env.close()
