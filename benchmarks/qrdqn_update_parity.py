"""Does alf_rl's QR-DQN update on Atari equal sb3-contrib's, from the same
weights?

Two steps, two virtual environments (alf_rl's TensorFlow one, and one with
``sb3-contrib`` and torch, e.g. the one ``sb3_reference.py`` uses)::

    python benchmarks/qrdqn_update_parity.py ours --out /tmp/qrdqn.npz
    /tmp/sb3venv/bin/python benchmarks/qrdqn_update_parity.py sb3 \
        --data /tmp/qrdqn.npz

``ours`` parses ``examples/qrdqn_atari_pong_dqn_schedule.gin``
(``--gin_file``; no environment is built) and builds its ``DqnAlgorithm``
(the Nature CNN and the quantile head, 200 quantiles, κ, gamma, Adam's
learning rate and epsilon, the gradient clipping, the batch size) for
Pong's spaces ([84, 84, 4] uint8 frames, 6 actions), draws ``--updates``
random batches (uint8 noise for frames, rewards in {-1, 0, 1}, a few
terminal transitions; ``sb3`` draws the same ones again from the saved
seed), runs one update on each and saves the initial weights, the online
and target networks' weights after each update and the settings it read.
``sb3`` loads the initial weights into sb3-contrib's ``QRDQN``
(``CnnPolicy``: NatureCNN and a linear quantile layer; the frames channels
first, the convolution kernels, the flattened features' order and the
[quantile, action] output order converted), runs ``QRDQN.train`` on the same
batches and prints, per update and network, the norm of the difference of
sb3-contrib's weights from ours relative to how far its weights moved from
the initial ones: twice, first with torch's Adam as sb3-contrib has it,
then with its epsilon set before each step t to ``eps / sqrt(1 - β2^t)``,
which is the Adam of ``tf_keras`` (both its optimizers add epsilon to
``sqrt(v)`` before the bias correction, torch after it).

Measured (seed 0, 6 updates, the gin file's Adam 1e-4 with epsilon
3.125e-4 and clipping at 10): with tf_keras's epsilon on sb3-contrib's
side the online networks agree to 1e-4 of the change after every update
(also with ``--gin_param DqnAlgorithm.gradient_clipping=1.0``, a clip that
acts on these batches); with torch's Adam as sb3-contrib runs it they differ
by 0.78 of the change after the first update and 0.65 after the sixth, a
difference that fades as ``1 / sqrt(1 - 0.999^t)`` goes to 1 (1.26 at the
1,000th update). Table and reading: ``docs/atari.md``.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from update_parity import (  # noqa: E402
    compare_row,
    make_parser,
    save_updates,
    train_on,
)

# PongNoFrameskip-v4's frames and actions (building it needs no emulator).
FRAME, STACK, ACTIONS = 84, 4, 6
GIN_FILE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    'examples',
    'qrdqn_atari_pong_dqn_schedule.gin',
)
NETWORKS = ('q', 'target')


def _batches(num_updates, seed, batch):
    """``num_updates`` random batches of ``batch`` transitions: obs and
    next_obs [batch, 84, 84, 4] uint8, action, reward, done."""
    rng = np.random.default_rng(seed)
    shape = (batch, FRAME, FRAME, STACK)
    out = []
    for _ in range(num_updates):
        out.append(
            dict(
                obs=rng.integers(0, 256, size=shape, dtype=np.uint8),
                action=rng.integers(0, ACTIONS, size=batch).astype(np.int64),
                reward=rng.integers(-1, 2, size=batch).astype(np.float32),
                next_obs=rng.integers(0, 256, size=shape, dtype=np.uint8),
                done=(rng.uniform(size=batch) < 0.05).astype(np.float32),
            )
        )
    return out


def _gin_settings(gin_file, gin_params=()):
    """``gin_file`` parsed (its bindings stay in effect for building the
    algorithm); the numbers sb3-contrib's side needs."""
    import gin
    from alf_rl.bin.train import parse_gin

    gin.clear_config()
    parse_gin([gin_file], list(gin_params), '/nonexistent/qrdqn_update_parity')
    q = gin.query_parameter

    def query(name, default):
        try:
            return q(name)
        except ValueError:
            return default

    if query('DqnAlgorithm.use_double_q', True):
        raise SystemExit(
            '%s: double Q-learning targets; sb3-contrib QRDQN has plain '
            'ones' % gin_file
        )
    if query('QuantileQNetwork.conv_layer_params', None) != (
        (32, 8, 4),
        (64, 4, 2),
        (64, 3, 1),
    ) or tuple(query('QuantileQNetwork.fc_layer_params', ())) != (512,):
        raise SystemExit(
            "%s: sb3-contrib's CnnPolicy is the Nature CNN (conv "
            '(32, 8, 4), (64, 4, 2), (64, 3, 1), fc (512,)); this file '
            'binds another network' % gin_file
        )
    clip = query('DqnAlgorithm.gradient_clipping', None)
    if clip is not None and not query(
        'DqnAlgorithm.clip_by_global_norm', False
    ):
        raise SystemExit(
            '%s: clipping each gradient alone; sb3-contrib clips their '
            'global norm' % gin_file
        )
    return dict(
        lr=q('LegacyAdam.learning_rate'),
        epsilon=query('LegacyAdam.epsilon', 1e-7),
        batch=q('TrainerConfig.mini_batch_size'),
        gamma=q('DqnAlgorithm.gamma'),
        num_quantiles=q('QuantileValues.num_quantiles'),
        kappa=q('QuantileValues.kappa'),
        max_grad_norm=-1.0 if clip is None else float(clip),
    )


