"""``EncoderHead``: the base of the networks made of an encoder and a head.

Every actor, value and Q network is an encoder (observation -> feature
[B, D], feed-forward or recurrent) followed by a small head (projections to
distributions, a value, action scaling, Q values). The encoder is built by
an ``encoding_network_ctor``; its arguments (``fc_layer_params``,
``conv_layer_params``, ``activation``, ...) are passed through the head's
``**encoder_kwargs``, so they are declared and documented once, by the
encoder, and a gin line such as ``ValueNetwork.fc_layer_params = (64, 64)``
configures the encoder of that head.
"""

import functools
import inspect
from typing import Any, Callable, Dict, Tuple

import tensorflow as tf

from alf_rl.networks.network import Network
from alf_rl.utils.nest import Nest

# ``ctor(input_tensor_spec, name=..., **kwargs) -> Network`` with an
# ``output_size`` (int D) property; the networks called as
# ``encoder(observation, state) -> ([B, D] or [T, B, D], state)``, e.g.
# ``EncodingNetwork`` (feed-forward) or ``LSTMEncodingNetwork`` (one step).
EncoderCtor = Callable[..., Network]


def _ctor_name(ctor: EncoderCtor) -> str:
    while isinstance(ctor, functools.partial):
        ctor = ctor.func
    return getattr(ctor, '__name__', repr(ctor))


def _check_encoder_kwargs(head: str, ctor: EncoderCtor,
                          encoder_kwargs: Dict[str, Any],
                          head_args: Dict[str, Any]) -> None:
    """Refuses encoder arguments that the head sets or the ctor lacks."""
    clash = sorted(set(encoder_kwargs) & set(head_args))
    if clash:
        raise TypeError(
            "%s: %s is set by the head itself; it cannot be passed to the "
            "encoder" % (head, ', '.join(clash)))
    try:
        params = inspect.signature(ctor).parameters
    except (TypeError, ValueError):  # Builtins and odd callables: no check.
        return
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return
    unknown = sorted(k for k in encoder_kwargs if k not in params)
    if unknown:
        accepted = [
            k for k in params if k not in ('input_tensor_spec', 'name')
            and k not in head_args
        ]
        raise TypeError(
            "%s: encoding_network_ctor %s takes no argument %s; it takes %s" %
            (head, _ctor_name(ctor), ', '.join(unknown),
             ', '.join(accepted)))


class EncoderHead(Network):
    """An encoder, then a head on its feature.

    A subclass's constructor calls ``super().__init__(input_tensor_spec,
    ctor_args, name)`` with ``ctor_args = _ctor_args(locals(),
    'encoder_kwargs')`` taken on its first line, then, inside ``with
    self.name_scope:``, builds ``self._encoder = self._make_encoder(...)``
    first (its variables, named ``<name>/encoder/...``, are created first)
    and its own layers after; it implements ``_head``. The state of the
    network is the encoder's: ``()`` for a feed-forward encoder, the LSTM
    state for ``LSTMEncodingNetwork`` (one step per call).

    Args:
        input_tensor_spec: nest of ``tf.TensorSpec`` of one observation.
        ctor_args: the constructor arguments, for ``copy()``.
        name: module name.
    """

    #: The constructor argument whose callable receives a subclass's
    #: ``**encoder_kwargs`` (gin's binding checks look up an unknown
    #: parameter, e.g. ``ValueNetwork.fc_layer_params``, there).
    kwargs_forwarded_to = 'encoding_network_ctor'

    def __init__(self, input_tensor_spec: Nest, ctor_args: Dict[str, Any],
                 name: str):
        super().__init__(input_tensor_spec, name=name)
        self._set_ctor_args(ctor_args)
        # Set by the subclass through _make_encoder.
        self._encoder: Any = None

    def _make_encoder(self, encoding_network_ctor: EncoderCtor,
                      encoder_kwargs: Dict[str, Any],
                      **head_args: Any) -> Network:
        """Builds the encoder and takes its state spec.

        Args:
            encoding_network_ctor: see ``EncoderCtor``.
            encoder_kwargs: the user's encoder arguments.
            **head_args: arguments the head sets (e.g. ``last_layer_size``
                for an output layer built inside the encoder).

        Returns:
            ``encoding_network_ctor(input_tensor_spec, name='encoder',
            **head_args, **encoder_kwargs)``.

        Raises:
            TypeError: an encoder argument the ctor does not take or the
                head sets, or a ctor that does not return a ``Network``.
        """
        _check_encoder_kwargs(self.name, encoding_network_ctor,
                              encoder_kwargs, head_args)
        encoder = encoding_network_ctor(self.input_tensor_spec,
                                        name='encoder', **head_args,
                                        **encoder_kwargs)
        if not isinstance(encoder, Network):
            raise TypeError(
                "%s: encoding_network_ctor must return an alf_rl Network, "
                "got %s" % (self.name, type(encoder).__name__))
        self._state_spec = encoder.state_spec
        return encoder

    @property
    def encoder(self) -> Network:
        """The encoder network (observation -> [B, D] feature)."""
        return self._encoder

    def _call(self, observation: Nest, state: Nest,
              outer_rank: int) -> Tuple[Any, Nest]:
        """The encoder's feature through the head.

        Returns:
            ``(output, state)``: the head's output with the observation's
            outer dims, and the encoder's new state.
        """
        encoding, state = self._encoder(observation, state)
        return self._head(encoding), state

    def _head(self, encoding: tf.Tensor) -> Any:
        """Maps the encoding [B, D] (or [T, B, D]) to the output."""
        raise NotImplementedError()
