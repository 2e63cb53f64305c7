"""The five kinds of group ``fastverk.savvifi.com/v1``: names, printer columns, OpenAPI schemas.

Fields (docs/store.md "Python API (for the rest of the daemon)"): AgentProfile (backend,
mcpServers); Agent (profile, pool, ownerRef, resumeFrom, lineage.mergedFrom, status.phase/focus);
AgentTask (objective, assignedAgentRef, status.checkpoints[]); AgentChannel (participants minItems
1, subject, ttl, phase Pending/Open/Closed/Expired); HumanPrompt (kind, meridianSpec, response
schema, answer). Free-form parts (meridianSpec, a response schema, conditions) keep unknown fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["GROUP", "GROUP_VERSION", "KINDS", "VERSION", "Column", "Kind", "kind_for"]

GROUP = "fastverk.savvifi.com"
VERSION = "v1"
GROUP_VERSION = f"{GROUP}/{VERSION}"

Schema = dict[str, Any]


def _s() -> Schema:
    return {"type": "string"}


def _i(minimum: int | None = None) -> Schema:
    out: Schema = {"type": "integer", "format": "int64"}
    if minimum is not None:
        out["minimum"] = minimum
    return out


def _b() -> Schema:
    return {"type": "boolean"}


def _arr(items: Schema, **extra: Any) -> Schema:
    return {"type": "array", "items": items, **extra}


def _obj(props: dict[str, Schema], required: list[str] | None = None, **extra: Any) -> Schema:
    out: Schema = {"type": "object", "properties": props, **extra}
    if required:
        out["required"] = required
    return out


def _free(description: str) -> Schema:
    return {
        "type": "object",
        "description": description,
        "x-kubernetes-preserve-unknown-fields": True,
    }


def _date() -> Schema:
    return {"type": "string", "format": "date-time"}


def _doc(schema: Schema, text: str) -> Schema:
    return {**schema, "description": text}


_AGENT_REF = _obj(
    {"apiVersion": _s(), "kind": _s(), "name": _s(), "namespace": _s(), "uid": _s()}, ["name"]
)
_CONDITIONS = _arr(
    _obj(
        {
            "type": _s(),
            "status": _s(),
            "reason": _s(),
            "message": _s(),
            "lastTransitionTime": _date(),
        },
        ["type", "status"],
    )
)

_AGENT_SPEC = _obj(
    {
        "profile": _doc(_s(), "AgentProfile name this agent runs with."),
        "pool": _doc(_s(), "Pool the agent belongs to."),
        "ownerRef": _doc(_AGENT_REF, "The AgentTask (or other object) this agent works for."),
        "resumeFrom": _doc(_s(), "Checkpoint ref this agent resumes from."),
        "lineage": _obj(
            {
                "parent": _doc(_s(), "Agent this one was handed work by."),
                "mergedFrom": _doc(_arr(_s()), "Agents whose work was merged into this one."),
            }
        ),
        "agentType": _doc(_s(), "session (a live Claude session), local, http or spawned."),
        "description": _s(),
        "capabilities": _arr(_s()),
        "endpoint": _doc(_s(), "Base URL of a registered HTTP agent."),
        "capacity": _i(0),
        "sessionId": _doc(_s(), "Claude Code session id, for session agents."),
        "cwd": _doc(_s(), "Working directory of the session or runner."),
        "depth": _i(0),
    }
)
_AGENT_STATUS = _obj(
    {
        "phase": _doc(_s(), "Pending, Running, Idle, Succeeded, Failed, Offline or Ended."),
        "focus": _doc(_s(), "What the agent works on now (short text)."),
        "message": _s(),
        "pid": _i(0),
        "lastHeartbeat": _date(),
        "startedAt": _date(),
        "endedAt": _doc(_date(), "When a session agent's claude process ended (phase Ended)."),
        "reason": _doc(_s(), "Why a session agent ended: process exited, SessionEnd hook, ..."),
        "conditions": _CONDITIONS,
    }
)
_TASK_SPEC = _obj(
    {
        "objective": _doc(_s(), "What the task is for."),
        "assignedAgentRef": _doc(_AGENT_REF, "The Agent working on the task."),
        "priority": _i(),
        "context": _doc(_s(), "Hand-over context (summary, next steps)."),
        "lineage": _free("Where the task came from (handedOffFrom, spawnedBy, ...)."),
    },
    ["objective"],
)
_CHECKPOINT = _obj(
    {
        "ref": _doc(_s(), "Content address of the checkpoint bundle."),
        "createdAt": _date(),
        "summary": _s(),
        "agent": _s(),
        "size": _i(0),
    },
    ["ref"],
)
_TASK_STATUS = _obj(
    {
        "phase": _doc(_s(), "Pending, Running, Succeeded, Failed or HandedOff."),
        "checkpoints": _doc(_arr(_CHECKPOINT), "Append-only checkpoint history."),
        "result": _s(),
        "message": _s(),
        "conditions": _CONDITIONS,
    }
)
_CHANNEL_SPEC = _obj(
    {
        "participants": _doc(_arr(_s(), minItems=1), "Agents allowed on the channel."),
        "subject": _doc(_s(), "The NATS subject the channel rides."),
        "ttl": _doc(_s(), "How long the channel lives (Go duration, e.g. 1h)."),
        "topic": _s(),
    },
    ["participants"],
)
_CHANNEL_STATUS = _obj(
    {
        "phase": {"type": "string", "enum": ["Pending", "Open", "Closed", "Expired"]},
        "openedAt": _date(),
        "expiresAt": _date(),
        "message": _s(),
    }
)
_PROMPT_SPEC = _obj(
    {
        "kind": _doc(
            {"type": "string", "enum": ["notify", "approval", "choice", "input"]},
            "What kind of answer the prompt wants.",
        ),
        "agent": _doc(_s(), "The agent asking."),
        "message": _s(),
        "choices": _arr(_s()),
        "meridianSpec": _free("Rendering spec of the prompt (meridian)."),
        "responseSchema": _free("JSON schema the answer must satisfy."),
        "replySubject": _s(),
        "timeoutSeconds": _i(0),
    },
    ["kind"],
)
_PROMPT_STATUS = _obj(
    {
        "phase": _doc(_s(), "Pending, Answered, Expired or Cancelled."),
        "answer": _free("The human's answer."),
        "answeredBy": _s(),
        "answeredAt": _date(),
    }
)
_PROFILE_SPEC = _obj(
    {
        "backend": _doc(_s(), "Runner backend (claude-code); its command is configuration."),
        "mcpServers": _doc(
            _arr(_s()), "MCP servers the runner gets; each resolves via MCP_<NAME>_URL."
        ),
        "model": _doc(_s(), "Model for the runner (--model)."),
        "permissionMode": _doc(
            {
                "type": "string",
                "enum": ["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"],
            },
            "Permission mode (--permission-mode).",
        ),
        "allowedTools": _doc(_arr(_s()), "Tools allowed without asking (--allowedTools)."),
        "disallowedTools": _doc(_arr(_s()), "Tools refused (--disallowedTools)."),
        "systemPrompt": _doc(_s(), "Appended to the system prompt (--append-system-prompt)."),
        "maxTurns": _doc(_i(1), "Turns per prompt (--max-turns)."),
        "maxBudgetUsd": _doc({"type": "number", "minimum": 0}, "Cost budget (--max-budget-usd)."),
        "timeoutSeconds": _doc(_i(1), "Wall-clock budget of one run; then it is killed."),
        "writablePaths": _doc(
            _arr(_s()), "Extra directories the runner may write (bind-mounted, --add-dir)."
        ),
        "network": _doc(_b(), "Network access for the runner (default true)."),
        "env": {"type": "object", "additionalProperties": _s()},
    },
    ["backend"],
)


@dataclass(frozen=True)
class Column:
    """A printer column: header, OpenAPI type, JSONPath (dotted), priority (1 = -o wide)."""

    name: str
    type: str
    path: str
    description: str = ""
    priority: int = 0
    # A daemon view that supplies the cell first (tables.LiveCells); the path is the fallback,
    # and all a real API server's printer column shows.
    live: str = ""


@dataclass(frozen=True)
class Kind:
    """One resource of the group."""

    kind: str
    plural: str
    short_names: tuple[str, ...]
    spec: Schema
    status: Schema
    columns: tuple[Column, ...] = field(default_factory=tuple)
    description: str = ""

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    def schema(self) -> Schema:
        """The OpenAPI v3 schema of a whole object of this kind."""
        return {
            "type": "object",
            "description": self.description,
            "properties": {
                "apiVersion": _doc(_s(), "fastverk.savvifi.com/v1"),
                "kind": _doc(_s(), self.kind),
                "metadata": {"type": "object"},
                "spec": self.spec,
                "status": self.status,
            },
            "x-kubernetes-group-version-kind": [
                {"group": GROUP, "version": VERSION, "kind": self.kind}
            ],
        }


_AGE = Column("Age", "date", ".metadata.creationTimestamp")

KINDS: dict[str, Kind] = {
    k.plural: k
    for k in (
        Kind(
            "Agent",
            "agents",
            ("ag",),
            _AGENT_SPEC,
            _AGENT_STATUS,
            (
                Column("Phase", "string", ".status.phase"),
                Column("Profile", "string", ".spec.profile"),
                Column(
                    "Focus",
                    "string",
                    ".status.focus",
                    "What it works on: its annotate intent, else the operator's turn.",
                    live="focus",
                ),
                _AGE,
                Column("Session", "string", ".spec.sessionId", priority=1),
                Column("Cwd", "string", ".spec.cwd", priority=1),
            ),
            "An agent: a live Claude session, a local package agent or a spawned runner.",
        ),
        Kind(
            "AgentTask",
            "agenttasks",
            ("at", "task"),
            _TASK_SPEC,
            _TASK_STATUS,
            (
                Column("Agent", "string", ".spec.assignedAgentRef.name"),
                Column("Phase", "string", ".status.phase"),
                _AGE,
                Column("Objective", "string", ".spec.objective", priority=1),
            ),
            "A unit of work with its objective, assignee and checkpoint history.",
        ),
        Kind(
            "AgentChannel",
            "agentchannels",
            ("ach", "channel"),
            _CHANNEL_SPEC,
            _CHANNEL_STATUS,
            (
                Column("Subject", "string", ".spec.subject"),
                Column("Phase", "string", ".status.phase"),
                Column("TTL", "string", ".spec.ttl"),
                _AGE,
            ),
            "A durable rendezvous for a known set of agents; the bytes ride NATS.",
        ),
        Kind(
            "HumanPrompt",
            "humanprompts",
            ("hp", "prompt"),
            _PROMPT_SPEC,
            _PROMPT_STATUS,
            (
                Column("Kind", "string", ".spec.kind"),
                Column("Agent", "string", ".spec.agent"),
                Column("Phase", "string", ".status.phase"),
                _AGE,
                Column("Message", "string", ".spec.message", priority=1),
            ),
            "A question for the human, answered from the CLI or the console.",
        ),
        Kind(
            "AgentProfile",
            "agentprofiles",
            ("ap", "profile"),
            _PROFILE_SPEC,
            {"type": "object", "properties": {}},
            (
                Column("Backend", "string", ".spec.backend"),
                Column("Model", "string", ".spec.model"),
                Column("MCP Servers", "string", ".spec.mcpServers"),
                _AGE,
                Column("Permission", "string", ".spec.permissionMode", priority=1),
                Column("Network", "boolean", ".spec.network", priority=1),
            ),
            "How to run an agent: backend, MCP servers, model, permissions and budgets.",
        ),
    )
}

_BY_KIND = {k.kind: k for k in KINDS.values()}


def kind_for(name: str) -> Kind | None:
    """The Kind for a plural, kind name or short name (case-insensitive), if any."""
    low = name.lower()
    for k in KINDS.values():
        if low in (k.plural, k.singular, k.kind.lower(), *k.short_names):
            return k
    return _BY_KIND.get(name)
