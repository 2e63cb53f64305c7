"""Arguments at the edges get one clear line naming what is wrong, never an internal error:
one agent id rule for ``register_agent`` and ``send`` (no look-alike ids), a session's name
taken by ``register_agent``, an overlong ``audit`` actor, an unusable ``spawn_subagent`` repo
(docs/localagents.md "Registered agents")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.security.conftest import Tally
from tests.tools.conftest import AgentProc, ToolFailed, human_call

# Each reads as "worker" to a person: Cyrillic o, a trailing dot, a full-width letter, a
# combining mark, a zero-width space.
LOOK_ALIKES = ["w\u043erker", "worker.", "\uff57orker", "wo\u0301rker", "wor\u200bker"]


@pytest.fixture
def session(daemon: Daemon, claude_bin: Path, tmp_path: Path) -> Iterator[AgentProc]:
    """An interactive session (under a stand-in ``claude``)."""
    proc = AgentProc(daemon, claude_bin, tmp_path / "work" / "edges")
    try:
        yield proc
    finally:
        proc.close()


def _error(session: AgentProc, tool: str, **args: Any) -> str:
    with pytest.raises(ToolFailed) as err:
        session.call(tool, **args)
    return str(err.value)


def _register(agent_id: str) -> dict[str, Any]:
    return {"agent_id": agent_id, "endpoint": "http://127.0.0.1:9/a2a"}


@pytest.mark.parametrize("agent_id", LOOK_ALIKES)
def test_register_and_send_apply_one_id_rule(
    daemon: Daemon, session: AgentProc, tally: Tally, agent_id: str
) -> None:
    """A look-alike id is refused by register_agent as send refuses it: one rule, one line."""
    sent = _error(session, "send", to=agent_id, text="hi")
    registered = _error(session, "register_agent", **_register(agent_id))
    refused = "not a valid agent id" in registered and "not a valid agent id" in sent
    assert tally("look-alike agent id", refused), (registered, sent)
    assert "internal error" not in registered
    assert len(registered.splitlines()) == 1


def test_an_id_differing_only_by_case_is_refused(session: AgentProc, tally: Tally) -> None:
    """With "reviewer" registered, "Reviewer" is refused naming "reviewer"."""
    session.call("register_agent", **_register("reviewer"))
    message = _error(session, "register_agent", **_register("Reviewer"))
    assert tally("look-alike agent id (case)", "only by case" in message), message
    assert "'reviewer'" in message


def test_register_on_a_sessions_name_names_the_conflict(
    daemon: Daemon, session: AgentProc, tally: Tally
) -> None:
    """register_agent with a live session's name: "is taken", not "internal error"."""
    message = _error(session, "register_agent", **_register(session.name))
    assert tally("register over a session", "is taken" in message), message + daemon.log()
    assert "internal error" not in message
    assert session.name in message
    assert session.call("whoami")["agent"] == session.name


def test_an_overlong_audit_actor_names_actor(daemon: Daemon, tally: Tally) -> None:
    """An audit actor past the key limit (600 characters) or past every argument's bound (5,000)
    is refused naming `actor`, never `resource_key`."""
    for size, words in ((600, "`actor` is longer than 512"), (5000, "`actor` is longer than")):
        with pytest.raises(ToolFailed) as err:
            human_call(daemon, "audit", actor="a" * size)
        message = str(err.value)
        assert tally("overlong audit actor", words in message), message
        assert "resource_key" not in message


@pytest.mark.parametrize(
    ("repo", "words"),
    [
        ("r" * 100_000, "`repo` is longer than"),
        ("/nonexistent/" + "d" * 300 + "/x", "does not exist"),
        ("/nonexistent/repo", "does not exist"),
        ("/", "is not a git repository"),
    ],
    ids=["100k", "long-component", "missing", "not-git"],
)
def test_spawn_subagent_repo_is_validated(
    session: AgentProc, tally: Tally, repo: str, words: str
) -> None:
    """An unusable spawn_subagent repo is a one-line InvalidArguments, not "internal error"."""
    message = _error(session, "spawn_subagent", name="kid", repo=repo)
    assert tally("bad spawn_subagent repo", words in message), message[:500]
    assert "internal error" not in message
    assert len(message) < 400
