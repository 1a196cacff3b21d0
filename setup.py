"""Packages alf_rl with the example gin files (the rest is in
pyproject.toml).

The examples stay at the top of the source tree (``examples/``, the
paths the README and docs show) and ship inside the package as
``alf_rl/examples/``, which ``alf_rl.runs.examples`` looks up
(``alf-train --example NAME``). pyproject.toml alone cannot map a
directory outside the package into it, hence this file.
"""

import os

from setuptools import find_packages, setup


def _example_packages():
    """``alf_rl.examples`` and its sub-directories holding example files."""
    packages = []
    for directory, _, files in os.walk('examples'):
        if any(name.endswith(('.gin', '.py')) for name in files):
            packages.append('alf_rl.' + directory.replace(os.sep, '.'))
    return sorted(packages)


EXAMPLES = _example_packages()

setup(
    packages=find_packages(include=['alf_rl', 'alf_rl.*']) + EXAMPLES,
    package_dir={'alf_rl.examples': 'examples'},
    package_data={package: ['*.gin', '*.py'] for package in EXAMPLES},
)
