"""The test session itself: it runs in a private home, and it closes with what was skipped and
why, failing under ``CI=true`` when a dependency was missing (``tests/_skips.py``)."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import SESSION_ROOT

ROOT = Path(__file__).resolve().parents[1]

SAMPLE = """
import pytest

@pytest.mark.skipif(True, reason="bubblewrap not installed")
def test_needs_bwrap():
    pass

def test_needs_chromium():
    pytest.skip("chromium is not installed (.ci/run installs it)")

def test_soak():
    pytest.skip("soak run only with --soak MINUTES")

def test_fine():
    assert 1 + 1 == 2
"""


def test_the_session_runs_in_a_private_home() -> None:
    """HOME, the XDG dirs, KUBECONFIG, kubectl's cache and CLAUDE_CONFIG_DIR all point into the
    session's temp dir, never the real home."""
    real_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    assert SESSION_ROOT.is_relative_to(tempfile.gettempdir())
    for name in (
        "HOME",
        "XDG_CONFIG_HOME",
        "XDG_STATE_HOME",
        "XDG_DATA_HOME",
        "XDG_CACHE_HOME",
        "XDG_RUNTIME_DIR",
        "KUBECONFIG",
        "KUBECACHEDIR",
        "CLAUDE_CONFIG_DIR",
    ):
        path = Path(os.environ[name])
        assert path.is_relative_to(SESSION_ROOT), name
        assert not path.is_relative_to(real_home), name
    assert Path(os.path.expanduser("~")) == SESSION_ROOT / "home"


def _run(tmp_path: Path, source: str, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text(source)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # this dir is the rootdir, not ours
    base = {k: v for k, v in os.environ.items() if k != "CI"}
    base["PYTHONPATH"] = os.pathsep.join([str(ROOT), base.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests._skips"],
        cwd=tmp_path,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_skips_are_named_with_their_reason_at_the_end(tmp_path: Path) -> None:
    """Without CI, missing-dependency skips pass the run and are listed by reason, apart from
    the opt-in ``--soak`` skip, in a closing section."""
    out = _run(tmp_path, SAMPLE)
    assert out.returncode == 0, out.stdout + out.stderr
    report = out.stdout[out.stdout.index("skipped, by reason") :]
    assert "1 missing dependency: bubblewrap not installed" in report
    assert "1 missing dependency: chromium is not installed (.ci/run installs it)" in report
    assert "1 opt-in: soak run only with --soak MINUTES" in report
    assert "2 test(s) did not run for a missing dependency" in report


@pytest.mark.parametrize("ci", ["true", "1"])
def test_under_ci_a_missing_dependency_fails_the_run(tmp_path: Path, ci: str) -> None:
    """With CI=true a skip for a missing dependency turns a green run into a failure, and says
    why."""
    out = _run(tmp_path, SAMPLE, CI=ci)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "CI=true: 2 test(s) skipped for a missing dependency" in out.stdout


def test_under_ci_an_opt_in_skip_is_not_a_failure(tmp_path: Path) -> None:
    """The ``--soak`` opt-in skip alone leaves a CI run green."""
    source = "import pytest\n\ndef test_soak():\n    pytest.skip('soak run only with --soak 5')\n"
    out = _run(tmp_path, source, CI="true")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 opt-in: soak run only with --soak 5" in out.stdout


def test_under_ci_a_real_failure_keeps_its_status(tmp_path: Path) -> None:
    """A failing test under CI still exits 1 (not masked or changed by the skip report)."""
    source = (
        "import pytest\n\n"
        "def test_bad():\n    assert False\n\n"
        "@pytest.mark.skipif(True, reason='kubectl not installed')\ndef test_k():\n    pass\n"
    )
    out = _run(tmp_path, source, CI="true")
    assert out.returncode == 1, out.stdout
    assert "1 failed" in out.stdout
    assert "1 missing dependency: kubectl not installed" in out.stdout


def test_running_a_missing_system_command_is_a_named_skip(tmp_path: Path) -> None:
    """A test that starts kubectl where it is not installed is skipped as a missing dependency
    (and fails a CI run); a missing file that is no system command still fails the test."""
    source = (
        "import subprocess\n\n"
        "def test_kubectl():\n    subprocess.run(['kubectl', 'version'], check=True)\n\n"
        "def test_other():\n    open('/no/such/file')\n"
    )
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    out = _run(tmp_path, source, PATH=str(empty))
    assert out.returncode == 1, out.stdout
    assert "1 failed" in out.stdout
    assert "1 missing dependency: kubectl not installed (kubectl is not on PATH)" in out.stdout
