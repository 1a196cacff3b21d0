"""Classic-control environments written in TensorFlow ops.

``load(name, batch_size)`` returns a batched ``TFEnvironment`` whose whole
``reset``/``step`` is TensorFlow ops on ``tf.Variable`` state: no
``tf.numpy_function``, no Python state changes while stepping. A rollout of
thousands of environments can therefore run inside one ``tf.while_loop``,
also under ``tf.function(jit_compile=True)``.

Supported ids (gymnasium's physics, constants and time limits):
``CartPole-v1``, ``Pendulum-v1``, ``MountainCar-v0``,
``MountainCarContinuous-v0``, ``Acrobot-v1``; and two that are not
gymnasium's: ``DeepSea-N`` (bsuite's hard-exploration grid of size N,
``DeepSeaDynamics``) and ``PointMass`` (a point moved in a square, for
skill discovery, ``PointMassDynamics``).

Each environment is split in two:

* ``env.dynamics``: a functional core, ``initial_state(batch_size, seed)``,
  ``observation(state)`` and ``transition(state, action) -> (next_state,
  observation, reward, terminated)``, with ``state`` laid out exactly as
  gymnasium's ``env.unwrapped.state`` so the two can be compared step by
  step.
* ``TFDynamicsEnvironment``: the batched environment around it (time limit,
  auto-reset, ``TimeStep``s), with the same specs and ``TimeStep``
  semantics as ``TFPyEnvironment(suite_gym.load(name))``.

Deviations from gymnasium: the physics runs in float32 (gymnasium mixes
float64 in), so a one-step transition agrees to about 1e-6 relative (1e-4
for Acrobot's RK4 at extreme velocities), and long trajectories drift apart
like any chaotic system's; initial states come from Philox (the kernel of
``tf.random.stateless_uniform``, see ``stateless_uniform``), not numpy, so
a seed does not give gymnasium's initial states. The same seed gives the
same states with and without ``jit_compile``.
"""

import math
import random
import re

import numpy as np
import tensorflow as tf

from alf_rl.data_structures import StepType, TimeStep
from alf_rl.environments.tf_environment import TFEnvironment
from alf_rl.specs import BoundedTensorSpec, time_step_spec


_PHILOX = 1  # tf.random.Algorithm.PHILOX.value


def stateless_uniform(shape, seed, low, high):
    """Uniform float32 numbers in [low, high), equal with and without XLA.

    Philox bits from the kernel behind ``tf.random.stateless_uniform``
    (``StatelessRandomUniformFullIntV2``), called directly for two reasons:
    ``tf.random.stateless_uniform``'s floats differ under
    ``jit_compile=True`` for the same non-constant seed (TF 2.21: the CPU
    kernel and XLA map the bits to floats differently, while the uint32
    bits agree), so the floats are made here from 24 bits each; and its seed
    scrambling costs ~15 small ops per call, more than a CartPole step.
    ``seed[0]`` is the Philox key and ``seed[1]`` the high word of its
    128-bit counter, so distinct ``seed[1]`` give disjoint streams.

    Args:
        shape: the output shape, e.g. ``[B, d]``.
        seed: [2] int32 or int64 tensor, a stateless seed.
        low: lower bound, broadcastable to ``shape`` (e.g. a [d] array).
        high: upper bound, likewise.

    Returns:
        A float32 tensor of ``shape``.
    """
    seed = tf.cast(seed, tf.uint64)
    bits = tf.raw_ops.StatelessRandomUniformFullIntV2(
        shape=shape, key=seed[:1],
        counter=tf.stack([tf.constant(0, tf.uint64), seed[1]]),
        alg=_PHILOX, dtype=tf.uint32)
    unit = tf.cast(tf.bitwise.right_shift(bits, 8), tf.float32) * 2.0**-24
    low = np.asarray(low, np.float32)
    return low + (np.asarray(high, np.float32) - low) * unit


def _discrete_action_spec(num_actions):
    """What ``spec_from_gym_space(Discrete(n), 'action')`` gives."""
    return BoundedTensorSpec((), tf.int64, 0, num_actions - 1, 'action')


