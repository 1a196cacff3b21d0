"""AsyncOffPolicyTrainer with thread actors: learning, policy lag, resume,
a failing actor environment, Ctrl-C."""

import os
import threading
import time

import pytest
import tensorflow as tf
import tf_keras

from alf_rl.algorithms import (Agent, DqnAlgorithm, PPOAlgorithm, PPOLoss,
                               RNDAlgorithm)
from alf_rl.environments.suite_unittest import PolicyUnittestEnv
from alf_rl.environments.tf_environment import TFPyEnvironment
from alf_rl.networks import (ActorDistributionNetwork, QNetwork,
                             ValueNetwork)
from alf_rl.trainers import (AsyncOffPolicyTrainer, EnvironmentStepError,
                             TrainerConfig)


def _ppo(observation_spec, action_spec):
    return PPOAlgorithm(
        observation_spec, action_spec,
        actor_network_ctor=lambda o, a: ActorDistributionNetwork(
            o, a, fc_layer_params=(16, )),
        value_network_ctor=lambda o: ValueNetwork(o, fc_layer_params=(16, )),
        loss=PPOLoss(gamma=0.5),
        optimizer=tf_keras.optimizers.Adam(1e-2))


def _dqn(observation_spec, action_spec):
    return DqnAlgorithm(
        observation_spec, action_spec,
        q_network_ctor=lambda o, a: QNetwork(o, a, fc_layer_params=(16, )),
        optimizer=tf_keras.optimizers.Adam(1e-2), gamma=0.5)


def _env(batch_size=8, episode_length=6):
    return lambda seed: TFPyEnvironment(
        PolicyUnittestEnv(batch_size, episode_length, seed=seed))


def _ppo_config(root, **kwargs):
    settings = dict(root_dir=root, algorithm_ctor=_ppo, random_seed=0,
                    num_iterations=40, unroll_length=8,
                    clear_replay_buffer=True, mini_batch_size=64,
                    mini_batch_length=1, num_updates_per_train_step=2,
                    summary_interval=5, checkpoint_interval=20)
    settings.update(kwargs)
    return TrainerConfig(**settings)


def test_async_ppo_learns_the_copy_task_with_two_thread_actors(tmp_path):
    trainer = AsyncOffPolicyTrainer(
        _ppo_config(str(tmp_path), evaluate=True, eval_interval=40,
                    num_eval_episodes=8),
        env=_env(), eval_env=_env(), num_actors=2)
    result = trainer.train()
    stats = trainer._driver.stats()
    trainer.close()
    assert result['iterations'] == 40
    # 40 iterations x 8 steps x 8 envs, each of one actor's message, all
    # counted by the learner's metrics. FIRST steps are no env steps: one
    # after each episode's LAST (but the last few, not yet observed) and
    # one at the start of each of the 16 environments.
    observed = 40 * 8 * 8
    counted = (result['Metrics/EnvironmentSteps'] +
               result['Metrics/NumberOfEpisodes'])
    assert observed - 16 <= counted <= observed
    # Episodes of 6 steps: 5 rewards each, 1 for the copied bit; a random
    # policy averages 2.5.
    assert result['Metrics/AverageEpisodeLength'] == 5
    # The greedy policy copies every bit (5 of 5); a random one gets 2.5.
    assert result['eval/Metrics/AverageReturn'] == 5.0
    # One message per iteration; the learner trained on messages at most
    # max_policy_lag (100) behind.
    assert 0 <= stats.get('async/policy_lag_max', 0) <= 100


def test_stale_messages_are_not_trained_on_but_counted(tmp_path):
    trainer = AsyncOffPolicyTrainer(
        _ppo_config(str(tmp_path), num_iterations=12), env=_env(),
        num_actors=3, max_policy_lag=0, queue_size=3)
    result = trainer.train()
    stats = trainer._driver.stats()
    trainer.close()
    assert result['iterations'] == 12
    # With three actors and a queue of three, messages wait while the
    # learner trains: some were collected before the newest update.
    assert stats['async/dropped_messages'] > 0
    # the lags of the messages trained on, as summarized (the final
    # summary at iteration 12 took them from the driver)
    from alf_rl.utils.curves import read_scalar_events
    lags = read_scalar_events(os.path.join(str(tmp_path), 'train'),
                              'async/policy_lag_max')
    assert lags and all(value == 0 for _, _, value in lags)
    # Their steps still count: more env steps than trained iterations hold.
    observed = 64 * (12 + stats['async/dropped_messages'])
    counted = (result['Metrics/EnvironmentSteps'] +
               result['Metrics/NumberOfEpisodes'])
    assert observed - 24 <= counted <= observed


