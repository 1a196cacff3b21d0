"""``ExportedPolicy``: a trained algorithm's policy as a ``tf.Module`` with
flat, named signatures, ready for ``tf.saved_model.save`` and TFLite.

Signatures (B = batch, any size):

* ``action``: inputs ``observation`` (one leaf) or ``observation_<path>``
  (each leaf of a nested observation, e.g. ``observation_pos`` for
  ``observation['pos']``), [B, ...] with the spec's dtype; for a recurrent
  policy ``state_<path>`` [B, ...]; for a stochastic export, per action
  leaf, ``gumbel`` / ``gumbel_<path>`` [B, *action_shape, num_values]
  standard Gumbel noise (categorical leaves) or ``eps`` / ``eps_<path>``
  [B, *action_shape] standard-normal noise (continuous leaves; see
  ``alf_rl.export.noise``). Outputs
  ``action`` / ``action_<path>`` [B, ...] with the action spec's dtypes and
  within its bounds, and, for a recurrent policy, the next state under the
  same ``state_<path>`` names as the inputs.
* ``initial_state`` (recurrent policies only): input ``batch_size`` int32
  scalar; outputs the zero state ``state_<path>`` [batch_size, ...].

The greedy ``action`` is ``algorithm.predict(algorithm.transform_timestep(
time_step), state).action`` traced as is (for an ``Agent`` whose goal
generator changes goals only at episode starts, such as a
``SkillGenerator``, the goal is the state input and the generator is not
run: exported steps are never FIRST; see ``greedy_action``), so the
observation transformers and normalizer of the run are folded in (their
statistics become constants of the exported model). The stochastic
``action`` uses the same actor network and normalization, and samples with
the noise input.

Only the variables the traced functions read are tracked (not critics,
target networks or optimizer slots), so the SavedModel holds the policy
alone.
"""

import re
from typing import Any, Dict, List, Optional, Tuple

import tensorflow as tf
import tensorflow_probability as tfp

from alf_rl import specs as alf_specs
from alf_rl.data_structures import StepType, TimeStep
from alf_rl.export.noise import noise_kinds, noise_shapes, sample_with_noise
from alf_rl.utils import nest as nest_utils

from alf_rl.utils.nest import Nest
ACTION_SIGNATURE = 'action'
INITIAL_STATE_SIGNATURE = 'initial_state'


def flat_name(path: str) -> str:
    """A signature name for a nest path: ``"observation['pos']"`` ->
    ``'observation_pos'``, ``'state.actor[0]'`` -> ``'state_actor_0'``.

    Args:
        path: a path from ``nest_utils.flatten_with_path``.
    Returns:
        The path with every run of non-alphanumeric characters replaced by
        one underscore, none at either end.
    """
    return re.sub(r'[^0-9A-Za-z]+', '_', path).strip('_')


def named_leaves(nest: Nest, prefix: str) -> List[Tuple[str, Any]]:
    """``[(signature name, leaf)]`` of a nest in ``tf.nest`` order.

    Args:
        nest: nest of specs or tensors.
        prefix: the name of a lone leaf and the prefix of nested ones.
    Returns:
        list of ``(name, leaf)``.
    Raises:
        ValueError: two paths give the same name (e.g. keys ``'a b'`` and
            ``'a_b'``).
    """
    pairs = [(flat_name(p), leaf)
             for p, leaf in nest_utils.flatten_with_path(nest, prefix)]
    names = [n for n, _ in pairs]
    if len(set(names)) != len(names):
        raise ValueError("%s: nest paths give duplicate signature names %s" %
                         (prefix, names))
    return pairs


def _batch_spec(name: str, spec: tf.TensorSpec) -> tf.TensorSpec:
    return tf.TensorSpec([None] + spec.shape.as_list(), spec.dtype,
                         name=name)


def _actor_network(algorithm: Any) -> Any:
    """The actor network (``observation -> (distributions, state)``)."""
    network = getattr(algorithm, 'actor_network', None)
    if network is None:
        raise ValueError(
            "stochastic export: %s has no actor network (a Q-argmax "
            "policy such as DQN is greedy); export it without "
            "--stochastic" % type(algorithm).__name__)
    return network


