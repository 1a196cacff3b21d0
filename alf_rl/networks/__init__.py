"""Networks built from specs (``tf.Module``s with variables created in the
constructor). Each is called as ``net(observation, state=()) -> (output,
state)`` with outer dims [B] or [T, B].

The actor, value and Q networks are an encoder (``EncodingNetwork``, or
``LSTMEncodingNetwork`` for the RNN variants; any ``encoding_network_ctor``)
followed by a head (``EncoderHead``); the encoder's arguments
(``fc_layer_params``, ``activation``, ...) are passed through the head."""

from alf_rl.networks.network import Network
from alf_rl.networks.encoding_network import EncodingNetwork
from alf_rl.networks.encoder_head import EncoderHead
from alf_rl.networks.projection_networks import (CategoricalProjectionNetwork,
                                                 NormalProjectionNetwork)
from alf_rl.networks.actor_distribution_network import ActorDistributionNetwork
from alf_rl.networks.value_network import ValueNetwork
from alf_rl.networks.critic_networks import CriticNetwork, QNetwork
from alf_rl.networks.actor_network import ActorNetwork
from alf_rl.networks.rnn_networks import (ActorDistributionRnnNetwork,
                                          LSTMEncodingNetwork, QRnnNetwork,
                                          ValueRnnNetwork)
from alf_rl.networks.critic_rnn_network import CriticRnnNetwork
from alf_rl.networks.ensemble_network import EnsembleNetwork

__all__ = [
    'Network', 'EncodingNetwork', 'EncoderHead',
    'CategoricalProjectionNetwork',
    'NormalProjectionNetwork', 'ActorDistributionNetwork', 'ValueNetwork',
    'CriticNetwork', 'QNetwork', 'ActorNetwork', 'LSTMEncodingNetwork',
    'ActorDistributionRnnNetwork', 'ValueRnnNetwork', 'QRnnNetwork',
    'CriticRnnNetwork',
    'EnsembleNetwork'
]
