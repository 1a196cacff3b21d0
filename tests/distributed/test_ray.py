"""Ray actors (``RayActorPool``): a local Ray run learns, a two-node
cluster on this machine runs actors on both nodes, an actor process killed
mid-run is restarted and training goes on, one death too many stops it
naming the actor, an environment error names actor and error.

Skipped where the ``[dist]`` extra (Ray) is not installed. Every Ray
instance here is started by these tests and shut down by them
(``ray.shutdown()``, or the ``ray start`` processes killed by process
group); nothing calls ``ray stop``, which would end every Ray process on
the machine. ``RAY_AUTH_MODE=disabled`` in this process and in the ``ray
start`` processes: Ray 2.60 turns token authentication on by default and
every process of a cluster must agree.
"""

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import gin
import pytest
import tf_keras

ray = pytest.importorskip(
    'ray', reason='Ray is not installed: pip install alf_rl[dist]')

from alf_rl.algorithms import PPOAlgorithm, PPOLoss  # noqa: E402
from alf_rl.distributed.ray_actors import RayActorPool, RayConfig  # noqa: E402
from alf_rl.environments.suite_unittest import PolicyUnittestEnv  # noqa: E402
from alf_rl.environments.tf_environment import TFPyEnvironment  # noqa: E402
from alf_rl.networks import ActorDistributionNetwork, ValueNetwork  # noqa: E402
from alf_rl.trainers import (AsyncOffPolicyTrainer,  # noqa: E402
                             EnvironmentStepError, TrainerConfig)


@pytest.fixture(autouse=True, scope='module')
def _ray_environment():
    saved = {k: os.environ.get(k) for k in _RAY_ENV}
    os.environ.update(_RAY_ENV)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


_RAY_ENV = {'RAY_AUTH_MODE': 'disabled', 'RAY_USAGE_STATS_ENABLED': '0'}


def _ppo(observation_spec, action_spec):
    return PPOAlgorithm(
        observation_spec, action_spec,
        actor_network_ctor=lambda o, a: ActorDistributionNetwork(
            o, a, fc_layer_params=(16, )),
        value_network_ctor=lambda o: ValueNetwork(o, fc_layer_params=(16, )),
        loss=PPOLoss(gamma=0.5),
        # 3e-2 (thread actors' test: 1e-2): Ray actors run ahead of the
        # learner by up to ~4 updates; measured final AverageReturn
        # 4.9-5.0 after 40 iterations (1e-2: 4.0-4.5).
        optimizer=tf_keras.optimizers.Adam(3e-2))


def _env(seed):
    return TFPyEnvironment(PolicyUnittestEnv(8, 6, seed=seed))


class _BreaksAfter(PolicyUnittestEnv):
    """Raises on its 20th step."""

    def _step(self, action):
        self._calls = getattr(self, '_calls', 0) + 1
        if self._calls == 20:
            raise RuntimeError('simulator crashed')
        return super()._step(action)


def _breaking_env(seed):
    # Actor 1 (seed != the run's) gets the breaking environment.
    cls = PolicyUnittestEnv if seed == 0 else _BreaksAfter
    return TFPyEnvironment(cls(8, 6, seed=seed))


def _config(root, **kwargs):
    settings = dict(root_dir=root, algorithm_ctor=_ppo, random_seed=0,
                    num_iterations=40, unroll_length=8,
                    clear_replay_buffer=True, mini_batch_size=64,
                    mini_batch_length=1, num_updates_per_train_step=2,
                    summary_interval=5, checkpoint_interval=40)
    settings.update(kwargs)
    return TrainerConfig(**settings)


def _learned(result):
    # Episodes of 6 steps: 5 rewards, 1 each for the copied bit; a random
    # policy averages 2.5.
    assert result['Metrics/AverageEpisodeLength'] == 5
    assert result['Metrics/AverageReturn'] >= 4.5


def test_local_ray_actors_learn_the_copy_task(tmp_path):
    trainer = AsyncOffPolicyTrainer(_config(str(tmp_path)), env=_env,
                                    num_actors=2, actors='ray')
    pool = trainer._driver.pool
    assert isinstance(pool, RayActorPool)
    result = trainer.train()
    stats = trainer._driver.stats()
    nodes = pool.actor_nodes()
    trainer.close()
    assert result['iterations'] == 40
    _learned(result)
    # Every iteration's 64 steps came from a Ray actor's message.
    observed = 40 * 8 * 8
    counted = (result['Metrics/EnvironmentSteps'] +
               result['Metrics/NumberOfEpisodes'])
    assert observed - 16 <= counted <= observed
    assert stats['ray/actors_alive'] == 2
    assert stats['ray/actor_restarts'] == 0
    # Two actor processes, neither of them this one.
    pids = {n['pid'] for n in nodes}
    assert len(pids) == 2 and os.getpid() not in pids
    assert not ray.is_initialized()  # the pool shut down what it started


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _session_pids(session_id):
    """Processes of the session ``session_id`` (one started here with
    ``start_new_session=True``: Ray's processes of that node)."""
    pids = []
    for entry in os.listdir('/proc'):
        try:
            with open('/proc/%s/stat' % entry) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except (OSError, IndexError):
            continue
        if entry.isdigit() and int(fields[3]) == session_id:
            pids.append(int(entry))
    return pids


