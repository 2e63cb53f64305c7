"""A Claude session's agent takes the name Claude Code gives it in its registry, against the real
daemon with a stand-in ``claude`` that writes the record (docs/claude-code.md "Names")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import Daemon, cli_json

# Calls whoami once per argument after the socket path; before the second call, when an
# argument says so, writes the registry record of its parent claude with that name (a record
# that appears after the session's first contact).
CALLS = """
import json, os, socket, sys
def whoami():
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "whoami", "arguments": {}}}).encode() + b"\\n")
    buf = b""
    while not buf.endswith(b"\\n"):
        buf += s.recv(65536)
    return json.loads(buf)["result"]["structuredContent"]["agent"]
names = [whoami()]
if len(sys.argv) > 2:
    sessions = os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "sessions")
    os.makedirs(sessions, exist_ok=True)
    with open(os.path.join(sessions, f"{os.getppid()}.json"), "w") as fh:
        json.dump({"pid": os.getppid(), "sessionId": "late", "name": sys.argv[2]}, fh)
    names.append(whoami())
print(json.dumps(names))
"""


def _session(d: Daemon, claude_bin: Path, cwd: Path, *head: str, late: str = "") -> list[str]:
    """The agent names whoami gave inside one stand-in claude session in ``cwd``."""
    cwd.mkdir(parents=True, exist_ok=True)
    tail = [late] if late else []
    out = subprocess.run(
        [str(claude_bin), *head, "--", sys.executable, "-c", CALLS, str(d.socket), *tail],
        cwd=cwd,
        env=d.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    names: list[str] = json.loads(out.stdout)
    return names


def _listed(d: Daemon) -> list[Any]:
    return [r["name"] for r in cli_json(d, "agents", "--all")["agents"]]


def test_a_session_takes_its_registry_name(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """A session whose registry record names it ``shop-7f`` is agent ``shop-7f`` in whoami and
    ``agentcoord agents``; a second session with that name taken, and one with no name, fall
    back to ``shop-<n>``."""
    shop = tmp_path / "shop"
    first = _session(daemon, claude_bin, shop, "--session-file", "s1", "--session-name", "shop-7f")
    assert first == ["shop-7f"]
    again = _session(daemon, claude_bin, shop, "--session-file", "s2", "--session-name", "shop-7f")
    assert again == ["shop-1"]
    unnamed = _session(daemon, claude_bin, shop, "--session-file", "s3")
    assert unnamed == ["shop-2"]
    invalid = _session(
        daemon, claude_bin, shop, "--session-file", "s4", "--session-name", "Shop_7F"
    )
    assert invalid == ["shop-3"]
    assert {"shop-7f", "shop-1", "shop-2", "shop-3"} <= set(_listed(daemon))


def test_a_name_that_appears_later_does_not_rename_the_agent(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """A session whose registry record (with ``name``) appears only after its first contact
    keeps the name it got first, so what it already told others stays true."""
    names = _session(daemon, claude_bin, tmp_path / "late", late="late-3c")
    assert names == ["late-1", "late-1"]
