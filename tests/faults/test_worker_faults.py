"""Workers as a user's faulty or gin-configured environment meets them
(issue 26, points 3 and 5).

- point 5: with ``use_subprocess=True`` the workers see the learner's gin
  bindings, so a user's ``@gin.configurable`` ``env_load_fn`` (from a user
  module, as ``--module_path`` provides it) is bound as in-process;
- a worker whose parent is gone (killed, or aborted by a second Ctrl-C)
  ends itself, also while its environment hangs;
- point 3: ``alf-train`` with an in-process environment that hangs in its
  step: the first Ctrl-C asks for a stop (which cannot come: the main
  thread is inside the compiled step), the second aborts within seconds
  with one line, and the checkpoints written before are intact.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import gin
import numpy as np
import pytest

_USER_MODULE = textwrap.dedent('''
    """A user's environment module (found through --module_path)."""
    import os
    import time

    import gin

    from alf_rl.environments import suite_gym

    LOADED = []


    @gin.configurable
    def capped_cart_pole(env_name, seed=0, env_id=0, episode_cap=50,
                         hang_after=None, marker=None):
        """CartPole whose episodes end after ``episode_cap`` steps; with
        ``hang_after`` its steps from that one on sleep for an hour."""
        LOADED.append(episode_cap)
        env = suite_gym.load(env_name, seed=seed, env_id=env_id,
                             max_episode_steps=episode_cap)
        if hang_after is not None:
            flat_step, count = env._flat_step, [0]

            def _step(action):
                count[0] += 1
                if count[0] == hang_after and marker:
                    open(marker, 'w').close()
                if count[0] >= hang_after:
                    time.sleep(3600)
                return flat_step(action)

            env._flat_step = _step
        return env


    def loaded(env):
        """What this process's loader was called with."""
        return list(LOADED), os.getpid()
