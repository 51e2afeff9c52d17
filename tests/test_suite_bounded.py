"""The suite can never hang (issue 24): every test has a timeout
(pytest-timeout, pyproject.toml), so a wait nothing ends fails its test
with the stacks instead of holding CI silent."""

import subprocess
import sys
import textwrap

from tests.harness import REPO


def test_every_test_has_a_timeout(pytestconfig):
    assert 0 < float(pytestconfig.getini("timeout")) <= 600


def test_a_test_that_waits_forever_fails_in_bounded_time(tmp_path):
    (tmp_path / "test_hang.py").write_text(textwrap.dedent("""
        import threading
        def test_waits_forever():
            threading.Event().wait()
    """))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "timeout=2",
                        "--rootdir", str(REPO), "-c", str(REPO / "pyproject.toml"), str(tmp_path / "test_hang.py")],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout[-2000:]
    assert "Timeout" in r.stdout and "1 failed" in r.stdout
