"""Inboxes are durable: a daemon restart keeps queued messages and what was already read."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Daemon
from tests.tools.conftest import AgentProc


def test_queued_messages_survive_restart(daemon: Daemon, claude_bin: Path, tmp_path: Path) -> None:
    """Messages queued before a restart are read after it, and read ones are not read again."""
    a = AgentProc(daemon, claude_bin, tmp_path / "a")
    b = AgentProc(daemon, claude_bin, tmp_path / "b", session_id="s-b")
    try:
        a.call("send", to=b.name, text="read before")
        assert [m["text"] for m in b.call("inbox")["messages"]] == ["read before"]
        a.call("send", to=b.name, text="queued across")
        b_name = b.name
    finally:
        a.close()
        b.close()
    daemon.stop()
    daemon.start()
    # The same Claude session (by its session id) is the same Agent after the restart.
    reader = AgentProc(daemon, claude_bin, tmp_path / "b", session_id="s-b")
    try:
        assert reader.name == b_name
        assert [m["text"] for m in reader.call("inbox")["messages"]] == ["queued across"]
        assert reader.call("inbox")["messages"] == []
    finally:
        reader.close()