''')


@pytest.fixture(scope='module')
def user_module(tmp_path_factory):
    """``modules/user_envs.py``, importable here (as ``--module_path``
    makes it for ``alf-train``); its directory. Imported once: gin refuses
    to register its configurable twice."""
    directory = tmp_path_factory.mktemp('modules')
    (directory / 'user_envs.py').write_text(_USER_MODULE)
    sys.path.insert(0, str(directory))
    yield str(directory)
    sys.path.remove(str(directory))


# ---------------------------------------------------------------- point 5
@pytest.mark.parametrize('use_subprocess, explicit', [
    (False, False), (True, True), (True, False)])
def test_user_configurable_env_load_fn_is_bound_in_subprocess_workers(
        user_module, use_subprocess, explicit):
    from alf_rl.environments import create_environment
    from alf_rl.utils.worker_config import WorkerConfig
    gin.parse_config('import user_envs\n'
                     'capped_cart_pole.episode_cap = 3\n'
                     'create_environment.env_load_fn = @capped_cart_pole\n')
    config = WorkerConfig.capture(module_paths=[user_module])
    assert config.module_paths[0] == user_module
    assert 'capped_cart_pole.episode_cap = 3' in config.gin_config
    env = create_environment('CartPole-v1', 2, seed=0,
                             use_subprocess=use_subprocess,
                             worker_config=config if explicit else None)
    try:
        py_env = env.pyenv
        steps = [py_env.reset()]
        for _ in range(3):
            steps.append(py_env.step(np.zeros(2, np.int64)))
        if use_subprocess:
            user_envs = sys.modules['user_envs']
            answers = [py_env.call(i, user_envs.loaded) for i in range(2)]
            # Each worker's loader ran with the bound value, in its own
            # process.
            assert [a[0] for a in answers] == [[3], [3]]
            assert {a[1] for a in answers}.isdisjoint({os.getpid()})
    finally:
        env.close()
    # Episodes of 3 steps, as bound (the default, 50, would give MIDs).
    assert [s.step_type.tolist() for s in steps] == [
        [0, 0], [1, 1], [1, 1], [2, 2]]


def test_workers_use_the_gin_scope_they_were_created_under(user_module):
    from alf_rl.environments.parallel_environment import \
        ParallelPyEnvironment
    import functools
    import user_envs
    gin.parse_config('import user_envs\n'
                     'capped_cart_pole.episode_cap = 7\n'
                     'eval/capped_cart_pole.episode_cap = 2\n')
    with gin.config_scope('eval'):
        env = ParallelPyEnvironment([functools.partial(
            user_envs.capped_cart_pole, 'CartPole-v1')])
    try:
        assert env.call(0, user_envs.loaded)[0] == [2]
    finally:
        env.close()


def test_a_worker_ends_itself_when_its_parent_is_killed(tmp_path,
                                                        user_module):
    # A parent that builds a worker whose environment hangs, then is
    # SIGKILLed: the worker must not stay behind.
    marker = str(tmp_path / 'hanging')
    script = textwrap.dedent('''
        import functools, sys, time
        import numpy as np
        import user_envs
        from alf_rl.environments.parallel_environment import \\
            ParallelPyEnvironment
        env = ParallelPyEnvironment([functools.partial(
            user_envs.capped_cart_pole, 'CartPole-v1', hang_after=1,
            marker=%r)], step_timeout=None)
        print(env.pids[0], flush=True)
        env.reset()
        env.step(np.zeros(1, np.int64))
    ''' % marker)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [user_module] + [p for p in sys.path if p]))
    parent = subprocess.Popen([sys.executable, '-c', script], env=env,
                              stdout=subprocess.PIPE, text=True)
    try:
        worker = int(parent.stdout.readline())
        deadline = time.monotonic() + 60
        while not os.path.exists(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert os.path.exists(marker), 'the environment never hung'
        parent.kill()
        parent.wait(timeout=10)
        start = time.monotonic()
        while _alive(worker) and time.monotonic() - start < 10:
            time.sleep(0.1)
        assert not _alive(worker)
        assert time.monotonic() - start < 5
    finally:
        parent.kill()
        parent.wait()


def _alive(pid):
    """Whether ``pid`` runs (a zombie reparented to init counts as gone)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().split(') ')[-1][0] != 'Z'
    except OSError:
        return False


# ---------------------------------------------------------------- point 3
def _checkpoints(root):
    """``{step: complete}`` of the checkpoints under ``root/ckpt``."""
    ckpt = os.path.join(root, 'ckpt')
    names = os.listdir(ckpt) if os.path.isdir(ckpt) else []
    return {int(n[5:]): os.path.exists(os.path.join(ckpt, n, 'ckpt.index'))
            for n in names if n.startswith('ckpt-') and n[5:].isdigit()}


@pytest.mark.parametrize('first, second, code', [
    (signal.SIGINT, signal.SIGINT, 130), (signal.SIGTERM, signal.SIGTERM, 143)])
def test_second_signal_aborts_at_once_while_an_in_process_env_hangs(
        tmp_path, user_module, first, second, code):
    root = str(tmp_path / 'run')
    marker = str(tmp_path / 'hanging')
    gin_file = os.path.join(os.path.dirname(__file__), '..', '..',
                            'examples', 'ac_cart_pole.gin')
    # One environment stepped in this process (no subprocess workers); it
    # hangs in its 30th step, after checkpoints of iterations 1-6.
    cmd = [sys.executable, '-m', 'alf_rl.bin.train', '--gin_file', gin_file,
           '--root_dir', root, '--module_path', user_module,
           '--gin_param', 'import user_envs',
           '--gin_param', 'create_environment.env_load_fn=@capped_cart_pole',
           '--gin_param', 'create_environment.num_parallel_environments=1',
           '--gin_param', 'create_environment.use_subprocess=False',
           '--gin_param', 'capped_cart_pole.hang_after=30',
           '--gin_param', 'capped_cart_pole.marker=%r' % marker,
           '--gin_param', 'TrainerConfig.unroll_length=4',
           '--gin_param', 'TrainerConfig.iterations_per_call=1',
           '--gin_param', 'TrainerConfig.checkpoint_interval=1',
           '--gin_param', 'TrainerConfig.evaluate=False']
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not os.path.exists(marker) and time.monotonic() < deadline \
                and proc.poll() is None:
            time.sleep(0.2)
        assert os.path.exists(marker), proc.communicate(timeout=10)
        before = _checkpoints(root)
        proc.send_signal(first)
        time.sleep(2.0)
        # The stop cannot come (the step never returns): still running.
        assert proc.poll() is None
        start = time.monotonic()
        proc.send_signal(second)
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - start
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert took < 5.0, took
    assert proc.returncode == code, err
    name = 'SIGTERM' if first == signal.SIGTERM else 'Ctrl-C'
    lines = [line for line in err.splitlines() if line.startswith('alf-train')]
    assert lines == [
        'alf-train: %s: stopping after the current iteration(s) and writing '
        'a checkpoint (%s again to abort at once)' % (name, name),
        'alf-train: %s again: aborting at once; the checkpoints already '
        'written are intact: rerun the same command to resume from the '
        'last one' % name], err
    assert 'Traceback' not in err
    # What was on disk is still there and complete.
    after = _checkpoints(root)
    assert before and all(before.values()) and after == before
    with open(os.path.join(root, 'ckpt', 'latest')) as f:
        assert f.read() == 'ckpt-%d' % max(before)
    print('aborted %.2f s after the second signal' % took)
