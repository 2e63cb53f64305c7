"""Discovery tools (docs/tools.md "Discovery"): annotate, find_agents, list_agents, get_agent. Focus
lives in the ``agent-focus`` KV view; agent rows come from an
:class:`~agentcoord.stores.agentsource.AgentSource`."""

from __future__ import annotations

from typing import Any

from agentcoord.errors import InvalidArguments
from agentcoord.kernel.caller import Caller
from agentcoord.localagents import LocalAgents
from agentcoord.stores.agentsource import AgentSource
from agentcoord.stores.kv import Focus, FocusStore
from agentcoord.stores.objects.agentdirectory import PROC_LABEL, SESSION_LABEL
from agentcoord.stores.objects.selectors import parse_labels
from agentcoord.stores.objects.statuserrors import BadRequest
from agentcoord.tools._acting import acting_agent
from agentcoord.tools._shape import compact, for_model
from agentcoord.tools.base import obj_schema, tool, unlisted

__all__ = ["DiscoveryTools"]

_STR: dict[str, Any] = {"type": "string"}
_LIST: dict[str, Any] = {"type": "array", "items": {"type": "string", "maxLength": 4096}}
_INTENT: dict[str, Any] = {"type": "string", "maxLength": 4096}
_LIMIT: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": 500}


def _focus_row(f: Focus) -> dict[str, Any]:
    return {
        "intent": f.intent,
        "files": list(f.files),
        "symbols": list(f.symbols),
        "concepts": list(f.concepts),
    }


# The daemon's own bookkeeping on a session's Agent: its claude's pid and start time, and its
# Claude Code session id. A model acts on names, so its rows leave them out.
_INTERNAL_LABELS = frozenset({PROC_LABEL, SESSION_LABEL})


def _model_agent(row: dict[str, Any]) -> dict[str, Any]:
    """A session agent's row as a model reads it: the condensed fields (name, profile, pool, phase,
    focus, labels) always, the focus without its empty parts, no internal labels."""
    if "labels" not in row or "transport" in row:  # registry records are their own contract
        return row
    out = compact(row, keep=("name", "profile", "pool", "phase", "focus", "labels"))
    out.pop("state_since", None)  # the state in words is what a model acts on
    out["labels"] = {k: v for k, v in row["labels"].items() if k not in _INTERNAL_LABELS}
    if row.get("focus"):
        out["focus"] = compact(row["focus"])
    return out


def _model_match(match: dict[str, Any]) -> dict[str, Any]:
    """A find_agents match as a model reads it: its agent, intent, concepts and files always;
    symbols when there are some; the rank is the order, not a score."""
    out = compact(match, keep=("agent", "intent", "concepts", "files"))
    out.pop("score", None)
    return out


def _match_selector(labels: dict[str, str], selector: str) -> bool:
    """Kubernetes label selectors, equality and set-based (``a=b,c in (x,y),!d``)."""
    try:
        return parse_labels(selector).matches(labels)
    except BadRequest as exc:
        raise InvalidArguments(f"bad selector {selector!r}: {exc}") from None


def _render_find(r: dict[str, Any]) -> str:
    lines = [
        f"{m['agent']}: {m['intent'] or '-'}"
        + (f" [{', '.join(m['files'][:5])}]" if m["files"] else "")
        for m in r["matches"]
    ]
    lines += [
        f"{a['agent_id']} ({a['transport']}, {a['effective_status']}): "
        + ", ".join(a.get("capabilities", []))
        for a in r.get("agents", [])
    ]
    return "\n".join(lines) or "no agent matches"


def _render_list(r: dict[str, Any]) -> str:
    if not r["agents"]:
        return "no agents"
    lines = []
    for a in r["agents"]:
        if "transport" in a:  # a registered or local agent (docs/localagents.md "Records")
            caps = ", ".join(a.get("capabilities", [])) or "-"
            lines.append(f"{a['name']}  {a['phase']}  {a['transport']}  [{caps}]")
        else:
            intent = (a.get("focus") or {}).get("intent") or "-"
            lines.append(f"{a['name']}  {a.get('state') or a['phase']}  {intent}")
    return "\n".join(lines)