def _stop_node(process):
    """Stops one ``ray start --block`` node started here: SIGTERM (it stops
    its Ray processes), then SIGKILL to whatever of its session is left."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    for pid in _session_pids(process.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()


@pytest.fixture
def two_node_cluster(tmp_path):
    """A head node and a worker node on this machine, one CPU each, as
    ``ray start`` processes; yields the head's address."""
    assert not ray.is_initialized()
    ray_bin = os.path.join(os.path.dirname(sys.executable), 'ray')
    # Short: Ray's socket paths under it must stay within 107 characters.
    temp_dir = tempfile.mkdtemp(prefix='ray', dir='/tmp')
    env = dict(os.environ, **_RAY_ENV)
    node = ['--num-cpus=1', '--object-store-memory=%d' % (100 * 2**20),
            '--disable-usage-stats', '--block']
    port = _free_port()
    head_args = ['--head', '--port=%d' % port, '--temp-dir=' + temp_dir,
                 '--include-dashboard=false',
                 '--dashboard-port=%d' % _free_port(),
                 '--ray-client-server-port=%d' % _free_port()]
    nodes = []
    try:
        for args in (head_args, ['--address=127.0.0.1:%d' % port]):
            log = open(str(tmp_path / ('node%d.log' % len(nodes))), 'w')
            nodes.append(subprocess.Popen(
                [ray_bin, 'start'] + args + node, env=env, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True))
        yield '127.0.0.1:%d' % port
    finally:
        for process in reversed(nodes):  # the worker node first
            _stop_node(process)
        subprocess.run(['rm', '-rf', temp_dir], check=False)


def _wait_for_nodes(address, count, logs, timeout=120):
    """Connects to ``address`` once ``count`` nodes are alive there.

    ``ray.init`` to a head that is still starting can block for minutes on
    a busy machine, past any deadline checked between attempts: first each
    node's log (``logs``) must say that its runtime started, checked twice
    a second against the deadline; then one connection."""
    deadline = time.time() + timeout
    for log in logs:
        while 'Ray runtime started' not in log.read_text():
            assert time.time() < deadline, (
                'no Ray node started within %d s: %s' % (timeout, log))
            time.sleep(0.5)
    ray.init(address=address)
    try:
        while sum(n['Alive'] for n in ray.nodes()) < count:
            assert time.time() < deadline, ray.nodes()
            time.sleep(0.5)
    finally:
        ray.shutdown()


def test_actors_run_on_both_nodes_of_a_two_node_cluster(
        tmp_path, two_node_cluster):
    _wait_for_nodes(two_node_cluster, 2,
                    [tmp_path / 'node0.log', tmp_path / 'node1.log'])
    gin.bind_parameter('RayConfig.address', two_node_cluster)
    gin.bind_parameter('RayConfig.num_cpus_per_actor', 1)
    trainer = AsyncOffPolicyTrainer(
        _config(str(tmp_path), num_iterations=10), env=_env, num_actors=2,
        actors='ray')
    try:
        result = trainer.train()
        nodes = trainer._driver.pool.actor_nodes()
    finally:
        trainer.close()
    # One CPU per node, one per actor: one actor on each node.
    assert len({n['node_id'] for n in nodes}) == 2
    assert result['iterations'] == 10
    counted = (result['Metrics/EnvironmentSteps'] +
               result['Metrics/NumberOfEpisodes'])
    assert 10 * 64 - 16 <= counted <= 10 * 64
    assert not ray.is_initialized()  # disconnected; the cluster runs on


@pytest.fixture(scope='module')
def local_ray():
    """One local Ray instance for the fault tests (the pools find Ray
    initialized, use it and leave it running: the path of a user's own
    ``ray.init()``); shut down after the module's last test."""
    assert not ray.is_initialized()
    ray.init(address='local', num_cpus=2, object_store_memory=100 * 2**20,
             include_dashboard=False)
    yield
    ray.shutdown()