def test_dqn_replay_of_all_actors_and_resume(tmp_path):
    root = str(tmp_path)
    config = dict(root_dir=root, algorithm_ctor=_dqn, random_seed=0,
                  num_iterations=10, unroll_length=2,
                  initial_collect_steps=16, mini_batch_size=8,
                  mini_batch_length=2, replay_buffer_capacity=200,
                  checkpoint_interval=10)
    trainer = AsyncOffPolicyTrainer(TrainerConfig(**config), env=_env(2),
                                    num_actors=2, iterations_per_message=4)
    result = trainer.train()
    # Replay holds 2 actors x 2 envs; every step observed went in (the
    # env steps, plus a FIRST step after each LAST and at each start).
    buffer = trainer._replayer.buffer
    assert buffer.num_environments == 4
    extra = int(buffer.total_size) - (result['Metrics/EnvironmentSteps'] +
                                      result['Metrics/NumberOfEpisodes'])
    assert 0 <= extra <= 4
    # Each step went to its environment's own row (actor i's envs are
    # rows 2i, 2i+1, stepped together); which actor's messages the learner
    # took depends on timing.
    sizes = buffer.current_size.numpy()
    assert sizes.sum() == int(buffer.total_size)
    assert sizes[0] == sizes[1] and sizes[2] == sizes[3]
    # The epsilon schedule's counter is the actors' (rollout-owned): the
    # learner kept the value of the last message it finished.
    count = int(trainer.algorithm.rollout_owned_variables()[0].numpy())
    assert count > 0
    steps = int(result['Metrics/EnvironmentSteps'])
    trainer.close()

    config['num_iterations'] = 14
    resumed = AsyncOffPolicyTrainer(TrainerConfig(**config), env=_env(2),
                                    num_actors=2, iterations_per_message=4)
    result = resumed.train()
    assert result['iterations'] == 14
    # Resumed: no second initial collection, the counters go on.
    assert result['Metrics/EnvironmentSteps'] > steps
    assert int(resumed.algorithm.rollout_owned_variables()[0].numpy()) > count
    size = int(resumed._replayer.buffer.total_size)
    resumed.close()

    # Resumed without the replay buffer's contents: it is cleared and
    # refilled to initial_collect_steps before the 2 iterations train.
    config.update(num_iterations=16, restore_replay=False)
    dropped = AsyncOffPolicyTrainer(TrainerConfig(**config), env=_env(2),
                                    num_actors=2, iterations_per_message=4)
    assert dropped.train()['iterations'] == 16
    refilled = int(dropped._replayer.buffer.total_size)
    assert 16 <= refilled < size
    dropped.close()


def _ppo_rnd(observation_spec, action_spec):
    return Agent(observation_spec, action_spec, rl_algorithm_ctor=_ppo,
                 intrinsic_reward_module_ctor=lambda observation_spec,
                 action_spec:
                 RNDAlgorithm(observation_spec,
                              optimizer=tf_keras.optimizers.Adam(1e-3)),
                 intrinsic_reward_coef=0.1)


def test_agent_with_rnd_actors_keep_the_normalizer_statistics(tmp_path):
    trainer = AsyncOffPolicyTrainer(
        _ppo_config(str(tmp_path), algorithm_ctor=_ppo_rnd,
                    num_iterations=20),
        env=_env(), num_actors=2)
    result = trainer.train()
    module = trainer.algorithm.intrinsic_reward_module
    trainer.close()
    assert result['iterations'] == 20
    # RND's statistics are updated by the actors' rollouts only: the
    # learner holds what an actor reported (not its untouched initial
    # values), and the predictor was trained (it is published).
    count = module._observation_normalizer.count
    assert float(count) >= 8 * 8  # at least one message of 8 envs x 8
    owned = trainer.algorithm.rollout_owned_variables()
    assert owned and all(
        any(v is w for w in module.rollout_owned_variables()) for v in owned)
    assert result['Metrics/AverageEpisodeLength'] == 5


class _BreaksAfter(PolicyUnittestEnv):
    """Raises on its 20th step."""

    def _step(self, action):
        self._calls = getattr(self, '_calls', 0) + 1
        if self._calls == 20:
            raise RuntimeError('simulator crashed')
        return super()._step(action)


