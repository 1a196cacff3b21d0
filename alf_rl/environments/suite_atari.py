"""Atari 2600 games (ale-py, the ``[atari]`` extra) with the standard
preprocessing of DQN (Mnih et al. 2015) and its successors.

``load('PongNoFrameskip-v4', ...)`` (or ``'ALE/Pong-v5'``) gives a
``GymWrapper`` whose observation is a [84, 84, 4] uint8 stack of the last
four 84x84 grayscale frames, channels last (what ``EncodingNetwork``'s conv
layers take; uint8 is scaled to [0, 1] inside the network, so replay keeps
bytes). Inner to outer, the gymnasium wrappers are:

1. the emulator, made with ``frameskip=1`` and at most 108,000 frames
   (30 minutes of play) per game;
2. ``GameScore``: records each full game's score, the unclipped sum of its
   rewards over all lives (what Atari papers report);
3. gymnasium's ``AtariPreprocessing``: up to ``noop_max`` random no-ops at
   each real reset, the action repeated ``frame_skip`` times with the max
   over the last two frames, grayscale, resized to 84x84 (opencv);
4. ``TimeLimit`` when ``max_episode_steps`` is given (agent steps);
5. for training only, ``EpisodicLife``: the loss of a life ends the
   episode (terminated: no bootstrap), but the next reset continues the
   game with a no-op instead of restarting it;
6. ``FireOnReset`` for games with a FIRE action (Breakout, ...): FIRE is
   pressed after each reset and after each lost life, so that the game
   does not wait for a press the policy has not learnt;
7. for training only, rewards clipped to their sign (-1, 0, 1);
8. ``FrameStackLast``: the last ``frame_stack`` frames, channels last,
   padded at a reset with copies of its first frame.

Evaluation (``evaluation=True``, what ``create_environment(evaluation=
True)`` asks for the trainer's evaluation environment) drops 5 and 7: an
episode is a whole game and its return is the game score.

``PyEnvironment.pop_game_scores()`` hands the finished games' scores to the
trainer, which reports them as ``Metrics/GameScore`` next to the clipped
per-life ``AverageReturn`` of training.

Does not import TensorFlow (subprocess workers load environments).
"""

import collections
from typing import Any, Dict, List, Optional, Tuple

import gymnasium
import numpy as np

from alf_rl.environments import suite_gym
from alf_rl.environments.gym_wrapper import GymWrapper

#: Emulator frames per game at most (30 minutes at 60 frames/s), as in
#: Machado et al. 2018 and gymnasium's v5 ids.
MAX_FRAMES_PER_GAME = 108000


class GameScore(gymnasium.Wrapper):
    """Records each full game's score: the sum of the raw rewards from a
    real reset to the game's end (terminated or truncated), or to the next
    real reset when a wrapper outside cut the game short.

    Wrap the emulator itself (inside frame skipping, life-loss episodes and
    reward clipping) so that the rewards are the game's own.
    """

    def __init__(self, env: gymnasium.Env):
        super().__init__(env)
        self._score = 0.0
        self._steps = 0
        self._scores: List[float] = []

    def reset(self, **kwargs: Any) -> Tuple[Any, Dict[str, Any]]:
        """Ends a game in progress (a cut game counts) and resets."""
        self._end_game()
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, Dict]:
        """Steps the game and adds the reward to its score."""
        observation, reward, terminated, truncated, info = self.env.step(
            action)
        self._score += float(reward)
        self._steps += 1
        if terminated or truncated:
            self._end_game()
        return observation, reward, terminated, truncated, info

    def _end_game(self):
        if self._steps:
            self._scores.append(self._score)
        self._score, self._steps = 0.0, 0

    def pop_game_scores(self) -> List[float]:
        """The scores of the games that ended since the last call."""
        scores, self._scores = self._scores, []
        return scores


def _lives(env: gymnasium.Env) -> int:
    return int(env.unwrapped.ale.lives())


class EpisodicLife(gymnasium.Wrapper):
    """Ends the episode (``terminated``) when a life is lost, for training:
    the value of a state then does not lean on lives still to come. A reset
    after a lost life does one no-op step instead of restarting the game,
    so training still sees the late parts of games; only at the game's end
    (terminated or truncated) does ``reset`` reset the game.
    """

    def __init__(self, env: gymnasium.Env):
        super().__init__(env)
        self._lives = 0
        self._game_over = True

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, Dict]:
        """Steps; ``terminated`` also when the lives went down."""
        observation, reward, terminated, truncated, info = self.env.step(
            action)
        self._game_over = terminated or truncated
        lives = _lives(self.env)
        if 0 < lives < self._lives:
            terminated = True
        self._lives = lives
        return observation, reward, terminated, truncated, info

    def reset(self, **kwargs: Any) -> Tuple[Any, Dict[str, Any]]:
        """Resets the game if it is over, else continues it with a no-op."""
        if self._game_over:
            observation, info = self.env.reset(**kwargs)
        else:
            observation, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                observation, info = self.env.reset(**kwargs)
        self._game_over = False
        self._lives = _lives(self.env)
        return observation, info


