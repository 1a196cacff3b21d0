"""replay_training / unroll: mini-batch checks, priorities and early
stopping as values through declared hooks, the shared unroll helper."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms.actor_critic_algorithm import ActorCriticAlgorithm
from alf_rl.algorithms.dqn_algorithm import DqnAlgorithm
from alf_rl.algorithms.replay_training import (ReplayTrainingMixin,
                                               TDErrorPriority,
                                               check_mini_batches)
from alf_rl.algorithms.unroll import (MAX_PYTHON_ROWS, training_info_spec,
                                      unroll)
from alf_rl.data_structures import TrainingInfo, make_experience
from alf_rl.environments.suite_unittest import PolicyUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.networks import (ActorDistributionNetwork, QNetwork,
                             ValueNetwork)
from alf_rl.ops import distributions as dist_ops
from alf_rl.utils.common import set_random_seed


def _collect(alg, env, num_steps):
    """Rolls out ``num_steps``; returns time-major Experience [T, B]."""
    time_step = env.reset()
    exps = []
    state = alg.get_initial_rollout_state(env.batch_size)
    for _ in range(num_steps):
        step = alg.rollout(alg.transform_timestep(time_step), state)
        exps.append(make_experience(time_step, step._replace(
            info=dist_ops.distributions_to_params(step.info)), state))
        time_step = env.step(step.action)
        state = step.state
    exp = tf.nest.map_structure(lambda *x: tf.stack(x), *exps)
    return exp._replace(state=())


def _dqn(env):
    return DqnAlgorithm(
        env.observation_spec(), env.action_spec(),
        q_network_ctor=lambda o, a: QNetwork(o, a, fc_layer_params=(8, )),
        optimizer=tf_keras.optimizers.Adam(1e-2))


def test_check_mini_batches_shape_and_messages():
    shape = check_mini_batches(4, 8, 6, 2, True)
    assert shape == (2, 16, 6)
    assert check_mini_batches(4, 8, None, None, True) == (8, 4, 4)
    with pytest.raises(ValueError, match=r'^train: mini_batch_length must '
                       r'be >= 2 .*got 1'):
        check_mini_batches(4, 8, None, 1, True)
    assert check_mini_batches(4, 8, None, 1, False).num_sequences == 32
    with pytest.raises(ValueError, match='sequence length 8 is not a '
                       'multiple of mini_batch_length 3'):
        check_mini_batches(4, 8, None, 3, True)
    with pytest.raises(ValueError, match=r'^TrainerConfig.mini_batch_size '
                       r'17 is larger than what one iteration collects: 4 '
                       r'envs x 8 steps = 16 sequences of length 2'):
        check_mini_batches(4, 8, 17, 2, True,
                           what='what one iteration collects',
                           prefix='TrainerConfig.')


def test_priority_is_a_returned_value():
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 5))
    alg = _dqn(env)
    assert isinstance(alg, TDErrorPriority)
    exp = _collect(alg, env, 3)
    loss_info, priority = alg.train_with_priority(
        exp, sample_weights=tf.ones([4]))
    assert priority.shape == (4, )
    assert np.all(priority.numpy() >= 0) and np.isfinite(
        float(loss_info.loss))
    # The hook is what decides: the same batch through calc_priority of the
    # per-step loss of the (already updated) algorithm is |td_error| row 0.
    assert not hasattr(alg, 'last_priorities')
    assert not hasattr(alg, 'last_per_step_loss_info')


def test_no_priorities_without_the_hook():
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 5))
    alg = ActorCriticAlgorithm(
        env.observation_spec(), env.action_spec(),
        actor_network_ctor=lambda o, a: ActorDistributionNetwork(
            o, a, fc_layer_params=(8, )),
        value_network_ctor=lambda o: ValueNetwork(o, fc_layer_params=(8, )),
        optimizer=tf_keras.optimizers.Adam(1e-2))
    assert type(alg).calc_priority is ReplayTrainingMixin.calc_priority
    exp = _collect(alg, env, 3)
    alg.prepare_off_policy_specs()
    with pytest.raises(ValueError, match='ActorCriticAlgorithm.calc_priority'
                       ' to return per-sequence priorities'):
        alg.train_with_priority(exp, sample_weights=tf.ones([4]))


class _StopAfterTwo(DqnAlgorithm):
    """Early stop through the declared hook: counts updates it has seen."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen = tf.Variable(0, dtype=tf.int32, trainable=False)
        self.valid_sum = tf.Variable(0.0, trainable=False)

    def continue_training(self, training_info, valid_masks):
        self.seen.assign_add(1)
        self.valid_sum.assign_add(tf.reduce_sum(valid_masks))
        return self.seen < 2