def _mid_time_step(algorithm: Any, observation: Nest) -> TimeStep:
    """A MID ``TimeStep`` of ``observation`` (zero reward and previous
    action), as an exported policy's functions see every step.

    Args:
        algorithm: the algorithm (for its action spec).
        observation: nest of [B, ...] observations.
    Returns:
        ``TimeStep`` with [B, ...] leaves.
    """
    batch = tf.shape(tf.nest.flatten(observation)[0])[0]
    return TimeStep(
        step_type=tf.fill([batch], StepType.MID),
        reward=tf.zeros([batch]),
        discount=tf.ones([batch]),
        observation=observation,
        prev_action=alf_specs.zeros_from_spec(algorithm.action_spec, [batch]),
        env_id=tf.zeros([batch], tf.int32))


def action_distribution(algorithm: Any, observation: Nest,
                        state: Any) -> Tuple[Nest, Nest]:
    """The actor's action distributions and the next predict state.

    Args:
        algorithm: an actor-critic (A2C, PPO, TRAC) or SAC algorithm, or an
            ``Agent`` wrapping one (its encoder and goal generator run
            first, as in its ``predict``).
        observation: nest of [B, ...] transformed observations.
        state: the predict state nest, [B, ...] leaves (an ``AgentState``
            for an ``Agent``, whose fields are read).
    Returns:
        ``(distributions with batch shape [B], next predict state)``.
    Raises:
        ValueError: the algorithm has no actor network, or its actor is
            deterministic (DDPG, TD3).
    """
    if hasattr(algorithm, 'rl_policy_input'):  # an Agent
        time_step, goal_step = algorithm.rl_policy_input(
            _mid_time_step(algorithm, observation), state,
            episode_starts=False)
        dist, rl_state = action_distribution(algorithm.rl_algorithm,
                                             time_step.observation, state.rl)
        return dist, state._replace(rl=rl_state, goal=goal_step.state)
    network = _actor_network(algorithm)
    if hasattr(state, 'actor'):
        dist, actor_state = network(observation, state=state.actor)
        next_state = state._replace(actor=actor_state)
    else:
        dist, _ = network(observation)
        next_state = state
    if not any(isinstance(d, tfp.distributions.Distribution)
               for d in tf.nest.flatten(dist)):
        raise ValueError(
            "stochastic export: the actor of %s is deterministic (its "
            "exploration noise is not part of the policy); export it "
            "without --stochastic" % type(algorithm).__name__)
    return dist, next_state


def greedy_action(algorithm: Any, time_step: TimeStep,
                  state: Any) -> Tuple[Nest, Nest]:
    """``algorithm.predict``'s action and next state on exported steps.

    Exported steps are never FIRST: an ``Agent`` whose goal generator
    changes goals only at FIRST steps (``SkillGenerator``) takes the goal
    from the state as is (``rl_policy_input(..., episode_starts=False)``),
    so the generator's random draw is not traced (TFLite has no such op).
    Everything else is ``predict`` itself.

    Args:
        algorithm: an ``RLAlgorithm`` (or ``Agent``).
        time_step: transformed ``TimeStep`` with [B, ...] leaves, MID steps.
        state: the predict state nest, [B, ...] leaves (an ``AgentState``
            for an ``Agent``, whose fields are read).
    Returns:
        ``(action nest [B, ...], next predict state)``.
    """
    if not hasattr(algorithm, 'rl_policy_input'):
        step = algorithm.predict(time_step, state)
        return step.action, step.state
    rl_time_step, goal_step = algorithm.rl_policy_input(
        time_step, state, episode_starts=False)
    action, rl_state = greedy_action(algorithm.rl_algorithm, rl_time_step,
                                     state.rl)
    return action, state._replace(rl=rl_state, goal=goal_step.state)