class FireOnReset(gymnasium.Wrapper):
    """Presses FIRE after each reset and after each lost life, for games
    that wait for it (their action 1 is 'FIRE'). A FIRE step's reward is
    added to the step that caused it.
    """

    def __init__(self, env: gymnasium.Env):
        super().__init__(env)
        meanings = env.unwrapped.get_action_meanings()
        if len(meanings) < 2 or meanings[1] != 'FIRE':
            raise ValueError("FireOnReset: the game has no FIRE action 1 "
                             "(its actions: %s)" % (meanings, ))
        self._lives = 0

    def reset(self, **kwargs: Any) -> Tuple[Any, Dict[str, Any]]:
        """Resets, then presses FIRE (resetting again if that ends it)."""
        observation, info = self.env.reset(**kwargs)
        observation, _, terminated, truncated, info = self.env.step(1)
        if terminated or truncated:
            observation, info = self.env.reset(**kwargs)
        self._lives = _lives(self.env)
        return observation, info

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, Dict]:
        """Steps; after a lost life that did not end the episode, FIRE."""
        observation, reward, terminated, truncated, info = self.env.step(
            action)
        lives = _lives(self.env)
        if lives < self._lives and not (terminated or truncated):
            observation, fire_reward, terminated, truncated, info = (
                self.env.step(1))
            reward += fire_reward
        self._lives = lives
        return observation, reward, terminated, truncated, info


class FrameStackLast(gymnasium.Wrapper):
    """Stacks the last ``num_frames`` [H, W] frames into [H, W, num_frames]
    (channels last, oldest first); at a reset the stack is filled with
    copies of the first frame.

    Args:
        env: an environment with [H, W] uint8 ``Box`` observations.
        num_frames: frames per observation.
    """

    def __init__(self, env: gymnasium.Env, num_frames: int = 4):
        super().__init__(env)
        space = env.observation_space
        if len(space.shape) != 2:
            raise ValueError("FrameStackLast: expected [H, W] frames, got "
                             "observation shape %s" % (space.shape, ))
        if not isinstance(num_frames, int) or num_frames < 1:
            raise ValueError("FrameStackLast: num_frames must be a positive "
                             "int, got %r" % (num_frames, ))
        self._frames = collections.deque(maxlen=num_frames)
        self.observation_space = gymnasium.spaces.Box(
            low=0, high=255, shape=space.shape + (num_frames, ),
            dtype=space.dtype)

    def _stacked(self) -> np.ndarray:
        return np.stack(self._frames, axis=-1)

    def reset(self, **kwargs: Any) -> Tuple[np.ndarray, Dict[str, Any]]:
        """[H, W, num_frames] copies of the reset frame."""
        observation, info = self.env.reset(**kwargs)
        for _ in range(self._frames.maxlen):
            self._frames.append(observation)
        return self._stacked(), info

    def step(self, action: Any) -> Tuple[np.ndarray, float, bool, bool, Dict]:
        """Steps and pushes the new frame: [H, W, num_frames]."""
        observation, reward, terminated, truncated, info = self.env.step(
            action)
        self._frames.append(observation)
        return self._stacked(), reward, terminated, truncated, info


def atari_wrappers(env: gymnasium.Env, evaluation: bool = False,
                   noop_max: int = 30, frame_skip: int = 4,
                   screen_size: int = 84, frame_stack: int = 4,
                   terminal_on_life_loss: bool = True,
                   clip_reward: bool = True,
                   max_episode_steps: Optional[int] = None) -> gymnasium.Env:
    """Wraps an emulator made with ``frameskip=1`` as the module docstring
    lists; see ``load`` for the arguments.

    Returns:
        The wrapped environment: [screen_size, screen_size, frame_stack]
        uint8 observations.
    """
    import gymnasium.wrappers as wrappers
    env = GameScore(env)
    env = wrappers.AtariPreprocessing(env, noop_max=noop_max,
                                      frame_skip=frame_skip,
                                      screen_size=screen_size,
                                      terminal_on_life_loss=False,
                                      grayscale_obs=True)
    if max_episode_steps is not None and max_episode_steps > 0:
        env = wrappers.TimeLimit(env, int(max_episode_steps))
    if terminal_on_life_loss and not evaluation:
        env = EpisodicLife(env)
    if 'FIRE' in env.unwrapped.get_action_meanings()[1:2]:
        env = FireOnReset(env)
    if clip_reward and not evaluation:
        env = wrappers.TransformReward(env, np.sign)
    return FrameStackLast(env, frame_stack)


