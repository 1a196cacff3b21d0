"""``SyncOffPolicyDriver``: collects experience into a replayer in a graph.

``run(num_steps)`` steps all environments ``num_steps`` times with
``algorithm.rollout`` inside one compiled ``tf.while_loop`` (no tape); each
step's ``Experience`` goes to the replayer through an experience observer.
Training is separate (``OffPolicyAlgorithm.train`` on replayed batches,
driven by ``OffPolicyTrainer``).
"""

from alf_rl.drivers.driver import Driver


class SyncOffPolicyDriver(Driver):
    """Synchronous collection for off-policy training.

    Args:
        env: a batched ``TFEnvironment``.
        algorithm: an algorithm with ``prepare_off_policy_specs`` (an
            ``OffPolicyAlgorithm``, or an ``OnPolicyAlgorithm`` trained from
            replay).
        replayer: an experience replayer (``observe(experience)``), e.g.
            ``SyncUniformExperienceReplayer`` built from
            ``algorithm.prepare_off_policy_specs(B)``.
        metrics: in-graph metrics (default: the standard four).
        observers: extra ``observer(time_step)`` callables.
        use_tf_functions: compile the collection loop.
    """

    def __init__(self, env, algorithm, replayer, metrics=None, observers=(),
                 use_tf_functions=True):
        super().__init__(env,
                         algorithm,
                         metrics=metrics,
                         observers=observers,
                         exp_observers=[replayer.observe],
                         use_tf_functions=use_tf_functions)
        self._replayer = replayer

    @property
    def replayer(self):
        """The replayer experience goes to."""
        return self._replayer

    def run(self, num_steps):
        """Collects ``num_steps`` batched steps (``num_steps * B`` env steps).

        Args:
            num_steps: steps per environment.
        """
        self.rollout(num_steps)
