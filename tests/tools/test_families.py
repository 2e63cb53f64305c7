"""Tool families as classes: each handler is a method called directly on an instance built with
the services it names (here small stand-ins that record what they are asked), and
:func:`tools_of` lists a family's tools by their methods (docs/architecture.md "Tools")."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar, cast

import pytest

from agentcoord.daemon.services import Services
from agentcoord.daemon.toolset import build_registry, families
from agentcoord.errors import IdentityMismatch, InvalidArguments
from agentcoord.kernel.caller import Caller
from agentcoord.localagents import LocalAgents
from agentcoord.messaging import Messaging
from agentcoord.stores.audit import AuditLog
from agentcoord.stores.kv import FocusStore
from agentcoord.tools.base import Tool, obj_schema, tool, tools_of
from agentcoord.tools.claims import ClaimTools
from agentcoord.tools.discovery import DiscoveryTools
from agentcoord.tools.handoff import HandoffTools
from agentcoord.tools.humans import HumanTools
from agentcoord.tools.identity import IdentityTools

pytestmark = pytest.mark.unit

_T = TypeVar("_T")

ME = Caller(kind="session", agent="alice", via="unix", pid=41, session_pid=40, cwd="/w")
HUMAN = Caller(kind="human", agent="human:me", via="unix", pid=7)


def run(call: Awaitable[_T]) -> _T:
    """The result of one handler call, on a fresh event loop."""

    async def wait() -> _T:
        return await call

    return asyncio.run(wait())


class Recorder:
    """A service stand-in: every awaited method records its call and answers ``answer``; any
    other use is a failure (the handler was expected not to need it)."""

    def __init__(self, answer: Any = None, *, allowed: tuple[str, ...] = ()) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self._answer = answer
        self._allowed = allowed

    def __getattr__(self, name: str) -> Any:
        if name not in self._allowed:
            raise AssertionError(f"the handler used {name}, which it should not need")

        async def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args, kwargs))
            return self._answer

        return call


class Agents:
    """An in-memory :class:`agentcoord.stores.agentsource.AgentSource`."""

    def __init__(self, *rows: dict[str, Any]) -> None:
        self._rows = {r["name"]: r for r in rows}

    async def list_agents(self) -> list[dict[str, Any]]:
        return sorted(self._rows.values(), key=lambda r: r["name"])

    async def get_agent(self, name: str) -> dict[str, Any] | None:
        return self._rows.get(name)


class NoFocus:
    """A focus view with nobody's focus in it."""

    def get(self, agent: str) -> None:
        return None


def test_whoami_is_a_method_that_needs_no_service() -> None:
    """whoami, called on IdentityTools(), shows a model no pids and the human every field."""
    tools = IdentityTools()
    assert run(tools.whoami(ME, {})) == {
        "agent": "alice",
        "kind": "session",
        "cwd": "/w",
        "via": "unix",
    }
    assert run(tools.whoami(HUMAN, {}))["pid"] == 7


def test_handoff_passes_its_defaults_to_the_messaging_service() -> None:
    """handoff, on a stand-in messaging service, offers as the caller with the 60 s default
    wait and the context built from its arguments."""
    messaging = Recorder({"accepted": True}, allowed=("offer_handoff",))
    tools = HandoffTools(cast(Messaging, messaging))
    result = run(tools.handoff(ME, {"to": "bob", "task": "fix the parser", "decisions": ["a"]}))
    assert result == {"accepted": True}
    ((name, args, kwargs),) = messaging.calls
    me, to, context, timeout = args
    assert (name, me, to, timeout, kwargs) == (
        "offer_handoff",
        "alice",
        "bob",
        60.0,
        {"queue_unknown": False},
    )
    assert (context.task, list(context.decisions)) == ("fix the parser", ["a"])


def test_answer_handoff_refuses_another_agents_name_before_any_service() -> None:
    """answer_handoff with ``agent`` naming someone else raises IdentityMismatch and asks the
    messaging service nothing."""
    messaging = Recorder()
    tools = HandoffTools(cast(Messaging, messaging))
    with pytest.raises(IdentityMismatch, match="you are alice, not bob"):
        run(tools.answer_handoff(ME, {"offer": "o-1", "accept": True, "agent": "bob"}))
    assert messaging.calls == []


