"""Agent registry and dispatch tools (docs/localagents.md "Tools"): register/deregister/heartbeat an
HTTP agent, discover local packages, run an agent by id, dispatch by capability.

``list_agents``/``get_agent``/``find_agents`` live with the discovery tools, which call
:class:`agentcoord.localagents.LocalAgents` (``merged``, ``get``) and the pure functions of
:mod:`agentcoord.localagents.merge`.
"""

from __future__ import annotations

import json
from typing import Any

from agentcoord.errors import InvalidArguments, Unavailable
from agentcoord.kernel.caller import Caller
from agentcoord.localagents import LocalAgents
from agentcoord.tools.base import obj_schema, tool

__all__ = ["AgentTools"]

_S: dict[str, Any] = {"type": "string"}
_ID: dict[str, Any] = {"type": "string", "maxLength": 128}
_TAGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
_PATH: dict[str, Any] = {"type": "string", "maxLength": 4096}  # PATH_MAX; a URL as long
_JSON_TEXT: dict[str, Any] = {"maxLength": 65536}  # metadata given as JSON text
_JOB = {
    "task": {"type": "string", "maxLength": 100_000},
    "profile": _S,  # the AgentProfile local starts run with (docs/profiles.md); default "default"
    "repo_url": _PATH,
    "wait": {"type": "boolean"},
    "file_path": _PATH,
}


def _json_arg(args: dict[str, Any], key: str, kind: type) -> Any:
    """``capabilities``/``metadata`` may come as JSON text; accept that or the value."""
    value = args.get(key)
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else kind()
        except ValueError:
            if kind is list:  # a comma-separated list too (docs/tools.md "Conventions")
                return [v.strip() for v in value.split(",") if v.strip()]
            raise InvalidArguments(f"`{key}` is not valid JSON") from None
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise InvalidArguments(f"`{key}` must be a JSON {'array' if kind is list else 'object'}")
    return value


def _render_profiles(result: dict[str, Any]) -> str:
    lines = []
    for p in result["profiles"]:
        servers = " ".join(p["mcpServers"]) or "-"
        line = f"{p['name']}: {p['backend']}, model {p['model'] or '(default)'}, mcp {servers}"
        lines += [line, *(f"  problem: {why}" for why in p["problems"])]
    return "\n".join(lines) or "no profiles"


def _render_agent(result: dict[str, Any]) -> str:
    a = result.get("agent", {})
    return (
        f"{a.get('agent_id')}: {a.get('effective_status')} ({a.get('transport')}), "
        f"capabilities {', '.join(a.get('capabilities', [])) or '-'}"
    )


def _render_discover(result: dict[str, Any]) -> str:
    lines = [f"{result['count']} local agent(s) in {result['agentihub_dir']}"]
    for a in result["agents"]:
        shadow = " (shadowed by a registered agent)" if a["shadowed_by_registered"] else ""
        lines.append(f"- {a['agent_id']}: {a['status']}; {', '.join(a['capabilities'])}{shadow}")
    return "\n".join(lines)


def _render_job(result: dict[str, Any]) -> str:
    job = result.get("job", {})
    head = f"{result['agent_id']} ({result['transport']}, by {result['routed_by']}): "
    head += f"job {job.get('job_id')} {job.get('status')}"
    res = job.get("result")
    if isinstance(res, dict) and res.get("result") is not None:
        head += f"\n{res['result']}"
    elif job.get("error"):
        head += f"\n{job['error']}"
    return head


class AgentTools:
    """The registry and dispatch tools over the local-agents service (docs/localagents.md)."""

    def __init__(self, local_agents: LocalAgents) -> None:
        self._local_agents = local_agents

    @tool(
        description="Register or update an HTTP agent.",
        schema=obj_schema(
            ("agent_id",),
            agent_id=_ID,
            agent_name=_S,
            agent_type=_S,
            capabilities={"type": ["array", "string"], **_JSON_TEXT},
            endpoint=_PATH,
            metadata={"type": ["object", "string"], **_JSON_TEXT},
            heartbeat_ttl={"type": "integer", "minimum": 1, "maximum": 86400},
            transport={"type": "string", "enum": ["http", "local"]},
        ),
        render=_render_agent,
    )
    async def register_agent(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        args = dict(args)
        args["capabilities"] = [str(c) for c in _json_arg(args, "capabilities", list)]
        args["metadata"] = _json_arg(args, "metadata", dict)
        return {"success": True, "agent": await self._local_agents.register(args, caller)}

    @tool(
        description="Remove an HTTP agent.",
        schema=obj_schema(("agent_id",), agent_id=_ID),
    )
    async def deregister_agent(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        removed = await self._local_agents.deregister(args["agent_id"], caller)
        return {"success": removed, "agent_id": args["agent_id"], "removed": removed}

    @tool(
        description="Refresh an HTTP agent's heartbeat.",
        schema=obj_schema(
            ("agent_id",),
            agent_id=_ID,
            status={"type": "string", "enum": ["online", "degraded"]},
            metadata={"type": ["object", "string"], **_JSON_TEXT},
        ),
        render=_render_agent,
    )
    async def heartbeat_agent(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        meta = _json_arg(args, "metadata", dict)
        agent = await self._local_agents.heartbeat(
            args["agent_id"], args.get("status", "online"), meta, caller
        )
        return {"success": True, "agent": agent}

    @tool(
        description="Local AgentiHub package agents.",
        schema=obj_schema(status={"type": "string", "enum": ["online", "idle"]}),
        render=_render_discover,
        read_only=True,
    )
    async def discover_local_agents(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        await self._local_agents.refresh_sessions()
        return self._local_agents.discover(args.get("status"))

    @tool(
        description="Send a task to agent_id; starts a local one.",
        schema=obj_schema(("agent_id", "task"), agent_id=_ID, **_JOB),
        render=_render_job,
    )
    async def run_agent(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return await self._local_agents.run_agent(args, caller)

    @tool(
        description="Send a task to the best agent for capability.",
        schema=obj_schema(("capability", "task"), capability=_S, **_JOB),
        render=_render_job,
    )
    async def dispatch_to_agent(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return await self._local_agents.dispatch(args, caller)

    @tool(
        description="Profiles for started agents.",
        schema=obj_schema(),
        render=_render_profiles,
        read_only=True,
    )
    async def list_profiles(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        """The AgentProfiles starts can use, each with what is missing on this machine
        (docs/profiles.md)."""
        launcher = self._local_agents.launcher  # attached at start-up, before the tools serve
        if launcher is None:
            raise Unavailable("profiles are not available in this daemon")
        return {"profiles": await launcher.listing()}
