"""Structured training errors: what stopped a run, as fields and one line.

Each error is classified by where it was raised, not by its words:

- an environment's Python callback that raised inside a compiled call
  leaves its exception in ``env.last_error`` (``TFPyEnvironment``): that
  exception, not the graph's error text, makes an ``EnvironmentStepError``
  (the asynchronous trainer raises one from an ``ActorFailedError``);
- a non-finite loss fails the in-graph ``check_loss_finite``
  (``alf_rl.utils.loss_checks``), whose message has one declared form that
  the same module reads back (``failed_loss_check``): a
  ``NonFiniteLossError`` with its fields;
- a non-finite gradient fails the update's ``check_update_finite`` (same
  module, read back by ``failed_update_check``): a ``NonFiniteUpdateError``
  (the update was not applied);
- an in-graph environment's ``check_finite`` fails an ``Assert`` of
  ``alf_rl.environments.tf_environment`` (read back by
  ``failed_finite_check``): an ``EnvironmentStepError``.

``training_error_from`` applies these to a failed compiled call; any other
error is not a ``TrainingError`` and propagates as it is. A checkpoint
refused because the model state holds NaN/Inf stops training with a
``NonFiniteModelError`` (raised by ``RunCheckpoints.save``).
"""

from typing import NoReturn, Optional, Tuple

import tensorflow as tf

from alf_rl.environments.tf_environment import failed_finite_check
from alf_rl.utils.loss_checks import failed_loss_check, failed_update_check


class TrainingError(RuntimeError):
    """Training stopped: the run cannot go on.

    ``str(error)`` is one line for the user; the fields say the same for
    code. Subclasses: ``NonFiniteLossError``, ``EnvironmentStepError``.

    Args:
        message: the one-line message.
        iteration: the (1-based) first iteration of the failed call.
        last_iteration: its last iteration (``iteration`` when the call ran
            one).

    Attributes:
        kind: ``'non_finite_loss'``, ``'environment'`` (subclasses) or
            ``'training'``.
        iteration, last_iteration, message: as given (``message`` then
            ends with the trainer's checkpoint note).
        checkpoint: the prefix of the checkpoint the trainer wrote (or
            found current) before raising, or None when it wrote none (the
            message says why).
    """

    kind = 'training'

    def __init__(self, message: str, iteration: int,
                 last_iteration: Optional[int] = None):
        super().__init__(message)
        self.message = message
        self.iteration = int(iteration)
        self.last_iteration = int(iteration if last_iteration is None else
                                  last_iteration)
        self.checkpoint = None

    def add_checkpoint_note(self, note: str,
                            checkpoint: Optional[str] = None) -> None:
        """Appends what the trainer checkpointed (or why it did not) to the
        one-line message.

        Args:
            note: one sentence, e.g. ``'A checkpoint was written at
                iteration 12 (...)'``.
            checkpoint: the checkpoint prefix written, or None.
        """
        end = '' if self.message.rstrip().endswith('.') else '.'
        self.message = '%s%s %s' % (self.message.rstrip(), end, note)
        self.args = (self.message, )
        self.checkpoint = checkpoint


class NonFiniteLossError(TrainingError):
    """A loss was NaN or Inf (``tf.debugging.check_numerics`` fired).

    When ``update_applied`` is False the model is as the previous iteration
    left it, and the trainer checkpoints it before raising.

    Args:
        message: see ``TrainingError``.
        iteration: see ``TrainingError``.
        last_iteration: see ``TrainingError``.
        loss_name: the algorithm's ``name`` the check names (e.g.
            ``'PPOAlgorithm'``).
        components: the loss components the check names (paths such as
            ``'loss.pg_loss'``); ``()`` for the XLA checks, which see only
            the total.
        value: ``'NaN'`` or ``'Inf'``.
        update_applied: True when the check ran after an XLA-compiled
            update or iteration (XLA drops ``CheckNumerics``), so the
            update with the bad loss was already applied.
        detail: the check's message line, as TensorFlow reported it.
    """

    kind = 'non_finite_loss'

    def __init__(self, message: str, iteration: int,
                 last_iteration: Optional[int], loss_name: str,
                 components: Tuple[str, ...], value: Optional[str],
                 update_applied: bool, detail: str):
        super().__init__(message, iteration, last_iteration)
        self.loss_name = loss_name
        self.components = tuple(components)
        self.value = value
        self.update_applied = bool(update_applied)
        self.detail = detail


