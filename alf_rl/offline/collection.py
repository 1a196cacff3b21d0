"""Collecting a policy's episodes into a dataset (behind ``alf-collect``).

A policy plays whole episodes in a batch-of-1 environment; each step is
recorded as an online run's replay buffer stores it (the time step and
the action taken at it; the ``LAST`` step too, with the action the
environment ignores as it resets). The policy is the algorithm's greedy
``predict``, optionally perturbed:

- ``epsilon`` E: with probability E, a uniformly random action instead
  (each action leaf drawn within its spec's bounds);
- ``noise`` S (continuous actions): Gaussian noise of standard deviation
  S times the half-range of the bounds, the result clipped to them;
- ``random``: uniformly random actions, no policy needed.
"""

from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import numpy as np
import tensorflow as tf

from alf_rl.data_structures import Experience
from alf_rl.environments.tf_environment import TFEnvironment
from alf_rl.offline.dataset import DatasetWriter
from alf_rl.utils.common import reset_state_if_necessary
from alf_rl.utils.nest import Nest, flatten_with_path

#: ``(time_step, state) -> (action, next state)``, [1, ...] leaves.
PolicyFn = Callable[[Any, Any], Tuple[Any, Any]]


class Exploration(NamedTuple):
    """How the greedy actions are perturbed while collecting.

    Fields:
        mode: ``'greedy'``, ``'epsilon'``, ``'noise'`` or ``'random'``.
        value: E for ``'epsilon'`` (in [0, 1]), S for ``'noise'`` (>= 0).
    """

    mode: str = 'greedy'
    value: float = 0.0

    def describe(self) -> str:
        """E.g. ``'epsilon 0.1'``, for the dataset's metadata."""
        if self.mode in ('greedy', 'random'):
            return self.mode
        return '%s %g' % (self.mode, self.value)


def check_exploration(exploration: Exploration, action_spec: Nest) -> None:
    """Refuses, in one line, a mode or value that cannot apply.

    Raises:
        ValueError: an unknown mode, a value out of range, ``noise`` on
            integer actions, or unbounded actions where bounds are drawn.
    """
    mode, value = exploration
    if mode not in ('greedy', 'epsilon', 'noise', 'random'):
        raise ValueError(
            "exploration mode %r: expected 'greedy', 'epsilon', "
            "'noise' or 'random'" % mode
        )
    if mode == 'epsilon' and not 0 <= value <= 1:
        raise ValueError(
            "--epsilon %g: expected a probability in [0, 1]" % value
        )
    if mode == 'noise' and value < 0:
        raise ValueError(
            "--noise %g: expected a standard deviation >= 0" % value
        )
    for path, spec in flatten_with_path(action_spec, 'action'):
        if mode == 'noise' and not spec.dtype.is_floating:
            raise ValueError(
                "--noise needs continuous actions; %s is %s "
                "(use --epsilon)" % (path, spec.dtype.name)
            )
        if mode != 'greedy' and not hasattr(spec, 'minimum'):
            raise ValueError(
                "--%s needs bounded actions; %s has no bounds" % (mode, path)
            )


def _uniform(spec: Any, rng: np.random.Generator) -> np.ndarray:
    """One [1, *shape] action drawn uniformly within ``spec``'s bounds."""
    shape = [1] + spec.shape.as_list()
    low = np.broadcast_to(spec.minimum, shape[1:])
    high = np.broadcast_to(spec.maximum, shape[1:])
    if spec.dtype.is_integer:
        return rng.integers(low, high + 1, shape).astype(
            spec.dtype.as_numpy_dtype
        )
    return rng.uniform(low, high, shape).astype(spec.dtype.as_numpy_dtype)


def explore(
    action: Nest,
    action_spec: Nest,
    exploration: Exploration,
    rng: np.random.Generator,
) -> Nest:
    """The action to take after perturbing the greedy one.

    Args:
        action: nest of [1, ...] numpy greedy actions (unused for
            ``'random'``, may be None then).
        action_spec: the action spec nest.
        exploration: the perturbation.
        rng: the source of randomness.

    Returns:
        a nest of [1, ...] numpy actions of the spec's dtypes.
    """
    mode, value = exploration
    if mode == 'random' or (mode == 'epsilon' and rng.uniform() < value):
        return tf.nest.map_structure(lambda s: _uniform(s, rng), action_spec)
    if mode == 'noise':

        def noisy(a, s):
            half = (np.asarray(s.maximum) - np.asarray(s.minimum)) / 2
            a = a + rng.normal(size=a.shape) * value * half
            return np.clip(a, s.minimum, s.maximum).astype(a.dtype)

        return tf.nest.map_structure(noisy, action, action_spec)
    return action


