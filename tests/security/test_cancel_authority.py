"""Who may cancel what (docs/security.md "Who may cancel what"): a session cancels only what it
started (the agents it spawned, theirs, and their tasks), the human cancels any; anyone else
gets a clear refusal, the target keeps running and listed, and the refusal is audited."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.security.conftest import Tally
from tests.tools.conftest import AgentProc, ToolFailed, human_call


@pytest.fixture
def two(daemon: Daemon, claude_bin: Path, tmp_path: Path) -> Iterator[tuple[AgentProc, AgentProc]]:
    """Two interactive sessions in different directories: two agents."""
    a = AgentProc(daemon, claude_bin, tmp_path / "work" / "alpha")
    b = AgentProc(daemon, claude_bin, tmp_path / "work" / "bravo")
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def _listed(daemon: Daemon) -> set[str]:
    return {a["name"] for a in human_call(daemon, "list_agents")["agents"]}


def _refusals(daemon: Daemon, want: int) -> list[dict[str, Any]]:
    """The CANCEL_REFUSED events, once ``want`` are there (the audit append is batched)."""
    deadline = time.monotonic() + 10
    while True:
        events = human_call(daemon, "audit", type="CANCEL_REFUSED")["events"]
        if len(events) >= want or time.monotonic() > deadline:
            return events  # type: ignore[no-any-return]


def test_a_session_cannot_cancel_another_session(
    daemon: Daemon, two: tuple[AgentProc, AgentProc], tally: Tally
) -> None:
    """bravo's cancel of alpha is refused: alpha stays listed and reachable; audited."""
    alpha, bravo = two
    assert alpha.name in _listed(daemon)
    with pytest.raises(ToolFailed, match="did not start it") as err:
        bravo.call("cancel", name=alpha.name)
    assert tally("cancel another session", "refused to cancel" in str(err.value)), daemon.log()
    assert alpha.name in _listed(daemon)
    assert alpha.call("whoami")["agent"] == alpha.name
    bravo.call("send", to=alpha.name, text="still there?")  # no "no agent named"
    (event,) = _refusals(daemon, 1)
    assert (event["agent"], event["by"], event["kind"]) == (alpha.name, bravo.name, "Agent")


def test_only_the_spawner_or_the_human_cancels_a_spawned_agent(
    daemon: Daemon, two: tuple[AgentProc, AgentProc], tally: Tally
) -> None:
    """alpha spawns kid (with its task): bravo may cancel neither; alpha and the human may."""
    alpha, bravo = two
    alpha.call("spawn_subagent", name="kid", prompt="answer ok")
    alpha.call("spawn_subagent", name="kid2")
    for target in ("kid", "kid-task"):
        with pytest.raises(ToolFailed, match="did not start it") as err:
            bravo.call("cancel", name=target)
        assert tally("cancel another's subagent", "refused" in str(err.value))
    assert {"kid", "kid2"} <= _listed(daemon)
    assert alpha.call("cancel", name="kid")["cancelled"] is True
    assert human_call(daemon, "cancel", name="kid2")["cancelled"] is True
    events = _refusals(daemon, 2)
    assert sorted(e["kind"] for e in events) == ["Agent", "AgentTask"], events
    assert {e["by"] for e in events} == {bravo.name}