def test_a_failing_actor_environment_stops_training_naming_it(tmp_path):

    def env(seed):
        # Actor 1 (seed != the run's) gets the breaking environment.
        cls = PolicyUnittestEnv if seed == 0 else _BreaksAfter
        return TFPyEnvironment(cls(8, 6, seed=seed))

    trainer = AsyncOffPolicyTrainer(
        _ppo_config(str(tmp_path), num_iterations=200, checkpoint_interval=2),
        env=env, num_actors=2)
    with pytest.raises(EnvironmentStepError) as info:
        trainer.train()
    trainer.close()
    message = str(info.value)
    assert 'actor 1 (environments 8-15) failed' in message
    assert 'simulator crashed' in message
    assert 'rerun the same command to resume' in message


def test_request_stop_checkpoints_and_stops_actors(tmp_path):
    trainer = AsyncOffPolicyTrainer(
        _ppo_config(str(tmp_path), num_iterations=10000), env=_env(),
        num_actors=2)
    original = trainer._driver.run_iterations

    def run_then_stop(*args, **kwargs):
        result = original(*args, **kwargs)
        if int(trainer._iteration.numpy()) >= 3:
            trainer.request_stop()
        return result

    trainer._driver.run_iterations = run_then_stop
    result = trainer.train()
    threads = list(trainer._driver.pool._threads)
    trainer.close()
    assert result['stopped_early']
    assert 3 <= result['iterations'] < 10000
    assert os.path.exists(
        str(tmp_path / 'ckpt' / ('ckpt-%d' % result['iterations'])))
    assert len(threads) == 2
    assert all(not t.is_alive() for t in threads)


def test_settings_are_checked(tmp_path):
    config = _ppo_config(str(tmp_path))
    with pytest.raises(ValueError, match='num_actors must be >= 1'):
        AsyncOffPolicyTrainer(config, env=_env(), num_actors=0)
    with pytest.raises(ValueError, match="actors: expected one of"):
        AsyncOffPolicyTrainer(config, env=_env(), actors='processes')
    with pytest.raises(TypeError, match='num_actors'):
        AsyncOffPolicyTrainer(config, env=_env(), num_actors=2.5)
    dqn = TrainerConfig(root_dir=str(tmp_path / 'dqn'), algorithm_ctor=_dqn,
                        num_iterations=1, initial_collect_steps=16,
                        initial_collect_policy='uniform', mini_batch_size=8,
                        mini_batch_length=2)
    with pytest.raises(ValueError, match="initial_collect_policy='uniform'"
                       ": AsyncOffPolicyTrainer's actors collect with the "
                       "algorithm's rollout only"):
        AsyncOffPolicyTrainer(dqn, env=_env(2), num_actors=2)


def test_subprocess_environments_of_actors_and_a_killed_worker(tmp_path):
    """Actors step environments in spawned subprocesses; a worker process
    that dies stops training with an error naming the actor, and closing
    leaves no process behind."""
    import signal
    from alf_rl.environments import create_environment

    trainer = AsyncOffPolicyTrainer(
        _ppo_config(str(tmp_path), num_iterations=10000,
                    mini_batch_size=16),
        env=lambda seed: create_environment('CartPole-v1', 2, seed=seed,
                                            use_subprocess=True),
        num_actors=2)
    workers = trainer._driver.pool._workers
    processes = [w.process for worker in workers
                 for w in worker.env.pyenv._workers]
    assert len(processes) == 4
    victim = workers[1].env.pyenv._workers[0].process
    original = trainer._driver.run_iterations

    def run_then_kill(*args, **kwargs):
        result = original(*args, **kwargs)
        if int(trainer._iteration.numpy()) >= 3 and victim.poll() is None:
            os.kill(victim.pid, signal.SIGKILL)
        return result

    trainer._driver.run_iterations = run_then_kill
    try:
        with pytest.raises(EnvironmentStepError) as info:
            trainer.train()
    finally:
        trainer.close()
    message = str(info.value)
    assert 'actor 1 (environments 2-3) failed' in message
    assert 'environment 0' in message  # the worker's local index
    for process in processes:
        assert process.wait(timeout=10) is not None


