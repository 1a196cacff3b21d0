"""Stable-Baselines3 reference timings, for side-by-side comparisons.

Runs SB3's PPO on CartPole-v1 or SAC on Pendulum-v1 with the
rl-baselines3-zoo hyperparameters and prints, per seed, the env steps and
the wall-clock from ``learn()``'s start (and from process start) until the
mean return of the last ``--window`` finished training episodes reaches the
threshold, and when its first update was done (seconds from process start:
compare with the end of ``alf-train``'s first iteration, which
``benchmarks/startup.py`` prints) -- the same stopping rule as
``time_to_score.py`` (whose ``AverageReturn`` is the mean of the last 10
training episodes).

``--algo ppo_hopper --budget N --seeds S`` trains SB3's PPO with the zoo's
Hopper settings (``VecNormalize`` with gamma 0.999) and prints, every 50k
env steps, the mean return and length of the last 10 training episodes: a
reference curve for ``examples/ppo_hopper.gin`` on this machine.

``--algo ppo_atari`` measures throughput instead: SB3's PPO ``CnnPolicy``
with the zoo's Atari settings on ``--env`` (PongNoFrameskip-v4) in 8
``SubprocVecEnv`` processes (``make_atari_env`` + ``VecFrameStack(4)``),
for ``--budget`` env steps; it prints the env steps per second from the
end of the first rollout/update to the end (compile- and start-up-free),
as ``benchmarks/atari_throughput.py`` prints for alf_rl.

``--algo td3_mujoco --env Hopper-v5 --budget 1000000 --seeds S --save_dir
DIR`` trains SB3's TD3 with the zoo's MuJoCo settings (the ones
``examples/td3_hopper.gin`` copies) and evaluates it as ``alf-train`` does:
10 deterministic episodes every 10k env steps, on an environment of its
own. It prints each evaluation and appends it to ``DIR/seed<S>/eval.jsonl``
(``{"env_steps", "return", "wall_s"}``); every 50k env steps it saves the
model and its replay buffer there, and a rerun of the same command resumes
from them (training episodes restart, as in ``alf-train``): the reference
curve, under this library's protocol and task version, that a shortfall
against the zoo's published number is measured against. Two of alf_rl's
choices can be tried on SB3's side: ``--init alf`` (its initialization)
and ``--adam_eps 1e-7`` (tf_keras's Adam epsilon); both only apply to a
new run (a resumed one keeps its weights and optimizer).

``--algo qrdqn_atari`` (or ``dqn_atari``) likewise for sb3-contrib's QR-DQN
(SB3's DQN) ``CnnPolicy`` with the zoo's Atari settings (their defaults:
one environment, an update of 32 every 4 env steps, ``optimize_memory_usage``)
except a ``--buffer`` of 100,000 transitions and ``--learning_starts``
1,000, so that a short run measures updates: env steps per second and per
CPU-second (``time.process_time()``, all threads) from ``--warmup`` env
steps to the end.

SB3 needs PyTorch, which is never an alf_rl dependency: run this script from
a separate virtual environment, e.g.::

    python3.11 -m venv /tmp/sb3venv
    /tmp/sb3venv/bin/pip install stable-baselines3 gymnasium
    /tmp/sb3venv/bin/python benchmarks/sb3_reference.py --algo ppo \
        --seeds 0,1,2,3,4
"""

import argparse
import time

START = time.time()

# rl-baselines3-zoo hyperparameters (hyperparams/ppo.yml, sac.yml).
ZOO = {
    'ppo': dict(env='CartPole-v1', n_envs=8, threshold=475.0,
                budget=100000),
    'sac': dict(env='Pendulum-v1', n_envs=1, threshold=-200.0,
                budget=20000),
}


