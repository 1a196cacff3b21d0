"""Test setup: quiet TensorFlow, deterministic seeds per test."""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
os.environ.setdefault('SDL_VIDEODRIVER', 'dummy')
os.environ.setdefault('TF_NUM_INTEROP_THREADS', '1')  # as the CLI does
# Ray (the [dist] tests): no token file under ~/.ray, no usage reporting.
os.environ.setdefault('RAY_AUTH_MODE', 'disabled')
os.environ.setdefault('RAY_USAGE_STATS_ENABLED', '0')

import gin  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _clear_gin():
    gin.clear_config()
    yield
    gin.clear_config()


@pytest.fixture
def memory_task_networks():
    """``networks(recurrent) -> (actor_network_ctor, value_network_ctor)``:
    the small LSTM or feed-forward pair the memory-task learning tests
    compare (``RNNPolicyUnittestEnv``)."""
    from alf_rl.networks import (ActorDistributionNetwork,
                                 ActorDistributionRnnNetwork, ValueNetwork,
                                 ValueRnnNetwork)

    def networks(recurrent):
        if recurrent:
            return (lambda o, a: ActorDistributionRnnNetwork(
                o, a, input_fc_layer_params=(32, ), lstm_size=(16, )),
                    lambda o: ValueRnnNetwork(
                        o, input_fc_layer_params=(32, ), lstm_size=(16, )))
        return (lambda o, a: ActorDistributionNetwork(
            o, a, fc_layer_params=(32, )),
                lambda o: ValueNetwork(o, fc_layer_params=(32, )))

    return networks
