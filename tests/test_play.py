"""alf-play: restores a run, prints returns, writes a playable GIF."""

import os

import gin
import numpy as np
import pytest
from PIL import Image

from alf_rl.bin.play import play, write_video
from alf_rl.bin.train import train
from alf_rl.utils.checkpoint import CheckpointError

EXAMPLE = os.path.join(os.path.dirname(__file__), '..', 'examples',
                       'ac_cart_pole.gin')


def test_play_prints_returns_and_writes_gif(tmp_path, capsys):
    root = str(tmp_path / 'run')
    train(root, [EXAMPLE], [
        'create_environment.num_parallel_environments=2',
        'TrainerConfig.num_env_steps=0', 'TrainerConfig.num_iterations=2',
        'TrainerConfig.evaluate=False'
    ])
    gin.clear_config()
    gif = str(tmp_path / 'out.gif')
    returns = play(root, num_episodes=2, record_file=gif,
                   max_episode_steps=15)
    assert len(returns) == 2 and all(1 <= r <= 15 for r in returns)
    out = capsys.readouterr().out
    assert 'episode 1: return' in out and 'episode 2: return' in out
    # One frame before every step and one after the last: CartPole's return
    # is its episode length, and one reset step separates the episodes.
    assert 'wrote %d frames' % (int(sum(returns)) + 2) in out
    with Image.open(gif) as image:
        # Pillow merges identical consecutive frames, so <= frames written.
        assert 2 < image.n_frames <= int(sum(returns)) + 2
        assert image.size == (600, 400)


def test_play_without_run_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match='config.gin not found'):
        play(str(tmp_path))


def test_write_video_rejects_unknown_suffix(tmp_path):
    with pytest.raises(ValueError, match='.gif or .mp4'):
        write_video([np.zeros((4, 4, 3), np.uint8)], str(tmp_path / 'x.avi'))