def _linear(initial):
    return lambda progress_remaining: progress_remaining * initial


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--algo',
                        choices=sorted(ZOO) + ['ppo_atari', 'ppo_hopper',
                                               'qrdqn_atari', 'dqn_atari',
                                               'td3_mujoco'],
                        required=True)
    parser.add_argument('--buffer', type=int, default=100000)
    parser.add_argument('--learning_starts', type=int, default=1000)
    parser.add_argument('--warmup', type=int, default=2000)
    parser.add_argument('--env', default='PongNoFrameskip-v4')
    parser.add_argument('--budget', type=int, default=40960)
    parser.add_argument('--seeds', default='0')
    parser.add_argument('--window', type=int, default=10)
    parser.add_argument('--threshold', type=float, default=None)
    parser.add_argument('--save_dir', default=None)
    parser.add_argument('--init', choices=['sb3', 'alf'], default='sb3',
                        help="td3_mujoco: the networks' initialization "
                        "('alf': alf_rl's, see _alf_init)")
    parser.add_argument('--adam_eps', type=float, default=1e-8,
                        help="td3_mujoco: Adam's epsilon (PyTorch's 1e-8; "
                        "tf_keras's is 1e-7)")
    args = parser.parse_args()

    if args.algo == 'ppo_atari':
        return _atari_throughput(args)
    if args.algo == 'ppo_hopper':
        return _hopper_curve(args)
    if args.algo in ('qrdqn_atari', 'dqn_atari'):
        return _replay_atari_throughput(args)
    if args.algo == 'td3_mujoco':
        for seed in [int(s) for s in args.seeds.split(',')]:
            _td3_curve(args, seed)
        return None
    import numpy as np
    import torch
    from stable_baselines3 import PPO, SAC
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    imported = time.time() - START
    zoo = ZOO[args.algo]
    threshold = (zoo['threshold']
                 if args.threshold is None else args.threshold)

    class _StopAtScore(BaseCallback):

        def __init__(self):
            super().__init__()
            self.reached_at = None
            self.first_update_at = None  # seconds after process start
            self.returns = []

        def _on_step(self):
            if self.first_update_at is None and self.model._n_updates > 0:
                self.first_update_at = time.time() - START
            for info in self.locals.get('infos', []):
                if 'episode' in info:
                    self.returns.append(info['episode']['r'])
            recent = self.returns[-args.window:]
            if (len(recent) == args.window
                    and np.mean(recent) >= threshold):
                self.reached_at = self.num_timesteps
                return False
            return True

    print('SB3 imports %.1f s, torch threads %d' %
          (imported, torch.get_num_threads()), flush=True)
    for seed in [int(s) for s in args.seeds.split(',')]:
        env = make_vec_env(zoo['env'], n_envs=zoo['n_envs'], seed=seed)
        if args.algo == 'ppo':
            model = PPO('MlpPolicy', env, n_steps=32, batch_size=256,
                        gae_lambda=0.8, gamma=0.98, n_epochs=20,
                        ent_coef=0.0, learning_rate=_linear(1e-3),
                        clip_range=_linear(0.2), seed=seed, verbose=0)
        else:
            model = SAC('MlpPolicy', env, learning_rate=1e-3, seed=seed,
                        verbose=0)
        callback = _StopAtScore()
        start = time.time()
        model.learn(zoo['budget'], callback=callback)
        now = time.time()
        print('seed %d: %s %g (mean of last %d episodes) after %s env '
              'steps, %.1f s in learn(), %.1f s after process start; first '
              'update done %.1f s after process start' %
              (seed, 'reached' if callback.reached_at else 'did NOT reach',
               threshold, args.window, callback.reached_at or
               model.num_timesteps, now - start, now - START,
               callback.first_update_at or float('nan')), flush=True)
        env.close()


def _hopper_curve(args):
    """SB3's PPO on Hopper-v5 with rl-baselines3-zoo's settings: prints
    the training curve every 50k env steps."""
    import numpy as np
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    class _Curve(BaseCallback):

        def __init__(self):
            super().__init__()
            self.episodes = []
            self.next_report = 50000

        def _on_step(self):
            for info in self.locals.get('infos', []):
                if 'episode' in info:
                    self.episodes.append((info['episode']['r'],
                                          info['episode']['l']))
            if self.num_timesteps >= self.next_report and self.episodes:
                last = np.array(self.episodes[-10:])
                print('%d env steps, %.0f s: return %.1f, length %.0f' %
                      (self.num_timesteps, time.time() - START,
                       last[:, 0].mean(), last[:, 1].mean()), flush=True)
                self.next_report += 50000
            return True

    for seed in [int(s) for s in args.seeds.split(',')]:
        env = VecNormalize(make_vec_env('Hopper-v5', n_envs=1, seed=seed),
                           gamma=0.999)
        model = PPO('MlpPolicy', env, batch_size=32, n_steps=512,
                    gamma=0.999, learning_rate=9.80828e-05,
                    ent_coef=0.00229519, clip_range=0.2, n_epochs=5,
                    gae_lambda=0.99, max_grad_norm=0.7, vf_coef=0.835671,
                    policy_kwargs=dict(log_std_init=-2, ortho_init=False,
                                       activation_fn=torch.nn.ReLU,
                                       net_arch=dict(pi=[256, 256],
                                                     vf=[256, 256])),
                    seed=seed, verbose=0)
        print('seed %d' % seed, flush=True)
        model.learn(args.budget, callback=_Curve())
        env.close()


