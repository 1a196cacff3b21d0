"""Releasing what a finished run's traced graphs left in global caches.

TensorFlow Probability caches every bijector call in one storage shared by
all bijectors (``tfb.Bijector._cache``): the input tensor is held strongly,
the output weakly, and an entry goes when its output dies. A call traced
inside a ``tf.function`` never lets its output die: the input is a
symbolic tensor whose graph holds the output too, and the global storage
holds the input. So every graph that sampled a squashed (``tanh``) or
otherwise transformed distribution -- SAC's actor, TD3's target policy
smoothing does not, but SAC and every continuous stochastic policy do --
stays alive after its run ends: measured ~50 MB per SAC model trained in one
process (``alf_rl.SAC(...).learn`` in a loop), 35 graphs each.

``release_traced_bijector_cache`` drops the entries keyed by symbolic
tensors. A graph's entries matter only while that graph is being traced
(the cache makes ``log_prob`` of a sample use its pre-``tanh`` value
exactly); eager entries are kept. Trainers call it from ``close``.
"""

import tensorflow as tf


def _is_symbolic(value: object) -> bool:
    """Whether ``value`` (a cache key's referent) is a graph tensor, or a
    structure holding one."""
    return any(tf.is_symbolic_tensor(x) for x in tf.nest.flatten(value))


def release_traced_bijector_cache() -> int:
    """Drops TFP's bijector-cache entries whose tensors are symbolic.

    Not to be called while another thread traces a graph that samples a
    transformed distribution (its sample's ``log_prob`` would then be
    computed through the inverse instead of the cached pre-image).

    Returns:
        the number of entries dropped (0 when TFP was never imported).
    """
    import sys

    bijector_module = sys.modules.get(
        'tensorflow_probability.python.bijectors.bijector'
    )
    if bijector_module is None:
        return 0
    cache = vars(bijector_module.Bijector).get('_cache')
    storage = getattr(cache, 'storage', None)
    if not isinstance(storage, dict):
        return 0
    dropped = 0
    for key in list(storage.keys()):
        referent = key()
        if referent is None or _is_symbolic(referent):
            key.cancel()
            storage.pop(key, None)
            dropped += 1
    return dropped
