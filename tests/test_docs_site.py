"""The documentation site (docs/ and the API reference generated from the
docstrings) builds in mkdocs' strict mode: a docstring griffe cannot parse,
an unknown ``:::`` reference or a broken anchor fails the suite. (Links to
files outside docs/ are checked by tests/test_docs_links.py.)"""

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API_PACKAGES = [
    'algorithms',
    'networks',
    'ops',
    'drivers',
    'trainers',
    'replay',
    'environments',
    'metrics',
    'distributed',
    'export',
    'offline',
    'utils',
    'api',
]


def test_every_library_package_has_an_api_page():
    packages = sorted(
        d
        for d in os.listdir(os.path.join(REPO, 'alf_rl'))
        if os.path.isfile(os.path.join(REPO, 'alf_rl', d, '__init__.py'))
    )
    # Command-line and search packages are described in the guides.
    documented = sorted(API_PACKAGES + ['bin', 'runs', 'tune'])
    assert packages == documented
    for package in API_PACKAGES:
        with open(os.path.join(REPO, 'docs', 'api', package + '.md')) as f:
            assert '::: alf_rl.%s' % package in f.read()


def test_site_builds_strictly(tmp_path):
    pytest.importorskip('mkdocs')
    pytest.importorskip('mkdocstrings')
    env = dict(os.environ, NO_MKDOCS_2_WARNING='1')
    result = subprocess.run(
        [
            sys.executable,
            '-m',
            'mkdocs',
            'build',
            '--strict',
            '-d',
            str(tmp_path / 'site'),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    page = (
        tmp_path / 'site' / 'api' / 'algorithms' / 'index.html'
    ).read_text()
    # The reference is generated from the docstrings, shapes included.
    assert 'PPOAlgorithm' in page and 'target_kl' in page
    assert (tmp_path / 'site' / 'export' / 'index.html').exists()
