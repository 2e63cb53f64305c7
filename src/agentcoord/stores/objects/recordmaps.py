"""The daemon's five record types as objects: one slot table each (pure).

Channels, prompts and handoff tasks (:mod:`agentcoord.stores.records`), registered agents and
dispatch jobs (:mod:`agentcoord.stores.agentrecords`); docs/store.md "Records are objects" has
the same tables for a reader. The kinds' fields are declared in :mod:`kinds`; how a table
becomes the two directions of the codec is :mod:`recordcodec`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentcoord.stores.agentrecords import AgentRecord, AgentTaskRecord
from agentcoord.stores.objects.kinds import (
    CHANNEL_PHASES,
    KINDS,
    AgentChannelSpec,
    AgentChannelStatus,
    AgentSpec,
    AgentStatus,
    AgentTaskSpec,
    AgentTaskStatus,
    HumanPromptSpec,
    HumanPromptStatus,
)
from agentcoord.stores.objects.recordcodec import (
    ABSENT,
    AGENT_REF,
    DURATION,
    INT_TEXT,
    JSON_DICT,
    KEPT_TEXT,
    LIST,
    SOME_LIST,
    TEXT,
    TIME,
    Conv,
    Parts,
    RecordCodec,
    mapped,
    note,
    one_of,
    spec,
    status,
    unstamp,
)
from agentcoord.stores.objects.typed import to_wire
from agentcoord.stores.records import ChannelRecord, PromptRecord, TaskRecord

__all__ = ["CHANNELS", "CODECS", "HANDOFFS", "JOBS", "PROMPTS", "REGISTERED"]


def _created_fallback(values: dict[str, Any], meta: Mapping[str, Any]) -> None:
    """A record a person made with kubectl has no created-at note: its creationTimestamp."""
    if "created_at" not in values:
        ts = unstamp(meta.get("creationTimestamp"))
        if ts is not None:
            values["created_at"] = ts


# -- AgentChannel ----------------------------------------------------------------------------


def _channel_expiry(
    values: dict[str, Any], parts: Parts[AgentChannelSpec, AgentChannelStatus], _: Any
) -> None:
    # The TTL is the user's (spec): the expiry follows it; status.expiresAt is only its echo.
    ttl, created = values.get("ttl_secs"), values.get("created_at")
    if not ttl:
        values["expires_at"] = None
    elif created is not None:
        values["expires_at"] = created + ttl


CHANNELS: RecordCodec[ChannelRecord, AgentChannelSpec, AgentChannelStatus] = RecordCodec(
    kind=KINDS["agentchannels"],
    record_kind="channel",
    record_type=ChannelRecord,
    key=lambda r: r.name,
    key_fields=lambda k: {"name": k},
    slots={
        "participants": spec("participants", LIST),
        "subject": spec("subject", KEPT_TEXT),
        "topic": spec("topic", TEXT, missing=""),
        "ttl_secs": spec("ttl", DURATION, missing=None),
        "phase": status("phase", one_of(CHANNEL_PHASES)),
        "created_at": status("opened_at", TIME),
        "expires_at": status("expires_at", TIME),
        "created_by": note("created-by", missing=""),
    },
    decode_more=_channel_expiry,
)


# -- HumanPrompt -----------------------------------------------------------------------------


def _prompt_encode(rec: PromptRecord, parts: Parts[HumanPromptSpec, HumanPromptStatus]) -> None:
    parts.spec.reply_subject = f"prompts.{rec.id}.reply"
    parts.spec.meridian_spec = {
        "type": "info" if rec.kind == "notify" else rec.kind,
        "context": rec.context,
    }
    if rec.phase != "Answered":
        parts.status.answer = parts.status.answered_by = parts.status.answered_at = None


def _prompt_decode(
    values: dict[str, Any],
    parts: Parts[HumanPromptSpec, HumanPromptStatus],
    meta: Mapping[str, Any],
) -> None:
    meridian = parts.spec.meridian_spec
    if meridian is not None:
        values["context"] = str(meridian.get("context") or "")
    _created_fallback(values, meta)


PROMPTS: RecordCodec[PromptRecord, HumanPromptSpec, HumanPromptStatus] = RecordCodec(
    kind=KINDS["humanprompts"],
    record_kind="prompt",
    record_type=PromptRecord,
    key=lambda r: r.id,
    key_fields=lambda k: {"id": k},
    slots={
        "kind": spec("kind", KEPT_TEXT),
        "agent": spec("agent", KEPT_TEXT),
        "question": spec("message"),
        "choices": spec("choices", SOME_LIST),
        "schema": spec("response_schema"),
        # Pending is the kind's word for the record's Open; other phases are read as written.
        "phase": status("phase", mapped({"Open": "Pending"})),
        "answer": status(
            "answer",
            Conv(lambda v: {"value": v}, lambda w: ABSENT if w is None else w.get("value")),
        ),
        "answered_by": status("answered_by", Conv(lambda v: v or "", lambda w: w or ABSENT)),
        "answered_at": status("answered_at", TIME),
        "created_at": note("created-at", TIME),
    },
    also_owns=("spec.reply_subject", "spec.meridian_spec"),
    encode_more=_prompt_encode,
    decode_more=_prompt_decode,
)


# -- AgentTask: a handoff's successor task ----------------------------------------------------


def _handoff_from(text: str | None) -> Any:
    if text is None:
        return ABSENT
    try:
        handoff = json.loads(text)
    except ValueError:
        return {"text": text}  # a person's plain-text hand-over note
    return handoff if isinstance(handoff, dict) else ABSENT


HANDOFFS: RecordCodec[TaskRecord, AgentTaskSpec, AgentTaskStatus] = RecordCodec(
    kind=KINDS["agenttasks"],
    record_kind="handoff",
    record_type=TaskRecord,
    key=lambda r: r.name,
    key_fields=lambda k: {"name": k},
    slots={
        "objective": spec("objective"),
        "assigned_agent": spec("assigned_agent_ref", AGENT_REF),
        "handoff": spec(
            "context", Conv(lambda v: json.dumps(v, separators=(",", ":")), _handoff_from)
        ),
        "lineage": spec("lineage"),
        "created_at": note("created-at", TIME),
    },
    decode_more=lambda values, _, meta: _created_fallback(values, meta),
    # status is the operator's from here on (phase, checkpoints): written at create only.
    create_status={"phase": "Pending"},
)


# -- Agent: a registered agent ----------------------------------------------------------------


def _capacity(metadata: Mapping[str, Any]) -> int | None:
    value = metadata.get("available_capacity")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _registered_encode(rec: AgentRecord, parts: Parts[AgentSpec, AgentStatus]) -> None:
    parts.spec.capacity = _capacity(rec.metadata)


def _registered_decode(
    values: dict[str, Any], parts: Parts[AgentSpec, AgentStatus], _: Any
) -> None:
    metadata = dict(values.get("metadata") or {})
    # spec.capacity is the user's: an edit sets it, removing it removes the limit.
    if parts.spec.capacity is not None:
        metadata["available_capacity"] = parts.spec.capacity
    elif _capacity(metadata) is not None:
        del metadata["available_capacity"]
    values["metadata"] = metadata


REGISTERED: RecordCodec[AgentRecord, AgentSpec, AgentStatus] = RecordCodec(
    kind=KINDS["agents"],
    record_kind="registered",
    record_type=AgentRecord,
    key=lambda r: r.agent_id,
    key_fields=lambda k: {"agent_id": k},
    slots={
        "transport": spec("agent_type", KEPT_TEXT),
        "agent_name": spec("description"),
        "capabilities": spec("capabilities", LIST),
        "endpoint": spec("endpoint", TEXT, missing=""),
        "status": status(
            "phase",
            Conv(
                lambda v: v.capitalize() if v else "Unknown",
                lambda w: ABSENT if w is None else ("" if w == "Unknown" else w.lower()),
            ),
        ),
        "last_heartbeat": status("last_heartbeat", TEXT),
        "agent_type": note("agent-type"),
        "registered_at": note("registered-at"),
        "registered_by": note("registered-by"),
        "heartbeat_ttl": note("heartbeat-ttl", INT_TEXT),
        "metadata": note("metadata", JSON_DICT),
    },
    also_owns=("spec.capacity",),
    encode_more=_registered_encode,
    decode_more=_registered_decode,
)


# -- AgentTask: a dispatch job ----------------------------------------------------------------

_JOB_PHASES = {"pending": "Pending", "running": "Running", "succeeded": "Succeeded"}
_NO_TASK = "(no task text)"  # spec.objective is required; a job may have none


def _job_encode(rec: AgentTaskRecord, parts: Parts[AgentTaskSpec, AgentTaskStatus]) -> None:
    outcome = rec.status if rec.status not in _JOB_PHASES else ""
    parts.status.message = rec.error or outcome or None
    if outcome:
        parts.notes["outcome"] = outcome
    if isinstance(rec.result, str):
        parts.status.result = rec.result
    elif rec.result is not None:
        parts.status.result = json.dumps(rec.result, default=str)
        parts.notes["result-format"] = "json"


def _job_decode(
    values: dict[str, Any], parts: Parts[AgentTaskSpec, AgentTaskStatus], _: Any
) -> None:
    if parts.status.phase == "Failed":
        # the outcome (failed, timed_out, cancelled) is a note; a legacy record has its own
        values["status"] = parts.notes.get("outcome") or values.get("status") or "failed"
    if to_wire(parts.status):
        message = parts.status.message or ""
        values["error"] = "" if message == values.get("status") else message
        result: Any = parts.status.result
        if result is not None and parts.notes.get("result-format") == "json":
            result = json.loads(result)
        values["result"] = result


JOBS: RecordCodec[AgentTaskRecord, AgentTaskSpec, AgentTaskStatus] = RecordCodec(
    kind=KINDS["agenttasks"],
    record_kind="job",
    record_type=AgentTaskRecord,
    key=lambda r: f"job-{r.job_id}",
    key_fields=lambda k: {"job_id": k.removeprefix("job-")},
    slots={
        "task": spec(
            "objective",
            Conv(
                lambda v: v or _NO_TASK,
                lambda w: ABSENT if w is None else ("" if w == _NO_TASK else w),
            ),
        ),
        "agent_id": spec("assigned_agent_ref", AGENT_REF),
        # Failed says less than the record (timed_out, cancelled): the outcome note says it.
        "status": status(
            "phase",
            Conv(
                lambda v: _JOB_PHASES.get(v, "Failed"),
                lambda w: ABSENT if w in (None, "Failed") else w.lower(),
            ),
        ),
        "transport": note("transport"),
        "requested_by": note("requested-by"),
        "created_at": note("created-at"),
        "finished_at": note("finished-at"),
        "sandbox": note("sandbox"),
        "log_dir": note("log-dir"),
        "remote_job_id": note("remote-job-id"),
        "profile": note("profile"),
        "exit_code": note("exit-code", INT_TEXT),
    },
    also_owns=("status.message", "status.result", "note.outcome", "note.result-format"),
    encode_more=_job_encode,
    decode_more=_job_decode,
)

CODECS: tuple[RecordCodec[Any, Any, Any], ...] = (CHANNELS, PROMPTS, HANDOFFS, REGISTERED, JOBS)
