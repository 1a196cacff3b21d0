"""Recurrent networks in replay-trained actor-critic methods: one state
stream per call site.

SAC, TD3, DDPG and SARSA call their networks at several places of a step:
the critic at the replayed action, the same critic at the policy's fresh
action (the actor's loss), the target critic at the target action. With a
recurrent network each such call site is a *stream* with a state of its
own (as in ALF's actor-critic methods), advanced by its call once a step.

Some streams also run in ``rollout``: the actor, and the critics at the
action taken; their states are the rollout state, stored with every
replayed step (``use_rollout_state=True``). A replayed sequence starts
each train stream from the stored state of a rollout stream (``starts``:
the target critic and the critic of the actor's loss from the critic's),
as R2D2 starts the target network from the online one's (Kapturowski et
al. 2019); ``burn_in_steps`` rows then refresh them all.

Feed-forward networks have no stream: their calls are unchanged and the
states are ``()``, so a feed-forward algorithm computes what it did
before.
"""

from typing import Any, Callable, Dict, Sequence, Tuple

import tensorflow as tf

from alf_rl.utils.nest import Nest


#: The state kinds: ``'train'`` (every stream), ``'rollout'`` (the
#: rollout streams), ``'predict'`` (the actor's).
KINDS = ('train', 'rollout', 'predict')


def _is_recurrent(network: Any) -> bool:
    return bool(tf.nest.flatten(network.state_spec))


class NetworkStreams(object):
    """The state streams of an algorithm's networks.

    A state is a tuple of the recurrent streams' states in the order of
    ``names(kind)`` (sorted names), or ``()``: tuples, because a
    ``tf.Module`` wraps the dicts assigned to it (its state specs) in
    trackable containers that no longer match plain dicts.

    Args:
        networks: ``{stream: network}`` of every call site (a network may
            serve several streams).
        starts: ``{stream: rollout stream}``: the stored rollout stream
            each stream starts from in training. The rollout streams are
            the values; each is also a stream of ``networks`` (the call
            site that ``rollout`` runs, e.g. the critic at the taken
            action). ``'actor'`` (if any) is the one ``predict`` runs.
    """

    def __init__(self, networks: Dict[str, Any], starts: Dict[str, str]):
        self._networks = {
            k: n for k, n in networks.items() if _is_recurrent(n)
        }
        self._starts = {k: starts[k] for k in self._networks}
        rollout = sorted(set(self._starts.values()))
        self._names = {
            'train': tuple(sorted(self._networks)),
            'rollout': tuple(rollout),
            'predict': tuple(k for k in rollout if k == 'actor'),
        }

    @property
    def recurrent(self) -> bool:
        """Whether any network keeps a state."""
        return bool(self._networks)

    def names(self, kind: str) -> Tuple[str, ...]:
        """The streams of a state of ``kind`` (one of ``KINDS``), in the
        order of its tuple."""
        return self._names[kind]

    def network(self, stream: str) -> Any:
        """The network of a recurrent ``stream``."""
        return self._networks[stream]

    def spec(self, kind: str) -> Nest:
        """The state spec of ``kind``: a tuple of the streams' state specs
        (``names(kind)``), or ``()`` if there are none."""
        return tuple(self._networks[k].state_spec for k in self._names[kind])

    def state_specs(
        self, rollout: Callable[[Nest], Nest] = lambda spec: spec
    ) -> Dict[str, Nest]:
        """The state specs of the algorithm's constructor.

        Args:
            rollout: ``spec('rollout') -> rollout_state_spec`` (e.g. a
                rollout state with other fields).
        Returns:
            ``{'train_state_spec': ..., 'rollout_state_spec': ...,
            'predict_state_spec': ...}``.
        """
        return dict(
            train_state_spec=self.spec('train'),
            rollout_state_spec=rollout(self.spec('rollout')),
            predict_state_spec=self.spec('predict'),
        )

    def start(self, stored: Sequence[Nest]) -> Nest:
        """The train state of a replayed sequence's first row.

        Args:
            stored: the rollout state ([b, ...] leaves) stored with that
                row.
        Returns:
            the train state: each stream's start stream's state.
        """
        rollout = dict(zip(self._names['rollout'], stored))
        return tuple(rollout[self._starts[k]] for k in self._names['train'])

    def step(self, state: Sequence[Nest], kind: str = 'train') -> 'StreamStep':
        """A ``StreamStep`` that advances ``state`` (of ``kind``) through
        one step."""
        return StreamStep(self._networks, self._names[kind], state)


class StreamStep(object):
    """The streams' states through one step: ``step(stream, network)`` is
    ``network`` called with (and advancing) the stream's state; ``state``
    the states afterwards (streams not called keep theirs).

    Args:
        recurrent: ``{stream: network}`` of the recurrent streams.
        names: the streams of ``state``, in its order.
        state: a tuple of states ([B, ...] leaves), or ``()``.
    """

    def __init__(
        self,
        recurrent: Dict[str, Any],
        names: Tuple[str, ...],
        state: Sequence[Nest],
    ):
        self._recurrent = recurrent
        self._names = names
        self._state = dict(zip(names, state))

    def __call__(self, stream: str, network: Any) -> Callable[..., Any]:
        """``network`` bound to ``stream``: called as ``network(inputs,
        **kwargs) -> (output, state)``, the state being the stream's."""
        if stream not in self._recurrent:
            return network

        def call(inputs: Nest, **kwargs: Any) -> Tuple[Any, Nest]:
            output, new_state = network(inputs, self._state[stream], **kwargs)
            self._state[stream] = new_state
            return output, new_state

        return call

    @property
    def state(self) -> Nest:
        """The tuple of states after the calls so far (``()`` if none)."""
        return tuple(self._state[k] for k in self._names)
