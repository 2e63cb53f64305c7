"""`agentcoord kubeconfig` as a human uses it (docs/store.md), and the Agent table's FOCUS.

Real daemons, the real kubectl, the real CLI in a subprocess, a fresh HOME per test.
"""

from __future__ import annotations

import shlex
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Daemon
from tests.stores.objects.conftest import Kubectl, kubeconfig_text
from tests.tools.session_helpers import finish, read_results, spawn_session

pytestmark = pytest.mark.timeout(120)

DOCS = Path(__file__).parents[3] / "docs" / "store.md"


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentcoord", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_write_creates_a_private_kube_dir_and_file(
    daemon: Daemon, tmp_path: Path, kubectl_present: None
) -> None:
    """`kubeconfig --write` on a HOME with no ~/.kube makes it 0700, the file 0600, prints
    the export line, and kubectl works with it."""
    home = tmp_path / "fresh-home"
    home.mkdir()
    env = dict(daemon.env, HOME=str(home))
    out = _cli(env, "kubeconfig", "--write")
    assert out.returncode == 0, out.stderr
    path = home / ".kube" / "agentcoord"
    assert out.stdout == f"export KUBECONFIG={path}\n"
    assert _mode(home / ".kube") == 0o700
    assert _mode(path) == 0o600
    assert path.read_text() == kubeconfig_text(daemon)
    # The printed line is what a shell evaluates; kubectl then reaches the daemon.
    got = subprocess.run(
        ["bash", "-c", f'eval "{out.stdout.strip()}" && kubectl get agents -A'],
        env=dict(env, KUBECACHEDIR=str(tmp_path / "kube-cache")),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert got.returncode == 0, got.stderr


def test_write_to_a_path_makes_missing_dirs(daemon: Daemon, tmp_path: Path) -> None:
    """`kubeconfig --write PATH` creates PATH's missing parents 0700 and quotes the path."""
    path = tmp_path / "a dir" / "sub" / "cfg"
    out = _cli(daemon.env, "kubeconfig", "--write", str(path))
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"export KUBECONFIG={shlex.quote(str(path))}\n"
    assert _mode(path.parent) == 0o700
    assert _mode(path.parent.parent) == 0o700
    assert _mode(path) == 0o600


def test_write_where_a_file_blocks_the_path_is_one_line(daemon: Daemon, tmp_path: Path) -> None:
    """A path that cannot be written (a file where a dir must be) is one error line and
    exit 1, no traceback."""
    (tmp_path / "plain").write_text("")
    out = _cli(daemon.env, "kubeconfig", "--write", str(tmp_path / "plain" / "cfg"))
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        f"agentcoord: cannot write {tmp_path / 'plain' / 'cfg'}: Not a directory"
    ]


def test_the_documented_example_runs_on_a_fresh_home(
    daemon: Daemon, tmp_path: Path, kubectl_present: None
) -> None:
    """docs/store.md's first kubeconfig line, run as written in bash on a HOME with no
    ~/.kube, leaves kubectl able to list agents."""
    lines = [
        line.removeprefix("$ ")
        for line in DOCS.read_text().splitlines()
        if line.startswith("$ agentcoord kubeconfig")
    ]
    assert lines, "docs/store.md lost its kubeconfig example"
    home = tmp_path / "fresh-home"
    home.mkdir()
    env = dict(daemon.env, HOME=str(home), KUBECACHEDIR=str(tmp_path / "kube-cache"))
    env.pop("KUBECONFIG", None)
    got = subprocess.run(
        ["bash", "-ec", f"{lines[0]}\nkubectl get agents -A"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert got.returncode == 0, got.stderr
    assert (home / ".kube" / "agentcoord").is_file()


def test_kubeconfig_without_a_daemon_says_to_start_one(tmp_path: Path) -> None:
    """With no daemon running, kubeconfig says so and how to start one, in one line."""
    from tests.conftest import make_env

    out = _cli(make_env(tmp_path), "kubeconfig")
    assert out.returncode == 69  # EX_UNAVAILABLE: no daemon
    (line,) = out.stderr.strip().splitlines()
    assert "no daemon is running" in line
    assert "agentcoord serve" in line


def test_kubeconfig_explains_kubernetes_mode(
    daemon_factory: Callable[..., Daemon], tmp_path: Path
) -> None:
    """A daemon started with --store kubernetes: `kubeconfig` (whose own config does not say
    so) explains the mode and names the kubeconfig in use; the daemon's log has no INFO line
    per request from lightkube's HTTP client."""
    api = daemon_factory("api").start()
    config = api.root / "kubeconfig"
    config.write_text(kubeconfig_text(api))
    node = daemon_factory("node", AGENTCOORD_STORE="kubernetes", AGENTCOORD_KUBECONFIG=str(config))
    node.start()
    # The human's shell: the store choice was the daemon's flag, not in this environment.
    env = {
        k: v for k, v in node.env.items() if k not in ("AGENTCOORD_STORE", "AGENTCOORD_KUBECONFIG")
    }
    out = _cli(env, "kubeconfig")
    assert out.returncode == 1
    (line,) = out.stderr.strip().splitlines()
    assert "--store kubernetes" in line
    assert "real API server" in line
    assert f"--kubeconfig ({config})" in line
    assert "kube.addr" not in line
    # With the mode in this command's own config, the same explanation.
    same = _cli(node.env, "kubeconfig")
    assert same.returncode == 1
    assert "real API server" in same.stderr
    assert str(config) in same.stderr
    assert node.stop() == 0
    assert " INFO httpx2" not in node.log(), node.log()
    # Stopped: the mode marker goes with it, so the next answer is "no daemon".
    assert "no daemon is running" in _cli(env, "kubeconfig").stderr


def test_focus_column_shows_the_annotated_focus(
    kubectl: Kubectl, kube_daemon: Daemon, claude_bin: Path
) -> None:
    """A session's annotate intent (the agent-focus view `agentcoord agents` reads) is the
    FOCUS cell of its row in `kubectl get agents`, in the list and the single-object get."""
    intent = "untangling the parser"
    holder = spawn_session(
        kube_daemon, claude_bin, [("annotate", {"intent": intent}), ("whoami", {})], hold=True
    )
    try:
        results = read_results(holder)
        assert all(not r["isError"] for r in results), results
        me = results[1]["structuredContent"]["agent"]
        agents = _cli(kube_daemon.env, "agents")
        assert intent in agents.stdout, agents.stdout
        listed = kubectl("get", "agents").stdout.splitlines()
        header = listed[0]
        assert header.split()[:4] == ["NAME", "PHASE", "PROFILE", "FOCUS"]
        (row,) = [line for line in listed[1:] if line.split()[0] == me]
        at = header.index("FOCUS")
        assert row[at:].startswith(intent), listed
        one = kubectl("get", "agent", me).stdout
        assert intent in one, one
    finally:
        finish(holder)
