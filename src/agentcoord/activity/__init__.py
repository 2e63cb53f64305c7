"""Every session's state, live: working, waiting for permission or for input, idle, ended
(docs/activity.md)."""

from __future__ import annotations

from agentcoord.activity.states import SessionState, describe
from agentcoord.activity.tracker import SessionActivity, StateChange

__all__ = ["SessionActivity", "SessionState", "StateChange", "describe"]