def _kill_actor_after(trainer, iteration, actor_index):
    """Makes the trainer SIGKILL actor ``actor_index``'s process once it
    has trained ``iteration`` iterations; returns the killed pids."""
    driver = trainer._driver
    original = driver.run_iterations
    killed = []

    def run_then_kill(*args, **kwargs):
        result = original(*args, **kwargs)
        if not killed and int(trainer._iteration.numpy()) >= iteration:
            pid = driver.pool.actor_nodes()[actor_index]['pid']
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        return result

    driver.run_iterations = run_then_kill
    return killed


def test_a_killed_actor_process_is_restarted_and_training_goes_on(
        tmp_path, local_ray):
    trainer = AsyncOffPolicyTrainer(_config(str(tmp_path)), env=_env,
                                    num_actors=2, actors='ray')
    killed = _kill_actor_after(trainer, 5, actor_index=1)
    pool = trainer._driver.pool
    try:
        result = trainer.train()
        # Training went on with actor 0 while Ray restarted actor 1 (a new
        # process: TensorFlow import, environments, tracing); it may still
        # be restarting. Once back, it steps again with the weights the
        # pool pushed to it.
        nodes = pool.actor_nodes()
        message = pool.get(timeout=120)
        while message.actor_index != 1:
            message = pool.get(timeout=120)
        stats = pool.stats()
    finally:
        trainer.close()
    assert len(killed) == 1 and nodes[1]['pid'] != killed[0]
    assert result['iterations'] == 40
    _learned(result)
    assert stats['ray/actor_restarts'] == 1
    assert stats['ray/actors_alive'] == 2
    assert message.policy_version >= 5
    assert message.experience.observation.shape == (8, 8, 1)
    assert ray.is_initialized()  # the user's instance is left running


def test_one_death_more_than_max_restarts_stops_naming_the_actor(
        tmp_path, local_ray):
    gin.bind_parameter('RayConfig.max_restarts', 0)
    trainer = AsyncOffPolicyTrainer(
        _config(str(tmp_path), num_iterations=1000), env=_env,
        num_actors=1, actors='ray')
    _kill_actor_after(trainer, 3, actor_index=0)
    try:
        with pytest.raises(EnvironmentStepError) as info:
            trainer.train()
    finally:
        trainer.close()
    message = str(info.value)
    assert ('actor 0 (environments 0-7): its process died and Ray restarts '
            'it no more (RayConfig.max_restarts=0, restarted 0 times)'
            ) in message
    assert 'rerun the same command to resume' in message


def test_an_environment_error_in_an_actor_names_actor_and_error(
        tmp_path, local_ray):
    trainer = AsyncOffPolicyTrainer(
        _config(str(tmp_path), num_iterations=1000), env=_breaking_env,
        num_actors=2, actors='ray')
    try:
        with pytest.raises(EnvironmentStepError) as info:
            trainer.train()
    finally:
        trainer.close()
    message = str(info.value)
    assert 'actor 1 (environments 8-15) failed' in message
    assert 'simulator crashed' in message


def test_settings_and_misuse_are_refused_in_one_line(local_ray):
    with pytest.raises(ValueError, match=r'RayConfig.max_restarts must be '
                       r'>= 0, got -1'):
        RayConfig(max_restarts=-1)
    with pytest.raises(ValueError, match=r"RayConfig.unroll_timeout_secs: "
                       r"expected a number of seconds > 0 or None, got 0"):
        RayConfig(unroll_timeout_secs=0)
    with pytest.raises(TypeError, match=r"RayConfig.address: expected None"):
        RayConfig(address=6379)
    with pytest.raises(TypeError, match=r'RayConfig.num_cpus_per_actor: '
                       r'expected a number'):
        RayConfig(num_cpus_per_actor='1')
    kwargs = dict(unroll_length=8, run_seed=0, algorithm_ctor=_ppo,
                  env_factory=_env, batch_size=8, queue_size=2,
                  learner_variables=[])
    # The local instance has 2 CPUs: 3 actors of 1 CPU would never start.
    with pytest.raises(ValueError, match=r'the Ray cluster has 2 CPUs, the '
                       r'actors reserve 3 '):
        RayActorPool(num_actors=3, **kwargs)
    lock = threading.Lock()
    kwargs['env_factory'] = lambda seed: (lock, _env(seed))
    with pytest.raises(TypeError, match=r'env_factory .* cannot be sent to '
                       r'Ray actors'):
        RayActorPool(num_actors=1, **kwargs)
    with pytest.raises(ValueError, match=r'queue_size must be >= 1, got 0'):
        RayActorPool(num_actors=1, **dict(kwargs, queue_size=0))
    assert ray.is_initialized()  # nothing of the user's Ray was shut down