class Dynamics(object):
    """The functional core of a ``suite_tf`` environment (no state).

    Subclasses set the class attributes and implement ``initial_state``,
    ``observation`` and ``_next_state``; all tensors are batched.

    Attributes:
        name: the gymnasium id, e.g. ``'CartPole-v1'``.
        state_dim: d, the size of the physical state.
        max_episode_steps: gymnasium's registered time limit.
        observation_spec: spec of one observation (as ``suite_gym``'s).
        action_spec: spec of one action (as ``suite_gym``'s).
    """

    name = None
    state_dim = None
    max_episode_steps = None
    observation_spec = None
    action_spec = None

    def initial_state(self, batch_size, seed):
        """Random initial states, drawn as gymnasium's ``reset`` does.

        Args:
            batch_size: B, a Python int.
            seed: [2] int32 or int64 tensor, a stateless seed (see
                ``stateless_uniform``).

        Returns:
            [B, d] float32 states.
        """
        raise NotImplementedError()

    def observation(self, state):
        """The observation gymnasium returns in a state.

        Args:
            state: [B, d] float32.

        Returns:
            [B, ...] float32 observations matching ``observation_spec``.
        """
        raise NotImplementedError()

    def transition(self, state, action):
        """One step of gymnasium's ``step``, for a batch of states.

        Args:
            state: [B, d] float32, laid out as gymnasium's
                ``env.unwrapped.state``.
            action: [B, ...] tensor matching ``action_spec`` (int64 [B] for
                discrete actions, float32 [B, 1] for continuous ones).

        Returns:
            Tuple ``(next_state, observation, reward, terminated)``:
            ``next_state`` [B, d] float32, ``observation`` [B, ...] float32
            (what gymnasium's ``step`` returns), ``reward`` [B] float32,
            ``terminated`` [B] bool.
        """
        next_state, reward, terminated = self._next_state(state, action)
        return (next_state, self.observation(next_state), reward,
                terminated)

    def _next_state(self, state, action):
        """``transition`` without the observation (the environment computes
        the observation once, after selecting reset rows)."""
        raise NotImplementedError()

    def to_gym_state(self, state):
        """One state ([d] numpy) as gymnasium's ``unwrapped.state`` holds it.
        """
        return np.asarray(state, np.float64)


class CartPoleDynamics(Dynamics):
    """``CartPole-v1``: state (x, x_dot, theta, theta_dot), Euler steps.

    Action 1 pushes right with force 10, anything else left. Reward 1 on
    every step (the terminating one included); terminated when
    ``|x| > 2.4`` or ``|theta| > 12 degrees``.
    """

    name = 'CartPole-v1'
    state_dim = 4
    max_episode_steps = 500

    gravity = 9.8
    masscart = 1.0
    masspole = 0.1
    total_mass = masspole + masscart
    length = 0.5  # half the pole's length
    polemass_length = masspole * length
    force_mag = 10.0
    tau = 0.02
    theta_threshold_radians = 12 * 2 * math.pi / 360
    x_threshold = 2.4

    _high = np.array([x_threshold * 2, np.inf, theta_threshold_radians * 2,
                      np.inf], np.float32)
    observation_spec = BoundedTensorSpec((4, ), tf.float32, -_high, _high,
                                         'observation')
    action_spec = _discrete_action_spec(2)
    # |x| > 2.4 or |theta| > 12 degrees ends an episode.
    _termination_bounds = np.array(
        [x_threshold, np.inf, theta_threshold_radians, np.inf], np.float32)

    def initial_state(self, batch_size, seed):
        """[B, 4] float32 from U(-0.05, 0.05)."""
        return stateless_uniform([batch_size, 4], seed, -0.05, 0.05)

    def observation(self, state):
        """[B, 4] float32: the state itself."""
        return state

    def _next_state(self, state, action):
        _, x_dot, theta, theta_dot = tf.unstack(state, axis=1)
        force = tf.where(tf.equal(action, 1), self.force_mag, -self.force_mag)
        costheta = tf.cos(theta)
        sintheta = tf.sin(theta)
        temp = (force + self.polemass_length * tf.square(theta_dot) *
                sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole / self.total_mass *
                           tf.square(costheta)))
        xacc = temp - self.polemass_length / self.total_mass * thetaacc * \
            costheta
        # gymnasium's default "euler" integrator (positions move with the
        # old velocities), as one [B, 4] update: fewer ops than four.
        next_state = state + self.tau * tf.stack(
            [x_dot, xacc, theta_dot, thetaacc], axis=1)
        terminated = tf.reduce_any(
            tf.greater(tf.abs(next_state), self._termination_bounds), axis=1)
        return next_state, tf.ones_like(x_dot), terminated


