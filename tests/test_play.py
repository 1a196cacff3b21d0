"""alf-play: restores a run, prints returns, writes a playable GIF; plays
policies exported by alf-export with the checkpoint's returns."""

import os
import re

import gin
import numpy as np
import pytest
from PIL import Image

from alf_rl.bin.export import export
from alf_rl.bin.play import play, write_video
from alf_rl.bin.train import train

EXAMPLE = os.path.join(os.path.dirname(__file__), '..', 'examples',
                       'ac_cart_pole.gin')


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    root = str(tmp_path_factory.mktemp('play') / 'run')
    train(root, [EXAMPLE], [
        'create_environment.num_parallel_environments=2',
        'TrainerConfig.num_env_steps=0', 'TrainerConfig.num_iterations=2',
        'TrainerConfig.evaluate=False',
        # ckpt-1 and ckpt-2, for --checkpoint.
        'TrainerConfig.checkpoint_interval=1'
    ])
    gin.clear_config()
    return root


def test_play_prints_returns_and_writes_gif(run, tmp_path, capsys):
    gif = str(tmp_path / 'out.gif')
    returns = play(run, num_episodes=2, record_file=gif,
                   max_episode_steps=15)
    gin.clear_config()
    assert len(returns) == 2 and all(1 <= r <= 15 for r in returns)
    out = capsys.readouterr().out
    assert 'episode 1: return' in out and 'episode 2: return' in out
    # One frame rendered before every step and one after the last:
    # CartPole's return is its episode length, and one reset step separates
    # the episodes. The line gives the frames in the file (Pillow merges
    # identical consecutive ones) and the number rendered when they differ.
    rendered = int(sum(returns)) + 2
    with Image.open(gif) as image:
        in_file = image.n_frames
        assert image.size == (600, 400)
    assert 2 < in_file <= rendered
    line = re.search(r'wrote (\d+) frames to \S+( \((\d+) rendered; '
                     r'identical consecutive frames merged\))?', out)
    assert line and int(line.group(1)) == in_file, out
    if in_file < rendered:
        assert int(line.group(3)) == rendered
    else:
        assert line.group(2) is None


def test_play_exported_policy_gives_checkpoint_returns(run, tmp_path,
                                                       capsys):
    expected = play(run, num_episodes=3, seed=5)
    gin.clear_config()
    paths = export(run, str(tmp_path / 'policy'), 'both')
    gin.clear_config()
    for path in paths:
        returns = play(run, num_episodes=3, seed=5, policy=path)
        gin.clear_config()
        assert returns == expected, path
    out = capsys.readouterr().out
    assert out.count('playing %s' % paths[1]) == 1
    # The same per-episode lines as from the checkpoint.
    lines = [l for l in out.splitlines() if l.startswith('episode ')]
    assert lines[:3] == lines[3:6] == lines[6:9]


def test_play_stochastic_export_is_seeded(run, tmp_path):
    path = export(run, str(tmp_path / 'stochastic'), 'saved_model',
                  stochastic=True)[0]
    gin.clear_config()
    first = play(run, num_episodes=2, seed=1, policy=path,
                 max_episode_steps=40)
    gin.clear_config()
    again = play(run, num_episodes=2, seed=1, policy=path,
                 max_episode_steps=40)
    gin.clear_config()
    assert first == again and all(1 <= r <= 40 for r in first)


def test_play_policy_errors(run, tmp_path):
    with pytest.raises(ValueError, match='no such file or directory'):
        play(run, policy=str(tmp_path / 'missing.tflite'))
    gin.clear_config()
    with pytest.raises(ValueError, match=r'takes observation \[4\] float32; '
                       r'the environment of this run gives \[6\] float32'):
        # A CartPole policy in an environment with other observations.
        path = export(run, str(tmp_path / 'p'), 'saved_model')[0]
        gin.clear_config()
        play(run, policy=path,
             gin_params=["create_environment.env_name='Acrobot-v1'"])
    gin.clear_config()


def test_play_and_export_a_chosen_checkpoint(run, tmp_path, capsys):
    from alf_rl.utils.checkpoint import Checkpointer
    assert Checkpointer(os.path.join(run, 'ckpt')).checkpoints() == [1, 2]
    for step in (1, 2):
        expected = play(run, num_episodes=2, seed=3, checkpoint=step)
        gin.clear_config()
        assert 'alf-play: restored %s' % os.path.join(
            run, 'ckpt', 'ckpt-%d' % step, 'ckpt') in capsys.readouterr().out
        path = export(run, str(tmp_path / ('p%d' % step)), 'saved_model',
                      checkpoint=step)[0]
        gin.clear_config()
        assert 'ckpt-%d' % step in capsys.readouterr().out
        assert play(run, num_episodes=2, seed=3, policy=path) == expected
        gin.clear_config()
    from alf_rl.utils.checkpoint import CheckpointError
    with pytest.raises(CheckpointError,
                       match=r'no checkpoint 7 in \S+: there are 1, 2$'):
        play(run, checkpoint=7)
    gin.clear_config()
    with pytest.raises(ValueError, match='--checkpoint 1 and --policy'):
        play(run, checkpoint=1, policy=str(tmp_path / 'p1'))


def test_play_without_run_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match='config.gin not found'):
        play(str(tmp_path))


def test_write_video_rejects_unknown_suffix(tmp_path):
    with pytest.raises(ValueError, match='.gif or .mp4'):
        write_video([np.zeros((4, 4, 3), np.uint8)], str(tmp_path / 'x.avi'))


def test_played_environment_is_an_evaluation_environment(run, monkeypatch):
    """alf-play builds the environment the trainer evaluates in (for Atari:
    whole games with unclipped rewards)."""
    import alf_rl.environments.utils as env_utils
    from alf_rl.runs.restore import restore_run
    calls = []
    real = env_utils.create_environment

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(env_utils, 'create_environment', spy)
    env, _ = restore_run(run, restore_algorithm=False)
    env.close()
    gin.clear_config()
    assert calls and calls[0].get('evaluation') is True


def test_mp4_without_ffmpeg_is_a_one_line_error(tmp_path, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, 'imageio_ffmpeg', None)
    with pytest.raises(ValueError, match=r"\[render\] extra"):
        write_video([np.zeros((4, 4, 3), np.uint8)], str(tmp_path / 'x.mp4'))