def test_thread_actors_get_an_inter_op_thread_each(tmp_path, capfd):
    """alf-train starts TensorFlow with num_actors + 2 inter-op threads for
    thread actors (each environment step holds one); where TensorFlow
    already runs with fewer, the trainer says so in one line."""
    import subprocess
    import sys
    code = (
        "import gin\n"
        "from alf_rl.bin.quiet import import_tensorflow\n"
        "tf = import_tensorflow(start_runtime=False)\n"
        "import alf_rl.configurables\n"
        "from alf_rl.bin.train import start_training_runtime\n"
        "from alf_rl.trainers import TrainerConfig\n"
        "gin.parse_config(['TrainerConfig.trainer = @AsyncOffPolicyTrainer',"
        " 'TrainerConfig.algorithm_ctor = @PPOAlgorithm',"
        " \"TrainerConfig.root_dir = %r\","
        " 'AsyncOffPolicyTrainer.num_actors = 6'])\n"
        "start_training_runtime(TrainerConfig())\n"
        "print('THREADS', tf.config.threading"
        ".get_inter_op_parallelism_threads())\n" % str(tmp_path))
    env = dict(os.environ, TF_NUM_INTEROP_THREADS='1')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True,
                         text=True, timeout=120, env=env).stdout
    assert 'THREADS 8' in out, out
    # In this process TensorFlow runs already (with one inter-op thread
    # from conftest, or what an earlier trainer set): ask for one more.
    tf.constant(0)
    current = (tf.config.threading.get_inter_op_parallelism_threads() or
               int(os.environ.get('TF_NUM_INTEROP_THREADS', '1')))
    actors = max(1, current - 1)
    trainer = AsyncOffPolicyTrainer(_ppo_config(str(tmp_path / 'r')),
                                    env=_env(), num_actors=actors)
    trainer.close()
    err = capfd.readouterr().err
    assert ('fewer than num_actors + 2 = %d inter-op threads, so the %d '
            'thread actors take turns stepping' % (actors + 2, actors)
            in err), err


class _HangsAfter(PolicyUnittestEnv):
    """Waits in its 30th step until ``release`` is set."""

    hanging = threading.Semaphore(0)
    release = threading.Event()

    def _step(self, action):
        self._calls = getattr(self, '_calls', 0) + 1
        if self._calls == 30:
            _HangsAfter.hanging.release()
            _HangsAfter.release.wait()
        return super()._step(action)


def _hang_then_stop(root):
    """(Run in a process of its own: hung thread actors hold TensorFlow
    inter-op threads, so it needs TF_NUM_INTEROP_THREADS set before
    TensorFlow starts.) Trains until both actors hang, asks to stop and
    prints ``RESULT {json}``: seconds from the request to the return,
    stopped_early, iterations and whether their checkpoint exists."""
    import json
    trainer = AsyncOffPolicyTrainer(
        _ppo_config(root, num_iterations=10000),
        env=lambda seed: TFPyEnvironment(_HangsAfter(8, 6, seed=seed)),
        num_actors=2, message_timeout=300.0)

    def stop_when_hanging():
        for _ in range(2):  # both actors
            _HangsAfter.hanging.acquire(timeout=120)
        time.sleep(1.0)  # the learner has trained on what was queued
        stop_times.append(time.monotonic())
        trainer.request_stop()

    stop_times = []
    threading.Thread(target=stop_when_hanging, daemon=True).start()
    try:
        result = trainer.train()
        ended = time.monotonic()
    finally:
        _HangsAfter.release.set()
        trainer.close()
    print('RESULT ' + json.dumps(dict(
        secs=ended - stop_times[0], stopped=result['stopped_early'],
        iterations=result['iterations'],
        checkpoint=os.path.exists(
            os.path.join(root, 'ckpt', 'ckpt-%d' % result['iterations'])))))


def test_request_stop_while_every_actor_hangs_checkpoints_soon(tmp_path):
    """The learner waits for messages (message_timeout 300 s) from actors
    stuck in their environments: a stop request ends the wait a few seconds
    later, with a checkpoint of the iteration reached."""
    import json
    import subprocess
    import sys

    from alf_rl.utils.stop_request import STOP_GRACE_SECONDS
    here = os.path.dirname(os.path.abspath(__file__))
    code = ('import sys; sys.path[:0] = [%r, %r]; import test_async_trainer '
            'as t; t._hang_then_stop(%r)' %
            (here, os.path.dirname(here), str(tmp_path)))
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True,
                          text=True, timeout=600,
                          env=dict(os.environ, TF_NUM_INTEROP_THREADS='4'))
    lines = [l for l in proc.stdout.splitlines() if l.startswith('RESULT ')]
    assert proc.returncode == 0 and lines, (proc.stdout, proc.stderr)
    result = json.loads(lines[-1][len('RESULT '):])
    assert result['stopped'] and result['checkpoint']
    assert result['iterations'] >= 1
    assert STOP_GRACE_SECONDS <= result['secs'] < 60.0
