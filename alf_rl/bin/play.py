r"""Plays a trained policy greedily, optionally recording a GIF or MP4.

Usage::

    alf-play --root_dir DIR [--num_episodes 5] [--record_file out.gif]
             [--policy EXPORTED]

Loads ``DIR/config.gin`` (the operative config written by ``alf-train``)
and the newest checkpoint in ``DIR/ckpt``, then plays ``--num_episodes``
episodes in one environment with ``algorithm.predict`` and prints each
return. With ``--policy`` it plays a policy written by ``alf-export`` (a
SavedModel directory or a ``.tflite`` file) in the run's environment
instead, and needs no checkpoint; a stochastic export gets its noise from
a generator seeded with ``--random_seed``. Each episode runs in one
compiled loop (``tf.while_loop``), the environment stepped through its
``tf.numpy_function``. ``--record_file`` renders frames with
``render_mode='rgb_array'`` (GIF via Pillow, which merges identical
consecutive frames: the line printed gives the frames in the file; MP4
needs the ``[render]`` extra: imageio + ffmpeg).
"""

import os
import sys
import time
from typing import Any, Callable, List, Optional, Sequence, Tuple

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
    flags.DEFINE_string('policy', None,
                        'Play this exported policy (a SavedModel directory '
                        'or a .tflite file from alf-export) instead of the '
                        'checkpoint.')


