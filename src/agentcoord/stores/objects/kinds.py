"""The five kinds of group ``fastverk.savvifi.com/v1``: typed spec and status, printer columns.

Each kind's spec and status are declared once, as the dataclasses below (:mod:`typed`): the
OpenAPI v3 schema (validation, ``/openapi/v3``, ``kubectl explain``, the CRDs) and the wire
codec the records use (:mod:`recordcodec`) are derived from them (docs/store.md "Declaring a
kind"). Fields: AgentProfile (backend, mcpServers); Agent
(profile, pool, ownerRef, resumeFrom, lineage.mergedFrom, status.phase/focus); AgentTask
(objective, assignedAgentRef, status.checkpoints[]); AgentChannel (participants minItems 1,
subject, ttl, phase Pending/Open/Closed/Expired); HumanPrompt (kind, meridianSpec, response
schema, answer). Free-form parts (meridianSpec, a response schema, a task's lineage) keep
unknown fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentcoord.stores.objects.typed import date, prop, schema_of

__all__ = [
    "CHANNEL_PHASES",
    "GROUP",
    "GROUP_VERSION",
    "KINDS",
    "VERSION",
    "AgentChannelSpec",
    "AgentChannelStatus",
    "AgentLineage",
    "AgentProfileSpec",
    "AgentProfileStatus",
    "AgentRef",
    "AgentSpec",
    "AgentStatus",
    "AgentTaskSpec",
    "AgentTaskStatus",
    "Checkpoint",
    "Column",
    "Condition",
    "HumanPromptSpec",
    "HumanPromptStatus",
    "Kind",
    "kind_for",
]

GROUP = "fastverk.savvifi.com"
VERSION = "v1"
GROUP_VERSION = f"{GROUP}/{VERSION}"

Schema = dict[str, Any]

# -- the parts of each kind: one declaration, the schema and the codec derived (typed.py) --


@dataclass
class AgentRef:
    """A reference to another object (usually an Agent)."""

    api_version: str | None = prop()
    kind: str | None = prop()
    name: str | None = prop(required=True)
    namespace: str | None = prop()
    uid: str | None = prop()


@dataclass
class Condition:
    """One condition of an object's status, as Kubernetes' own kinds carry them."""

    type: str | None = prop(required=True)
    status: str | None = prop(required=True)
    reason: str | None = prop()
    message: str | None = prop()
    last_transition_time: str | None = date()


@dataclass
class AgentLineage:
    """Where an agent's work came from."""

    parent: str | None = prop("Agent this one was handed work by.")
    merged_from: list[str] | None = prop("Agents whose work was merged into this one.")


@dataclass
class AgentSpec:
    profile: str | None = prop("AgentProfile name this agent runs with.")
    pool: str | None = prop("Pool the agent belongs to.")
    owner_ref: AgentRef | None = prop("The AgentTask (or other object) this agent works for.")
    resume_from: str | None = prop("Checkpoint ref this agent resumes from.")
    lineage: AgentLineage | None = prop()
    agent_type: str | None = prop("session (a live Claude session), local, http or spawned.")
    description: str | None = prop()
    capabilities: list[str] | None = prop()
    endpoint: str | None = prop("Base URL of a registered HTTP agent.")
    capacity: int | None = prop(minimum=0)
    session_id: str | None = prop("Claude Code session id, for session agents.")
    cwd: str | None = prop("Working directory of the session or runner.")
    depth: int | None = prop(minimum=0)


@dataclass
class AgentStatus:
    phase: str | None = prop("Pending, Running, Idle, Succeeded, Failed, Offline or Ended.")
    focus: str | None = prop("What the agent works on now (short text).")
    message: str | None = prop()
    pid: int | None = prop(minimum=0)
    last_heartbeat: str | None = date()
    started_at: str | None = date()
    ended_at: str | None = date("When a session agent's claude process ended (phase Ended).")
    reason: str | None = prop("Why a session agent ended: process exited, SessionEnd hook, ...")
    conditions: list[Condition] | None = prop()


@dataclass
class AgentTaskSpec:
    objective: str | None = prop("What the task is for.", required=True)
    assigned_agent_ref: AgentRef | None = prop("The Agent working on the task.")
    priority: int | None = prop()
    context: str | None = prop("Hand-over context (summary, next steps).")
    lineage: dict[str, Any] | None = prop(
        "Where the task came from (handedOffFrom, spawnedBy, ...)."
    )


@dataclass
class Checkpoint:
    """One entry of an AgentTask's checkpoint history."""

    ref: str | None = prop("Content address of the checkpoint bundle.", required=True)
    created_at: str | None = date()
    summary: str | None = prop()
    agent: str | None = prop()
    size: int | None = prop(minimum=0)


@dataclass
class AgentTaskStatus:
    phase: str | None = prop("Pending, Running, Succeeded, Failed or HandedOff.")
    checkpoints: list[Checkpoint] | None = prop("Append-only checkpoint history.")
    result: str | None = prop()
    message: str | None = prop()
    conditions: list[Condition] | None = prop()


