r"""Plays a trained policy greedily, optionally recording a GIF or MP4.

Usage::

    alf-play --root_dir DIR [--num_episodes 5] [--record_file out.gif]
             [--checkpoint N | --policy EXPORTED]

Loads ``DIR/config.gin`` (the operative config written by ``alf-train``)
and the newest checkpoint in ``DIR/ckpt`` (``--checkpoint N``: the one
written at iteration N, ``DIR/ckpt/ckpt-N``), then plays ``--num_episodes``
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
import time
from typing import Any, Callable, List, Optional, Sequence, Tuple

from absl import app, flags

from alf_rl.runs.commands import run_command
from alf_rl.runs.quiet import import_tensorflow, run_app
from alf_rl.runs.restore import restore_run
from alf_rl.runs.video import write_video

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
    flags.DEFINE_multi_string(
        'module_path', None,
        'Directory searched first for the user modules the run imported '
        '(recorded in root_dir/modules.json); repeatable.')
    flags.DEFINE_string('policy', None,
                        'Play this exported policy (a SavedModel directory, '
                        'a .tflite or a .onnx file from alf-export) instead '
                        'of the checkpoint.')
    flags.DEFINE_integer('checkpoint', None,
                         'Play the checkpoint written at this training '
                         'iteration (root_dir/ckpt/ckpt-N) instead of the '
                         'newest.')


def play(root_dir: str, num_episodes: int = 5,
         record_file: Optional[str] = None, fps: int = 30,
         gin_params: Sequence[str] = (), max_episode_steps: int = 0,
         seed: int = 0, policy: Optional[str] = None,
         module_paths: Sequence[str] = (),
         checkpoint: Optional[int] = None) -> List[float]:
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
        module_paths: directories searched first for the user modules the
            run imported (then where they were when it trained, then the
            current directory).
        checkpoint: play ``ckpt/ckpt-<checkpoint>`` (written at that
            training iteration) instead of the newest checkpoint.

    Returns:
        list of per-episode returns (floats).

    Raises:
        ValueError: ``root_dir`` has no ``config.gin``, a bad
            ``record_file`` suffix, a ``policy`` that cannot be loaded
            or does not take the environment's observation, or both
            ``policy`` and ``checkpoint``.
        CheckpointError: no checkpoint (or not ``checkpoint``), or one
            that does not match.
    """
    if policy is not None and checkpoint is not None:
        raise ValueError('--checkpoint %d and --policy %s: play one of them '
                         '(an exported policy has no checkpoint)'
                         % (checkpoint, policy))
    import_tensorflow()
    if record_file:
        # Frames come from render_mode='rgb_array'; no window or sound needed.
        os.environ.setdefault('SDL_VIDEODRIVER', 'dummy')
        os.environ.setdefault('SDL_AUDIODRIVER', 'dummy')
    env, algorithm = restore_run(root_dir, bool(record_file), gin_params,
                                 max_episode_steps, seed,
                                 restore_algorithm=policy is None,
                                 module_paths=module_paths,
                                 checkpoint=checkpoint)
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

    returns: List[float] = []
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
    if not FLAGS.root_dir:
        raise app.UsageError('--root_dir is required')
    run_command('alf-play', lambda: play(
        FLAGS.root_dir, FLAGS.num_episodes, FLAGS.record_file, FLAGS.fps,
        FLAGS.gin_param, FLAGS.max_episode_steps, FLAGS.random_seed,
        FLAGS.policy, FLAGS.module_path or (), FLAGS.checkpoint))


def main() -> None:
    """Console entry point of ``alf-play``."""
    _define_flags()
    run_app(_main)


if __name__ == '__main__':
    main()