def write_video(frames: Sequence[Any], path: str, fps: int = 30) -> int:
    """Writes RGB frames ([H, W, 3] uint8 each) to a .gif or .mp4 file.

    Args:
        frames: list of [H, W, 3] uint8 arrays.
        path: output path; the suffix chooses the format.
        fps: frames per second.

    Returns:
        The number of frames in the file written: for a GIF, Pillow merges
        identical consecutive frames (adding up their durations), so it may
        be fewer than ``len(frames)``.

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
        with Image.open(path) as written:
            return written.n_frames
    elif suffix == '.mp4':
        try:
            import imageio
            import imageio_ffmpeg  # noqa: F401 (imageio's mp4 writer)
        except ImportError as e:
            raise ValueError("writing .mp4 needs the [render] extra "
                             "(pip install 'alf_rl[render]')") from e
        imageio.mimwrite(path, frames, fps=fps)
        return len(frames)
    else:
        raise ValueError("--record_file must end in .gif or .mp4, got %r" %
                         path)


def play(root_dir: str, num_episodes: int = 5,
         record_file: Optional[str] = None, fps: int = 30,
         gin_params: Sequence[str] = (), max_episode_steps: int = 0,
         seed: int = 0, policy: Optional[str] = None) -> List[float]:
    """Plays greedily the newest checkpoint of ``root_dir`` (or an exported
    policy) in the run's environment.

    Args:
        root_dir: a run directory written by ``alf-train`` (``config.gin``
            and ``ckpt/``).
        num_episodes: episodes to play.
        record_file: optional ``.gif``/``.mp4`` path to write the frames to.
        fps: frames per second of the recording.
        gin_params: extra gin bindings, applied after ``config.gin``.
        max_episode_steps: cap on steps per episode (0: the env default).
        seed: seed of the play environment and of the policy's sampling.
        policy: optional exported policy (SavedModel directory or
            ``.tflite`` file from ``alf-export``) to play instead of the
            checkpoint.

    Returns:
        list of per-episode returns (floats).

    Raises:
        ValueError: ``root_dir`` has no ``config.gin``, a bad
            ``record_file`` suffix, or a ``policy`` that cannot be loaded
            or does not take the environment's observation.
        CheckpointError: no checkpoint, or one that does not match.
    """
    import_tensorflow()
    if record_file:
        # Frames come from render_mode='rgb_array'; no window or sound needed.
        os.environ.setdefault('SDL_VIDEODRIVER', 'dummy')
        os.environ.setdefault('SDL_AUDIODRIVER', 'dummy')
    env, algorithm = restore_run(root_dir, bool(record_file), gin_params,
                                 max_episode_steps, seed,
                                 restore_algorithm=policy is None)
    if policy is not None:
        step_fn, initial_state = _exported_policy_fn(policy, env, seed)
        print('alf-play: playing %s' % policy)
    else:
        step_fn, initial_state = _algorithm_policy_fn(algorithm)
    start = time.time()
    frames, returns = _play_episodes(env, step_fn, initial_state,
                                     num_episodes, bool(record_file))
    if record_file:
        written = write_video(frames, record_file, fps)
        merged = (' (%d rendered; identical consecutive frames merged)' %
                  len(frames) if written != len(frames) else '')
        print('alf-play: wrote %d frames to %s%s' % (written, record_file,
                                                     merged))
    env.close()
    print('alf-play: mean return %.2f over %d episodes (%.1f s)' %
          (sum(returns) / len(returns), len(returns), time.time() - start))
    return returns


def restore_run(root_dir: str, render: bool = False,
                gin_params: Sequence[str] = (), max_episode_steps: int = 0,
                seed: int = 0, restore_algorithm: bool = True,
                prog: str = 'alf-play') -> Tuple[Any, Any]:
    """Parses a run's config; builds one environment and the algorithm.

    Args:
        root_dir: a run directory written by ``alf-train``.
        render: build the environment with ``render_mode='rgb_array'``.
        gin_params: extra gin bindings, applied after ``config.gin``.
        max_episode_steps: cap on steps per episode (0: the env default).
        seed: seed of the environment (and of TensorFlow, numpy, Python).
        restore_algorithm: build the algorithm and restore the newest
            checkpoint of ``root_dir/ckpt`` (else the algorithm is None).
        prog: the command named in the "restored" line.

    Returns:
        ``(environment with batch size 1, algorithm or None)``.

    Raises:
        ValueError: ``root_dir`` has no ``config.gin``.
        CheckpointError: no checkpoint, or one that does not match.
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
    # Played as evaluated: whole games with unclipped rewards for Atari.
    env = create_environment(num_parallel_environments=1,
                             seed=seed,
                             use_subprocess=False, evaluation=True)
    if not restore_algorithm:
        return env, None
    config = TrainerConfig()
    algorithm = config.algorithm_ctor(observation_spec=env.observation_spec(),
                                      action_spec=env.action_spec())
    ckpt_dir = os.path.join(root_dir, 'ckpt')
    if not Checkpointer(ckpt_dir).latest_path():
        raise CheckpointError("no checkpoint in %s" % ckpt_dir)
    checkpointer = Checkpointer(ckpt_dir, algorithm=algorithm)
    path = checkpointer.restore()
    print('%s: restored %s' % (prog, path))
    return env, algorithm


def _algorithm_policy_fn(algorithm: Any) -> Tuple[Callable, Callable]:
    """``(step_fn, initial_state_fn)`` of an algorithm's ``predict``."""

    def step_fn(time_step, state):
        step = algorithm.predict(algorithm.transform_timestep(time_step),
                                 state)
        return step.action, step.state

    return step_fn, algorithm.get_initial_predict_state