class PendulumDynamics(Dynamics):
    """``Pendulum-v1``: state (th, thdot); observation (cos, sin, thdot).

    The torque is clipped to [-2, 2]; the reward is ``-(angle_normalize(th)**2
    + 0.1 thdot**2 + 0.001 u**2)`` of the state *before* the step. Never
    terminates. As in gymnasium, ``th`` is not wrapped: it grows while the
    pendulum spins (harmless within the 200-step time limit; without a time
    limit float32 loses precision after ~1e5 revolutions).
    """

    name = 'Pendulum-v1'
    state_dim = 2
    max_episode_steps = 200

    max_speed = 8.0
    max_torque = 2.0
    dt = 0.05
    g = 10.0
    m = 1.0
    l = 1.0  # noqa: E741 (gymnasium's name)

    _high = np.array([1.0, 1.0, max_speed], np.float32)
    observation_spec = BoundedTensorSpec((3, ), tf.float32, -_high, _high,
                                         'observation')
    action_spec = BoundedTensorSpec((1, ), tf.float32, -max_torque,
                                    max_torque, 'action')

    def initial_state(self, batch_size, seed):
        """[B, 2] float32: th from U(-pi, pi), thdot from U(-1, 1)."""
        return stateless_uniform([batch_size, 2], seed, [-math.pi, -1.0],
                                 [math.pi, 1.0])

    def observation(self, state):
        """[B, 3] float32: (cos th, sin th, thdot)."""
        th, thdot = tf.unstack(state, axis=1)
        return tf.stack([tf.cos(th), tf.sin(th), thdot], axis=1)

    def _next_state(self, state, action):
        th, thdot = tf.unstack(state, axis=1)
        u = tf.clip_by_value(action[:, 0], -self.max_torque, self.max_torque)
        # angle_normalize(x) = ((x + pi) mod 2 pi) - pi, with Python's
        # (floor) modulo, which tf.math.floormod matches.
        normalized = tf.math.floormod(th + math.pi, 2 * math.pi) - math.pi
        costs = (tf.square(normalized) + 0.1 * tf.square(thdot) +
                 0.001 * tf.square(u))
        newthdot = thdot + (3 * self.g / (2 * self.l) * tf.sin(th) + 3.0 /
                            (self.m * self.l**2) * u) * self.dt
        newthdot = tf.clip_by_value(newthdot, -self.max_speed,
                                    self.max_speed)
        newth = th + newthdot * self.dt
        terminated = tf.zeros_like(th, tf.bool)
        return tf.stack([newth, newthdot], axis=1), -costs, terminated


class MountainCarDynamics(Dynamics):
    """``MountainCar-v0``: state (position, velocity), 3 discrete pushes.

    Reward -1 per step; terminated when ``position >= 0.5`` and ``velocity
    >= 0``. Hitting the left wall stops a leftward car.
    """

    name = 'MountainCar-v0'
    state_dim = 2
    max_episode_steps = 200

    min_position = -1.2
    max_position = 0.6
    max_speed = 0.07
    goal_position = 0.5
    goal_velocity = 0.0
    force = 0.001
    gravity = 0.0025

    observation_spec = BoundedTensorSpec(
        (2, ), tf.float32, np.array([min_position, -max_speed], np.float32),
        np.array([max_position, max_speed], np.float32), 'observation')
    action_spec = _discrete_action_spec(3)

    def initial_state(self, batch_size, seed):
        """[B, 2] float32: position from U(-0.6, -0.4), velocity 0."""
        position = stateless_uniform([batch_size, 1], seed, -0.6, -0.4)
        return tf.concat([position, tf.zeros_like(position)], axis=1)

    def observation(self, state):
        """[B, 2] float32: the state itself."""
        return state

    def _push(self, action):
        """[B] float32 velocity change from the action."""
        return (tf.cast(action, tf.float32) - 1.0) * self.force

    def _reward(self, action, terminated):
        return tf.fill(tf.shape(terminated), -1.0)

    def _next_state(self, state, action):
        position, velocity = tf.unstack(state, axis=1)
        velocity = velocity + self._push(action) - self.gravity * tf.cos(
            3 * position)
        velocity = tf.clip_by_value(velocity, -self.max_speed, self.max_speed)
        position = tf.clip_by_value(position + velocity, self.min_position,
                                    self.max_position)
        # The comparison is exact: a clipped position equals min_position.
        at_wall = tf.logical_and(tf.equal(position, self.min_position),
                                 tf.less(velocity, 0.0))
        velocity = tf.where(at_wall, 0.0, velocity)
        terminated = tf.logical_and(
            tf.greater_equal(position, self.goal_position),
            tf.greater_equal(velocity, self.goal_velocity))
        return (tf.stack([position, velocity], axis=1),
                self._reward(action, terminated), terminated)


