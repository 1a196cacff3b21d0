"""Milliseconds per replay update of an example, with and without the
first row's ``first_train_step``.

The first row of a replayed sequence is never a bootstrap value, so
DQN/SAC/DDPG/TD3/SARSA skip its target networks there
(``first_train_step``). This builds each ``--gin_file``'s algorithm as
``alf-train`` does (its networks, optimizers, ``mini_batch_size``,
``mini_batch_length`` and ``jit_compile``), traces one update on a fixed
random batch twice -- as shipped, and with ``train_step`` in place of
``first_train_step`` -- and times the two alternately (``--rounds`` rounds
of ``--updates`` updates each, median per variant), so that machine drift
hits both alike. The graphs' ``MatMul``/``Conv2D`` counts are printed too.

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


def measure(gin_file: str, gin_params: list, rounds: int,
            updates: int) -> dict:
    """Times one example's update both ways.

    Args:
        gin_file: an off-policy example.
        gin_params: extra bindings.
        rounds: alternating rounds.
        updates: updates per variant per round.
    Returns:
        ``{'gin_file', 'batch', 'ops', 'ops_full', 'ms', 'ms_full'}``: the
        batch shape [B, L], op counts and median ms per update of the
        shipped update and of the one running ``train_step`` on row 0.
    """
    import gin
    import tensorflow as tf
    from alf_rl.bin.train import parse_gin
    from alf_rl.data_structures import StepType
    from alf_rl.environments.utils import create_environment
    from alf_rl.specs import add_outer_dims, sample_spec_nest
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
    # Time-major [L, B], as the replay buffer reads it.
    outer = batch[::-1]
    experience = sample_spec_nest(algorithm.experience_spec, outer, seed=0)
    experience = experience._replace(
        step_type=tf.fill(outer, tf.constant(StepType.MID, tf.int32)),
        discount=tf.ones(outer))

    def make():
        return tf.function(lambda e: algorithm.train(e).loss,
                           autograph=False, jit_compile=config.jit_compile)

    shipped = make()
    ops = _count_ops(shipped, (experience, ))
    algorithm.first_train_step = algorithm.train_step
    full = make()
    ops_full = _count_ops(full, (experience, ))
    del algorithm.first_train_step
    for fn in (shipped, full):
        fn(experience).numpy()  # compile
    times = {shipped: [], full: []}
    for _ in range(rounds):
        for fn in (shipped, full):
            start = time.perf_counter()
            for _ in range(updates):
                loss = fn(experience)
            loss.numpy()
            times[fn].append((time.perf_counter() - start) / updates * 1e3)
    return dict(gin_file=os.path.basename(gin_file), batch=batch, ops=ops,
                ops_full=ops_full, ms=statistics.median(times[shipped]),
                ms_full=statistics.median(times[full]))


def main(argv=None) -> None:
    """Parses the flags, measures every ``--gin_file``, prints a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--gin_file', action='append', required=True)
    parser.add_argument('--gin_param', action='append', default=[])
    parser.add_argument('--rounds', type=int, default=7)
    parser.add_argument('--updates', type=int, default=30)
    args = parser.parse_args(argv)
    from alf_rl.bin.quiet import import_tensorflow
    import_tensorflow()
    rows = [measure(f, args.gin_param, args.rounds, args.updates)
            for f in args.gin_file]
    print('| gin file | batch [B, L] | MatMul+Conv2D (row 0 target '
          'skipped / not) | ms per update (skipped / not) | saved |')
    print('| --- | --- | --- | --- | --- |')
    for r in rows:
        print('| `%s` | %s | %d / %d | %.2f / %.2f | %.0f%% |' % (
            r['gin_file'], r['batch'], r['ops'], r['ops_full'], r['ms'],
            r['ms_full'], 100 * (1 - r['ms'] / r['ms_full'])))


if __name__ == '__main__':
    main()