@pytest.mark.parametrize('compiled', [False, True])
def test_continue_training_stops_updates(compiled):
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 5))
    alg = _StopAfterTwo(
        env.observation_spec(), env.action_spec(),
        q_network_ctor=lambda o, a: QNetwork(o, a, fc_layer_params=(8, )),
        optimizer=tf_keras.optimizers.SGD(1e-2))
    exp = _collect(alg, env, 4)
    steps = alg._optimizer.iterations

    def _train(e):
        return alg.train(e, num_updates=3, mini_batch_size=2,
                         mini_batch_length=2)

    (tf.function(_train, autograph=False) if compiled else _train)(exp)
    # 3 passes x 4 mini-batches were allowed; the hook stopped after 2.
    assert int(alg.seen) == 2 and int(steps) == 2
    # It saw the [L, b] valid mask of each update (last row masked).
    assert 0 < float(alg.valid_sum) <= 2 * 2


def _counting_row(t, carry):
    row = TrainingInfo(action=tf.fill([3], carry),
                       step_type=tf.zeros([3], tf.int32),
                       reward=tf.cast(tf.fill([3], t), tf.float32),
                       discount=tf.ones([3]), info=(), rollout_info=(),
                       env_id=tf.range(3))
    return carry + 1, row


@pytest.mark.parametrize('num_rows', [1, MAX_PYTHON_ROWS, 5])
@pytest.mark.parametrize('final', [False, True])
@pytest.mark.parametrize('first', [False, True])
def test_unroll_python_and_while_loop_agree(num_rows, final, first):
    spec = training_info_spec(tf.TensorSpec((), tf.int32), ())

    def _final(carry):
        return _counting_row(tf.constant(100), carry)

    def _first(carry):
        return _counting_row(tf.constant(-1), carry)

    @tf.function(autograph=False)
    def _run():
        return unroll(_counting_row, tf.constant(0), num_rows, spec, 3,
                      final_row_fn=_final if final else None,
                      first_row_fn=_first if first else None)

    carry, rows = _run()
    total = num_rows + int(final)
    assert int(carry) == total
    expected_reward = ([-1] if first else [0]) + list(range(1, num_rows)) + (
        [100] if final else [])
    np.testing.assert_array_equal(rows.reward.numpy()[:, 0],
                                  expected_reward)
    np.testing.assert_array_equal(rows.action.numpy(),
                                  np.repeat(np.arange(total), 3).reshape(
                                      total, 3))
    assert rows.env_id.shape == (total, 3)


def test_unroll_first_row_needs_a_row():
    spec = training_info_spec(tf.TensorSpec((), tf.int32), ())
    with pytest.raises(ValueError, match='first_row_fn needs num_rows >= 1'):
        unroll(_counting_row, tf.constant(0), 0, spec, 3,
               first_row_fn=lambda carry: _counting_row(0, carry))