class MountainCarContinuousDynamics(MountainCarDynamics):
    """``MountainCarContinuous-v0``: a continuous push in [-1, 1].

    The velocity changes by ``0.0015 * clip(a, -1, 1)``; the goal is at
    position 0.45; the reward is ``100 * terminated - 0.1 * a**2`` with the
    *unclipped* action, as in gymnasium.
    """

    name = 'MountainCarContinuous-v0'
    max_episode_steps = 999

    goal_position = 0.45
    power = 0.0015

    action_spec = BoundedTensorSpec((1, ), tf.float32, -1.0, 1.0, 'action')

    def _push(self, action):
        return tf.clip_by_value(action[:, 0], -1.0, 1.0) * self.power

    def _reward(self, action, terminated):
        return (tf.where(terminated, 100.0, 0.0) -
                0.1 * tf.square(action[:, 0]))


class AcrobotDynamics(Dynamics):
    """``Acrobot-v1``: state (theta1, theta2, dtheta1, dtheta2).

    Torque ``action - 1`` in {-1, 0, 1} on the second joint; one RK4 step of
    0.2 s with gymnasium's default "book" equations; angles wrapped into
    [-pi, pi], then velocities clipped to +-4 pi and +-9 pi. Observation
    (cos theta1, sin theta1, cos theta2, sin theta2, dtheta1, dtheta2);
    terminated when ``-cos(theta1) - cos(theta1 + theta2) > 1``; reward -1,
    0 on the terminating step.
    """

    name = 'Acrobot-v1'
    state_dim = 4
    max_episode_steps = 500

    dt = 0.2
    link_length_1 = 1.0
    link_mass_1 = 1.0
    link_mass_2 = 1.0
    link_com_pos_1 = 0.5
    link_com_pos_2 = 0.5
    link_moi = 1.0
    max_vel_1 = 4 * math.pi
    max_vel_2 = 9 * math.pi
    g = 9.8

    _high = np.array([1.0, 1.0, 1.0, 1.0, max_vel_1, max_vel_2], np.float32)
    observation_spec = BoundedTensorSpec((6, ), tf.float32, -_high, _high,
                                         'observation')
    action_spec = _discrete_action_spec(3)

    def initial_state(self, batch_size, seed):
        """[B, 4] float32 from U(-0.1, 0.1)."""
        return stateless_uniform([batch_size, 4], seed, -0.1, 0.1)

    def observation(self, state):
        """[B, 6] float32: cos/sin of both angles, then both velocities."""
        theta1, theta2, dtheta1, dtheta2 = tf.unstack(state, axis=1)
        return tf.stack([tf.cos(theta1), tf.sin(theta1), tf.cos(theta2),
                         tf.sin(theta2), dtheta1, dtheta2], axis=1)

    def _derivatives(self, y, torque):
        """d/dt of the state tuple ``y`` ([B] each) under ``torque`` [B]."""
        theta1, theta2, dtheta1, dtheta2 = y
        m1, m2 = self.link_mass_1, self.link_mass_2
        l1, lc1, lc2 = (self.link_length_1, self.link_com_pos_1,
                        self.link_com_pos_2)
        i1 = i2 = self.link_moi
        g = self.g
        cos2, sin2 = tf.cos(theta2), tf.sin(theta2)
        # Constant products are folded in Python; the tensor arithmetic
        # follows gymnasium's _dsdt term by term.
        d1 = (m1 * lc1**2 + m2 * (l1**2 + lc2**2) + i1 + i2 +
              2 * m2 * l1 * lc2 * cos2)
        d2 = m2 * lc2**2 + i2 + m2 * l1 * lc2 * cos2
        phi2 = m2 * lc2 * g * tf.cos(theta1 + theta2 - math.pi / 2.0)
        phi1 = (-m2 * l1 * lc2 * tf.square(dtheta2) * sin2 -
                2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * sin2 +
                (m1 * lc1 + m2 * l1) * g * tf.cos(theta1 - math.pi / 2) +
                phi2)
        ddtheta2 = (torque + d2 / d1 * phi1 -
                    m2 * l1 * lc2 * tf.square(dtheta1) * sin2 - phi2) / (
                        m2 * lc2**2 + i2 - tf.square(d2) / d1)
        ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
        return dtheta1, dtheta2, ddtheta1, ddtheta2

    @staticmethod
    def _wrap(x, low, high):
        """gymnasium's ``wrap``: shifts by whole periods into [low, high]."""
        period = high - low
        up = tf.maximum(tf.math.ceil((low - x) / period), 0.0)
        down = tf.maximum(tf.math.ceil((x - high) / period), 0.0)
        return x + (up - down) * period

    def _next_state(self, state, action):
        y0 = tf.unstack(state, axis=1)
        torque = tf.cast(action, tf.float32) - 1.0  # AVAIL_TORQUE[a]
        dt, dt2 = self.dt, self.dt / 2.0
        # gymnasium's rk4 over t = [0, dt]: a single classic RK4 step.
        k1 = self._derivatives(y0, torque)
        k2 = self._derivatives([y + dt2 * k for y, k in zip(y0, k1)], torque)
        k3 = self._derivatives([y + dt2 * k for y, k in zip(y0, k2)], torque)
        k4 = self._derivatives([y + dt * k for y, k in zip(y0, k3)], torque)
        theta1, theta2, dtheta1, dtheta2 = [
            y + dt / 6.0 * (a + 2 * b + 2 * c + d)
            for y, a, b, c, d in zip(y0, k1, k2, k3, k4)
        ]
        theta1 = self._wrap(theta1, -math.pi, math.pi)
        theta2 = self._wrap(theta2, -math.pi, math.pi)
        dtheta1 = tf.clip_by_value(dtheta1, -self.max_vel_1, self.max_vel_1)
        dtheta2 = tf.clip_by_value(dtheta2, -self.max_vel_2, self.max_vel_2)
        terminated = tf.greater(-tf.cos(theta1) - tf.cos(theta2 + theta1),
                                1.0)
        reward = tf.where(terminated, 0.0, -1.0)
        return (tf.stack([theta1, theta2, dtheta1, dtheta2], axis=1), reward,
                terminated)


