"""``Model``: one run of one algorithm, driven from Python.

A model is a run directory plus gin settings: the example gin file of its
algorithm family (``Model.example``, e.g. ``examples/ppo_cart_pole.gin``
for ``PPO``) with the environment id, seed and ``bindings`` given here on
top. ``learn`` builds the trainer exactly as ``alf-train`` would (in a gin
configuration of its own, so that models never see each other's
bindings), trains and keeps the trained algorithm for ``predict``.

    model = alf_rl.PPO('CartPole-v1', root_dir='/tmp/ppo')
    model.learn(total_env_steps=20000)
    action, state = model.predict(observation)
    model.save('/tmp/ppo_saved')
    model = alf_rl.load('/tmp/ppo_saved')
"""

import os
import shutil
import tempfile
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from alf_rl.runs.quiet import import_tensorflow
from alf_rl.trainers.gin_scope import own_gin_config


def examples_dir() -> str:
    """The directory of the example gin files (a source checkout's
    ``examples/``)."""
    import alf_rl

    return os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(alf_rl.__file__))),
        'examples',
    )


class Model(object):
    """A run of one algorithm: ``learn``, ``predict``, ``save``.

    Args:
        env: a gymnasium id (bound to ``create_environment.env_name``);
            None: the example's environment.
        root_dir: the run directory (checkpoints, events, ``config.gin``);
            None: a new temporary directory. An existing run there is
            resumed by ``learn``.
        seed: ``TrainerConfig.random_seed``.
        bindings: more gin settings, ``{'PPOLoss.gamma': 0.99, ...}``
            (applied after the example's, as ``--gin_param``).
        gin_files: gin files to use instead of the example.
        module_paths: directories holding user modules the gin files
            import (as ``--module_path``).
    Raises:
        ValueError: no gin file to start from (the example files are not
            there: pass ``gin_files``).
    """

    #: The example gin file the family's defaults come from.
    example = ''

    def __init__(
        self,
        env: Optional[str] = None,
        root_dir: Optional[str] = None,
        seed: int = 0,
        bindings: Optional[Dict[str, Any]] = None,
        gin_files: Sequence[str] = (),
        module_paths: Sequence[str] = (),
    ):
        if not gin_files:
            path = os.path.join(examples_dir(), self.example)
            if not self.example or not os.path.exists(path):
                raise ValueError(
                    '%s: the example gin file %r is not there; pass '
                    'gin_files=[...]' % (type(self).__name__, path)
                )
            gin_files = [path]
        self.root_dir = root_dir or tempfile.mkdtemp(prefix='alf_rl-')
        self._gin_files = list(gin_files)
        self._module_paths = list(module_paths)
        self._params = ['TrainerConfig.random_seed=%d' % seed]
        if env is not None:
            self._params.append('create_environment.env_name=%r' % (env,))
        for name, value in (bindings or {}).items():
            self._params.append('%s=%r' % (name, value))
        self.algorithm: Any = None
        self._specs: Any = None

    def learn(
        self, total_env_steps: int, callbacks: Sequence[Any] = ()
    ) -> Dict[str, Any]:
        """Trains until the run has ``total_env_steps`` environment steps
        (counting those of earlier ``learn`` calls and runs in
        ``root_dir``: a later call resumes from the newest checkpoint).

        Args:
            total_env_steps: the run's step budget
                (``TrainerConfig.num_env_steps``).
            callbacks: ``TrainingCallback`` objects
                (``alf_rl.trainers.callbacks``).
        Returns:
            ``Trainer.train``'s result.
        """
        import_tensorflow(start_runtime=False)
        from alf_rl.runs.training import build_gin_trainer

        params = self._params + [
            'TrainerConfig.num_env_steps=%d' % total_env_steps,
            'TrainerConfig.num_iterations=0',
        ]
        with own_gin_config():
            trainer = build_gin_trainer(
                self.root_dir, self._gin_files, params, self._module_paths
            )
        try:
            result = trainer.train(callbacks)
        finally:
            trainer.close()
        self.algorithm = trainer.algorithm
        self._specs = (
            trainer.env.observation_spec(),
            trainer.env.action_spec(),
        )
        return result

    def predict(
        self,
        observation: Any,
        state: Any = None,
        deterministic: bool = True,
    ) -> Tuple[Any, Any]:
        """The policy's action for one raw observation or a batch of them
        (shaped like the environment's, or [B, ...]), with the run's
        observation transforms and normalizers applied.

        Args:
            observation: a nest of arrays matching the observation spec,
                with or without a leading batch dimension.
            state: the state returned by the previous call (recurrent
                policies), or None at the start of an episode.
            deterministic: the greedy action (``predict``); False samples
                as in training (``rollout``).
        Returns:
            ``(action, state)``: numpy actions (batched as the
            observation was) and the state for the next call.
        Raises:
            ValueError: the model has neither learned nor been loaded.
        """
        if self.algorithm is None:
            raise ValueError(
                '%s.predict: nothing trained yet: call learn() or '
                'alf_rl.load()' % type(self).__name__
            )
        return _predict(
            self.algorithm, self._specs, observation, state, deterministic
        )

    def save(self, path: str) -> str:
        """Copies the run (``config.gin``, ``modules.json``, ``ckpt/``) to
        ``path`` so that ``alf_rl.load(path)`` restores it.

        Returns:
            ``path``.
        Raises:
            ValueError: ``path`` already holds checkpoints (of another
                run: nothing is overwritten).
        """
        source = os.path.abspath(self.root_dir)
        if os.path.abspath(path) == source:
            return path
        if os.path.exists(os.path.join(path, 'ckpt')):
            raise ValueError(
                '%s.save: %s already holds checkpoints; save to a new '
                'directory' % (type(self).__name__, path)
            )
        os.makedirs(path, exist_ok=True)
        for name in ('config.gin', 'modules.json'):
            if os.path.exists(os.path.join(source, name)):
                shutil.copy2(os.path.join(source, name), path)
        shutil.copytree(
            os.path.join(source, 'ckpt'),
            os.path.join(path, 'ckpt'),
            dirs_exist_ok=True,
        )
        return path


