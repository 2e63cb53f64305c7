"""Fixtures for agent-to-agent and the operator: a real daemon whose runners are the stand-in
``claude -p`` in real bubblewrap, and helpers that read Agent objects through tools."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.localagents.conftest import (  # noqa: F401  (fixtures)
    Call,
    local_daemon,
    runner_bin,
    unix_call,
    visible_root,
)

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


def make_profiles(d: Daemon, *names: str) -> None:
    """AgentProfiles (claude-code, agent-coord only) applied with the real kubectl."""
    from tests.conftest import kubectl_apply

    kubectl_apply(
        d,
        [
            {
                "apiVersion": "fastverk.savvifi.com/v1",
                "kind": "AgentProfile",
                "metadata": {"name": name},
                "spec": {"backend": "claude-code", "mcpServers": ["agent-coord"]},
            }
            for name in names
        ],
    )


def ok(call: Call, tool: str, **args: Any) -> dict[str, Any]:
    """A tool call that must succeed; its structured result."""
    err, res = call(tool, args)
    assert not err, res
    return res  # type: ignore[no-any-return]


def fails(call: Call, tool: str, **args: Any) -> str:
    """A tool call that must fail; its error text."""
    err, res = call(tool, args)
    assert err, res
    return str(res)


def stored(d: Daemon, plural: str, name: str) -> dict[str, Any] | None:
    """One object as the daemon committed it, read from its SQLite file (None when absent)."""
    import json
    import sqlite3

    db = sqlite3.connect(f"file:{d.state_dir / 'objects.db'}?mode=ro", uri=True, timeout=5)
    try:
        row = db.execute(
            "SELECT object FROM objects WHERE resource = ? AND name = ?", (plural, name)
        ).fetchone()
    finally:
        db.close()
    return json.loads(row[0]) if row else None


def first_version(d: Daemon, plural: str, name: str) -> dict[str, Any]:
    """The object as first created (its ADDED event in the store's log)."""
    import json
    import sqlite3

    db = sqlite3.connect(f"file:{d.state_dir / 'objects.db'}?mode=ro", uri=True, timeout=5)
    try:
        row = db.execute(
            "SELECT object FROM events WHERE type = 'ADDED' AND resource = ? AND name = ? "
            "ORDER BY rv LIMIT 1",
            (plural, name),
        ).fetchone()
    finally:
        db.close()
    return json.loads(row[0])  # type: ignore[no-any-return]


def created_rv(d: Daemon, plural: str, name: str) -> int:
    """The resourceVersion of the object's ADDED event in the store's log (creation order)."""
    import sqlite3

    db = sqlite3.connect(f"file:{d.state_dir / 'objects.db'}?mode=ro", uri=True, timeout=5)
    try:
        row = db.execute(
            "SELECT min(rv) FROM events WHERE type = 'ADDED' AND resource = ? AND name = ?",
            (plural, name),
        ).fetchone()
    finally:
        db.close()
    return int(row[0])


def wait_for(pred: Callable[[], Any], timeout: float = 60.0, what: str = "") -> Any:
    """Poll ``pred`` until it returns something truthy (tests only; the daemon waits on events).
    The deadline is generous: a busy machine is slow, and only a condition that never comes
    should fail."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or pred}")
        time.sleep(0.05)