class _HangsOnce(PolicyUnittestEnv):
    """Sleeps for an hour in its 40th step (a stuck simulator), writing
    the time to ``HANG_MARKER`` first; once the marker exists (a restarted
    actor), it steps normally."""

    marker = None

    def _step(self, action):
        self._calls = getattr(self, '_calls', 0) + 1
        if self._calls == 40 and not os.path.exists(self.marker):
            with open(self.marker, 'w') as f:
                f.write(repr(time.time()))
            time.sleep(3600)
        return super()._step(action)


def _hanging_env(marker):
    def make(seed):
        # Actor 1 (seed != the run's) gets the hanging environment.
        if seed == 0:
            return _env(seed)
        env = _HangsOnce(8, 6, seed=seed)
        env.marker = marker
        return TFPyEnvironment(env)

    return make


def _iteration_times(trainer):
    """``[(time, iteration)]`` after each of the driver's calls."""
    driver = trainer._driver
    original = driver.run_iterations
    times = []

    def run_and_record(*args, **kwargs):
        result = original(*args, **kwargs)
        times.append((time.time(), int(trainer._iteration.numpy())))
        return result

    driver.run_iterations = run_and_record
    return times


def test_a_hung_actor_is_restarted_within_its_timeout_and_others_go_on(
        tmp_path, local_ray, caplog):
    marker = str(tmp_path / 'hung_at')
    gin.bind_parameter('RayConfig.unroll_timeout_secs', 6.0)
    gin.bind_parameter('RayConfig.max_restarts', 1)
    # Trains until the restart has been seen and 10 more calls ran (or
    # 120 s): a fixed iteration count could end before the timeout on a
    # fast, quiet machine.
    trainer = AsyncOffPolicyTrainer(
        _config(str(tmp_path / 'run'), num_iterations=100000),
        env=_hanging_env(marker), num_actors=2, actors='ray')
    times = _iteration_times(trainer)
    pool = trainer._driver.pool
    original, start, seen = trainer._driver.run_iterations, time.time(), []

    def until_restarted(*args, **kwargs):
        result = original(*args, **kwargs)
        if pool.stats()['ray/actor_restarts'] >= 1:
            seen.append(1)
        if len(seen) > 10 or time.time() - start > 120:
            trainer.request_stop()
        return result

    trainer._driver.run_iterations = until_restarted
    try:
        with caplog.at_level('WARNING'):
            result = trainer.train()
        stats = pool.stats()
    finally:
        trainer.close()
    with open(marker) as f:
        hung_at = float(f.read())
    warnings = [r for r in caplog.records
                if 'sent no experience for' in r.getMessage()]
    assert len(warnings) == 1
    # Counted from the request (the check waits while the learner is busy,
    # e.g. tracing, and takes no message).
    assert re.match(
        r'actor 1 \(environments 8-15\) sent no experience for \d+ s '
        r'\(RayConfig.unroll_timeout_secs=6\): its environment may hang; '
        r'killed, Ray restarts it \(restart 1, RayConfig.max_restarts=1\)',
        warnings[0].getMessage())
    dropped_after = warnings[0].created - hung_at
    # Actor 0 went on while actor 1 hung: iterations trained in the
    # timeout that followed the hang.
    during = [i for t, i in times if hung_at < t < warnings[0].created]
    print('hung actor dropped %.1f s after it hung; %d iterations trained '
          'meanwhile' % (dropped_after, len(during)))
    assert 5.5 < dropped_after < 30
    # Training went on (actor 0) while actor 1 restarted.
    after = [i for t, i in times if t > warnings[0].created]
    assert len(after) >= 5
    assert result['iterations'] >= times[-1][1]
    assert stats['ray/actor_restarts'] == 1


def test_a_hang_more_than_max_restarts_stops_naming_the_actor(
        tmp_path, local_ray):
    marker = str(tmp_path / 'hung_at')
    gin.bind_parameter('RayConfig.unroll_timeout_secs', 3.0)
    gin.bind_parameter('RayConfig.max_restarts', 0)
    trainer = AsyncOffPolicyTrainer(
        _config(str(tmp_path / 'run'), num_iterations=100000),
        env=_hanging_env(marker), num_actors=2, actors='ray')
    try:
        with pytest.raises(EnvironmentStepError) as info:
            trainer.train()
        stopped = time.time()
    finally:
        trainer.close()
    with open(marker) as f:
        hung_at = float(f.read())
    assert stopped - hung_at < 30
    assert re.search(
        r'actor 1 \(environments 8-15\) sent no experience for \d+ s '
        r'\(RayConfig.unroll_timeout_secs=3\): its environment may hang; '
        r'Ray restarts it no more \(RayConfig.max_restarts=0\)',
        str(info.value))
    print('stopped %.1f s after the hang' % (stopped - hung_at))
