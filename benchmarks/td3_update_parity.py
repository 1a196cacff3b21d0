"""Does alf_rl's TD3 update equal Stable-Baselines3's, from the same weights?

Two steps, two virtual environments (alf_rl's TensorFlow one, and one with
``stable-baselines3`` and torch, e.g. the one ``sb3_reference.py`` uses)::

    python benchmarks/td3_update_parity.py ours --out /tmp/td3.npz
    /tmp/sb3venv/bin/python benchmarks/td3_update_parity.py sb3 \
        --data /tmp/td3.npz

``ours`` parses ``examples/td3_hopper.gin`` (``--gin_file``; no environment
is built, so MuJoCo is not needed) and builds its ``Td3Algorithm`` (its
networks, gamma, tau, learning rate and batch size) for Hopper-v5's spaces
(11 observations, 3 actions in [-1, 1]), draws ``--updates`` random batches
of its batch size (256; a few transitions terminal; ``sb3`` draws the same
ones again from the saved seed), runs one update on each and saves the
initial weights, every network's weights after each update and the settings
it read. ``sb3`` loads the initial weights into SB3's ``TD3`` (those sizes
and settings), runs ``TD3.train`` on the same batches and prints, per
update and network, the norm of the difference of SB3's weights from ours
relative to how far SB3's weights moved from the initial ones. It then runs
the same updates with the actor's step taken before the critics' (alf_rl's
order: its one loss has the actor follow the critic as it was before the
update).

Target policy smoothing is off on both sides (they draw different noise);
Adam's epsilon is ``--epsilon`` on both, or ``--sgd`` makes both plain SGD
(each step is the learning rate times the gradient). Measured (seed 0, 6
updates): with ``--sgd`` alf_rl's critic steps are 0.500 of SB3's (its
critic loss is 0.5 * squared error, SB3's the squared error) and its actor
steps equal SB3's actor-first ones; with Adam and a negligible epsilon
(1e-14) the actor-first updates equal ours to 1e-4 of the change, so the
order is the one difference of the update itself besides the loss scale,
which Adam cancels except against its epsilon (1e-8: the critics then
differ by ~1% after one update).
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

# Hopper-v5's observation and action sizes (building it would need MuJoCo).
OBS, ACT = 11, 3
GIN_FILE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    'examples',
    'td3_hopper.gin',
)
NETWORKS = (
    'actor',
    'critic0',
    'critic1',
    'target_actor',
    'target_critic0',
    'target_critic1',
)


def _batches(num_updates, seed, batch):
    """``num_updates`` random batches of ``batch`` transitions: obs, action,
    reward, next_obs, done."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(num_updates):
        out.append(
            dict(
                obs=rng.normal(size=(batch, OBS)).astype(np.float32),
                action=rng.uniform(-1, 1, size=(batch, ACT)).astype(
                    np.float32
                ),
                reward=rng.normal(1.0, 1.0, size=batch).astype(np.float32),
                next_obs=rng.normal(size=(batch, OBS)).astype(np.float32),
                done=(rng.uniform(size=batch) < 0.05).astype(np.float32),
            )
        )
    return out


def _gin_settings(gin_file):
    """``gin_file`` parsed (its bindings stay in effect for building the
    algorithm); the numbers SB3's side needs."""
    import gin
    from alf_rl.bin.train import parse_gin

    gin.clear_config()
    parse_gin([gin_file], [], '/nonexistent/td3_update_parity')
    q = gin.query_parameter
    lr = q('actor/Adam.learning_rate')
    if q('critic/Adam.learning_rate') != lr:
        raise SystemExit(
            '%s: the actor and critic learning rates differ; '
            'this comparison takes one' % gin_file
        )
    return dict(
        lr=lr,
        batch=q('TrainerConfig.mini_batch_size'),
        gamma=q('Td3Algorithm.gamma'),
        tau=q('Td3Algorithm.tau'),
        actor_layers=list(q('ActorNetwork.fc_layer_params')),
        critic_layers=list(q('critic/CriticNetwork.joint_fc_layer_params')),
    )