def _atari_throughput(args):
    """Env steps/s of SB3's PPO CnnPolicy (zoo Atari settings, 8 envs in
    subprocesses) after its first rollout and update."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.vec_env import (SubprocVecEnv,
                                                  VecFrameStack)

    class _Clock(BaseCallback):
        """(time, env steps) at the start of every rollout."""

        def __init__(self):
            super().__init__()
            self.marks = []

        def _on_rollout_start(self):
            self.marks.append((time.time(), self.num_timesteps))

        def _on_step(self):
            return True

    print('SB3 imports %.1f s, torch threads %d' %
          (time.time() - START, torch.get_num_threads()), flush=True)
    import ale_py
    import gymnasium
    gymnasium.register_envs(ale_py)  # forked workers inherit the ids
    env = VecFrameStack(make_atari_env(
        args.env, n_envs=8, seed=0, vec_env_cls=SubprocVecEnv,
        vec_env_kwargs=dict(start_method='fork')), 4)
    model = PPO('CnnPolicy', env, n_steps=128, n_epochs=4, batch_size=256,
                learning_rate=_linear(2.5e-4), clip_range=_linear(0.1),
                vf_coef=0.5, ent_coef=0.01, seed=0, verbose=0)
    clock = _Clock()
    model.learn(args.budget, callback=clock)
    end = (time.time(), model.num_timesteps)
    (t0, s0) = clock.marks[1]
    print('SB3 PPO CnnPolicy %s, 8 SubprocVecEnv: %d env steps in %.1f s '
          'after the first iteration: %.1f env steps/s' %
          (args.env, end[1] - s0, end[0] - t0,
           (end[1] - s0) / (end[0] - t0)), flush=True)
    env.close()


def _replay_atari_throughput(args):
    """Env steps per second and per CPU-second of sb3-contrib's QR-DQN or
    SB3's DQN ``CnnPolicy`` (zoo Atari settings) from ``--warmup`` env
    steps to ``--budget``."""
    import torch
    from stable_baselines3 import DQN
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.vec_env import VecFrameStack

    class _Mark(BaseCallback):
        """(wall, CPU) seconds when ``--warmup`` env steps were reached."""

        def __init__(self):
            super().__init__()
            self.mark = None

        def _on_step(self):
            if self.mark is None and self.num_timesteps >= args.warmup:
                self.mark = (time.time(), time.process_time(),
                             self.num_timesteps)
            return True

    print('SB3 imports %.1f s, torch threads %d' %
          (time.time() - START, torch.get_num_threads()), flush=True)
    import ale_py
    import gymnasium
    gymnasium.register_envs(ale_py)
    env = VecFrameStack(make_atari_env(args.env, n_envs=1, seed=0), 4)
    settings = dict(buffer_size=args.buffer,
                    learning_starts=args.learning_starts,
                    optimize_memory_usage=True,
                    replay_buffer_kwargs=dict(
                        handle_timeout_termination=False),
                    seed=0, verbose=0)
    if args.algo == 'qrdqn_atari':
        from sb3_contrib import QRDQN
        model = QRDQN('CnnPolicy', env, **settings)
    else:
        model = DQN('CnnPolicy', env, **settings)
    mark = _Mark()
    model.learn(args.budget, callback=mark)
    wall, cpu = time.time() - mark.mark[0], time.process_time() - mark.mark[1]
    n = model.num_timesteps - mark.mark[2]
    print('SB3 %s CnnPolicy %s, 1 env: %d env steps in %.1f s (%.1f CPU s) '
          'from %d env steps: %.1f env steps/s, %.1f per CPU-second' %
          (args.algo.split('_')[0], args.env, n, wall, cpu, mark.mark[2],
           n / wall, n / cpu), flush=True)
    env.close()


def _alf_init(model):
    """Initializes a TD3 model's networks as alf_rl's ``ActorNetwork`` and
    ``CriticNetwork`` are: Glorot-uniform kernels, zero biases, the actor's
    output layer uniform within +-0.003; the targets copied from them."""
    import torch
    with torch.no_grad():
        for net in [model.actor.mu] + list(model.critic.q_networks):
            linears = [m for m in net if isinstance(m, torch.nn.Linear)]
            for lin in linears:
                torch.nn.init.xavier_uniform_(lin.weight)
                torch.nn.init.zeros_(lin.bias)
            if net is model.actor.mu:
                torch.nn.init.uniform_(linears[-1].weight, -0.003, 0.003)
    model.actor_target.load_state_dict(model.actor.state_dict())
    model.critic_target.load_state_dict(model.critic.state_dict())


def _td3_curve(args, seed):
    """SB3's TD3 (zoo MuJoCo settings) on ``--env``, evaluated every 10k env
    steps, saved and resumable (see the module docstring)."""
    import json
    import os

    import gymnasium
    import numpy as np
    import torch
    from stable_baselines3 import TD3
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.noise import NormalActionNoise

    torch.set_num_threads(1)  # one core, as each alf-train run here
    run_dir = os.path.join(args.save_dir, 'seed%d' % seed)
    os.makedirs(run_dir, exist_ok=True)
    model_path = os.path.join(run_dir, 'model.zip')
    replay_path = os.path.join(run_dir, 'replay.pkl')
    env = gymnasium.make(args.env)
    eval_env = gymnasium.make(args.env)
    eval_env.reset(seed=seed + 1000)
    actions = env.action_space.shape[-1]
    if os.path.exists(model_path) and os.path.exists(replay_path):
        model = TD3.load(model_path, env=env)
        model.load_replay_buffer(replay_path)
        print('seed %d: resumed at %d env steps' %
              (seed, model.num_timesteps), flush=True)
    else:
        model = TD3('MlpPolicy', env, learning_rate=1e-3,
                    buffer_size=1000000, learning_starts=10000,
                    batch_size=256, train_freq=1, gradient_steps=1,
                    action_noise=NormalActionNoise(np.zeros(actions),
                                                   0.1 * np.ones(actions)),
                    policy_kwargs=dict(
                        net_arch=[400, 300],
                        optimizer_kwargs=dict(eps=args.adam_eps)),
                    seed=seed, verbose=0)
        if args.init == 'alf':
            _alf_init(model)

    def evaluate():
        returns = []
        for _ in range(10):
            obs, _ = eval_env.reset()
            done, total = False, 0.0
            while not done:
                action, _ = model.predict(obs, deterministic=True)
                obs, reward, terminated, truncated, _ = eval_env.step(action)
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
        return float(np.mean(returns))

    class _Curve(BaseCallback):

        def _on_step(self):
            steps = self.num_timesteps
            if steps % 10000 == 0:
                record = {'env_steps': steps, 'return': evaluate(),
                          'wall_s': time.time() - START}
                with open(os.path.join(run_dir, 'eval.jsonl'), 'a') as f:
                    f.write(json.dumps(record) + '\n')
                print('seed %d: %d env steps, %.0f s: eval %.1f' %
                      (seed, steps, record['wall_s'], record['return']),
                      flush=True)
            if steps % 50000 == 0:
                model.save(model_path + '.tmp.zip')
                model.save_replay_buffer(replay_path + '.tmp.pkl')
                os.replace(replay_path + '.tmp.pkl', replay_path)
                os.replace(model_path + '.tmp.zip', model_path)
            return True

    left = args.budget - model.num_timesteps
    if left > 0:
        model.learn(left, callback=_Curve(), reset_num_timesteps=False)
    env.close()
    eval_env.close()


if __name__ == '__main__':
    main()
