"""Command-line entry points: ``alf-train`` and ``alf-play``."""
