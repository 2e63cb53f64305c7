"""Shared fixtures: real daemons on temp dirs with ephemeral ports, and a stand-in ``claude``.

Importing this file (before any test is collected) points HOME, the XDG dirs, KUBECONFIG,
kubectl's cache and CLAUDE_CONFIG_DIR into one temp dir for the whole session, so no test, and
no daemon, ``kubectl`` or stand-in ``claude`` a test starts, writes into the real home. The
skip report (:mod:`tests._skips`) closes every run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests import _skips

FAKES = Path(__file__).parent / "fakes"
# How long a test waits for a daemon it starts to be ready. A daemon is ready in well under a
# second on an idle machine (bench/startup.py times it); a machine running two suites at once
# can take many seconds, so a test waits long and only a daemon that never comes fails it,
# with its log: well inside pytest-timeout's limit for the whole test (pyproject.toml), whose
# report would carry no log.
READY_TIMEOUT = 60.0


def _isolate_home() -> Path:
    """A private home for the session; returns its root (removed when the session ends)."""
    root = Path(tempfile.mkdtemp(prefix="agentcoord-tests-"))
    home = root / "home"
    runtime = root / "run"
    for path in (home, runtime):
        path.mkdir(mode=0o700)
    os.environ.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_RUNTIME_DIR=str(runtime),
        KUBECONFIG=str(home / ".kube" / "config"),
        KUBECACHEDIR=str(home / ".kube" / "cache"),  # else kubectl caches discovery in ~/.kube
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        # No test starts a daemon on demand unless it asks (docs/claude-code.md "Daemon on
        # demand"): a shim or hook without one would leave a daemon behind.
        AGENTCOORD_NO_AUTOSTART="1",
    )
    if sys.prefix != sys.base_prefix:
        # Run from a venv without activating it (README: .venv/bin/python -m pytest): its
        # console scripts (agentcoord, nats-server) come first, as an activated venv has them.
        bin_dir = str(Path(sys.executable).parent)
        os.environ["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
    return root


SESSION_ROOT = _isolate_home()


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_skips, "agentcoord-skips")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(SESSION_ROOT, ignore_errors=True)


@dataclass
class Daemon:
    """A real ``agentcoord serve`` process on its own state and runtime dirs."""

    root: Path
    env: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None
    python: str = sys.executable  # the interpreter it runs under (an install elsewhere)
    log_path: Path = field(init=False)
    log_offset: int = field(init=False, default=0)  # where the last start's log begins

    def __post_init__(self) -> None:
        self.log_path = self.root / "daemon.log"

    @property
    def state_dir(self) -> Path:
        return Path(self.env["AGENTCOORD_STATE_DIR"])

    @property
    def runtime_dir(self) -> Path:
        return Path(self.env["AGENTCOORD_RUNTIME_DIR"])

    @property
    def socket(self) -> Path:
        return self.runtime_dir / "agentcoord.sock"

    @property
    def http_addr(self) -> str:
        return (self.runtime_dir / "http.addr").read_text().strip()

    @property
    def url(self) -> str:
        return f"http://{self.http_addr}"

    def start(self, timeout: float = READY_TIMEOUT) -> Daemon:
        """Start ``agentcoord serve`` and wait until ``/healthz`` says ok (a busy machine may
        take many seconds: the deadline is generous, and the failure carries the log)."""
        addr_file = self.runtime_dir / "http.addr"
        if addr_file.exists():
            addr_file.unlink()
        log = self.log_path.open("ab")
        self.log_offset = log.tell()
        self.proc = subprocess.Popen(
            [self.python, "-m", "agentcoord", "serve"],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.root,
        )
        log.close()
        deadline = time.monotonic() + timeout
        health = (0, "")
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited {self.proc.returncode}:\n{self.log()}")
            if addr_file.exists():
                health = self.healthz()
                if health == (200, "ok"):
                    return self
            time.sleep(0.02)
        since = self.log_path.read_bytes()[self.log_offset :].decode(errors="replace")
        raise RuntimeError(
            f"daemon (pid {self.proc.pid}) not ready in {timeout}s: "
            f"http.addr {'written' if addr_file.exists() else 'not written'}, "
            f"last /healthz {health}; its log since this start:\n"
            f"{since or '(empty: it wrote nothing)'}"
        )

    def healthz(self) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()
        except (OSError, ValueError):
            return 0, ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def stored_records(d: Daemon, plural: str, record_kind: str, key: str) -> dict[str, Any]:
    """Records the daemon keeps as objects of ``plural``, read from its real SQLite file
    (works while the daemon runs, WAL, or after it stopped) and decoded from each object's
    spec and status (docs/store.md "Records are objects"), by the record's ``key`` field."""
    import sqlite3
    from dataclasses import asdict

    from agentcoord.stores.objects.repository import record_of

    db = sqlite3.connect(f"file:{d.state_dir / 'objects.db'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT object FROM objects WHERE resource = ?", (plural,)).fetchall()
    finally:
        db.close()
    out: dict[str, Any] = {}
    for (raw,) in rows:
        obj = json.loads(raw)
        labels = obj["metadata"].get("labels") or {}
        record = record_of(obj)
        if labels.get("fastverk.savvifi.com/record-kind") == record_kind and record is not None:
            fields = asdict(record)
            out[fields[key]] = fields
    return out