def test_list_agents_reads_an_agent_source_and_hides_ended_sessions() -> None:
    """list_agents over an in-memory AgentSource: live agents by default, ended ones with
    status=ended; a selector keeps the local agents out (the stand-in fails if asked)."""
    agents = Agents(
        {"name": "a", "phase": "Running", "labels": {"team": "x"}},
        {"name": "b", "phase": "Ended", "labels": {"team": "x"}},
        {"name": "c", "phase": "Running", "labels": {"team": "y"}},
    )
    tools = DiscoveryTools(agents, cast(FocusStore, NoFocus()), cast(LocalAgents, Recorder()))
    live = run(tools.list_agents(ME, {"selector": "team=x"}))
    assert [r["name"] for r in live["agents"]] == ["a"]
    ended = run(tools.list_agents(HUMAN, {"selector": "team", "status": "ended"}))
    assert [r["name"] for r in ended["agents"]] == ["b"]
    with pytest.raises(InvalidArguments, match="bad selector"):
        run(tools.list_agents(ME, {"selector": "team in ("}))


def test_audit_turns_its_arguments_into_one_query() -> None:
    """audit, on a stand-in audit log, upper-cases the type and passes the actor and limit;
    a type that is not an event type is refused before the log is asked."""
    audit = Recorder([], allowed=("query",))
    tools = ClaimTools(cast(Any, Recorder()), cast(AuditLog, audit))
    assert run(tools.audit(HUMAN, {"type": "claim_released", "actor": "bob"})) == {"events": []}
    assert audit.calls == [
        ("query", (), {"since": None, "agent": "bob", "type_": "CLAIM_RELEASED", "limit": 100})
    ]
    with pytest.raises(InvalidArguments, match="`type` is an event type"):
        run(tools.audit(HUMAN, {"type": "a.b"}))
    assert len(audit.calls) == 1


def test_escalate_with_choices_asks_the_human_to_pick_one() -> None:
    """escalate with choices asks as ask_choice does (duplicates dropped); two options at
    once, or fewer than two choices, are refused."""
    messaging = Recorder({"answered": False}, allowed=("ask_human",))
    tools = HumanTools(cast(Messaging, messaging))
    run(tools.escalate(ME, {"question": "which?", "choices": ["x", "y", "x"]}))
    ((_, args, kwargs),) = messaging.calls
    assert args == ("alice", "choice", "which?")
    assert (kwargs["choices"], kwargs["timeout"]) == (["x", "y"], 60.0)
    with pytest.raises(InvalidArguments, match="give one of"):
        run(tools.escalate(ME, {"question": "q", "approval": True, "choices": ["x", "y"]}))
    with pytest.raises(InvalidArguments, match="at least two"):
        run(tools.ask_choice(ME, {"question": "q", "choices": ["x", "x"]}))
    assert len(messaging.calls) == 1


class _Family:
    """Two tools and a helper, for tools_of."""

    def __init__(self, answer: str) -> None:
        self.answer = answer

    def helper(self) -> str:
        return self.answer

    @tool(description="Second.", schema=obj_schema(), render=lambda r: r["a"], read_only=True)
    async def zeta(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return {"a": self.helper()}

    @tool(description="First.", schema=obj_schema(("k",), k={"type": "string"}), listed=False)
    async def alpha(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return {"k": args["k"]}


class _More(_Family):
    @tool(description="Third.", schema=obj_schema())
    async def more(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return {}


def test_tools_of_lists_the_declared_methods_in_class_order() -> None:
    """tools_of names each tool after its method, in the order the class (bases first)
    declares them, with the declared flags, and its handler is the method bound to the
    instance; an undeclared method is no tool."""
    family = _More("hi")
    tools = tools_of(family)
    assert [(t.name, t.description, t.listed, t.read_only) for t in tools] == [
        ("zeta", "Second.", True, True),
        ("alpha", "First.", False, False),
        ("more", "Third.", True, False),
    ]
    zeta = tools[0]
    assert zeta.render is not None
    assert zeta.render(run(zeta.handler(ME, {}))) == "hi"
    assert run(tools[1].handler(ME, {"k": "v"})) == {"k": "v"}


def test_every_registered_tool_is_the_method_of_its_name() -> None:
    """In the daemon's registry each tool's handler is a method of one family named as the
    tool, so a tools/call leads by name to its code."""

    class Unused:
        def __getattr__(self, name: str) -> Any:
            return Unused()

    services = cast(Services, Unused())
    registry = build_registry(services)
    by_family = {type(f): f for f in families(services)}
    seen: list[str] = []
    for t in registry.all():
        method = cast(Any, t.handler)
        assert method.__name__ == t.name
        assert type(method.__self__) in by_family
        seen.append(t.name)
    assert seen == [t.name for f in families(services) for t in tools_of(f)]
    assert len(seen) == len(set(seen)) >= 40
    assert all(isinstance(t, Tool) for t in registry.all())
