"""TensorBoard summaries written from Python, outside compiled steps.

Step functions put what is worth logging into ``info``/``LossInfo.extra``;
trainers write it here, gated by a Python-side interval check, so no summary
op sits in the compiled graph.
"""

from typing import Any, Dict, Union

import tensorflow as tf

from alf_rl.utils.nest import flatten_with_path


def _tag(path):
    return path.replace('.', '/').replace('[', '/').replace(']', '').replace(
        "'", '').replace('//', '/').strip('/')


def loss_scalars(loss_info: Any) -> Dict[str, float]:
    """``{tag: float}`` of the scalar leaves of a reduced ``LossInfo``.

    Args:
        loss_info: ``LossInfo`` with [] leaves.
    Returns:
        dict like ``{'loss/total': 0.4, 'loss/pg_loss': 0.1, ...}``.
    """
    result = {}
    if not (isinstance(loss_info.loss, tuple) and loss_info.loss == ()):
        result['loss/total'] = float(loss_info.loss)
    for path, value in flatten_with_path(loss_info.extra):
        result[_tag('loss/' + path)] = float(value)
    return result


def write_scalars(scalars: Dict[str, float],
                  step: Union[int, tf.Tensor]) -> None:
    """Writes ``{tag: value}`` to the default summary writer at ``step``.

    Args:
        scalars: ``{tag: float or [] tensor}``, e.g. from ``loss_scalars``.
        step: the summary step ([] int64 tensor or int).
    """
    for tag, value in scalars.items():
        tf.summary.scalar(tag, value, step=step)