def _ours(args):
    """Runs alf_rl's updates; saves weights before and after each."""
    # alf_rl first: importing it keeps TensorFlow's start-up notices quiet.
    from alf_rl.algorithms.dqn_algorithm import DqnAlgorithm
    from alf_rl.specs import BoundedTensorSpec
    from alf_rl.utils.common import set_random_seed
    import tensorflow as tf

    settings = _gin_settings(args.gin_file, args.gin_param)
    if settings['kappa'] != 1.0:
        raise SystemExit(
            "%s: kappa %r; sb3-contrib's quantile Huber loss has kappa 1"
            % (args.gin_file, settings['kappa'])
        )
    batch = settings['batch']
    set_random_seed(args.seed)
    # The network, loss, gamma, optimizer and clipping: the gin bindings.
    alg = DqnAlgorithm(
        tf.TensorSpec([FRAME, FRAME, STACK], tf.uint8),
        BoundedTensorSpec([], tf.int64, 0, ACTIONS - 1),
    )
    alg.build_optimizers()
    networks = (alg._q_network, alg._target_q_network)

    def weights():
        # The encoder's variables (convolutions, fc), then the head's, as
        # sb3-contrib's layers run (``_sb3_params``).
        return [
            [
                v.numpy()
                for v in sorted(
                    n.trainable_variables,
                    key=lambda v: '/encoder/' not in v.name,
                )
            ]
            for n in networks
        ]

    save_updates(
        args.out,
        tf.function(alg.train, autograph=False),
        weights,
        NETWORKS,
        _batches(args.updates, args.seed, batch),
        updates=args.updates,
        seed=args.seed,
        **{'settings/' + key: value for key, value in settings.items()},
    )


