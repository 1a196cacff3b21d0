"""Milliseconds per replay update of an example, with and without the
first row's ``first_train_step`` (or against other bindings).

The first row of a replayed sequence is never a bootstrap value, so
DQN/SAC/DDPG/TD3/SARSA skip its target networks there
(``first_train_step``). This builds each ``--gin_file``'s algorithm as
``alf-train`` does (its networks, optimizers, ``mini_batch_size``,
``mini_batch_length`` and ``jit_compile``), traces one update on a fixed
random batch twice -- as shipped, and with ``train_step`` in place of
``first_train_step`` -- and times the two alternately (``--rounds`` rounds
of ``--updates`` updates each, median per variant), so that machine drift
hits both alike. The graphs' ``MatMul``/``Conv2D`` counts are printed too.
With ``--against BINDING`` the variant is the example with that binding
added instead (e.g. ``"DqnAlgorithm.loss_rows='all'"``: every row trained
against the folded two-row window).

Usage::

    python benchmarks/update_cost.py --gin_file examples/dqn_atari_pong.gin \
        --gin_file examples/sac_half_cheetah.gin [--rounds 7] [--updates 30]
"""

import argparse
import os
import statistics
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')


def _count_ops(fn, args, names=('MatMul', 'Conv2D')) -> int:
    """Ops named ``names`` in ``fn``'s concrete graph (function bodies
    included)."""
    graph_def = fn.get_concrete_function(*args).graph.as_graph_def()
    nodes = list(graph_def.node)
    for f in graph_def.library.function:
        nodes.extend(f.node_def)
    return sum(1 for n in nodes if n.op in names)


def _build(gin_file: str, gin_params: list):
    """``(algorithm, experience, jit_compile)``: ``gin_file``'s algorithm
    as ``alf-train`` builds it, its optimizers built, and a fixed random
    time-major [L, B] batch of MID steps for it."""
    import gin
    import tensorflow as tf
    from alf_rl.bin.train import parse_gin
    from alf_rl.data_structures import StepType
    from alf_rl.environments.utils import create_environment
    from alf_rl.specs import sample_spec_nest
    from alf_rl.trainers import TrainerConfig
    from alf_rl.utils.common import set_random_seed

    gin.clear_config()
    # root_dir is required by TrainerConfig; nothing is written there.
    parse_gin([gin_file], list(gin_params), '/nonexistent/update_cost')
    config = TrainerConfig()
    set_random_seed(0)
    env = create_environment(seed=0)
    try:
        algorithm = config.algorithm_ctor(
            observation_spec=env.observation_spec(),
            action_spec=env.action_spec())
    finally:
        env.close()
    batch = [config.mini_batch_size or 64, config.mini_batch_length or 2]
    algorithm.prepare_off_policy_specs(batch[0])
    algorithm.build_optimizers()
    outer = batch[::-1]
    experience = sample_spec_nest(algorithm.experience_spec, outer, seed=0)
    experience = experience._replace(
        step_type=tf.fill(outer, tf.constant(StepType.MID, tf.int32)),
        discount=tf.ones(outer))
    return algorithm, experience, config.jit_compile


def _update_fn(algorithm, jit_compile):
    import tensorflow as tf
    return tf.function(lambda e: algorithm.train(e).loss, autograph=False,
                       jit_compile=jit_compile)


def measure(gin_file: str, gin_params: list, rounds: int, updates: int,
            against: list = ()) -> dict:
    """Times one example's update two ways, alternating.

    Args:
        gin_file: an off-policy example.
        gin_params: extra bindings.
        rounds: alternating rounds.
        updates: updates per variant per round.
        against: bindings of the variant to compare with (e.g.
            ``DqnAlgorithm.loss_rows='all'``); empty: the shipped update
            with ``train_step`` in place of ``first_train_step``.
    Returns:
        ``{'gin_file', 'batch', 'ops', 'ops_full', 'ms', 'ms_full'}``: the
        batch shape [B, L], op counts and median ms per update of the
        shipped update and of the variant.
    """
    algorithm, experience, jit = _build(gin_file, gin_params)
    shipped = _update_fn(algorithm, jit)
    ops = _count_ops(shipped, (experience, ))
    if against:
        other, other_exp, _ = _build(gin_file, list(gin_params) + against)
        variant = _update_fn(other, jit)
    else:
        algorithm.first_train_step = algorithm.train_step
        variant, other_exp = _update_fn(algorithm, jit), experience
    ops_full = _count_ops(variant, (other_exp, ))
    if not against:
        del algorithm.first_train_step
    runs = ((shipped, experience), (variant, other_exp))
    for fn, exp in runs:
        fn(exp).numpy()  # compile
    times = {shipped: [], variant: []}
    for _ in range(rounds):
        for fn, exp in runs:
            start = time.perf_counter()
            for _ in range(updates):
                loss = fn(exp)
            loss.numpy()
            times[fn].append((time.perf_counter() - start) / updates * 1e3)
    return dict(gin_file=os.path.basename(gin_file),
                batch=list(experience.step_type.shape[::-1]), ops=ops,
                ops_full=ops_full, ms=statistics.median(times[shipped]),
                ms_full=statistics.median(times[variant]))


def main(argv=None) -> None:
    """Parses the flags, measures every ``--gin_file``, prints a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--gin_file', action='append', required=True)
    parser.add_argument('--gin_param', action='append', default=[])
    parser.add_argument('--against', action='append', default=[],
                        help='a binding of the variant to compare with '
                        "(e.g. \"DqnAlgorithm.loss_rows='all'\")")
    parser.add_argument('--rounds', type=int, default=7)
    parser.add_argument('--updates', type=int, default=30)
    args = parser.parse_args(argv)
    from alf_rl.bin.quiet import import_tensorflow
    import_tensorflow()
    rows = [measure(f, args.gin_param, args.rounds, args.updates,
                    args.against) for f in args.gin_file]
    what = (' + '.join(args.against) if args.against else
            'row 0 target not skipped')
    print('| gin file | batch [B, L] | MatMul+Conv2D (shipped / %s) | ms '
          'per update (shipped / variant) | saved |' % what)
    print('| --- | --- | --- | --- | --- |')
    for r in rows:
        print('| `%s` | %s | %d / %d | %.2f / %.2f | %.0f%% |' % (
            r['gin_file'], r['batch'], r['ops'], r['ops_full'], r['ms'],
            r['ms_full'], 100 * (1 - r['ms'] / r['ms_full'])))


if __name__ == '__main__':
    main()