class PointMassDynamics(Dynamics):
    """``'PointMass'``: a point in the square [-1, 1]^2 moved by its
    action, for skill discovery (not a gymnasium environment).

    The position changes by ``0.1 * clip(a, -1, 1)`` per step (the walls
    clip it); episodes start within 0.05 of the origin and last 50 steps;
    the reward is 0 (skills come from an intrinsic reward, e.g. DIAYN).
    Observation and state: the position (2,) float32.
    """

    name = 'PointMass'
    state_dim = 2
    max_episode_steps = 50
    step_size = 0.1

    observation_spec = BoundedTensorSpec((2, ), tf.float32, -1.0, 1.0,
                                         'observation')
    action_spec = BoundedTensorSpec((2, ), tf.float32, -1.0, 1.0, 'action')

    def initial_state(self, batch_size, seed):
        """[B, 2] float32 positions from U(-0.05, 0.05)."""
        return stateless_uniform([batch_size, 2], seed, -0.05, 0.05)

    def observation(self, state):
        """[B, 2] float32: the position."""
        return state

    def _next_state(self, state, action):
        position = tf.clip_by_value(
            state + self.step_size * tf.clip_by_value(action, -1.0, 1.0),
            -1.0, 1.0)
        zeros = tf.zeros(tf.shape(state)[:1])
        return position, zeros, tf.cast(zeros, tf.bool)

    def render_frame(self, state):
        """[64, 64, 3] uint8 picture of one state ([2] numpy): the point
        white on dark blue."""
        frame = np.zeros((64, 64, 3), np.uint8)
        frame[:] = (10, 30, 80)
        col, row = [int(round((v + 1.0) / 2.0 * 59)) for v in state[:2]]
        frame[59 - row:59 - row + 5, col:col + 5] = 255
        return frame


