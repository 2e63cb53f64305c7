"""A Claude session's first call creates its Agent object, which kubectl then lists."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import Daemon
from tests.stores.objects.conftest import Kubectl

SID = "5f0c1d2e-3a4b-4c5d-8e9f-0a1b2c3d4e5f"

CALL = """
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "whoami", "arguments": {}}}).encode() + b"\\n")
buf = b""
while not buf.endswith(b"\\n"):
    buf += s.recv(65536)
print(buf.decode())
"""


def test_first_contact_creates_agent_object(
    kube_daemon: Daemon, kubectl: Kubectl, claude_bin: Path, tmp_path: Path
) -> None:
    """whoami from inside a claude session names `<dir>-1`; kubectl lists that Agent, Ended
    once its claude has exited (docs/localagents.md "Session lifetime")."""
    project = tmp_path / "myproj"
    project.mkdir()
    out = subprocess.run(
        [
            str(claude_bin),
            "--session-file",
            SID,
            "--",
            sys.executable,
            "-c",
            CALL,
            str(kube_daemon.socket),
        ],
        cwd=project,
        env=kube_daemon.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    result = json.loads(out.stdout)["result"]["structuredContent"]
    assert result["agent"] == "myproj-1"
    assert result["session"] == SID

    def listed() -> list[Any]:
        out = kubectl("get", "ag", "-l", f"fastverk.savvifi.com/session-id={SID}", "-o", "yaml")
        return list(yaml.safe_load(out.stdout)["items"])

    items = listed()
    assert [i["metadata"]["name"] for i in items] == ["myproj-1"]
    deadline = time.monotonic() + 60
    while items[0]["status"]["phase"] != "Ended" and time.monotonic() < deadline:
        items = listed()
    assert items[0]["status"]["reason"] == "process exited"
    assert items[0]["spec"]["cwd"] == str(project)