def _exported_policy_fn(path: str, env: Any,
                        seed: int) -> Tuple[Callable, Callable]:
    """``(step_fn, initial_state_fn)`` of an exported policy.

    Raises:
        ValueError: the policy cannot be loaded, or its inputs are not the
            environment's observation (and state and noise).
    """
    import tensorflow as tf
    from alf_rl.export import LoadedPolicy
    from alf_rl.export.policy_module import named_leaves

    policy = LoadedPolicy(path)
    observations = named_leaves(env.observation_spec(), 'observation')
    actions = named_leaves(env.action_spec(), 'action')
    expected = sorted([n for n, _ in observations] + policy.state_names +
                      [n for n, _ in policy.noise_inputs])
    if expected != policy.input_names:
        raise ValueError(
            "--policy %s takes inputs %s; the environment of this run gives "
            "observations %s: was it exported from another run?" %
            (path, policy.input_names, [n for n, _ in observations]))
    for name, spec in observations:
        shape, dtype = policy.input_spec(name)
        if shape != spec.shape.as_list() or dtype != spec.dtype.as_numpy_dtype:
            raise ValueError(
                "--policy %s takes %s %s %s; the environment of this run "
                "gives %s %s: was it exported from another run?" %
                (path, name, shape, dtype.name, spec.shape.as_list(),
                 spec.dtype.name))
    generator = tf.random.Generator.from_seed(seed)
    initial = policy.initial_state(1)

    def step_fn(time_step, state):
        inputs = dict(zip([n for n, _ in observations],
                          tf.nest.flatten(time_step.observation)))
        inputs.update(state)
        inputs.update(policy.graph_noise(generator, 1))
        outputs = policy.graph_call(inputs)
        action = tf.nest.pack_sequence_as(env.action_spec(),
                                          [outputs[n] for n, _ in actions])
        return action, {n: outputs[n] for n in policy.state_names}

    def initial_state_fn(batch_size):
        del batch_size  # the environment's: 1
        return {n: tf.constant(v) for n, v in initial.items()}

    return step_fn, initial_state_fn


def _play_episodes(env: Any, step_fn: Callable, initial_state_fn: Callable,
                   num_episodes: int,
                   render: bool) -> Tuple[List[Any], List[float]]:
    """Plays a policy in a batch-of-1 environment, one compiled loop per
    episode.

    Args:
        env: the environment (batch size 1).
        step_fn: ``(time_step, state) -> (action, next state)``.
        initial_state_fn: ``batch_size -> state``.
        num_episodes: episodes to play.
        render: render a frame before every step and after the last.

    Returns:
        ``(frames, returns)``: the [H, W, 3] uint8 frames (empty unless
        ``render``), and the per-episode returns.
    """
    import numpy as np
    import tensorflow as tf
    from alf_rl.utils.common import reset_state_if_necessary

    frames = []

    def _render():
        frame = env.render()
        if frame is not None:
            frames.append(frame)
        return np.int32(len(frames))

    @tf.function
    def run_episode(time_step, state):
        # A do-while: the first step leaves the LAST step of the previous
        # episode (the environment resets on it).
        def cond(steps, time_step, state, episode_return):
            return tf.logical_or(tf.equal(steps, 0),
                                 tf.logical_not(time_step.is_last()[0]))

        def body(steps, time_step, state, episode_return):
            if render:
                tf.numpy_function(_render, [], tf.int32, stateful=True)
            state = reset_state_if_necessary(state, initial_state_fn(1),
                                             time_step.is_first())
            action, state = step_fn(time_step, state)
            time_step = env.step(action)
            return (steps + 1, time_step, state,
                    episode_return + time_step.reward[0])

        _, time_step, state, episode_return = tf.while_loop(
            cond, body, (tf.constant(0), time_step, state, tf.constant(0.0)))
        return time_step, state, episode_return

    returns = []
    time_step, state = env.reset(), initial_state_fn(1)
    while len(returns) < num_episodes:
        time_step, state, episode_return = run_episode(time_step, state)
        returns.append(float(episode_return))
        print('episode %d: return %.2f' % (len(returns), returns[-1]),
              flush=True)
    if render:
        _render()
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
             FLAGS.gin_param, FLAGS.max_episode_steps, FLAGS.random_seed,
             FLAGS.policy)
    except (ValueError, CheckpointError) as e:
        print('alf-play: error: %s' % e, file=sys.stderr)
        sys.exit(1)


def main() -> None:
    """Console entry point of ``alf-play``."""
    _define_flags()
    run_app(_main)


if __name__ == '__main__':
    main()