class DeepSeaDynamics(Dynamics):
    """bsuite's Deep Sea (Osband et al. 2020), size N: the hard-exploration
    task behind ``'DeepSea-N'`` (not a gymnasium environment).

    An N x N grid; every episode starts in the top-left cell and lasts N
    steps, each moving one row down and one column left or right (walls
    clip). Which of the two actions moves right is drawn per cell once
    (``mapping_seed``), so no fixed action reaches the far side. Moving
    right costs ``0.01 / N``; arriving in the bottom-right cell pays 1. The
    optimal return is ``1 - 0.01``; always moving left returns 0; a
    uniformly random policy finds the reward with probability ``2^-N``.
    The observation is the one-hot cell, ``(N * N,)`` float32 (the
    bottom row's after the last step). State: (row, column) as floats.

    Args:
        size: N >= 2.
        mapping_seed: seed of the per-cell action mapping.
    """

    state_dim = 2

    def __init__(self, size: int = 10, mapping_seed: int = 0):
        if isinstance(size, bool) or not isinstance(
                size, (int, np.integer)) or size < 2:
            raise ValueError("DeepSea: size must be an int >= 2, got %r" %
                             (size, ))
        self.size = int(size)
        self.name = 'DeepSea-%d' % self.size
        self.max_episode_steps = self.size
        self.observation_spec = BoundedTensorSpec(
            (self.size * self.size, ), tf.float32, 0.0, 1.0, 'observation')
        self.action_spec = _discrete_action_spec(2)
        mapping = np.random.RandomState(mapping_seed).randint(
            0, 2, size=(self.size, self.size))
        self._right_action = tf.constant(mapping, tf.int64)

    def initial_state(self, batch_size, seed):
        """[B, 2] float32 zeros: the top-left cell (no randomness)."""
        del seed
        return tf.zeros([batch_size, 2], tf.float32)

    def observation(self, state):
        """[B, N * N] float32 one-hot of the cell (row clipped to N - 1)."""
        n = self.size
        row = tf.minimum(tf.cast(state[:, 0], tf.int32), n - 1)
        return tf.one_hot(row * n + tf.cast(state[:, 1], tf.int32), n * n)

    def _next_state(self, state, action):
        n = self.size
        row = tf.minimum(tf.cast(state[:, 0], tf.int32), n - 1)
        col = tf.cast(state[:, 1], tf.int32)
        right = tf.equal(tf.cast(action, tf.int64),
                         tf.gather_nd(self._right_action,
                                      tf.stack([row, col], axis=1)))
        col = tf.where(right, tf.minimum(col + 1, n - 1),
                       tf.maximum(col - 1, 0))
        row = row + 1
        terminated = tf.greater_equal(row, n)
        reward = (tf.where(right, -0.01 / n, 0.0) + tf.where(
            tf.logical_and(terminated, tf.equal(col, n - 1)), 1.0, 0.0))
        return (tf.cast(tf.stack([row, col], axis=1), tf.float32), reward,
                terminated)

    def render_frame(self, state):
        """[8N, 8N, 3] uint8 picture of one state ([2] numpy): the grid
        dark blue, the treasure gold, the diver white."""
        n = self.size
        frame = np.zeros((n, n, 3), np.uint8)
        frame[:] = (10, 30, 80)
        frame[n - 1, n - 1] = (230, 190, 40)
        row = min(int(state[0]), n - 1)
        frame[row, int(state[1])] = (255, 255, 255)
        return np.kron(frame, np.ones((8, 8, 1), np.uint8))


_DYNAMICS = {
    cls.name: cls
    for cls in (CartPoleDynamics, PendulumDynamics, MountainCarDynamics,
                MountainCarContinuousDynamics, AcrobotDynamics)
}

SUPPORTED_ENVIRONMENTS = tuple(_DYNAMICS)


