r"""Plays a trained policy greedily, optionally recording a GIF or MP4.

Usage::

    alf-play --root_dir DIR [--num_episodes 5] [--record_file out.gif]

Loads ``DIR/config.gin`` (the operative config written by ``alf-train``)
and the newest checkpoint in ``DIR/ckpt``, then plays ``--num_episodes``
episodes in one environment with ``algorithm.predict`` and prints each
return. ``--record_file`` renders frames with ``render_mode='rgb_array'``
(GIF via Pillow; MP4 needs the ``[render]`` extra: imageio + ffmpeg).
"""

import os
import sys
import time
from typing import Any, List, Optional, Sequence, Tuple

from absl import app, flags

from alf_rl.bin.quiet import import_tensorflow, run_app

FLAGS = flags.FLAGS


def _define_flags():
    """Defines the command-line flags (only when run as a script)."""
    flags.DEFINE_string('root_dir', None, 'Directory of a training run.')
    flags.DEFINE_integer('num_episodes', 5, 'Episodes to play.')
    flags.DEFINE_string('record_file', None, 'Write frames to this .gif/.mp4.')
    flags.DEFINE_integer('fps', 30, 'Frames per second of the recording.')
    flags.DEFINE_integer('max_episode_steps', 0,
                         'Cap on steps per episode (0: the env default).')
    flags.DEFINE_integer('random_seed', 0, 'Seed of the play environment.')
    flags.DEFINE_multi_string('gin_param', None, 'Extra gin bindings.')


def write_video(frames: Sequence[Any], path: str, fps: int = 30) -> None:
    """Writes RGB frames ([H, W, 3] uint8 each) to a .gif or .mp4 file.

    Args:
        frames: list of [H, W, 3] uint8 arrays.
        path: output path; the suffix chooses the format.
        fps: frames per second.

    Raises:
        ValueError: no frames, an unknown suffix, or ``.mp4`` without
            imageio.
    """
    if not frames:
        raise ValueError("no frames to write to %s" % path)
    suffix = os.path.splitext(path)[1].lower()
    if suffix == '.gif':
        from PIL import Image
        images = [Image.fromarray(f) for f in frames]
        images[0].save(path,
                       save_all=True,
                       append_images=images[1:],
                       duration=max(int(1000 / fps), 20),
                       loop=0)
    elif suffix == '.mp4':
        try:
            import imageio
        except ImportError as e:
            raise ValueError("writing .mp4 needs the [render] extra "
                             "(pip install 'alf_rl[render]')") from e
        imageio.mimwrite(path, frames, fps=fps)
    else:
        raise ValueError("--record_file must end in .gif or .mp4, got %r" %
                         path)


def play(root_dir: str, num_episodes: int = 5,
         record_file: Optional[str] = None, fps: int = 30,
         gin_params: Sequence[str] = (), max_episode_steps: int = 0,
         seed: int = 0) -> List[float]:
    """Restores the newest checkpoint of ``root_dir`` and plays greedily.

    Args:
        root_dir: a run directory written by ``alf-train`` (``config.gin``
            and ``ckpt/``).
        num_episodes: episodes to play.
        record_file: optional ``.gif``/``.mp4`` path to write the frames to.
        fps: frames per second of the recording.
        gin_params: extra gin bindings, applied after ``config.gin``.
        max_episode_steps: cap on steps per episode (0: the env default).
        seed: seed of the play environment and of the policy's sampling.

    Returns:
        list of per-episode returns (floats).

    Raises:
        ValueError: ``root_dir`` has no ``config.gin``, or a bad
            ``record_file`` suffix.
        CheckpointError: no checkpoint, or one that does not match.
    """
    import_tensorflow()
    if record_file:
        # Frames come from render_mode='rgb_array'; no window or sound needed.
        os.environ.setdefault('SDL_VIDEODRIVER', 'dummy')
        os.environ.setdefault('SDL_AUDIODRIVER', 'dummy')
    env, algorithm = _restore(root_dir, bool(record_file), gin_params,
                              max_episode_steps, seed)
    start = time.time()
    frames, returns = _play_episodes(env, algorithm, num_episodes,
                                     bool(record_file))
    if record_file:
        write_video(frames, record_file, fps)
        print('alf-play: wrote %d frames to %s' % (len(frames), record_file))
    env.close()
    print('alf-play: mean return %.2f over %d episodes (%.1f s)' %
          (sum(returns) / len(returns), len(returns), time.time() - start))
    return returns