@dataclass
class AgentChannelSpec:
    participants: list[str] | None = prop(
        "Agents allowed on the channel.", required=True, min_items=1
    )
    subject: str | None = prop("The NATS subject the channel rides.")
    ttl: str | None = prop("How long the channel lives (Go duration, e.g. 1h).")
    topic: str | None = prop()


CHANNEL_PHASES = ("Pending", "Open", "Closed", "Expired")


@dataclass
class AgentChannelStatus:
    phase: str | None = prop(enum=CHANNEL_PHASES)
    opened_at: str | None = date()
    expires_at: str | None = date()
    message: str | None = prop()


@dataclass
class HumanPromptSpec:
    kind: str | None = prop(
        "What kind of answer the prompt wants.",
        required=True,
        enum=("notify", "approval", "choice", "input"),
    )
    agent: str | None = prop("The agent asking.")
    message: str | None = prop()
    choices: list[str] | None = prop()
    meridian_spec: dict[str, Any] | None = prop("Rendering spec of the prompt (meridian).")
    response_schema: dict[str, Any] | None = prop("JSON schema the answer must satisfy.")
    reply_subject: str | None = prop()
    timeout_seconds: int | None = prop(minimum=0)


@dataclass
class HumanPromptStatus:
    phase: str | None = prop("Pending, Answered, Expired or Cancelled.")
    answer: dict[str, Any] | None = prop("The human's answer.")
    answered_by: str | None = prop()
    answered_at: str | None = date()


@dataclass
class AgentProfileSpec:
    backend: str | None = prop(
        "Runner backend (claude-code); its command is configuration.", required=True
    )
    mcp_servers: list[str] | None = prop(
        "MCP servers the runner gets; each resolves via MCP_<NAME>_URL."
    )
    model: str | None = prop("Model for the runner (--model).")
    permission_mode: str | None = prop(
        "Permission mode (--permission-mode).",
        enum=("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"),
    )
    allowed_tools: list[str] | None = prop("Tools allowed without asking (--allowedTools).")
    disallowed_tools: list[str] | None = prop("Tools refused (--disallowedTools).")
    system_prompt: str | None = prop("Appended to the system prompt (--append-system-prompt).")
    max_turns: int | None = prop("Turns per prompt (--max-turns).", minimum=1)
    max_budget_usd: float | None = prop("Cost budget (--max-budget-usd).", minimum=0)
    timeout_seconds: int | None = prop(
        "Wall-clock budget of one run; then it is killed.", minimum=1
    )
    writable_paths: list[str] | None = prop(
        "Extra directories the runner may write (bind-mounted, --add-dir)."
    )
    network: bool | None = prop("Network access for the runner (default true).")
    env: dict[str, str] | None = prop()


@dataclass
class AgentProfileStatus:
    """AgentProfile has no status: a profile is configuration only."""


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
    """One resource of the group; ``spec_type`` and ``status_type`` are its typed parts."""

    kind: str
    plural: str
    short_names: tuple[str, ...]
    spec_type: type
    status_type: type
    columns: tuple[Column, ...] = field(default_factory=tuple)
    description: str = ""

    @property
    def spec(self) -> Schema:
        """The OpenAPI v3 schema of ``spec``, derived from :attr:`spec_type`."""
        return schema_of(self.spec_type)

    @property
    def status(self) -> Schema:
        """The OpenAPI v3 schema of ``status``, derived from :attr:`status_type`."""
        return schema_of(self.status_type)

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    def schema(self) -> Schema:
        """The OpenAPI v3 schema of a whole object of this kind, derived once: every write is
        validated against it (callers that change it take a copy, as the discovery documents
        do)."""
        cached = _SCHEMAS.get(self.plural)
        if cached is None:
            cached = _SCHEMAS[self.plural] = self._derived_schema()
        return cached

    def _derived_schema(self) -> Schema:
        return {
            "type": "object",
            "description": self.description,
            "properties": {
                "apiVersion": {"type": "string", "description": GROUP_VERSION},
                "kind": {"type": "string", "description": self.kind},
                "metadata": {"type": "object"},
                "spec": self.spec,
                "status": self.status,
            },
            "x-kubernetes-group-version-kind": [
                {"group": GROUP, "version": VERSION, "kind": self.kind}
            ],
        }


_SCHEMAS: dict[str, Schema] = {}  # by plural: Kind.schema()'s derivation, made once

_AGE = Column("Age", "date", ".metadata.creationTimestamp")

KINDS: dict[str, Kind] = {
    k.plural: k
    for k in (
        Kind(
            "Agent",
            "agents",
            ("ag",),
            AgentSpec,
            AgentStatus,
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
            AgentTaskSpec,
            AgentTaskStatus,
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
            AgentChannelSpec,
            AgentChannelStatus,
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
            HumanPromptSpec,
            HumanPromptStatus,
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
            AgentProfileSpec,
            AgentProfileStatus,
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