def _keras_optimizer(args, lr, tf_keras):
    """Adam with ``--epsilon``, or plain SGD with ``--sgd``."""
    if args.sgd:
        return tf_keras.optimizers.SGD(lr)
    return tf_keras.optimizers.Adam(lr, epsilon=args.epsilon)


def _torch_optimizer(data):
    """SB3 policy arguments for the optimizer ``ours`` used."""
    if bool(data['sgd']):
        import torch

        return dict(optimizer_class=torch.optim.SGD)
    return dict(optimizer_kwargs=dict(eps=float(data['epsilon'])))


def _ours(args):
    """Runs alf_rl's updates; saves weights before and after each."""
    # alf_rl first: importing it keeps TensorFlow's start-up notices quiet.
    from alf_rl.algorithms.td3_algorithm import Td3Algorithm
    from alf_rl.specs import BoundedTensorSpec
    from alf_rl.utils.common import set_random_seed
    import tensorflow as tf
    import tf_keras

    settings = _gin_settings(args.gin_file)
    batch = settings['batch']
    set_random_seed(args.seed)
    # Networks, gamma and tau come from the gin file's bindings.
    alg = Td3Algorithm(
        tf.TensorSpec([OBS], tf.float32),
        BoundedTensorSpec([ACT], tf.float32, -1.0, 1.0),
        actor_optimizer=_keras_optimizer(args, settings['lr'], tf_keras),
        critic_optimizer=_keras_optimizer(args, settings['lr'], tf_keras),
        target_policy_noise=0.0,
    )
    alg.build_optimizers()
    networks = (
        [alg._actor_network]
        + alg._critic_networks
        + [alg._target_actor_network]
        + alg._target_critic_networks
    )
    save_updates(
        args.out,
        tf.function(alg.train, autograph=False),
        lambda: [[v.numpy() for v in n.trainable_variables] for n in networks],
        NETWORKS,
        _batches(args.updates, args.seed, batch),
        updates=args.updates,
        seed=args.seed,
        epsilon=args.epsilon,
        sgd=args.sgd,
        **{'settings/' + key: value for key, value in settings.items()},
    )


def _sb3_td3(data):
    """SB3's TD3 with alf_rl's initial weights loaded."""
    import gymnasium
    import torch
    from stable_baselines3 import TD3
    from stable_baselines3.common.logger import configure

    env = gymnasium.make('Pendulum-v1')  # replaced by the spaces below
    env.observation_space = gymnasium.spaces.Box(
        -np.inf, np.inf, (OBS,), np.float32
    )
    env.action_space = gymnasium.spaces.Box(-1.0, 1.0, (ACT,), np.float32)
    model = TD3(
        'MlpPolicy',
        env,
        learning_rate=float(data['settings/lr']),
        batch_size=int(data['settings/batch']),
        gamma=float(data['settings/gamma']),
        tau=float(data['settings/tau']),
        target_policy_noise=0.0,
        policy_kwargs=dict(
            net_arch=dict(
                pi=[int(n) for n in data['settings/actor_layers']],
                qf=[int(n) for n in data['settings/critic_layers']],
            ),
            **_torch_optimizer(data),
        ),
    )
    model.set_logger(configure(None, []))  # train() records its losses
    modules = dict(
        actor=model.actor.mu,
        critic0=model.critic.qf0,
        critic1=model.critic.qf1,
        target_actor=model.actor_target.mu,
        target_critic0=model.critic_target.qf0,
        target_critic1=model.critic_target.qf1,
    )
    with torch.no_grad():
        for key, param in _sb3_params(modules).items():
            # A 1-D bias is its own transpose.
            param.copy_(torch.from_numpy(data['init/' + key].T.copy()))
    return model, modules


