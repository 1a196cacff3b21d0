"""What the offline tests share (importable from tests/offline: pytest
puts a test module's directory on ``sys.path``): CartPole datasets of a
scripted expert, the ``TrainerConfig`` of a short run, and the learning
tests' offline run on the expert's data."""

from typing import Any, Dict, List

import tensorflow as tf

from alf_rl.environments.utils import create_environment
from alf_rl.offline import DatasetWriter
from alf_rl.offline.collection import (
    Exploration,
    collect_episodes,
    episode_return,
)
from alf_rl.trainers import OfflineTrainer, TrainerConfig

#: The dataset's reference returns (CartPole-v1's random policy and 500).
REFERENCES = {'random_return': 22.0, 'expert_return': 500.0}


def expert_policy(time_step: Any, state: Any) -> Any:
    """CartPole's scripted expert: push towards 3 theta + theta_dot (500
    in every episode we measured)."""
    obs = time_step.observation
    action = tf.cast(3.0 * obs[:, 2] + obs[:, 3] > 0, tf.int64)
    return action, state


def expert_dataset(
    path: str, episodes: int, max_steps: int = 0, epsilon: float = 0.1
) -> List[float]:
    """Writes ``episodes`` of the expert taken with ``epsilon`` to a
    dataset at ``path``; returns their returns."""
    env = create_environment(
        'CartPole-v1', 1, seed=3, max_episode_steps=max_steps or None
    )
    recorded = collect_episodes(
        env,
        expert_policy,
        lambda b: (),
        episodes,
        Exploration('epsilon', epsilon),
        seed=3,
    )
    env.close()
    writer = DatasetWriter(
        path, env.observation_spec(), env.action_spec(), dict(REFERENCES)
    )
    for e in recorded:
        writer.add_episode(e)
    writer.flush()
    return [episode_return(e) for e in recorded]


def short_config(
    root: str, iterations: int, algorithm_ctor: Any, **kwargs: Any
) -> TrainerConfig:
    """A seeded ``TrainerConfig`` of ``iterations`` one-iteration calls,
    2 updates of 32 two-step sequences each, a checkpoint every 2;
    ``kwargs`` override."""
    settings = dict(
        root_dir=root,
        algorithm_ctor=algorithm_ctor,
        num_iterations=iterations,
        random_seed=1,
        mini_batch_size=32,
        mini_batch_length=2,
        num_updates_per_train_step=2,
        checkpoint_interval=2,
        summary_interval=1,
        iterations_per_call=1,
    )
    settings.update(kwargs)
    return TrainerConfig(**settings)


def train_on_expert(
    tmp_path: Any, algorithm_ctor: Any, iterations: int, **settings: Any
) -> Dict[str, Any]:
    """Trains ``algorithm_ctor`` offline for ``iterations`` on 5 episodes
    of the expert with epsilon 0.1 (all 500), evaluated greedily at the
    end over 4 CartPole-v1 episodes; returns ``train()``'s result."""
    path = str(tmp_path / 'expert')
    expert_dataset(path, 5)
    trainer = OfflineTrainer(
        short_config(
            str(tmp_path / 'run'),
            iterations,
            algorithm_ctor,
            evaluate=True,
            eval_interval=iterations,
            num_eval_episodes=4,
            summary_interval=100,
            checkpoint_interval=iterations,
            iterations_per_call='auto',
            **settings,
        ),
        dataset=path,
        eval_env=lambda s: create_environment('CartPole-v1', 4, seed=s),
    )
    result = trainer.train()
    trainer.close()
    return result
