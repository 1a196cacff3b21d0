"""TFP's bijector cache keeps traced graphs alive; the release drops them."""

import gc
import weakref

import tensorflow as tf
import tensorflow_probability as tfp

from alf_rl.utils.traced_memory import release_traced_bijector_cache

tfd = tfp.distributions
tfb = tfp.bijectors


def _squashed(loc):
    return tfd.TransformedDistribution(tfd.Normal(loc, 1.0), tfb.Tanh())


def _storage():
    return vars(tfb.Bijector)['_cache'].storage


def test_release_lets_a_traced_graph_go_and_keeps_eager_entries():
    release_traced_bijector_cache()

    @tf.function
    def sample_and_log_prob(loc):
        dist = _squashed(loc)
        x = dist.sample(seed=(1, 2))
        return x, dist.log_prob(x)

    concrete = sample_and_log_prob.get_concrete_function(
        tf.TensorSpec([3], tf.float32)
    )
    graph = weakref.ref(concrete.graph)
    del concrete, sample_and_log_prob
    gc.collect()
    # The cache holds the traced input, whose graph holds the output.
    assert graph() is not None
    symbolic = [
        k
        for k in _storage()
        if k() is not None
        and any(tf.is_symbolic_tensor(t) for t in tf.nest.flatten(k()))
    ]
    assert symbolic

    eager_dist = _squashed(tf.zeros([3]))
    eager_x = eager_dist.sample(seed=(3, 4))
    eager_keys = len(_storage())

    assert release_traced_bijector_cache() >= len(symbolic)
    gc.collect()
    assert graph() is None
    # The eager sample's entries stay (its log_prob would use the
    # cached pre-image); no symbolic one does.
    assert len(_storage()) > 0
    assert len(_storage()) <= eager_keys
    assert all(
        not any(tf.is_symbolic_tensor(t) for t in tf.nest.flatten(k()))
        for k in _storage()
        if k() is not None
    )
    del eager_dist, eager_x


def test_release_without_entries_drops_nothing():
    release_traced_bijector_cache()
    assert release_traced_bijector_cache() == 0
