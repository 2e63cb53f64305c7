"""A session's state from its hooks and its registry entry (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from agentcoord.activity.states import (
    ENDED,
    IDLE,
    WAITING_INPUT,
    WAITING_PERMISSION,
    WORKING,
    SessionState,
    after_hook,
    describe,
    with_registry,
)

ASKING = SessionState(WAITING_PERMISSION, 10.0, "Bash", "npm test")


@pytest.mark.parametrize(
    ("prev", "event", "payload", "allowed", "want"),
    [
        (None, "UserPromptSubmit", {}, False, SessionState(WORKING, 20.0)),
        (SessionState(WORKING, 5.0), "PostToolUse", {}, False, SessionState(WORKING, 5.0)),
        (ASKING, "PostToolUse", {}, False, SessionState(WORKING, 20.0)),
        (
            None,
            "PermissionRequest",
            {"tool_name": "Bash"},
            False,
            SessionState(WAITING_PERMISSION, 20.0, "Bash", "npm test"),
        ),
        (None, "PermissionRequest", {"tool_name": "Bash"}, True, SessionState(WORKING, 20.0)),
        (ASKING, "Notification", {"notification_type": "permission_prompt"}, False, ASKING),
        (
            None,
            "Notification",
            {"notification_type": "permission_prompt"},
            False,
            SessionState(WAITING_PERMISSION, 20.0),
        ),
        (
            SessionState(IDLE, 5.0),
            "Notification",
            {"notification_type": "idle_prompt"},
            False,
            SessionState(WAITING_INPUT, 20.0),
        ),
        (ASKING, "Notification", {"notification_type": "auth_success"}, False, None),
        # The other CLIs' waits name their call (docs/activity.md "Other CLIs").
        (
            SessionState(WORKING, 5.0),
            "Notification",
            {"notification_type": "permission_prompt", "tool_name": "bash"},
            False,
            SessionState(WAITING_PERMISSION, 20.0, "bash", "npm test"),
        ),
        (SessionState(WORKING, 5.0), "Stop", {}, False, SessionState(IDLE, 20.0)),
        (ASKING, "Stop", {}, False, SessionState(IDLE, 20.0)),  # answered "no": the turn ended
        (SessionState(IDLE, 5.0), "Stop", {}, False, SessionState(IDLE, 5.0)),
        (ASKING, "SessionEnd", {}, False, SessionState(ENDED, 20.0)),
        (ASKING, "SessionStart", {}, False, None),
    ],
)
def test_after_hook(
    prev: SessionState | None,
    event: str,
    payload: dict[str, Any],
    allowed: bool,
    want: SessionState | None,
) -> None:
    """Each hook moves the state as its meaning says; one that says nothing leaves it."""
    got = after_hook(prev, event, payload, 20.0, allowed=allowed, summary="npm test")
    assert got == want


@pytest.mark.parametrize(
    ("state", "status", "updated", "want"),
    [
        (None, "busy", 30.0, SessionState(WORKING, 30.0)),
        (None, "idle", 30.0, SessionState(IDLE, 30.0)),
        (None, None, None, None),
        (SessionState(WORKING, 20.0), "idle", 30.0, SessionState(IDLE, 30.0)),
        (SessionState(WORKING, 20.0), "idle", 10.0, SessionState(WORKING, 20.0)),  # older
        (ASKING, "busy", 30.0, ASKING),  # a dialog is part of a turn
        (ASKING, "idle", 30.0, SessionState(IDLE, 30.0)),  # answered "no": the turn ended
        (SessionState(WAITING_INPUT, 20.0), "idle", 30.0, SessionState(WAITING_INPUT, 20.0)),
        (SessionState(WAITING_INPUT, 20.0), "busy", 30.0, SessionState(WORKING, 30.0)),
        (SessionState(ENDED, 20.0), "busy", 30.0, SessionState(ENDED, 20.0)),
        (SessionState(WORKING, 20.0), "thinking", 30.0, SessionState(WORKING, 20.0)),
    ],
)
def test_with_registry(
    state: SessionState | None, status: str | None, updated: float | None, want: SessionState | None
) -> None:
    """The registry's newer word wins, except over an open dialog while it says busy."""
    assert with_registry(state, status, updated) == want


def test_describe_says_which_call_waits() -> None:
    """The one line names the tool and its input; a long input is cut with an ellipsis."""
    assert describe(ASKING) == "waiting for permission: Bash npm test"
    assert describe(SessionState(WAITING_PERMISSION, 1.0)) == "waiting for permission"
    assert describe(SessionState(WAITING_INPUT, 1.0)) == "waiting for input"
    assert describe(SessionState(IDLE, 1.0)) == "idle"
    long = describe(SessionState(WAITING_PERMISSION, 1.0, "Bash", "x" * 500))
    assert long.endswith("…")
    assert len(long) < 160