def cli_json(d: Daemon, *args: str) -> Any:
    """``agentcoord ARGS --json`` against the daemon, as the human would run it; the parsed
    output."""
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", *args, "--json"],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    )
    return json.loads(out.stdout)


def console_link(d: Daemon) -> str:
    """The console login link ``agentcoord console`` prints for the daemon (as the human)."""
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "console"],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return out.stdout.strip()


def write_kubeconfig(d: Daemon) -> Path:
    """The kubeconfig ``agentcoord kubeconfig`` prints for the daemon, saved in its root."""
    config = d.root / "kubeconfig"
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "kubeconfig"],
        env=d.env,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    config.write_text(out.stdout)
    return config


def kubectl_apply(d: Daemon, objects: list[dict[str, Any]]) -> None:
    """Write objects straight into the daemon's store with the real kubectl."""
    config = write_kubeconfig(d)
    import yaml

    doc = yaml.safe_dump_all(objects)
    applied = subprocess.run(
        ["kubectl", "--kubeconfig", str(config), "apply", "-f", "-"],
        input=doc,
        env=d.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert applied.returncode == 0, applied.stderr


def make_env(root: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTCOORD_", "CLAUDE"))}
    env.update(
        AGENTCOORD_STATE_DIR=str(root / "state"),
        AGENTCOORD_RUNTIME_DIR=str(root / "run"),
        AGENTCOORD_HTTP_ADDR="127.0.0.1:0",
        CLAUDE_CONFIG_DIR=str(root / "claude-home"),
        XDG_CONFIG_HOME=str(root / "xdg-config"),
        AGENTCOORD_NO_AUTOSTART="1",  # a test asks for the daemon on demand explicitly
    )
    env.update(extra)
    return env


@pytest.fixture
def daemon_factory(tmp_path: Path) -> Iterator[type[Daemon] | object]:
    """Start any number of isolated daemons; all are stopped at the end."""
    started: list[Daemon] = []

    def factory(name: str = "d", **extra: str) -> Daemon:
        root = tmp_path / name
        root.mkdir(exist_ok=True)
        d = Daemon(root, make_env(root, **extra))
        started.append(d)
        return d

    yield factory
    for d in started:
        d.stop()


@pytest.fixture
def daemon(daemon_factory: object) -> Daemon:
    """One running daemon."""
    return daemon_factory().start()  # type: ignore[operator, no-any-return]


@pytest.fixture
def claude_bin(tmp_path: Path) -> Path:
    """An executable named ``claude`` (so its process name is ``claude``) that runs a child."""
    path = tmp_path / "bin" / "claude"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"#!{sys.executable}\n" + (FAKES / "claude_standin.py").read_text())
    path.chmod(0o755)
    return path


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--soak",
        type=float,
        default=0.0,
        metavar="MINUTES",
        help="run the reliability suite's fault rotation for this many minutes",
    )
