"""``EvaluationDriver``: greedy evaluation over whole episodes in one graph.

Each of the B evaluation environments plays exactly one episode with
``algorithm.predict``; counting only the first episode of every environment
avoids the bias towards short episodes that "first N episodes to finish"
has when environments run in parallel.

Evaluation draws its random numbers (e.g. ``DqnAlgorithm``'s
``eval_epsilon_greedy``) from its own ``tf.random.Generator``, so turning
evaluation on or off does not change a seeded training run.
"""

from typing import Any, Optional, Tuple

import tensorflow as tf

from alf_rl.utils.common import (derive_seed, reset_state_if_necessary,
                                 using_global_generator)

# Distinguishes the evaluation generator's derived seed.
_EVAL_SEED_SALT = 7919


class EvaluationDriver(object):
    """Plays one greedy episode in each environment of ``env``.

    Actions come from ``algorithm.predict`` (never ``rollout``), with the
    observation transformed by ``algorithm.transform_timestep`` without
    updating its normalizers. Every environment's first episode counts;
    an environment whose episode ended keeps being stepped (its later
    rewards are ignored) until all have ended.

    Args:
        env: a batched ``TFEnvironment``; B = number of episodes per run.
        algorithm: an ``RLAlgorithm``; its ``predict`` is used.
        max_steps: safety bound on steps per episode (>= 1): an episode
            still running after it counts with the return and length it
            has so far.
        use_tf_functions: compile the evaluation loop.
        seed: seed of the evaluation's own random-number generator;
            ``None`` derives one from the global generator's current state
            without drawing from it (fixed under ``set_random_seed``).

    Raises:
        ValueError: if ``max_steps`` < 1.
        TypeError: if ``seed`` is not an int or ``None``.
    """

    def __init__(self, env: Any, algorithm: Any,
                 max_steps: int = 100000, use_tf_functions: bool = True,
                 seed: Optional[int] = None):
        if int(max_steps) < 1:
            raise ValueError("EvaluationDriver: max_steps must be >= 1, "
                             "got %r" % (max_steps, ))
        if seed is not None and (isinstance(seed, bool)
                                 or not isinstance(seed, int)):
            raise TypeError("EvaluationDriver: seed must be an int or None, "
                            "got %r" % (seed, ))
        self._env = env
        self._algorithm = algorithm
        self._max_steps = int(max_steps)
        self._generator = tf.random.Generator.from_seed(
            derive_seed(_EVAL_SEED_SALT) if seed is None else seed)
        self._run_fn = (tf.function(self._run, autograph=False)
                        if use_tf_functions else self._run)

    @property
    def generator(self) -> tf.random.Generator:
        """The evaluation's own generator (trainers checkpoint it)."""
        return self._generator

    def run(self) -> Tuple[tf.Tensor, tf.Tensor]:
        """Plays the episodes (from a fresh ``env.reset()``).

        The evaluation's generator is the global one while the episodes run
        (and while the loop is traced, so the compiled loop keeps drawing
        from it): the training run's random numbers are left alone.

        Returns:
            ``(returns, lengths)``: [B] float32 episode returns and [B] int32
            episode lengths (number of transitions).
        """
        with using_global_generator(self._generator):
            return self._run_fn()

    def _run(self):
        alg, env = self._algorithm, self._env
        batch_size = env.batch_size
        time_step = env.reset()
        state = alg.get_initial_predict_state(batch_size)
        returns = tf.zeros([batch_size], tf.float32)
        lengths = tf.zeros([batch_size], tf.int32)
        done = tf.zeros([batch_size], tf.bool)

        def _cond(t, time_step, state, returns, lengths, done):
            return tf.logical_not(tf.reduce_all(done))

        def _body(t, time_step, state, returns, lengths, done):
            state = reset_state_if_necessary(
                state, alg.get_initial_predict_state(batch_size),
                time_step.is_first())
            policy_step = alg.predict(alg.transform_timestep(time_step), state)
            next_time_step = env.step(policy_step.action)
            active = tf.logical_not(done)
            returns += tf.where(active, next_time_step.reward, 0.0)
            lengths += tf.cast(active, tf.int32)
            done = tf.logical_or(done, next_time_step.is_last())
            return t + 1, next_time_step, policy_step.state, returns, lengths, \
                done

        _, _, _, returns, lengths, _ = tf.while_loop(
            _cond, _body,
            (tf.constant(0), time_step, state, returns, lengths, done),
            maximum_iterations=self._max_steps)
        return returns, lengths
