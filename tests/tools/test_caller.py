"""acting_agent: a tool acts as the caller the transport resolved, never as an argument says."""

from __future__ import annotations

import pytest

from agentcoord.errors import IdentityMismatch
from agentcoord.kernel.caller import Caller
from agentcoord.tools._acting import acting_agent

pytestmark = pytest.mark.unit

_ME = Caller(kind="session", agent="alice", via="unix")


def test_the_caller_is_the_actor_with_or_without_a_matching_argument() -> None:
    """No ``agent``/``from`` argument, or one naming the caller, yields the caller's id."""
    assert acting_agent(_ME, {}) == "alice"
    assert acting_agent(_ME, {"agent": "alice", "from": "alice"}) == "alice"


def test_an_argument_naming_someone_else_is_refused() -> None:
    """An ``agent`` or ``from`` naming another agent raises IdentityMismatch; only the keys
    asked for are checked."""
    with pytest.raises(IdentityMismatch):
        acting_agent(_ME, {"agent": "bob"})
    with pytest.raises(IdentityMismatch):
        acting_agent(_ME, {"from": "bob"}, "from")
    assert acting_agent(_ME, {"agent": "bob"}, "from") == "alice"