def check_env_id(environment_name: str) -> None:
    """Raises ``ValueError`` (one line) unless ``environment_name`` is an
    Atari id without frame skipping that gymnasium knows, with the
    ``[atari]`` extra installed.

    Args:
        environment_name: e.g. ``'PongNoFrameskip-v4'``.
    """
    if not isinstance(environment_name, str) or not (
            environment_name.startswith('ALE/')
            or 'NoFrameskip' in environment_name):
        raise ValueError(
            "suite_atari: expected an Atari id without frame skipping, "
            "e.g. 'PongNoFrameskip-v4' or 'ALE/Pong-v5', got %r" %
            (environment_name, ))
    try:
        import ale_py
        import cv2  # noqa: F401
    except ImportError as e:
        raise ValueError(
            "suite_atari: %r needs the [atari] extra (pip install "
            "'alf_rl[atari]'): %s" % (environment_name, e)) from None
    suite_gym.check_env_id(environment_name)
    # Only errors from the emulator (not its banner, once per game).
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)


def load(environment_name: str,
         seed: Optional[int] = None,
         env_id: int = 0,
         evaluation: bool = False,
         max_episode_steps: Optional[int] = None,
         render_mode: Optional[str] = None,
         noop_max: int = 30,
         frame_skip: int = 4,
         screen_size: int = 84,
         frame_stack: int = 4,
         terminal_on_life_loss: bool = True,
         clip_reward: bool = True,
         discount: float = 1.0,
         **ale_kwargs: Any) -> GymWrapper:
    """Loads an Atari game with the standard preprocessing (module
    docstring). Use it as ``create_environment.env_load_fn =
    @suite_atari.load``.

    Args:
        environment_name: ``'<Game>NoFrameskip-v4'`` (no sticky actions, as
            DQN, SB3 and CleanRL) or ``'ALE/<Game>-v5'`` (sticky actions
            with probability 0.25, Machado et al. 2018).
        seed: seed of the first reset (no-ops, sticky actions).
        env_id: ``TimeStep.env_id``.
        evaluation: whole games with unclipped rewards (no life-loss
            episodes, no clipping).
        max_episode_steps: agent steps per episode at most (``None``: only
            the 108,000-frame limit of a game).
        render_mode: ``'rgb_array'`` to render full-size frames.
        noop_max: at most this many random no-ops at each real reset.
        frame_skip: emulator frames per agent step.
        screen_size: observation height and width.
        frame_stack: frames per observation (the channels).
        terminal_on_life_loss: for training, end an episode at each lost
            life.
        clip_reward: for training, clip rewards to their sign.
        discount: discount of non-terminating steps.
        **ale_kwargs: more arguments of ``gymnasium.make`` (e.g.
            ``repeat_action_probability``, ``full_action_space``).

    Returns:
        An unbatched ``GymWrapper`` with [screen_size, screen_size,
        frame_stack] uint8 observations and a discrete action.

    Raises:
        ValueError: for a non-Atari id or id with frame skipping, or
            without the ``[atari]`` extra (one line each).
    """
    check_env_id(environment_name)
    wrapper_kwargs = dict(
        evaluation=evaluation, noop_max=noop_max, frame_skip=frame_skip,
        screen_size=screen_size, frame_stack=frame_stack,
        terminal_on_life_loss=terminal_on_life_loss,
        clip_reward=clip_reward, max_episode_steps=max_episode_steps)
    ale_kwargs.setdefault('max_num_frames_per_episode', MAX_FRAMES_PER_GAME)
    return suite_gym.load(
        environment_name, max_episode_steps=0,
        gym_env_wrappers=(_Wrap(wrapper_kwargs), ), render_mode=render_mode,
        seed=seed, env_id=env_id, discount=discount, frameskip=1,
        **ale_kwargs)


class _Wrap(object):
    """Picklable ``gym_env -> atari_wrappers(gym_env, **kwargs)``."""

    def __init__(self, kwargs: Dict[str, Any]):
        self._kwargs = kwargs

    def __call__(self, env: gymnasium.Env) -> gymnasium.Env:
        return atari_wrappers(env, **self._kwargs)
