"""Scale-out: a ``tf.distribute`` learner (``strategy``).

Submodules are imported by name (``from alf_rl.distributed.strategy import
create_strategy``): importing this package imports nothing heavy (no Ray,
no TensorFlow).
"""