def _predict(algorithm, specs, observation, state, deterministic):
    """``Model.predict`` on an algorithm and its ``(observation_spec,
    action_spec)``; the state is ``(policy state, previous action)``."""
    import tensorflow as tf

    from alf_rl.data_structures import StepType, TimeStep
    from alf_rl.specs import zeros_from_spec

    obs_spec, action_spec = specs
    # A list for a single array spec is one leaf (an observation).
    specs = tf.nest.flatten(obs_spec)
    nested = tf.nest.is_nested(obs_spec)
    leaves = tf.nest.flatten(observation) if nested else [observation]
    single = np.ndim(leaves[0]) == len(specs[0].shape)
    observation = tf.nest.pack_sequence_as(
        obs_spec,
        [
            tf.convert_to_tensor(
                np.asarray(x)[None] if single else np.asarray(x), s.dtype
            )
            for x, s in zip(leaves, specs)
        ],
    )
    batch = tf.nest.flatten(observation)[0].shape[0]
    starts = state is None
    if starts:
        initial = (
            algorithm.get_initial_predict_state
            if deterministic
            else algorithm.get_initial_rollout_state
        )
        state = (initial(batch), zeros_from_spec(action_spec, [batch]))
    policy_state, prev_action = state
    step_type = StepType.FIRST if starts else StepType.MID
    time_step = TimeStep(
        step_type=tf.fill([batch], tf.constant(step_type, tf.int32)),
        reward=tf.zeros([batch], tf.float32),
        discount=tf.ones([batch], tf.float32),
        observation=observation,
        prev_action=prev_action,
        env_id=tf.range(batch, dtype=tf.int32),
    )
    time_step = algorithm.transform_timestep(time_step)
    act = algorithm.predict if deterministic else algorithm.rollout
    step = act(time_step, policy_state)
    action = tf.nest.map_structure(
        lambda a: a.numpy()[0] if single else a.numpy(), step.action
    )
    return action, (step.state, step.action)


def load(path: str, module_paths: Sequence[str] = ()) -> Model:
    """Restores a run (``Model.save``'s or any ``alf-train`` run
    directory): its configuration, the user modules it imported and its
    newest checkpoint.

    Args:
        path: the run directory.
        module_paths: directories searched first for the run's user
            modules.
    Returns:
        A ``Model`` ready to ``predict``; its ``learn`` resumes the run
        in ``path``.
    Raises:
        ValueError: no ``config.gin``, or a user module that cannot be
            found (one line).
    """
    import_tensorflow()
    from alf_rl.runs.restore import restore_run

    with own_gin_config():
        env, algorithm = restore_run(
            path, prog='alf_rl.load', module_paths=module_paths
        )
    try:
        specs = (env.observation_spec(), env.action_spec())
    finally:
        env.close()
    model = Model(
        root_dir=path,
        gin_files=[os.path.join(path, 'config.gin')],
        module_paths=module_paths,
    )
    model._params = []  # the seed and the rest are in config.gin
    model.algorithm, model._specs = algorithm, specs
    return model


class A2C(Model):
    """``ActorCriticAlgorithm``: defaults from
    ``examples/ac_cart_pole.gin``."""

    example = 'ac_cart_pole.gin'


class PPO(Model):
    """``PPOAlgorithm``: defaults from
    ``examples/ppo_cart_pole.gin``."""

    example = 'ppo_cart_pole.gin'


class SAC(Model):
    """``SacAlgorithm``: defaults from
    ``examples/sac_pendulum.gin``."""

    example = 'sac_pendulum.gin'


class DDPG(Model):
    """``DdpgAlgorithm``: defaults from
    ``examples/ddpg_pendulum.gin``."""

    example = 'ddpg_pendulum.gin'


class TD3(Model):
    """TD3 (twin critics, delayed actor updates): defaults from
    ``examples/td3_pendulum.gin``."""

    example = 'td3_pendulum.gin'


class DQN(Model):
    """``DqnAlgorithm``: defaults from
    ``examples/dqn_cart_pole.gin``."""

    example = 'dqn_cart_pole.gin'


class MBRL(Model):
    """``MbrlAlgorithm``: defaults from
    ``examples/mbrl_pendulum.gin``."""

    example = 'mbrl_pendulum.gin'
