"""A real daemon shared by this directory's kubectl tests, and a kubectl runner for it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import Daemon, make_env


@dataclass
class Kubectl:
    """Runs the real kubectl against one daemon with the kubeconfig it printed."""

    daemon: Daemon
    kubeconfig: Path
    cache: Path

    def args(self, *args: str) -> list[str]:
        return [
            "kubectl",
            "--kubeconfig",
            str(self.kubeconfig),
            "--cache-dir",
            str(self.cache),
            *args,
        ]

    def __call__(
        self, *args: str, stdin: str | None = None, check: bool = True, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            self.args(*args),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.daemon.env,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed:\n{proc.stderr}")
        return proc

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.args(*args),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=self.daemon.env,
        )


@pytest.fixture(scope="session")
def kubectl_present() -> None:
    """Skip kubectl tests only where kubectl is not installed."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")


def kubeconfig_text(d: Daemon) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "kubeconfig"],
        env=d.env,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return out.stdout


@pytest.fixture(scope="module")
def kube_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One real daemon for a test module."""
    root = tmp_path_factory.mktemp("kube")
    d = Daemon(root, make_env(root))
    d.start()
    yield d
    d.stop()


@pytest.fixture(scope="module")
def kubectl(kube_daemon: Daemon, kubectl_present: None) -> Kubectl:
    """kubectl wired to the module's daemon."""
    path = kube_daemon.root / "kubeconfig"
    path.write_text(kubeconfig_text(kube_daemon))
    return Kubectl(kube_daemon, path, kube_daemon.root / "kube-cache")
