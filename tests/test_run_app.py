"""``alf_rl.bin.quiet.run_app``: exit status and flushed output kept."""

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent('''
    import atexit, sys
    from alf_rl.bin.quiet import run_app
    atexit.register(lambda: print('atexit ran', flush=False))
    def _main(argv):
        print('unflushed stdout', end='')
        sys.stderr.write('unflushed stderr')
        mode = argv[1]
        if mode == 'code':
            sys.exit(3)
        if mode == 'message':
            sys.exit('bad thing')
        if mode == 'raise':
            raise RuntimeError('boom')
    run_app(_main)
''')


@pytest.mark.parametrize('mode, code', [('ok', 0), ('code', 3),
                                        ('message', 1), ('raise', 1)])
def test_run_app_keeps_status_and_output(mode, code):
    proc = subprocess.run([sys.executable, '-c', SCRIPT, mode],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == code
    assert proc.stdout.startswith('unflushed stdout')
    assert 'atexit ran' in proc.stdout
    assert 'unflushed stderr' in proc.stderr
    if mode == 'message':
        assert 'bad thing' in proc.stderr
    if mode == 'raise':
        assert 'RuntimeError: boom' in proc.stderr