def test_update_cost_benchmark_runs_small(capsys):
    """benchmarks/update_cost.py on DQN CartPole: row 0's target network
    leaves the graph (fewer matrix products), the table is printed."""
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(__file__), '..', '..', 'benchmarks',
                        'update_cost.py')
    spec = importlib.util.spec_from_file_location('update_cost', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    gin_file = os.path.join(os.path.dirname(__file__), '..', '..',
                            'examples', 'dqn_cart_pole.gin')
    params = ['TrainerConfig.mini_batch_size=8',
              'TrainerConfig.jit_compile=False']
    row = module.measure(gin_file, params, rounds=1, updates=1)
    assert row['batch'] == [8, 2]
    # The QNetwork's 3 layers: forward and backward on row 0, target and
    # online forward on row 1 (double Q); row 0's target pass is gone.
    assert row['ops'] == row['ops_full'] - 3, row
    assert row['ms'] > 0 and row['ms_full'] > 0
    module.main(['--gin_file', gin_file, '--rounds', '1', '--updates', '1'] +
                sum([['--gin_param', p] for p in params], []))
    out = capsys.readouterr().out
    assert '| `dqn_cart_pole.gin` | [8, 2] |' in out


def test_update_cost_benchmark_against_a_binding():
    """--against: Rainbow CartPole's update with its 4-step windows folded
    into two rows (row 0 only) against every row: fewer matrix products."""
    import importlib.util
    import os
    root = os.path.join(os.path.dirname(__file__), '..', '..')
    spec = importlib.util.spec_from_file_location(
        'update_cost', os.path.join(root, 'benchmarks', 'update_cost.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    row = module.measure(
        os.path.join(root, 'examples', 'rainbow_cart_pole.gin'),
        ['TrainerConfig.mini_batch_size=8', 'TrainerConfig.jit_compile=False',
         "DqnAlgorithm.loss_rows='first'"],
        rounds=1, updates=1, against=["DqnAlgorithm.loss_rows='all'"])
    assert row['batch'] == [8, 4]
    # 2 rows (row 0 online; row 3's online and target) instead of rows
    # 0-2 trained and row 3 bootstrapping.
    assert row['ops'] < 0.5 * row['ops_full'], row


def test_mini_batches_are_gathered_time_major_in_sequence_order():
    """Sequences of a [T, B] batch are numbered env-major (b * T/L + c),
    the order sequences of batch-major storage had, so shuffled epochs
    draw the same sequences; each comes back [L, b], untransposed."""
    from alf_rl.algorithms.mini_batches import gather_sequences
    # value = 10 * env + step, [T=4, B=3]
    values = 10 * np.arange(3)[None, :] + np.arange(4)[:, None]
    exp = {'x': tf.constant(values), 'y': tf.constant(values)[..., None]}
    # Sequences of L=2: 0 = env 0 steps 0-1, 1 = env 0 steps 2-3,
    # 2 = env 1 steps 0-1, ... 5 = env 2 steps 2-3.
    out = gather_sequences(exp, tf.constant([5, 0, 3]), 2)
    np.testing.assert_array_equal(out['x'], [[22, 0, 12], [23, 1, 13]])
    assert out['y'].shape == (2, 3, 1)
    # Whole sequences (L = T): a gather along B.
    out = gather_sequences(exp, tf.constant([2, 0]), 4)
    np.testing.assert_array_equal(out['x'], values[:, [2, 0]])


def test_unroll_rebuilds_distributions_from_its_arrays():
    """Rows may hold distributions: they travel as parameters and come
    back rebuilt, in Python rows and in the while loop alike."""
    import tensorflow_probability as tfp
    spec = dist_ops.extract_spec(
        {'d': tfp.distributions.Normal(tf.zeros([3, 2]), tf.ones([3, 2])),
         'v': tf.zeros([3])})

    def _row(t, carry):
        loc = tf.fill([3, 2], tf.cast(t, tf.float32))
        return carry, {'d': tfp.distributions.Normal(loc, loc + 1.),
                       'v': tf.fill([3], tf.cast(t, tf.float32))}

    for num_rows in (MAX_PYTHON_ROWS, 4):
        _, rows = tf.function(lambda n=num_rows: unroll(_row, (), n, spec, 3),
                              autograph=False)()
        assert isinstance(rows['d'], tfp.distributions.Normal)
        np.testing.assert_array_equal(rows['d'].loc[:, 0, 0],
                                      np.arange(num_rows))
        np.testing.assert_array_equal(rows['d'].scale[:, 1, 1],
                                      np.arange(num_rows) + 1.)
        np.testing.assert_array_equal(rows['v'][:, 2], np.arange(num_rows))


def test_one_update_converts_distributions_once_per_row_function(
        monkeypatch):
    """Counts, in one traced update of an actor-critic (behaviour and
    train infos hold distributions), the calls that turn distributions
    into parameters and back. Rows carry only the step's info (one
    conversion per row function: the first-train/train row and the
    bootstrap row); the experience's fields are used as they are."""
    import tensorflow_probability as tfp
    counts = {'to_params': 0, 'to_distributions': 0}
    to_params = dist_ops.distributions_to_params
    to_distributions = dist_ops.params_to_distributions

    def _to_params(nest):
        if any(isinstance(x, tfp.distributions.Distribution)
               for x in tf.nest.flatten(nest)):
            counts['to_params'] += 1
        return to_params(nest)

    def _to_distributions(nest, specs):
        if any(isinstance(s, dist_ops.DistributionSpec)
               for s in tf.nest.flatten(specs)):
            counts['to_distributions'] += 1
        return to_distributions(nest, specs)

    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 5))
    alg = ActorCriticAlgorithm(
        env.observation_spec(), env.action_spec(),
        actor_network_ctor=lambda o, a: ActorDistributionNetwork(
            o, a, fc_layer_params=(8, )),
        value_network_ctor=lambda o: ValueNetwork(o, fc_layer_params=(8, )),
        optimizer=tf_keras.optimizers.Adam(1e-2))
    alg.prepare_off_policy_specs()
    exp = _collect(alg, env, 6)
    monkeypatch.setattr(dist_ops, 'distributions_to_params', _to_params)
    monkeypatch.setattr(dist_ops, 'params_to_distributions',
                        _to_distributions)
    alg.build_optimizers()
    fn = tf.function(lambda e: alg.train(e).loss, autograph=False)
    fn.get_concrete_function(exp)  # may trace twice (creates slots)
    traces = fn.experimental_get_tracing_count()
    # Per trace: preprocess (to distributions for the hooks and back), the
    # loop's row and the bootstrap row (to distributions for the step, its
    # info to parameters), the stacked info and the batch's rollout info.
    assert counts == {'to_params': 3 * traces,
                      'to_distributions': 5 * traces}, (counts, traces)