def _to_torch(index, array, num_quantiles):
    """alf_rl's variable ``index`` of the Q network as sb3-contrib lays it
    out: conv kernels [h, w, in, out] -> [out, in, h, w]; the fc kernel's
    rows from (h, w, c) to (c, h, w) order, transposed; the output layer's
    columns from (action, quantile) to (quantile, action), transposed."""
    if array.ndim == 4:
        return array.transpose(3, 2, 0, 1)
    if index == 6:  # the fc kernel [7 * 7 * 64, 512]
        side = int(round(np.sqrt(array.shape[0] // 64)))
        return (
            array.reshape(side, side, 64, -1)
            .transpose(2, 0, 1, 3)
            .reshape(array.shape[0], -1)
            .T
        )
    if index == 8:  # the output kernel [512, A * N]
        rows = array.shape[0]
        return (
            array.reshape(rows, ACTIONS, num_quantiles)
            .transpose(0, 2, 1)
            .reshape(rows, -1)
            .T
        )
    if index == 9:  # the output bias [A * N]
        return array.reshape(ACTIONS, num_quantiles).T.reshape(-1)
    return array.T  # the fc kernel's transpose; a bias is its own


def _from_torch(index, array, num_quantiles):
    """The inverse of ``_to_torch``."""
    if array.ndim == 4:
        return array.transpose(2, 3, 1, 0)
    if index == 6:
        side = int(round(np.sqrt(array.shape[1] // 64)))
        return (
            array.T.reshape(64, side, side, -1)
            .transpose(1, 2, 0, 3)
            .reshape(array.shape[1], -1)
        )
    if index == 8:
        rows = array.shape[1]
        return (
            array.T.reshape(rows, num_quantiles, ACTIONS)
            .transpose(0, 2, 1)
            .reshape(rows, -1)
        )
    if index == 9:
        return array.reshape(num_quantiles, ACTIONS).T.reshape(-1)
    return array.T


def _sb3_params(model):
    """``{'<network>/<i>': parameter}`` of sb3-contrib's online and target
    quantile networks, in the order of alf_rl's variables: the three
    convolutions, NatureCNN's linear layer, the quantile layer (each
    weight, then bias)."""
    params = {}
    for name, net in (
        ('q', model.policy.quantile_net),
        ('target', model.policy.quantile_net_target),
    ):
        extractor = net.features_extractor
        layers = [m for m in extractor.cnn if hasattr(m, 'weight')]
        layers += [extractor.linear[0], net.quantile_net[0]]
        for j, layer in enumerate(layers):
            params['%s/%d' % (name, 2 * j)] = layer.weight
            params['%s/%d' % (name, 2 * j + 1)] = layer.bias
    return params


def _sb3_qrdqn(data):
    """sb3-contrib's QRDQN with alf_rl's initial weights loaded."""
    import gymnasium
    import torch
    from sb3_contrib import QRDQN
    from stable_baselines3.common.logger import configure

    class Frames(gymnasium.Env):
        """Only its spaces are read: frames channels first, as
        sb3-contrib's NatureCNN takes them."""

        observation_space = gymnasium.spaces.Box(
            0, 255, (STACK, FRAME, FRAME), np.uint8
        )
        action_space = gymnasium.spaces.Discrete(ACTIONS)

        def reset(self, *, seed=None, options=None):
            return self.observation_space.sample(), {}

        def step(self, action):
            return self.observation_space.sample(), 0.0, False, False, {}

    clip = float(data['settings/max_grad_norm'])
    num_quantiles = int(data['settings/num_quantiles'])
    model = QRDQN(
        'CnnPolicy',
        Frames(),
        learning_rate=float(data['settings/lr']),
        batch_size=int(data['settings/batch']),
        gamma=float(data['settings/gamma']),
        max_grad_norm=clip if clip > 0 else None,
        buffer_size=1,
        policy_kwargs=dict(
            n_quantiles=num_quantiles,
            optimizer_kwargs=dict(eps=float(data['settings/epsilon'])),
        ),
    )
    model.set_logger(configure(None, []))  # train() records its loss
    with torch.no_grad():
        for key, param in _sb3_params(model).items():
            name, index = key.split('/')
            param.copy_(
                torch.from_numpy(
                    _to_torch(
                        int(index), data['init/' + key], num_quantiles
                    ).copy()
                )
            )
    return model


def _sb3(args):
    """Runs sb3-contrib's updates from alf_rl's initial weights and
    compares."""
    import torch
    from stable_baselines3.common.type_aliases import ReplayBufferSamples

    torch.set_num_threads(1)
    data = dict(np.load(args.data))
    num_updates, seed = int(data['updates']), int(data['seed'])
    batch = int(data['settings/batch'])
    num_quantiles = int(data['settings/num_quantiles'])
    epsilon = float(data['settings/epsilon'])
    batches = _batches(num_updates, seed, batch)

    def weights(model):
        return {
            key: _from_torch(
                int(key.split('/')[1]),
                param.detach().numpy(),
                num_quantiles,
            )
            for key, param in _sb3_params(model).items()
        }

    for adam in ("torch's (sb3-contrib)", "tf_keras's epsilon"):
        model = _sb3_qrdqn(data)
        print("Adam %s:" % adam)
        init = weights(model)
        for k, b in enumerate(batches):
            if adam != "torch's (sb3-contrib)":
                beta2 = model.policy.optimizer.param_groups[0]['betas'][1]
                for group in model.policy.optimizer.param_groups:
                    group['eps'] = epsilon / np.sqrt(1 - beta2 ** (k + 1))
            replay_data = ReplayBufferSamples(
                torch.from_numpy(b['obs'].transpose(0, 3, 1, 2).copy()),
                torch.from_numpy(b['action'][:, None]),
                torch.from_numpy(b['next_obs'].transpose(0, 3, 1, 2).copy()),
                torch.from_numpy(b['done'][:, None]),
                torch.from_numpy(b['reward'][:, None]),
            )
            train_on(model, replay_data, batch)
            theirs = weights(model)
            print(compare_row('sb3-contrib', theirs, init, data, k, NETWORKS))


def main():
    parser, ours = make_parser(
        __doc__.split('\n')[0],
        GIN_FILE,
        'the QR-DQN Atari example whose network and numbers are compared',
        'sb3-contrib',
    )
    ours.add_argument(
        '--gin_param',
        action='append',
        default=[],
        help='a binding after the file, e.g. '
        'DqnAlgorithm.gradient_clipping=1.0 (a clip that acts on these '
        'batches, whose gradient norms are 5-7); repeatable',
    )
    args = parser.parse_args()
    (_ours if args.side == 'ours' else _sb3)(args)


if __name__ == '__main__':
    main()