def _sb3_params(modules):
    """``{'<network>/<i>': parameter}`` of SB3's networks in the order of
    alf_rl's variables: each ``Linear``'s weight (the transpose of alf_rl's
    kernel), then its bias."""
    import torch

    params = {}
    for name, module in modules.items():
        linears = [m for m in module if isinstance(m, torch.nn.Linear)]
        for j, lin in enumerate(linears):
            params['%s/%d' % (name, 2 * j)] = lin.weight
            params['%s/%d' % (name, 2 * j + 1)] = lin.bias
    return params


def _sb3_weights(modules):
    """Copies of SB3's weights as alf_rl lays them out (``_sb3_params``)."""
    return {
        key: param.detach().numpy().T.copy()
        for key, param in _sb3_params(modules).items()
    }


def _actor_first_train(model, replay_data):
    """``TD3.train``'s update with the actor stepped before the critics."""
    import torch
    import torch.nn.functional as F

    model._n_updates += 1
    if model._n_updates % model.policy_delay == 0:
        actor_loss = -model.critic.q1_forward(
            replay_data.observations, model.actor(replay_data.observations)
        ).mean()
        model.actor.optimizer.zero_grad()
        actor_loss.backward()
        actor_step = True
    else:
        actor_step = False
    with torch.no_grad():
        next_q = torch.cat(
            model.critic_target(
                replay_data.next_observations,
                model.actor_target(replay_data.next_observations),
            ),
            dim=1,
        )
        next_q, _ = torch.min(next_q, dim=1, keepdim=True)
        target = (
            replay_data.rewards
            + (1 - replay_data.dones) * model.gamma * next_q
        )
    current = model.critic(replay_data.observations, replay_data.actions)
    critic_loss = sum(F.mse_loss(q, target) for q in current)
    model.critic.optimizer.zero_grad()
    critic_loss.backward()
    model.critic.optimizer.step()
    if actor_step:
        model.actor.optimizer.step()
        from stable_baselines3.common.utils import polyak_update

        polyak_update(
            model.critic.parameters(),
            model.critic_target.parameters(),
            model.tau,
        )
        polyak_update(
            model.actor.parameters(),
            model.actor_target.parameters(),
            model.tau,
        )


def _sb3(args):
    """Runs SB3's updates from alf_rl's initial weights and compares."""
    import torch
    from stable_baselines3.common.type_aliases import ReplayBufferSamples

    torch.set_num_threads(1)
    data = dict(np.load(args.data))
    num_updates, seed = int(data['updates']), int(data['seed'])
    batch = int(data['settings/batch'])
    batches = _batches(num_updates, seed, batch)
    for order in ('SB3 (critic, then actor)', 'actor first'):
        model, modules = _sb3_td3(data)
        print('%s:' % order)
        init = _sb3_weights(modules)
        for k, b in enumerate(batches):
            replay_data = ReplayBufferSamples(
                torch.from_numpy(b['obs']),
                torch.from_numpy(b['action']),
                torch.from_numpy(b['next_obs']),
                torch.from_numpy(b['done'][:, None]),
                torch.from_numpy(b['reward'][:, None]),
            )
            if order == 'actor first':
                _actor_first_train(model, replay_data)
            else:
                train_on(model, replay_data, batch)
            theirs = _sb3_weights(modules)
            print(compare_row('SB3', theirs, init, data, k, NETWORKS))


def main():
    parser, ours = make_parser(
        __doc__.split('\n')[0],
        GIN_FILE,
        'the TD3 example whose networks and numbers are compared',
        'SB3',
    )
    ours.add_argument(
        '--epsilon',
        type=float,
        default=1e-8,
        help="Adam's epsilon on both sides",
    )
    ours.add_argument(
        '--sgd',
        action='store_true',
        help='plain SGD on both sides instead of Adam: each step is the '
        "learning rate times the gradient, so the losses' scales show",
    )
    args = parser.parse_args()
    (_ours if args.side == 'ours' else _sb3)(args)


if __name__ == '__main__':
    main()