class ExportedPolicy(tf.Module):
    """The policy of a trained algorithm with flat named signatures.

    Args:
        algorithm: a built (restored) ``RLAlgorithm``.
        stochastic: export sampling with a noise input instead of the
            greedy ``predict``.
        name: module name.

    Raises:
        ValueError: ``stochastic`` for an algorithm without an action
            distribution (DQN, DDPG, TD3).
    """

    def __init__(self, algorithm: Any, stochastic: bool = False,
                 name: str = 'ExportedPolicy'):
        super().__init__(name=name)
        # Held in a closure, not as an attribute: the module tracks only the
        # variables the policy reads (see _track_variables).
        self._get_algorithm = lambda: algorithm
        self._stochastic = stochastic
        self._observations = named_leaves(algorithm.observation_spec,
                                          'observation')
        self._states = named_leaves(algorithm.predict_state_spec, 'state')
        self._actions = named_leaves(algorithm.action_spec, 'action')
        self._noises = self._noise_specs() if stochastic else []
        inputs = [_batch_spec(n, s)
                  for n, s in self._observations + self._states]
        inputs += [tf.TensorSpec([None] + shape, tf.float32, name=n)
                   for n, shape in self._noises]
        self.action_function = tf.function(self._action).get_concrete_function(
            **{spec.name: spec for spec in inputs})
        self.initial_state_function = None
        if self._states:
            self.initial_state_function = tf.function(
                self._initial_state).get_concrete_function(
                    tf.TensorSpec([], tf.int32, name='batch_size'))
        self._track_variables()

    @property
    def signatures(self) -> Dict[str, Any]:
        """``{name: concrete function}`` for ``tf.saved_model.save``
        (``serving_default`` is ``action``)."""
        result = {ACTION_SIGNATURE: self.action_function,
                  'serving_default': self.action_function}
        if self.initial_state_function is not None:
            result[INITIAL_STATE_SIGNATURE] = self.initial_state_function
        return result

    @property
    def noise_inputs(self) -> List[Tuple[str, List[int]]]:
        """``[(input name, shape without the batch dim)]`` of the noise a
        stochastic export takes (``gumbel*``: standard Gumbel, ``eps*``:
        standard normal); empty when greedy."""
        return list(self._noises)

    def _track_variables(self):
        variables = list(self.action_function.variables)
        if self.initial_state_function is not None:
            variables += list(self.initial_state_function.variables)
        # Each variable once, in first-seen order.
        self._policy_variables = list(
            {id(v): v for v in variables}.values())

    def _noise_specs(self) -> List[Tuple[str, List[int]]]:
        """Names and shapes of the noise inputs, one per stochastic leaf."""
        algorithm = self._get_algorithm()
        observation = alf_specs.zeros_from_spec(algorithm.observation_spec,
                                                [1])
        dist, _ = action_distribution(
            algorithm, observation, algorithm.get_initial_predict_state(1))
        return [(n, shape) for n, shape in zip(self._noise_names(dist),
                                               noise_shapes(dist))
                if n is not None and shape is not None]

    def _noise_names(self, dist: Nest) -> List[Optional[str]]:
        """Per action leaf, its noise input's name (``gumbel``/``eps``
        replacing ``action``) or None for a deterministic leaf."""
        return [None if kind is None else name.replace('action', kind, 1)
                for (name, _), kind in zip(self._actions, noise_kinds(dist))]

    def _action(self, **inputs: tf.Tensor) -> Dict[str, tf.Tensor]:
        """The ``action`` signature: see the module docstring."""
        algorithm = self._get_algorithm()
        observation = tf.nest.pack_sequence_as(
            algorithm.observation_spec,
            [inputs[n] for n, _ in self._observations])
        state = tf.nest.pack_sequence_as(
            algorithm.predict_state_spec, [inputs[n] for n, _ in self._states])
        time_step = algorithm.transform_timestep(
            _mid_time_step(algorithm, observation))
        if self._stochastic:
            dist, next_state = action_distribution(
                algorithm, time_step.observation, state)
            action = sample_with_noise(
                dist, [None if n is None else inputs[n]
                       for n in self._noise_names(dist)])
            action = alf_specs.cast_and_clip_to_spec(action,
                                                     algorithm.action_spec)
        else:
            action, next_state = greedy_action(algorithm, time_step, state)
        outputs = dict(zip([n for n, _ in self._actions],
                           tf.nest.flatten(action)))
        outputs.update(zip([n for n, _ in self._states],
                           tf.nest.flatten(next_state)))
        return outputs

    def _initial_state(self, batch_size: tf.Tensor) -> Dict[str, tf.Tensor]:
        """The ``initial_state`` signature: zero state for ``batch_size``."""
        state = self._get_algorithm().get_initial_predict_state(batch_size)
        return dict(zip([n for n, _ in self._states],
                        tf.nest.flatten(state)))

