"""Tiny algorithms shared by the trainer and fault tests (importable from
any test: pytest puts ``tests/`` on ``sys.path`` for its conftest)."""

import functools

import tf_keras

from alf_rl.algorithms import ActorCriticAlgorithm
from alf_rl.networks import ActorDistributionNetwork, ValueNetwork


def small_actor_critic(
    observation_spec,
    action_spec,
    optimizer=None,
    algorithm_class=ActorCriticAlgorithm,
    fc_layer_params=(8,),
    **kwargs,
):
    """An A2C with (8,) (or ``fc_layer_params``) actor and value networks
    and Adam(1e-3) (or ``optimizer``); ``algorithm_class`` for a subclass
    under test, ``kwargs`` (e.g. ``loss``) passed to it."""
    return algorithm_class(
        observation_spec,
        action_spec,
        actor_network_ctor=functools.partial(
            ActorDistributionNetwork, fc_layer_params=fc_layer_params
        ),
        value_network_ctor=functools.partial(
            ValueNetwork, fc_layer_params=fc_layer_params
        ),
        optimizer=optimizer or tf_keras.optimizers.Adam(1e-3),
        **kwargs,
    )


def training_error_message(trainer):
    """Trains ``trainer`` expecting an ``EnvironmentStepError``, closes it
    and returns the error's message."""
    import pytest

    from alf_rl.trainers.errors import EnvironmentStepError

    try:
        with pytest.raises(EnvironmentStepError) as raised:
            trainer.train()
    finally:
        trainer.close()
    return str(raised.value)
