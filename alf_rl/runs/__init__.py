"""What the command-line tools share, as a library.

``alf_rl.bin`` holds the thin console scripts (``alf-train``, ``alf-play``,
``alf-export``, ``alf-plot``, ``alf-grid-search``); the code they and the
hyperparameter search (``alf_rl.tune``) have in common lives here:

- ``quiet``: importing TensorFlow without its start-up notices, starting
  its runtime, running an absl program.
- ``gin_files``: checking gin files' syntax before TensorFlow is imported,
  parsing them with one-line errors, making user modules importable.
- ``restore``: rebuilding a finished run's environment and algorithm from
  its ``config.gin`` and newest checkpoint (``alf-play``, ``alf-export``).
- ``plot``: SVG charts of runs' curves (``alf-plot``, the search summary).
- ``video``: writing rendered frames as GIF or MP4.

Nothing here is imported by ``alf_rl/__init__``; each module imports
TensorFlow and gin only inside the functions that need them.
"""
