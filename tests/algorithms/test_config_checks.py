"""One argument name per concept: retired spellings are refused, from
Python and from gin, with a message naming the new one."""

import gin
import pytest
import tensorflow as tf

from alf_rl.algorithms import (DdpgAlgorithm, DqnAlgorithm, SacAlgorithm,
                               SarsaAlgorithm, Td3Algorithm)
from alf_rl.algorithms.config_checks import (RETIRED_ARGUMENTS,
                                             check_unit_interval,
                                             reject_retired_arguments)
from alf_rl.specs import BoundedTensorSpec, TensorSpec

OBS = TensorSpec((2, ), tf.float32)
CONTINUOUS = BoundedTensorSpec((1, ), tf.float32, -1.0, 1.0)
DISCRETE = BoundedTensorSpec((), tf.int64, 0, 1)

_CASES = [
    (DdpgAlgorithm, CONTINUOUS, 'td_errors_loss_fn', 'td_error_loss_fn'),
    (Td3Algorithm, CONTINUOUS, 'td_errors_loss_fn', 'td_error_loss_fn'),
    (SarsaAlgorithm, CONTINUOUS, 'td_loss_fn', 'td_error_loss_fn'),
    (SarsaAlgorithm, CONTINUOUS, 'target_update_tau', 'tau'),
    (DqnAlgorithm, DISCRETE, 'td_loss_fn', 'td_error_loss_fn'),
    (DqnAlgorithm, DISCRETE, 'target_update_tau', 'tau'),
    (SacAlgorithm, CONTINUOUS, 'target_update_tau', 'tau'),
    (SacAlgorithm, DISCRETE, 'td_errors_loss_fn', 'td_error_loss_fn'),
]


def test_the_retired_names():
    assert RETIRED_ARGUMENTS == {'td_errors_loss_fn': 'td_error_loss_fn',
                                 'td_loss_fn': 'td_error_loss_fn',
                                 'target_update_tau': 'tau'}


@pytest.mark.parametrize('cls, action_spec, old, new', _CASES)
def test_python_keyword_refused_naming_the_new_one(cls, action_spec, old,
                                                   new):
    extra = {'actor_optimizer': object()} if cls is Td3Algorithm else {}
    with pytest.raises(TypeError,
                       match=r"%s: argument '%s' was renamed to '%s'" %
                       (cls.__name__, old, new)):
        cls(OBS, action_spec, **{old: 0.5}, **extra)


@pytest.mark.parametrize('cls, action_spec, old, new', _CASES[:1] + _CASES[3:5])
def test_gin_binding_refused_naming_the_new_one(cls, action_spec, old, new):
    name = cls.__name__
    gin.clear_config()
    try:
        gin.parse_config('%s.%s = 0.5' % (name, old))
        with pytest.raises(TypeError) as error:
            cls(OBS, action_spec)
    finally:
        gin.clear_config()
    message = str(error.value)
    assert "argument '%s' was renamed to '%s'" % (old, new) in message
    assert '%s.%s = ...' % (name, new) in message


def test_reject_retired_arguments_passes_other_names():
    reject_retired_arguments('X', {'tau': 0.1, 'optimizer': None})
    with pytest.raises(TypeError, match="X: argument 'td_loss_fn'"):
        reject_retired_arguments('X', {'td_loss_fn': None, 'tau': 1})


def test_check_unit_interval():
    assert check_unit_interval('X', 'gamma', 1) == 1.0
    assert isinstance(check_unit_interval('X', 'gamma', 0), float)
    with pytest.raises(ValueError, match=r'X: gamma must be in \[0, 1\], '
                       r'got 1.5'):
        check_unit_interval('X', 'gamma', 1.5)
