"""Callbacks: called at the start and end of training, after each call of
iterations, each evaluation and each checkpoint; a stop request ends the
run cleanly with a checkpoint; one that raises is named, a checkpoint
kept; gin configures them too."""

import os

import pytest

from alf_rl.bin.train import train
from alf_rl.trainers.callbacks import (
    Callback,
    CallbackError,
    CallbackList,
    StopAtAverageReturn,
    TrainingCallback,
)

AC = os.path.join(
    os.path.dirname(__file__), '..', '..', 'examples', 'ac_cart_pole.gin'
)
SHORT = [
    'create_environment.num_parallel_environments=2',
    'TrainerConfig.num_env_steps=0',
    'TrainerConfig.num_iterations=10',
    'TrainerConfig.iterations_per_call=1',
    'TrainerConfig.eval_interval=2',
    'TrainerConfig.num_eval_episodes=2',
    'TrainerConfig.checkpoint_interval=2',
    'create_environment.max_episode_steps=20',
]


class Recorder(Callback):
    """Records every hook; asks to stop once ``stop_at`` is reached."""

    def __init__(self, stop_at=None):
        self.calls, self.stop_at = [], stop_at

    def on_training_start(self, iteration):
        self.calls.append(('start', iteration))

    def on_iterations_end(self, iteration, metrics):
        assert 'Metrics/AverageReturn' in metrics and 'loss/total' in metrics
        self.calls.append(('iterations', iteration))
        return self.stop_at is not None and iteration >= self.stop_at

    def on_evaluation_end(self, iteration, metrics):
        self.calls.append(
            ('eval', iteration, metrics['Metrics/AverageEpisodeLength'])
        )

    def on_checkpoint(self, iteration):
        self.calls.append(('ckpt', iteration))

    def on_training_end(self, result):
        self.calls.append(('end', result['iterations']))


class Boom(Callback):
    def on_iterations_end(self, iteration, metrics):
        if iteration == 3:
            raise ValueError('boom at %d' % iteration)


def test_hooks_in_order_and_a_stop_request_ends_cleanly(tmp_path):
    recorder = Recorder(stop_at=3)
    result = train(str(tmp_path / 'run'), [AC], SHORT, callbacks=[recorder])
    assert result['iterations'] == 3 and not result['stopped_early']
    calls = [c[:2] for c in recorder.calls]
    assert calls == [
        ('start', 0),
        ('iterations', 1),
        ('iterations', 2),
        ('eval', 2),
        ('ckpt', 2),
        ('iterations', 3),
        ('eval', 3),
        ('ckpt', 3),
        ('end', 3),
    ]
    assert all(1 <= c[2] <= 20 for c in recorder.calls if c[0] == 'eval')
    assert os.path.exists(
        str(tmp_path / 'run' / 'ckpt' / 'ckpt-3' / 'ckpt.index')
    )


def test_a_callback_that_raises_is_named_and_a_checkpoint_kept(tmp_path):
    with pytest.raises(CallbackError) as raised:
        train(str(tmp_path / 'run'), [AC], SHORT, callbacks=[Boom()])
    error = raised.value
    assert str(error).startswith(
        'callback Boom.on_iterations_end raised ValueError: boom at 3'
    )
    assert error.callback == 'Boom' and error.kind == 'callback'
    assert isinstance(error.__cause__, ValueError)
    assert error.checkpoint is not None
    assert os.path.exists(error.checkpoint + '.index'), error.checkpoint
    assert '/ckpt-3/' in error.checkpoint


def test_gin_configures_stop_at_average_return(tmp_path):
    result = train(
        str(tmp_path / 'run'),
        [AC],
        SHORT
        + [
            'training_callbacks.callbacks=[@StopAtAverageReturn()]',
            'StopAtAverageReturn.threshold=1.0',
        ],
    )
    # Stopped after the first call in which an episode ended (<= 20 steps
    # of 2 environments, 16-step unrolls: within 3 iterations).
    assert 1 < result['iterations'] <= 3
    assert result['Metrics/NumberOfEpisodes'] >= 1


def test_stop_at_average_return_and_the_protocol():
    stop = StopAtAverageReturn(100.0)
    assert isinstance(stop, TrainingCallback)
    assert not stop.on_iterations_end(
        1, {'Metrics/NumberOfEpisodes': 0, 'Metrics/AverageReturn': 500.0}
    )
    assert not stop.on_iterations_end(
        1, {'Metrics/NumberOfEpisodes': 2, 'Metrics/AverageReturn': 99.0}
    )
    assert stop.on_iterations_end(
        1, {'Metrics/NumberOfEpisodes': 2, 'Metrics/AverageReturn': 100.0}
    )
    with pytest.raises(
        TypeError, match="callbacks: 3 lacks the TrainingCallback hooks"
    ):
        CallbackList([3])
