"""``--help`` of the absl tools lists their own flags and usage; absl's
flags stay behind ``--helpfull``."""

import os
import subprocess
import sys

import pytest

from alf_rl.runs.cli_help import _usage_block, help_text, wants_help

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = {
    'train': [
        '--gin_file',
        '--gin_param',
        '--root_dir',
        '--module_path',
        '--fresh_start',
    ],
    'play': ['--root_dir', '--num_episodes', '--policy', '--record_file'],
    'export': ['--root_dir', '--out', '--format', '--stochastic'],
    'plot': ['--root_dir', '--out', '--metric'],
}


def _run(tool, *args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
    return subprocess.run(
        [sys.executable, '-m', 'alf_rl.bin.' + tool, *args],
        cwd=_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize('tool', sorted(TOOLS))
def test_help_lists_the_tools_own_flags(tool):
    result = _run(tool, '--help')
    assert result.returncode == 0, result.stderr
    out = result.stdout
    lines = out.splitlines()
    assert lines[0].startswith('python -m alf_rl.bin.%s: ' % tool)
    assert 'Usage:' in lines and 'Flags:' in lines
    # The usage block has an example command of the tool.
    usage = lines[lines.index('Usage:') + 1]
    assert usage.strip().startswith('alf-' + tool), usage
    for flag in TOOLS[tool]:
        assert any(line.startswith('  %s: ' % flag) for line in lines), (
            flag,
            out,
        )
    # One line per flag, with its description; absl's flags are left out.
    assert 'Try --helpfull' not in out and 'logtostderr' not in out
    assert '--helpfull' in lines[-1]
    assert len(lines) < 30


def test_helpfull_still_lists_absl_flags():
    result = _run('export', '--helpfull')  # absl's (it exits with 1)
    assert 'logtostderr' in result.stdout and '--root_dir' in result.stdout


def test_wants_help_and_usage_block():
    assert wants_help(['--root_dir', 'x', '-h'])
    assert wants_help(['--help']) and not wants_help(
        ['--helpfull', '--root_dir']
    )
    doc = (
        'Tool.\n\nUsage::\n\n    tool --a 1 \\\n        --b 2\n\nMore text.\n'
    )
    assert _usage_block(doc) == ['tool --a 1 \\', '    --b 2']
    assert _usage_block('No usage here.') == []


def test_help_text_of_a_module_without_flags():
    text = help_text('alf_rl.runs.cli_help', 'prog')
    assert (
        text.splitlines()[0]
        == 'prog: ``--help`` for alf_rl\'s absl command-line tools.'
    )
    assert 'Flags:' not in text and text.endswith('prog --helpfull')
