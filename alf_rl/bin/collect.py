r"""Records a trained run's policy episodes as an offline dataset.

Usage::

    alf-collect --root_dir RUN --episodes N --out DATASET
                [--epsilon E | --noise S | --random]
                [--reference_episodes K]
    alf-collect --root_dir RUN --from_replay --out DATASET
                [--random_return R --expert_return R]

Loads ``RUN/config.gin`` and the newest checkpoint in ``RUN/ckpt`` (as
``alf-play`` does), plays ``--episodes`` episodes with the greedy policy
(perturbed by ``--epsilon``/``--noise``, or uniformly random with
``--random``) in the run's environment and writes them to ``DATASET`` (a
new dataset, or a new shard appended to an existing one with the same
specs; see ``alf_rl.offline.dataset``). The dataset's metadata gets the
environment, the policy, the mean return of the collected episodes
(``behaviour_return``) and, for the normalized score, ``random_return``
and ``expert_return``: given with ``--random_return``/``--expert_return``,
or measured over ``--reference_episodes`` episodes of a uniformly random
policy and of the run's greedy policy.

With ``--from_replay`` nothing is played: the replay buffer of the run's
newest checkpoint (an off-policy run's) is written as episodes
(``alf_rl.offline.replay_export``): the run's whole replay stream when its
``replay_buffer_capacity`` held every step, e.g. a ``medium-replay``
dataset from a checkpoint at medium performance.
"""

from typing import Any, List, Optional, Sequence

from absl import app, flags

from alf_rl.runs.commands import run_command
from alf_rl.runs.quiet import run_app
from alf_rl.runs.restore import restore_run

FLAGS = flags.FLAGS


def _define_flags():
    """Defines the command-line flags (only when run as a script)."""
    flags.DEFINE_string('root_dir', None, 'Directory of a training run.')
    flags.DEFINE_integer('episodes', 10, 'Episodes to record.')
    flags.DEFINE_string('out', None, 'The dataset directory to write to.')
    flags.DEFINE_float(
        'epsilon',
        None,
        'Take a uniformly random action with this probability.',
    )
    flags.DEFINE_float(
        'noise',
        None,
        'Add Gaussian noise of this std '
        '(times the half-range of the action bounds).',
    )
    flags.DEFINE_bool('random', False, 'Uniformly random actions.')
    flags.DEFINE_integer(
        'reference_episodes',
        0,
        'Measure random_return '
        'and expert_return (the greedy policy) over this '
        'many episodes each, unless given.',
    )
    flags.DEFINE_float('random_return', None, 'Return of a random policy.')
    flags.DEFINE_float('expert_return', None, 'Return of an expert.')
    flags.DEFINE_integer(
        'max_episode_steps',
        0,
        'Cap on steps per episode (0: the env default).',
    )
    flags.DEFINE_integer(
        'random_seed', 0, 'Seed of the environment and of the perturbations.'
    )
    flags.DEFINE_multi_string('gin_param', None, 'Extra gin bindings.')
    flags.DEFINE_bool(
        'from_replay',
        False,
        "Write the replay buffer of the run's newest checkpoint instead.",
    )


def _exploration(
    epsilon: Optional[float], noise: Optional[float], random: bool
) -> Any:
    """The ``Exploration`` the flags ask for (at most one of them)."""
    from alf_rl.offline.collection import Exploration

    given = [
        (n, v)
        for n, v in (
            ('epsilon', epsilon),
            ('noise', noise),
            ('random', random or None),
        )
        if v is not None
    ]
    if len(given) > 1:
        raise ValueError(
            "--%s and --%s: give at most one of --epsilon, "
            "--noise, --random" % (given[0][0], given[1][0])
        )
    if not given:
        return Exploration()
    mode, value = given[0]
    return Exploration(mode, 0.0 if mode == 'random' else float(value))


