"""How distinct are a trained DIAYN agent's skills?

Restores a run of an ``Agent`` with a ``SkillGenerator`` and a
``DIAYNAlgorithm`` (e.g. ``examples/sac_diayn_pendulum.gin``) from its
root_dir, plays ``--episodes`` fresh episodes per skill (the skill fixed
for the whole episode, environment seeds not used in training) with the
RL algorithm's ``rollout`` (the stochastic policy, as trained) and with
its ``predict`` (greedy), and prints the discriminator's accuracy on the
states visited (FIRST states left out: they carry no skill information;
chance is 1/K). With ``--svg`` it draws each skill's first greedy episode:
the path of a 2-dimensional observation (``PointMass``), the pendulum's
unwrapped angle over time for 3-dimensional Pendulum observations (cos,
sin, angular velocity), else the first observation dimension over time.

Usage::

    python benchmarks/diayn_skills.py --root_dir ~/runs/diayn0 \
        [--episodes 3] [--svg docs/curves/diayn_pendulum_skills.svg]
"""

import argparse
import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')


def _actor(agent, greedy):
    """A compiled ``(time_step, state, one_hot) -> (transformed time step,
    policy step)`` of the RL algorithm with the skill fixed."""
    import tensorflow as tf

    rl = agent.rl_algorithm
    step_fn = rl.predict if greedy else rl.rollout

    @tf.function
    def act(time_step, state, one_hot):
        time_step = agent.transform_timestep(time_step)
        return time_step, step_fn(time_step._replace(
            observation=(time_step.observation, one_hot)), state)

    return act


def _play(agent, env, act, skill, greedy):
    """[T, ...] observations (transformed) and step types of one episode
    of ``skill``."""
    import tensorflow as tf

    rl = agent.rl_algorithm
    one_hot = tf.one_hot([skill], agent.goal_generator.num_skills)
    time_step = env.reset()
    state = (rl.get_initial_predict_state(1) if greedy else
             rl.get_initial_rollout_state(1))
    observations, step_types = [], []
    while True:
        transformed, step = act(time_step, state, one_hot)
        observations.append(transformed.observation[0].numpy())
        step_types.append(int(time_step.step_type[0]))
        if time_step.is_last()[0]:
            return observations, step_types
        state = step.state
        time_step = env.step(agent.env_action(step.action))


def _curve(observations):
    """(points, x label, y label) of one episode: the path (x, y) of a
    2-dimensional observation (PointMass); the unwrapped angle over time
    of Pendulum's (cos, sin, angular velocity); else observation[0] over
    time."""
    import numpy as np
    obs = np.asarray(observations)
    if obs.shape[1] == 2:
        return [(float(x), float(y)) for x, y in obs], 'x', 'y'
    if obs.shape[1] == 3:
        values, label = (np.unwrap(np.arctan2(obs[:, 1], obs[:, 0])),
                         'angle (rad, unwrapped)')
    else:
        values, label = obs[:, 0], 'observation[0]'
    return [(t, float(v)) for t, v in enumerate(values)], 'step', label


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--root_dir', required=True)
    parser.add_argument('--episodes', type=int, default=3)
    parser.add_argument('--seed', type=int, default=12345)
    parser.add_argument('--svg', default=None)
    args = parser.parse_args()
    from alf_rl.bin.quiet import import_tensorflow
    import_tensorflow()
    import numpy as np
    from alf_rl.algorithms.diayn_algorithm import discriminator_accuracy
    from alf_rl.bin.play import restore_run
    from alf_rl.utils.curves import svg_line_chart

    env, agent = restore_run(os.path.expanduser(args.root_dir),
                             seed=args.seed)
    num_skills = agent.goal_generator.num_skills
    curves = []
    for greedy in (False, True):
        act = _actor(agent, greedy)
        observations, skills = [], []
        for skill in range(num_skills):
            for episode in range(args.episodes):
                obs, step_types = _play(agent, env, act, skill, greedy)
                kept = [o for o, t in zip(obs, step_types) if t != 0]
                observations += kept
                skills += [skill] * len(kept)
                if greedy and episode == 0:
                    curves.append((skill, obs))
        observations = np.asarray(observations, np.float32)
        skills = np.asarray(skills, np.int64)
        module = agent.intrinsic_reward_module
        per_skill = ['%.2f' % float(discriminator_accuracy(
            module, observations[skills == k], skills[skills == k]))
                     for k in range(num_skills)]
        print('%s policy: discriminator accuracy %.3f on %d states of %d '
              'episodes per skill (%d skills, chance %.3f); per skill %s' %
              ('greedy' if greedy else 'stochastic',
               float(discriminator_accuracy(module, observations, skills)),
               len(skills), args.episodes, num_skills, 1.0 / num_skills,
               ' '.join(per_skill)))
    if args.svg:
        series = []
        for skill, obs in curves:
            points, x_label, y_label = _curve(obs)
            series.append(('skill %d' % skill, points))
        with open(args.svg, 'w') as f:
            f.write(svg_line_chart(series, title='DIAYN skills (greedy, one '
                                   'episode each)', x_label=x_label,
                                   y_label=y_label))
        print('wrote %s' % args.svg)


if __name__ == '__main__':
    main()
