"""alf-train as a process: Ctrl-C stops cleanly (after the current call,
with a checkpoint) and the run resumes."""

import os
import re
import signal
import subprocess
import sys
import time

EXAMPLE = os.path.join(os.path.dirname(__file__), '..', 'examples',
                       'ac_cart_pole.gin')


def test_interrupt_exits_cleanly_and_resumes(tmp_path):
    root = str(tmp_path / 'run')
    cmd = [
        sys.executable, '-m', 'alf_rl.bin.train', '--gin_file', EXAMPLE,
        '--root_dir', root,
        '--gin_param', 'TrainerConfig.num_env_steps=100000000',
        '--gin_param', 'TrainerConfig.checkpoint_interval=5',
        '--gin_param', 'TrainerConfig.progress_interval_secs=0.2',
        '--gin_param', 'TrainerConfig.evaluate=False'
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    ckpt = os.path.join(root, 'ckpt', 'latest')
    deadline = time.time() + 120
    while not os.path.exists(ckpt) and time.time() < deadline:
        time.sleep(0.2)
    assert os.path.exists(ckpt), proc.communicate(timeout=5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    # The first Ctrl-C stops after the current call and checkpoints there.
    assert 'rerun the same command to resume' in err
    assert 'Traceback' not in err
    stopped_at = re.search(r'checkpoint was written at iteration (\d+)',
                           err).group(1)
    with open(ckpt) as f:
        assert f.read() == 'ckpt-%s' % stopped_at
    # Resuming from the kept checkpoint works.
    done = subprocess.run(
        cmd[:5] + ['--root_dir', root,
                   '--gin_param', 'TrainerConfig.num_iterations=0',
                   '--gin_param', 'TrainerConfig.num_env_steps=1',
                   '--gin_param', 'TrainerConfig.evaluate=False'],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert 'resumed from' in done.stdout
