"""What ``td3_update_parity.py`` and ``qrdqn_update_parity.py`` share.

Both run alf_rl's update on random one-step transitions and save every
network's weights before and after each update (``save_updates``, in
alf_rl's virtual environment), then load the initial weights into the
PyTorch reference, run its update on the same transitions and print how far
its weights end from ours (``compare_row``, in the reference's virtual
environment: nothing here imports TensorFlow at module level).
"""

import argparse
from typing import Any, Callable, Dict, Iterable, List, Sequence, Tuple

import numpy as np


def one_step_experience(transitions: Dict[str, np.ndarray]) -> Any:
    """alf_rl's ``Experience`` of B one-step transitions: [2, B, ...],
    row 0 the step taken, row 1 the next one (LAST where ``done``).

    Args:
        transitions: ``obs`` and ``next_obs`` [B, ...], ``action`` [B, ...],
            ``reward`` [B] and ``done`` [B] (1.0 where terminal) arrays.
    Returns:
        ``Experience`` of [2, B, ...] tensors.
    """
    import tensorflow as tf
    from alf_rl.data_structures import Experience, StepType

    done = transitions['done']
    batch = len(done)
    last = np.where(done > 0, StepType.LAST, StepType.MID)
    action = tf.constant(
        np.stack([transitions['action'], np.zeros_like(transitions['action'])])
    )
    return Experience(
        step_type=tf.constant(
            np.stack([np.full(batch, StepType.MID), last]).astype(np.int32)
        ),
        reward=tf.constant(
            np.stack([np.zeros(batch), transitions['reward']]), tf.float32
        ),
        discount=tf.constant(
            np.stack([np.ones(batch), 1.0 - done]), tf.float32
        ),
        observation=tf.constant(
            np.stack([transitions['obs'], transitions['next_obs']])
        ),
        prev_action=tf.zeros_like(action),
        env_id=tf.zeros([2, batch], tf.int32),
        action=action,
        rollout_info=(),
        state=(),
    )


def save_updates(
    out: str,
    train: Callable[[Any], Any],
    weights: Callable[[], List[List[np.ndarray]]],
    names: Sequence[str],
    batches: Iterable[Dict[str, np.ndarray]],
    **fields: Any,
) -> None:
    """Runs ``train`` on each batch; saves the weights before and after
    each update as ``init/<name>/<i>`` and ``update<k>/<name>/<i>`` in the
    npz ``out``, with ``fields`` beside them.

    Args:
        out: the npz file written.
        train: alf_rl's update of one ``Experience`` (``one_step_experience``).
        weights: the networks' variables now, a list of arrays per name.
        names: the networks' names, in ``weights``' order.
        batches: the transitions of each update.
        **fields: saved as they are (the seed, the settings, ...).
    """
    saved = {}

    def save(prefix):
        for name, arrays in zip(names, weights()):
            for i, array in enumerate(arrays):
                saved['%s/%s/%d' % (prefix, name, i)] = array

    save('init')
    updates = 0
    for k, transitions in enumerate(batches):
        train(one_step_experience(transitions))
        save('update%d' % k)
        updates += 1
    np.savez(out, **fields, **saved)
    print('wrote %s (%d updates)' % (out, updates))


def train_on(model: Any, samples: Any, batch_size: int) -> None:
    """One update of a Stable-Baselines3 (or sb3-contrib) off-policy
    ``model`` on the given ``samples``: its ``train`` samples them instead
    of its replay buffer.

    Args:
        model: e.g. ``TD3`` or ``QRDQN``.
        samples: a ``ReplayBufferSamples`` of ``batch_size`` transitions.
        batch_size: their number.
    """
    model.replay_buffer.sample = lambda *args, **kwargs: samples
    model.train(gradient_steps=1, batch_size=batch_size)


def norm(arrays: Iterable[np.ndarray]) -> float:
    """The Euclidean norm of arrays taken together."""
    return float(np.sqrt(sum(np.sum(np.square(a)) for a in arrays)))


def compare_row(
    reference: str,
    theirs: Dict[str, np.ndarray],
    init: Dict[str, np.ndarray],
    data: Dict[str, np.ndarray],
    update: int,
    names: Sequence[str],
) -> str:
    """Per network, ``|theirs - ours| / |theirs - initial|`` after update
    ``update`` (0-based): ``'  update 1: |SB3 - ours| / |SB3 - initial|:
    actor 0.0123, ...'``.

    Args:
        reference: the reference's name in the line.
        theirs: the reference's weights now, ``{'<name>/<i>': array}`` in
            alf_rl's layout.
        init: the reference's initial weights, the same keys.
        data: the npz of ``save_updates``.
        update: which update's saved weights are ours.
        names: the networks compared.
    Returns:
        The line; an unchanged network shows the difference itself.
    """
    row = []
    for name in names:
        keys = [key for key in theirs if key.startswith(name + '/')]
        diff = norm(
            theirs[key] - data['update%d/%s' % (update, key)] for key in keys
        )
        change = norm(theirs[key] - init[key] for key in keys)
        row.append(
            '%s %.4f' % (name, diff / change)
            if change > 0
            else '%s %.1e (unchanged)' % (name, diff)
        )
    return '  update %d: |%s - ours| / |%s - initial|: %s' % (
        update + 1,
        reference,
        reference,
        ', '.join(row),
    )


def make_parser(
    description: str, gin_file: str, gin_help: str, reference: str
) -> Tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The scripts' command line: ``ours`` (``--out``, ``--updates``,
    ``--seed``, ``--gin_file``) and ``sb3`` (``--data``).

    Args:
        description: the script's one-line description.
        gin_file: ``--gin_file``'s default.
        gin_help: ``--gin_file``'s help.
        reference: the reference library's name, for ``sb3``'s help.
    Returns:
        ``(parser, ours)``: ``ours`` takes the script's own options.
    """
    parser = argparse.ArgumentParser(description=description)
    sub = parser.add_subparsers(dest='side', required=True)
    ours = sub.add_parser('ours', help="alf_rl's updates (this venv)")
    ours.add_argument('--out', required=True)
    ours.add_argument('--updates', type=int, default=6)
    ours.add_argument('--seed', type=int, default=0)
    ours.add_argument('--gin_file', default=gin_file, help=gin_help)
    sb3 = sub.add_parser(
        'sb3', help="%s's updates (a venv with it)" % reference
    )
    sb3.add_argument('--data', required=True)
    return parser, ours