class TFDynamicsEnvironment(TFEnvironment):
    """A batch of B environments stepped by a ``Dynamics`` in TF ops.

    State lives in ``tf.Variable``s created here: the physical state
    [B, d] float32, the steps taken in the current episode [B] int32, whether
    the last step was LAST [B] bool, and a call counter int64 from which each
    ``reset``/``step`` derives its stateless seed ``[seed, counter]``. The
    same seed and the same sequence of calls give the same ``TimeStep``s.
    ``checkpoint_state()`` holds all of them, so trainers checkpoint the
    environment and a resumed run continues it exactly.

    Every ``step`` computes the next state and a random initial state of
    every environment, and keeps the latter (``tf.where``, no branching)
    for those whose previous step was LAST: they ignore their action row and
    return FIRST (reward 0, discount 1, ``prev_action`` zeros). A ``step``
    before any ``reset`` resets all. ``discount`` is 0 only on termination,
    also when the time limit is hit on the same step; a truncated LAST keeps
    discount 1. The step count after which the time limit truncates is
    gymnasium's ``TimeLimit``'s: the ``max_episode_steps``-th step after a
    reset is LAST.

    Actions are bounds-checked in Python when ``step`` runs eagerly; inside
    ``tf.function`` they are not (a check there would cost a reduction per
    step and XLA drops asserts). Clip them with
    ``specs.cast_and_clip_to_spec``.

    Args:
        dynamics: a ``Dynamics``.
        batch_size: B >= 1.
        seed: int seed; ``None`` draws one from Python's ``random``.
        max_episode_steps: time limit in steps after reset; ``None`` for the
            dynamics' (gymnasium's) default; 0 or negative for none.
    """

    def __init__(self, dynamics, batch_size, seed=None,
                 max_episode_steps=None):
        if not isinstance(dynamics, Dynamics):
            raise TypeError("dynamics must be a suite_tf.Dynamics, got %r" %
                            (dynamics, ))
        if isinstance(batch_size, bool) or not isinstance(
                batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError("batch_size must be an int >= 1, got %r" %
                             (batch_size, ))
        if seed is None:
            seed = random.getrandbits(63)
        elif isinstance(seed, bool) or not isinstance(seed,
                                                      (int, np.integer)):
            raise ValueError("seed must be an int or None, got %r" % (seed, ))
        if max_episode_steps is None:
            max_episode_steps = dynamics.max_episode_steps
        elif isinstance(max_episode_steps, bool) or not isinstance(
                max_episode_steps, (int, np.integer)):
            raise ValueError("max_episode_steps must be an int or None, got "
                             "%r" % (max_episode_steps, ))
        super().__init__(
            time_step_spec(dynamics.observation_spec, dynamics.action_spec),
            dynamics.action_spec, batch_size)
        self._dynamics = dynamics
        self._seed = int(seed) % 2**63
        self._max_episode_steps = (int(max_episode_steps)
                                   if max_episode_steps > 0 else None)
        b, d = self._batch_size, dynamics.state_dim
        self._state = tf.Variable(tf.zeros([b, d], tf.float32),
                                  trainable=False, name='state')
        self._steps = tf.Variable(tf.zeros([b], tf.int32), trainable=False,
                                  name='episode_steps')
        # True: the first step() resets, as TFPyEnvironment's does.
        self._done = tf.Variable(tf.ones([b], tf.bool), trainable=False,
                                 name='done')
        self._counter = tf.Variable(tf.zeros([], tf.int64), trainable=False,
                                    name='rng_counter')
        self._env_id = tf.range(b, dtype=tf.int32)
        self._render_env = None
        # The whole state, for checkpoints (see checkpoint_state()).
        self._checkpoint_state = tf.Module(name='environment_state')
        self._checkpoint_state.state = self._state
        self._checkpoint_state.episode_steps = self._steps
        self._checkpoint_state.done = self._done
        self._checkpoint_state.rng_counter = self._counter

    @property
    def dynamics(self):
        """The ``Dynamics`` (functional core) of this environment."""
        return self._dynamics

    @property
    def seed(self):
        """int, the seed of the initial states."""
        return self._seed

    @property
    def max_episode_steps(self):
        """int time limit, or ``None`` for none."""
        return self._max_episode_steps

    @property
    def physical_state(self):
        """[B, d] float32 tensor: the current states, laid out as
        gymnasium's ``unwrapped.state`` (a snapshot; read-only)."""
        return self._state.value()

    def checkpoint_state(self):
        """The state variables (physical state, episode steps, done flags,
        random-number counter) as one ``tf.Module`` for checkpoints: with
        the driver's last ``TimeStep``, restoring them continues every
        episode exactly (and the initial states of later episodes too).

        Returns:
            The same ``tf.Module`` on every call.
        """
        return self._checkpoint_state

    def _next_seed(self):
        """[2] int64 stateless seed, fresh on every call."""
        counter = self._counter.assign_add(1)
        return tf.stack([tf.constant(self._seed, tf.int64), counter])

    def _reset(self):
        b = self._batch_size
        state = self._dynamics.initial_state(b, self._next_seed())
        self._state.assign(state)
        self._steps.assign(tf.zeros([b], tf.int32))
        self._done.assign(tf.zeros([b], tf.bool))
        return TimeStep(
            step_type=tf.fill([b], StepType.FIRST),
            reward=tf.zeros([b], tf.float32),
            discount=tf.ones([b], tf.float32),
            observation=self._dynamics.observation(state),
            prev_action=tf.zeros([b] + self._action_spec.shape.as_list(),
                                 self._action_spec.dtype),
            env_id=self._env_id)

    def _step(self, action):
        if tf.executing_eagerly():
            self._check_action_bounds(action)
        b = self._batch_size
        done = self._done.value()
        next_state, reward, terminated = self._dynamics._next_state(
            self._state.value(), action)
        # A fresh state for every row, kept where the last step was LAST.
        # (Drawing a pool for just the resetting rows and gathering from it
        # measured 15% faster without XLA but 25% slower with it.)
        fresh = self._dynamics.initial_state(b, self._next_seed())
        next_state = tf.where(done[:, None], fresh, next_state)
        steps = tf.where(done, 0, self._steps + 1)
        running = tf.logical_not(done)
        terminated = tf.logical_and(running, terminated)
        if self._max_episode_steps is None:
            last = terminated
        else:
            last = tf.logical_or(
                terminated,
                tf.logical_and(running,
                               steps >= self._max_episode_steps))
        self._state.assign(next_state)
        self._steps.assign(steps)
        self._done.assign(last)
        # FIRST=0, MID=1, LAST=2.
        step_type = tf.where(done, StepType.FIRST,
                             StepType.MID + tf.cast(last, tf.int32))
        done_action = tf.reshape(done, [b] + [1] *
                                 (action.shape.rank - 1))
        return TimeStep(
            step_type=step_type,
            reward=tf.where(done, 0.0, reward),
            discount=tf.where(terminated, 0.0, 1.0),
            observation=self._dynamics.observation(next_state),
            prev_action=tf.where(done_action, tf.zeros_like(action), action),
            env_id=self._env_id)

    def _check_action_bounds(self, action):
        """Eager only: ValueError if an action lies outside the spec."""
        spec = self._action_spec
        a = action.numpy()
        ok = (a >= spec.minimum) & (a <= spec.maximum)  # False for NaN
        if not ok.all():
            index = tuple(int(i) for i in np.argwhere(~ok)[0])
            raise ValueError(
                "action: value %r at env %d%s outside action_spec bounds "
                "[%s, %s] -- check the policy's output or clip it with "
                "specs.cast_and_clip_to_spec" %
                (a[index].item(), index[0], ', element %s' %
                 (index[1:], ) if index[1:] else '', spec.minimum.min(),
                 spec.maximum.max()))

    def render(self):
        """Environment 0's frame, drawn by gymnasium (eager only).

        Copies environment 0's state into a lazily created gymnasium
        environment (``render_mode='rgb_array'``) and renders it; needs
        gymnasium's classic-control extras (pygame).

        Returns:
            [H, W, 3] uint8 numpy array.
        """
        if hasattr(self._dynamics, 'render_frame'):
            return self._dynamics.render_frame(self._state.numpy()[0])
        if self._render_env is None:
            import gymnasium  # only for drawing; the physics needs none
            env = gymnasium.make(self._dynamics.name, render_mode='rgb_array')
            env.reset(seed=0)
            self._render_env = env
        unwrapped = self._render_env.unwrapped
        unwrapped.state = self._dynamics.to_gym_state(
            self._state.numpy()[0])
        if hasattr(unwrapped, 'last_u'):
            unwrapped.last_u = None  # Pendulum's torque arrow: not tracked
        return self._render_env.render()

    def close(self):
        """Closes the gymnasium environment used by ``render``."""
        if self._render_env is not None:
            self._render_env.close()
            self._render_env = None


def load(name, batch_size, seed=None, max_episode_steps=None,
         check_finite=True):
    """A batched classic-control environment written in TF ops.

    Args:
        name: one of ``SUPPORTED_ENVIRONMENTS`` (gymnasium ids),
            ``'DeepSea-N'`` (``DeepSeaDynamics(N)``), ``'PointMass'``, or a
            MinAtar game ``'MinAtar/<Game>-v0'``/``-v1`` (see
            ``suite_minatar.load``).
        batch_size: B, the number of environments.
        seed: int seed of the initial states; ``None`` for a random one.
        max_episode_steps: time limit; ``None`` for gymnasium's registered
            one (500 CartPole-v1, 200 Pendulum-v1, 200 MountainCar-v0, 999
            MountainCarContinuous-v0, 500 Acrobot-v1, N DeepSea-N, 50
            PointMass); 0 or negative for none.
        check_finite: check every output for NaN/Inf in the graph
            (``TFEnvironment.check_finite``; on by default).

    Returns:
        A ``TFDynamicsEnvironment`` whose specs equal those of
        ``TFPyEnvironment(suite_gym.load(name))``.

    Raises:
        ValueError: for an unsupported ``name`` or a bad argument.
    """
    if str(name).startswith('MinAtar/'):
        from alf_rl.environments import suite_minatar
        return suite_minatar.load(name, batch_size, seed=seed,
                                  max_episode_steps=max_episode_steps)
    deep_sea = re.fullmatch(r'DeepSea-(\d+)', str(name))
    if deep_sea:
        dynamics = DeepSeaDynamics(int(deep_sea.group(1)))
    elif name == PointMassDynamics.name:
        dynamics = PointMassDynamics()
    elif name in _DYNAMICS:
        dynamics = _DYNAMICS[name]()
    else:
        raise ValueError(
            "suite_tf has no environment %r; supported are %s and "
            "DeepSea-N, PointMass, MinAtar/<Game>-v0/v1 (use "
            "suite_gym.load for other gymnasium "
            "ids)" % (name, ', '.join(SUPPORTED_ENVIRONMENTS)))
    env = TFDynamicsEnvironment(dynamics, batch_size, seed=seed,
                                max_episode_steps=max_episode_steps)
    env.check_finite = check_finite
    env.env_name = dynamics.name
    return env