def _restore(root_dir: str, render: bool, gin_params: Sequence[str],
             max_episode_steps: int, seed: int) -> Tuple[Any, Any]:
    """Parses the run's config; builds one environment and the algorithm.

    Returns:
        ``(environment, algorithm)``, the algorithm restored from the
        newest checkpoint of ``root_dir/ckpt``.
    """
    import gin
    import alf_rl.configurables  # noqa: F401
    from alf_rl.environments.utils import create_environment
    from alf_rl.trainers.trainer import TrainerConfig
    from alf_rl.utils.checkpoint import Checkpointer, CheckpointError
    from alf_rl.utils.common import set_random_seed

    config_file = os.path.join(root_dir, 'config.gin')
    if not os.path.exists(config_file):
        raise ValueError("%s not found: is %s a root_dir written by "
                         "alf-train?" % (config_file, root_dir))
    bindings = list(gin_params or [])
    if render:
        bindings.append("create_environment.render_mode='rgb_array'")
    if max_episode_steps:
        bindings.append('create_environment.max_episode_steps=%d' %
                        max_episode_steps)
    gin.parse_config_files_and_bindings([config_file], bindings,
                                        finalize_config=False)
    set_random_seed(seed)
    env = create_environment(num_parallel_environments=1,
                             seed=seed,
                             use_subprocess=False)
    config = TrainerConfig()
    algorithm = config.algorithm_ctor(observation_spec=env.observation_spec(),
                                      action_spec=env.action_spec())
    ckpt_dir = os.path.join(root_dir, 'ckpt')
    if not Checkpointer(ckpt_dir).latest_path():
        raise CheckpointError("no checkpoint in %s" % ckpt_dir)
    checkpointer = Checkpointer(ckpt_dir, algorithm=algorithm)
    path = checkpointer.restore()
    print('alf-play: restored %s' % path)
    return env, algorithm


def _play_episodes(env: Any, algorithm: Any, num_episodes: int,
                   render: bool) -> Tuple[List[Any], List[float]]:
    """Plays ``algorithm.predict`` in a batch-of-1 environment.

    Returns:
        ``(frames, returns)``: the [H, W, 3] uint8 frames rendered before
        every step and after the last (empty unless ``render``), and the
        per-episode returns.
    """
    import tensorflow as tf
    from alf_rl.utils.common import reset_state_if_necessary

    @tf.function
    def predict_step(time_step, state):
        state = reset_state_if_necessary(
            state, algorithm.get_initial_predict_state(1),
            time_step.is_first())
        return algorithm.predict(algorithm.transform_timestep(time_step),
                                 state)

    frames, returns = [], []
    time_step = env.reset()
    state = algorithm.get_initial_predict_state(1)
    episode_return = 0.0
    while len(returns) < num_episodes:
        if render:
            frame = env.render()
            if frame is not None:
                frames.append(frame)
        policy_step = predict_step(time_step, state)
        state = policy_step.state
        time_step = env.step(policy_step.action)
        episode_return += float(time_step.reward[0])
        if bool(time_step.is_last()[0]):
            returns.append(episode_return)
            print('episode %d: return %.2f' % (len(returns), episode_return),
                  flush=True)
            episode_return = 0.0
    if render:
        frame = env.render()
        if frame is not None:
            frames.append(frame)
    return frames, returns


def _main(argv):
    if len(argv) > 1:
        raise app.UsageError('unexpected arguments: %s' % argv[1:])
    import_tensorflow()
    if not FLAGS.root_dir:
        raise app.UsageError('--root_dir is required')
    from alf_rl.utils.checkpoint import CheckpointError
    try:
        play(FLAGS.root_dir, FLAGS.num_episodes, FLAGS.record_file, FLAGS.fps,
             FLAGS.gin_param, FLAGS.max_episode_steps, FLAGS.random_seed)
    except (ValueError, CheckpointError) as e:
        print('alf-play: error: %s' % e, file=sys.stderr)
        sys.exit(1)


def main() -> None:
    """Console entry point of ``alf-play``."""
    _define_flags()
    run_app(_main)


if __name__ == '__main__':
    main()