class NonFiniteUpdateError(TrainingError):
    """An update's gradient held NaN or Inf; the update was not applied.

    Args:
        message: see ``TrainingError``.
        iteration: see ``TrainingError``.
        last_iteration: see ``TrainingError``.
        owner: the algorithm's ``name``.
        variable: the variable whose gradient was not finite (the first).
    """

    kind = 'non_finite_update'

    def __init__(self, message: str, iteration: int,
                 last_iteration: Optional[int], owner: str, variable: str):
        super().__init__(message, iteration, last_iteration)
        self.owner = owner
        self.variable = variable


class NonFiniteModelError(TrainingError):
    """The model state (a variable, an optimizer slot, the replay buffer)
    holds NaN or Inf, found before a checkpoint: none was written.

    Args:
        message: see ``TrainingError``.
        iteration: see ``TrainingError``.
        variable: the variable named.
    """

    kind = 'non_finite_state'

    def __init__(self, message: str, iteration: int, variable: str):
        super().__init__(message, iteration)
        self.variable = variable


class EnvironmentStepError(TrainingError):
    """The environment's Python callback raised inside a compiled call.

    Args:
        message: see ``TrainingError``.
        iteration: see ``TrainingError``.
        last_iteration: see ``TrainingError``.
        env_error: the exception the environment raised (also the
            ``__cause__``), e.g. a ``ValueError`` naming an action outside
            ``action_spec``.
    """

    kind = 'environment'

    def __init__(self, message: str, iteration: int,
                 last_iteration: Optional[int], env_error: BaseException):
        super().__init__(message, iteration, last_iteration)
        self.env_error = env_error


def training_error_from(error: tf.errors.OpError, iteration: int,
                        num_iterations: int = 1,
                        env_error: Optional[BaseException] = None
                        ) -> Optional[TrainingError]:
    """The structured ``TrainingError`` for a failed training call.

    Args:
        error: what the compiled call raised.
        iteration: the (1-based) first iteration of the call.
        num_iterations: how many iterations the call was to run.
        env_error: the environment's ``last_error`` (the Python exception
            behind ``error`` when its callback raised), or None.

    Returns:
        An ``EnvironmentStepError`` when ``env_error`` is set or an
        in-graph environment's finiteness check failed, a
        ``NonFiniteLossError`` when ``error`` is a loss check's failure, a
        ``NonFiniteUpdateError`` for an update check's, else ``None`` (the
        caller re-raises ``error``).
    """
    last = iteration + num_iterations - 1
    where = ("at iteration %d" % iteration if num_iterations == 1 else
             "in iterations %d-%d" % (iteration, last))
    if env_error is None:
        env_error = failed_finite_check(error)
    if env_error is not None:
        return EnvironmentStepError(
            "training stopped %s: %s" % (where, env_error), iteration, last,
            env_error)
    update = failed_update_check(error)
    if update is not None:
        return NonFiniteUpdateError(
            "training stopped %s: %s." % (where, update.detail), iteration,
            last, owner=update.owner, variable=update.variable)
    check = failed_loss_check(error)
    if check is None:
        return None
    applied = ("the XLA-compiled update was already applied"
               if check.update_applied else "no update was applied")
    return NonFiniteLossError(
        "training stopped %s: non-finite loss (%s); %s." %
        (where, check.detail[:500], applied), iteration, last,
        loss_name=check.owner, components=check.components,
        value=check.value, update_applied=check.update_applied,
        detail=check.detail)


def raise_training_error(error: tf.errors.OpError, iteration: int,
                         num_iterations: int = 1,
                         env_error: Optional[BaseException] = None
                         ) -> NoReturn:
    """Raises ``training_error_from(...)`` (from the environment's error or
    ``error``), or ``error`` itself when it is no ``TrainingError``.

    Args:
        error: see ``training_error_from``.
        iteration: see ``training_error_from``.
        num_iterations: see ``training_error_from``.
        env_error: see ``training_error_from``.

    Raises:
        TrainingError: a ``NonFiniteLossError`` or an
            ``EnvironmentStepError``.
        tf.errors.OpError: ``error``, when it is neither.
    """
    training_error = training_error_from(error, iteration, num_iterations,
                                         env_error)
    if training_error is None:
        raise error
    cause = (training_error.env_error
             if isinstance(training_error, EnvironmentStepError) else error)
    raise training_error from cause
