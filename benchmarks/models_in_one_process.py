"""Memory of many models trained one after another in one process.

Trains ``--models`` models of one family (``alf_rl.SAC``, ``alf_rl.PPO``,
...) for ``--steps`` env steps each in this process, as a notebook or a
Python sweep does, and prints after each: the resident set size (Linux,
``/proc/self/statm``) and the number of traced graphs (``FuncGraph``)
still alive after garbage collection. A model's graphs should go when
its trainer closes: a count that grows by the same number per model, and
RSS with it, is a leak through some global registry.

Usage: python benchmarks/models_in_one_process.py --family SAC
    [--models 6] [--steps 400]
"""

import argparse
import gc
import os
import sys

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def resident_mb() -> float:
    """This process' resident set size in MB (Linux)."""
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE') / 2**20


def live_graphs() -> int:
    """Traced graphs still reachable after a full garbage collection."""
    from tensorflow.python.framework.func_graph import FuncGraph

    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, FuncGraph))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--family', default='SAC')
    parser.add_argument('--models', type=int, default=6)
    parser.add_argument('--steps', type=int, default=400)
    args = parser.parse_args(argv)
    import alf_rl
    from alf_rl.runs.quiet import import_tensorflow

    import_tensorflow()
    bindings = {'TrainerConfig.evaluate': False}
    if args.family != 'PPO' and args.family != 'A2C':
        bindings['TrainerConfig.initial_collect_steps'] = args.steps // 2
    print('| model | RSS MB | graphs alive |\n| --- | --- | --- |')
    for i in range(args.models):
        model = getattr(alf_rl, args.family)(bindings=bindings)
        model.learn(args.steps)
        del model
        print(
            '| %d | %.0f | %d |' % (i + 1, resident_mb(), live_graphs()),
            flush=True,
        )
    return 0


if __name__ == '__main__':
    sys.exit(main())