@pytest.mark.parametrize('legacy', [False, True])
def test_build_optimizers_creates_slots_so_train_traces_once(legacy):
    # A tf.function that creates variables on its first call is traced
    # twice; build_optimizers creates every optimizer variable beforehand,
    # for tf_keras' legacy optimizers (LegacyAdam) too.
    set_random_seed(0)
    env = TFPyEnvironment(PolicyUnittestEnv(4, 5))
    optimizer = (tf_keras.optimizers.legacy.Adam(1e-2) if legacy else
                 tf_keras.optimizers.Adam(1e-2))
    alg = ActorCriticAlgorithm(
        env.observation_spec(), env.action_spec(),
        actor_network_ctor=lambda o, a: ActorDistributionNetwork(
            o, a, fc_layer_params=(8, )),
        value_network_ctor=lambda o: ValueNetwork(o, fc_layer_params=(8, )),
        optimizer=optimizer)
    alg.prepare_off_policy_specs()
    exp = _collect(alg, env, 6)
    alg.build_optimizers()
    weights = alg.trainable_variables
    # Adam's two moments per variable (and its step counter).
    assert len(optimizer.variables()) >= 2 * len(weights) + 1
    before = len(optimizer.variables())
    fn = tf.function(lambda e: alg.train(e).loss, autograph=False)
    fn.get_concrete_function(exp)
    assert fn.experimental_get_tracing_count() == 1
    fn(exp)
    assert len(optimizer.variables()) == before
    assert int(optimizer.iterations.numpy()) == 1