def collect_episodes(
    env: TFEnvironment,
    policy_fn: Optional[PolicyFn],
    initial_state_fn: Callable[[int], Any],
    num_episodes: int,
    exploration: Exploration,
    seed: int = 0,
) -> List[Experience]:
    """Plays ``num_episodes`` whole episodes and records every step.

    Args:
        env: a batch-of-1 environment.
        policy_fn: ``(time_step, state) -> (action, state)`` of the greedy
            policy (compiled here); None only for ``'random'``.
        initial_state_fn: ``batch_size -> policy state``.
        num_episodes: episodes to record.
        exploration: how to perturb the greedy actions.
        seed: seed of the perturbations.

    Returns:
        the episodes, ``Experience`` of numpy [T, ...] leaves (as
        ``DatasetWriter.add_episode`` takes them).
    """
    check_exploration(exploration, env.action_spec())
    rng = np.random.default_rng(seed)
    step = None if policy_fn is None else tf.function(policy_fn)
    episodes: List[Experience] = []
    rows: List[Experience] = []
    time_step, state = env.reset(), initial_state_fn(1)
    while len(episodes) < num_episodes:
        greedy = None
        if step is not None:
            state = reset_state_if_necessary(
                state, initial_state_fn(1), time_step.is_first()
            )
            greedy, state = step(time_step, state)
            greedy = tf.nest.map_structure(np.asarray, greedy)
        action = explore(greedy, env.action_spec(), exploration, rng)
        rows.append(_row(time_step, action))
        if bool(time_step.is_last()[0]):
            episodes.append(
                tf.nest.map_structure(lambda *x: np.concatenate(x), *rows)
            )
            rows = []
        time_step = env.step(
            tf.nest.map_structure(
                lambda a, s: tf.constant(a, s.dtype), action, env.action_spec()
            )
        )
    return episodes


def _row(time_step: Any, action: Nest) -> Experience:
    """One recorded step, [1, ...] numpy leaves."""
    ts = tf.nest.map_structure(np.asarray, time_step)
    return Experience(
        step_type=ts.step_type,
        reward=ts.reward,
        discount=ts.discount,
        observation=ts.observation,
        prev_action=ts.prev_action,
        action=action,
    )


def episode_return(episode: Experience) -> float:
    """The undiscounted return of a recorded episode (the rewards after
    its ``FIRST`` step)."""
    return float(np.sum(episode.reward[1:]))


def reference_returns_played(
    env: TFEnvironment,
    policy_fn: Optional[PolicyFn],
    initial_state_fn: Callable[[int], Any],
    num_episodes: int,
    random_return: Optional[float] = None,
    expert_return: Optional[float] = None,
    seed: int = 0,
) -> Dict[str, float]:
    """The normalized score's reference returns: those given, else the
    mean return over ``num_episodes`` episodes of a uniformly random policy
    (``random_return``) and of ``policy_fn`` played greedily
    (``expert_return``); none measured when ``num_episodes`` is 0.

    Returns:
        ``{'random_return': R, 'expert_return': R}``, either missing when
        neither given nor measured.
    """
    result: Dict[str, float] = {}
    for name, given, mode in (
        ('random_return', random_return, 'random'),
        ('expert_return', expert_return, 'greedy'),
    ):
        if given is not None:
            result[name] = float(given)
        elif num_episodes > 0:
            played = collect_episodes(
                env,
                policy_fn,
                initial_state_fn,
                num_episodes,
                Exploration(mode),
                seed,
            )
            result[name] = float(np.mean([episode_return(e) for e in played]))
    return result


def collect_to_dataset(
    env: TFEnvironment,
    policy_fn: Optional[PolicyFn],
    initial_state_fn: Callable[[int], Any],
    path: str,
    num_episodes: int,
    exploration: Exploration,
    reference_episodes: int = 0,
    random_return: Optional[float] = None,
    expert_return: Optional[float] = None,
    seed: int = 0,
    metadata: Optional[Dict[str, Any]] = None,
) -> Tuple[List[float], Dict[str, Any]]:
    """Records ``num_episodes`` episodes into the dataset at ``path`` (new,
    or appended to) with their metadata: ``metadata``, ``policy``
    (``exploration.describe()``), ``behaviour_return`` (their mean return)
    and the reference returns (``reference_returns_played``).

    Returns:
        ``(returns of the recorded episodes, the metadata set)``.

    Raises:
        DatasetError: ``path`` holds a dataset of other specs (checked
            before playing).
    """
    writer = DatasetWriter(path, env.observation_spec(), env.action_spec())
    recorded = collect_episodes(
        env, policy_fn, initial_state_fn, num_episodes, exploration, seed
    )
    returns = [episode_return(e) for e in recorded]
    for e in recorded:
        writer.add_episode(e)
    entries = dict(metadata or {})
    entries['policy'] = exploration.describe()
    entries['behaviour_return'] = float(np.mean(returns))
    entries.update(
        reference_returns_played(
            env,
            policy_fn,
            initial_state_fn,
            reference_episodes,
            random_return,
            expert_return,
            seed + 1,
        )
    )
    writer.set_metadata(**entries)
    writer.flush()
    return returns, entries
