"""Hyperparameter search over gin settings: the library behind
``alf-grid-search``.

A search runs configurations (combinations of ``--grid`` values) times
seeds as ordinary ``alf-train`` processes, each in its own resumable
directory, and summarizes them over seeds. The modules, in the order a
search uses them:

- ``spec``: the grid, the seeds, the configurations and their directory
  names, each run's command line and the search record.
- ``runner``: ``RunPool`` runs the ``alf-train`` processes, a few at a
  time, forwarding Ctrl-C, and records how each ended.
- ``search``: ``SearchOptions`` and ``run_search``: a grid or random
  search from start to summary.
- ``optuna_study``: ``run_optuna``, a TPE study over the grid's choices
  (optuna is imported only there: ``pip install 'alf_rl[tune]'``).
- ``summary``: reading finished runs, per-configuration rows with
  bootstrap intervals, ``summary.md``/``summary.csv`` and curves.
- ``hparams``: TensorBoard hparams summaries of a search.
- ``files``: the file names a search writes and small JSON helpers.

Importing ``alf_rl.tune`` imports neither TensorFlow nor optuna.
"""