class DiscoveryTools:
    """The discovery tools over the agent rows, the focus view and the local agents."""

    def __init__(self, agents: AgentSource, focus: FocusStore, local_agents: LocalAgents) -> None:
        self._agents = agents
        self._focus = focus
        self._local_agents = local_agents

    def _with_focus(self, row: dict[str, Any]) -> dict[str, Any]:
        f = self._focus.get(row["name"])
        return {**row, "focus": _focus_row(f) if f else None}

    @tool(
        description="Publish your focus; omitted fields clear.",
        schema=obj_schema(
            intent=_INTENT, files=_LIST, symbols=_LIST, concepts=_LIST, agent={"type": "string"}
        ),
    )
    async def annotate(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        agent = acting_agent(caller, args)
        # Whole-record write (docs/tools.md "Discovery"): fields left out are cleared.
        await self._focus.annotate(
            agent,
            args.get("intent", ""),
            tuple(args.get("files", ())),
            tuple(args.get("symbols", ())),
            tuple(args.get("concepts", ())),
        )
        return {"ok": True, "agent": agent}

    @tool(
        description="Agents by focus keywords (query) or capability.",
        schema=obj_schema(query=_STR, capability=_STR, limit=unlisted(_LIMIT)),
        render=_render_find,
        read_only=True,
    )
    async def find_agents(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        """``query`` over focus and ``capability`` routing in one tool
        (docs/tools.md "Discovery")."""
        query, capability = args.get("query", ""), args.get("capability", "")
        if not query and not capability:
            raise InvalidArguments("`query` or `capability` is required")
        limit = args.get("limit", 20)
        out: dict[str, Any] = {"matches": []}
        if query:
            found = self._focus.find(query, limit)
            out["matches"] = [{"agent": f.agent, **_focus_row(f), "score": s} for f, s in found]
            if for_model(caller):
                out["matches"] = [_model_match(m) for m in out["matches"]]
        if capability:
            # the process walk runs off the event loop
            await self._local_agents.refresh_sessions()
            out["agents"] = self._local_agents.find(capability, limit)
        return out

    @tool(
        description="Live agents (status: ended, all); selector a=b,c!=d.",
        schema=obj_schema(
            selector=_STR,
            status=_STR,
            agent_type=_STR,
            capability=_STR,
            limit=_LIMIT,
        ),
        render=_render_list,
        read_only=True,
    )
    async def list_agents(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        """Session agents (condensed rows) merged with registered and local agents (registry
        records, with ``effective_status``); agent_type/capability filters only match the latter."""
        selector, phase = args.get("selector", ""), args.get("status", "")
        agent_type, capability = args.get("agent_type", ""), args.get("capability", "")
        limit = args.get("limit", 100)
        # Live agents by default; ended sessions on request: status "ended", or "all" for every
        # agent (docs/localagents.md "Session lifetime").
        everything = phase.lower() == "all"
        if everything:
            phase = ""
        rows: list[dict[str, Any]] = []
        if not agent_type and not capability:
            rows = [
                self._with_focus(r)
                for r in await self._agents.list_agents()
                if _match_selector(r.get("labels", {}), selector)
                and (
                    r.get("phase", "").lower() == phase.lower()
                    if phase
                    else everything or r.get("phase") != "Ended"
                )
            ]
        if not selector and phase.lower() != "ended":
            await self._local_agents.refresh_sessions()
            merged = self._local_agents.merged(
                agent_type=agent_type or None,
                capability=capability or None,
                status=phase or None,
                limit=limit,
            )
            rows += [{"name": r["agent_id"], "phase": r["effective_status"], **r} for r in merged]
        if for_model(caller):
            return {"agents": [_model_agent(r) for r in rows[:limit]]}
        return {"agents": rows[:limit]}

    @tool(
        description="One agent (agent_id: name) and its focus.",
        schema=obj_schema(name=unlisted(_STR), agent_id=_STR),
        read_only=True,
    )
    async def get_agent(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        name = args.get("name") or args.get("agent_id")
        if not name:
            raise InvalidArguments("`name` is required")
        row = await self._agents.get_agent(name)
        if row is not None:
            shown = self._with_focus(row)
            return {"found": True, "agent": _model_agent(shown) if for_model(caller) else shown}
        await self._local_agents.refresh_sessions()
        record = self._local_agents.get(name)
        if record is not None:  # registered first, then a computed local agent
            return {"found": True, "agent": {"name": record["agent_id"], **record}}
        return {"found": False}  # a missing agent is not an error (docs/tools.md "Discovery")
