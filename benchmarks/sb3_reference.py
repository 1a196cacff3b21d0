"""Stable-Baselines3 reference timings, for side-by-side comparisons.

Runs SB3's PPO on CartPole-v1 or SAC on Pendulum-v1 with the
rl-baselines3-zoo hyperparameters and prints, per seed, the env steps and
the wall-clock from ``learn()``'s start (and from process start) until the
mean return of the last ``--window`` finished training episodes reaches the
threshold -- the same stopping rule as ``time_to_score.py`` (whose
``AverageReturn`` is the mean of the last 10 training episodes).

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
    parser.add_argument('--algo', choices=sorted(ZOO), required=True)
    parser.add_argument('--seeds', default='0')
    parser.add_argument('--window', type=int, default=10)
    parser.add_argument('--threshold', type=float, default=None)
    args = parser.parse_args()

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
            self.returns = []

        def _on_step(self):
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
              'steps, %.1f s in learn(), %.1f s after process start' %
              (seed, 'reached' if callback.reached_at else 'did NOT reach',
               threshold, args.window, callback.reached_at or
               model.num_timesteps, now - start, now - START), flush=True)
        env.close()


if __name__ == '__main__':
    main()