def collect(
    root_dir: str,
    out: str,
    episodes: int = 10,
    epsilon: Optional[float] = None,
    noise: Optional[float] = None,
    random: bool = False,
    reference_episodes: int = 0,
    random_return: Optional[float] = None,
    expert_return: Optional[float] = None,
    gin_params: Sequence[str] = (),
    max_episode_steps: int = 0,
    seed: int = 0,
) -> List[float]:
    """Records ``episodes`` episodes of a run's policy into ``out``.

    Args: as the flags of the same names (``seed``: ``--random_seed``).

    Returns:
        the returns of the recorded episodes.

    Raises:
        ValueError: bad flags, a run without ``config.gin``, or a dataset
            at ``out`` with other specs (``DatasetError``).
        CheckpointError: no checkpoint (except with ``--random``).
    """
    import gin

    from alf_rl.offline.collection import collect_to_dataset

    if episodes < 1:
        raise ValueError('--episodes %d: expected >= 1' % episodes)
    exploration = _exploration(epsilon, noise, random)
    need_policy = exploration.mode != 'random' or (
        reference_episodes > 0 and expert_return is None
    )
    env, algorithm = restore_run(
        root_dir,
        False,
        gin_params,
        max_episode_steps,
        seed,
        restore_algorithm=need_policy,
        prog='alf-collect',
    )
    policy_fn, initial_state = _policy(algorithm)
    returns, metadata = collect_to_dataset(
        env,
        policy_fn,
        initial_state,
        out,
        episodes,
        exploration,
        reference_episodes,
        random_return,
        expert_return,
        seed,
        {'env_name': _env_name(gin), 'source_run': root_dir},
    )
    env.close()
    _report(out, returns, metadata)
    return returns


def _report(out: str, returns: List[float], metadata: Any) -> None:
    """Prints what was written."""
    print(
        'alf-collect: wrote %d episodes to %s (mean return %.2f)%s'
        % (
            len(returns),
            out,
            metadata['behaviour_return'],
            ''.join(
                '; %s %.2f' % (k, metadata[k])
                for k in ('random_return', 'expert_return')
                if k in metadata
            ),
        )
    )


def _policy(algorithm: Any) -> Any:
    """``(policy_fn or None, initial_state_fn)`` of a greedy algorithm."""
    if algorithm is None:
        return None, lambda batch_size: ()

    def policy_fn(time_step, state):
        step = algorithm.predict(
            algorithm.transform_timestep(time_step), state
        )
        return step.action, step.state

    return policy_fn, algorithm.get_initial_predict_state


def _env_name(gin: Any) -> Optional[str]:
    try:
        return str(gin.query_parameter('create_environment.env_name'))
    except ValueError:
        return None


def _main(argv):
    if len(argv) > 1:
        raise app.UsageError('unexpected arguments: %s' % argv[1:])
    if not FLAGS.root_dir or not FLAGS.out:
        raise app.UsageError('--root_dir and --out are required')
    if FLAGS.from_replay:
        from alf_rl.runs.replay_dataset import collect_replay

        run_command(
            'alf-collect',
            lambda: collect_replay(
                FLAGS.root_dir,
                FLAGS.out,
                FLAGS.gin_param or (),
                {
                    k: v
                    for k, v in (
                        ('random_return', FLAGS.random_return),
                        ('expert_return', FLAGS.expert_return),
                    )
                    if v is not None
                },
            ),
        )
        return
    run_command(
        'alf-collect',
        lambda: collect(
            FLAGS.root_dir,
            FLAGS.out,
            FLAGS.episodes,
            FLAGS.epsilon,
            FLAGS.noise,
            FLAGS.random,
            FLAGS.reference_episodes,
            FLAGS.random_return,
            FLAGS.expert_return,
            FLAGS.gin_param,
            FLAGS.max_episode_steps,
            FLAGS.random_seed,
        ),
    )


def main() -> None:
    """Console entry point of ``alf-collect``."""
    _define_flags()
    run_app(_main)


if __name__ == '__main__':
    main()
