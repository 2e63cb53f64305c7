"""Objects of state format 1 hold their whole record in a legacy annotation: opening the store
moves it into spec, status and notes once (the object's own fields win), reopening rewrites
nothing, and reads never consult the annotation (docs/store.md "Older objects")."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from agentcoord.kernel.config import Config, load_config
from agentcoord.stores.agentrecords import AgentRecord, AgentTaskRecord
from agentcoord.stores.objects import ObjectBackend, ObjectStore
from agentcoord.stores.objects.repository import (
    LEGACY_RECORD_ANNOTATION,
    NOTE_PREFIX,
    StoreAgentRecords,
    StoreChannelRecords,
    StoreJobRecords,
    StorePromptRecords,
    StoreTaskRecords,
    migrate_legacy_records,
)
from agentcoord.stores.objects.serve import open_store, store_path
from agentcoord.stores.records import ChannelRecord, PromptRecord, TaskRecord

NS = "default"
LABEL = "fastverk.savvifi.com/record-kind"

# Records as a format-1 daemon kept them: the whole record in the annotation, and spec/status
# as projections of it (written, never read back). One spec was edited with kubectl since.
REGISTERED: dict[str, Any] = {
    "agent_id": "alpha",
    "agent_name": "Alpha",
    "transport": "http",
    "endpoint": "http://old",
    "registered_by": "agent:x",
    "registered_at": "2025-06-01T00:00:00Z",
    "metadata": {"region": "eu", "available_capacity": 2},
    "heartbeat_ttl": 60,
    "status": "online",
}
CHANNEL: dict[str, Any] = {
    "name": "ops",
    "subject": "channels.ops",
    "participants": ["a", "b"],
    "created_by": "agent:a",
    "topic": "deploys",
    "phase": "Open",
    "created_at": 1.7e9,
}
PROMPT: dict[str, Any] = {
    "id": "p1",
    "agent": "agent:a",
    "kind": "approval",
    "question": "ship it?",
    "context": "release 2",
    "phase": "Answered",
    "answer": True,
    "answered_by": "human:u",
    "created_at": 1.7e9,
    "answered_at": 1.7e9 + 30,
}
HANDOFF: dict[str, Any] = {
    "name": "handoff-b-ho-1",
    "objective": "finish",
    "assigned_agent": "agent:b",
    "lineage": {"handedOffFrom": {"agent": "agent:a", "task": "finish", "offer": "ho-1"}},
    "handoff": {"next": "tests"},
    "created_at": 1.7e9,
}
JOB: dict[str, Any] = {
    "job_id": "j1",
    "agent_id": "alpha",
    "transport": "local",
    "task": "review",
    "requested_by": "human:u",
    "status": "timed_out",
    "created_at": "2025-06-01T00:00:00Z",
    "sandbox": "bwrap",
    "error": "took too long",
}


def _legacy_object(
    kind: str, record_kind: str, key: str, record: dict[str, Any], spec: Any, status: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "fastverk.savvifi.com/v1",
        "kind": kind,
        "metadata": {
            "name": key,
            "labels": {LABEL: record_kind},
            "annotations": {
                "fastverk.savvifi.com/record-key": key,
                LEGACY_RECORD_ANNOTATION: json.dumps(record),
            },
        },
        "spec": spec,
        "status": status,
    }


LEGACY_OBJECTS = {
    "agents": [
        _legacy_object(
            "Agent",
            "registered",
            "alpha",
            REGISTERED,
            # capacity and endpoint edited with kubectl after the format-1 daemon wrote them
            {"agentType": "http", "endpoint": "http://edited", "capacity": 5},
            {"phase": "Online"},
        )
    ],
    "agentchannels": [
        _legacy_object(
            "AgentChannel",
            "channel",
            "ops",
            CHANNEL,
            {"participants": ["a", "b"], "subject": "channels.ops", "topic": "deploys"},
            {"phase": "Open"},
        )
    ],
    "humanprompts": [
        _legacy_object(
            "HumanPrompt",
            "prompt",
            "p1",
            PROMPT,
            {"kind": "approval", "agent": "agent:a", "message": "ship it?"},
            {"phase": "Answered", "answer": {"value": True}, "answeredBy": "human:u"},
        )
    ],
    "agenttasks": [
        _legacy_object(
            "AgentTask",
            "handoff",
            "handoff-b-ho-1",
            HANDOFF,
            {"objective": "finish", "assignedAgentRef": {"name": "agent:b"}},
            {"phase": "Running"},
        ),
        _legacy_object(
            "AgentTask",
            "job",
            "job-j1",
            JOB,
            {"objective": "review", "assignedAgentRef": {"kind": "Agent", "name": "alpha"}},
            {"phase": "Failed", "message": "took too long"},
        ),
    ],
}


async def _write_format_1_store(path: Path) -> None:
    async with ObjectStore(path) as store:
        for plural, objs in LEGACY_OBJECTS.items():
            for obj in objs:
                await store.create(plural, NS, obj, keep_status=True)


def _config(tmp_path: Path) -> Config:
    return load_config(
        env={
            "HOME": str(tmp_path),
            "AGENTCOORD_STATE_DIR": str(tmp_path / "state"),
            "AGENTCOORD_RUNTIME_DIR": str(tmp_path / "run"),
            "AGENTCOORD_KUBE_ADDR": "127.0.0.1:0",
        }
    )


async def _versions(store: ObjectBackend) -> dict[str, str]:
    out = {}
    for plural in LEGACY_OBJECTS:
        items, _ = await store.list(plural, NS)
        out.update(
            {f"{plural}/{o['metadata']['name']}": o["metadata"]["resourceVersion"] for o in items}
        )
    return out


async def _expect_records(store: ObjectBackend) -> None:
    agent = StoreAgentRecords(store, NS).get("alpha")
    assert agent == AgentRecord(
        **{
            **REGISTERED,
            "endpoint": "http://edited",
            "metadata": {"region": "eu", "available_capacity": 5},
        }
    )
    assert await StoreChannelRecords(store, NS).get("ops") == ChannelRecord(**CHANNEL)
    prompt = await StorePromptRecords(store, NS).get("p1")
    assert prompt == PromptRecord(**PROMPT)
    assert await StoreTaskRecords(store, NS).get("handoff-b-ho-1") == TaskRecord(**HANDOFF)
    assert StoreJobRecords(store, NS).get("j1") == AgentTaskRecord(**JOB)


async def test_opening_the_store_moves_legacy_records_once(tmp_path: Path) -> None:
    """The daemon's open of a store file holding format-1 objects moves every annotation into
    spec, status and notes (kubectl edits kept, the operator's status kept); a second open
    rewrites nothing."""
    cfg = _config(tmp_path)
    cfg.state_dir.mkdir(mode=0o700, parents=True)
    cfg.runtime_dir.mkdir(mode=0o700, parents=True)
    await _write_format_1_store(store_path(cfg))

    async with contextlib.AsyncExitStack() as stack:
        store = await open_store(cfg, stack)
        for plural in LEGACY_OBJECTS:
            for obj in (await store.list(plural, NS))[0]:
                assert LEGACY_RECORD_ANNOTATION not in obj["metadata"]["annotations"]
        alpha = await store.get("agents", NS, "alpha")
        assert alpha["metadata"]["annotations"][NOTE_PREFIX + "registered-by"] == "agent:x"
        handoff = await store.get("agenttasks", NS, "handoff-b-ho-1")
        assert handoff["status"] == {"phase": "Running"}  # the operator's, not the record's
        await _expect_records(store)
        first = await _versions(store)

    async with contextlib.AsyncExitStack() as stack:
        store = await open_store(cfg, stack)
        assert await _versions(store) == first
        await _expect_records(store)
        assert await migrate_legacy_records(store, NS) == 0


async def test_reads_do_not_consult_the_legacy_annotation(store: ObjectBackend) -> None:
    """On either backend, an annotation that appears after the store was opened is not read,
    and a daemon write keeps it: the record is what spec, status and notes say until the move
    (at the next start) fills in what only the annotation held."""
    await store.create("agents", NS, LEGACY_OBJECTS["agents"][0], keep_status=True)
    agents = StoreAgentRecords(store, NS)
    before = agents.get("alpha")
    assert before is not None
    assert (before.registered_by, before.heartbeat_ttl) == ("", 300)
    before.status = "degraded"
    await agents.upsert(before)  # a daemon write keeps the annotation it did not read
    obj = await store.get("agents", NS, "alpha")
    assert LEGACY_RECORD_ANNOTATION in obj["metadata"]["annotations"]
    assert await migrate_legacy_records(store, NS) == 1
    after = agents.get("alpha")
    assert after is not None
    assert (after.registered_by, after.status) == ("agent:x", "degraded")
    assert await migrate_legacy_records(store, NS) == 0


async def test_an_unreadable_annotation_is_dropped_with_the_object_kept(tmp_path: Path) -> None:
    """A legacy annotation that is not JSON gives no fields: the object is rewritten from its
    own spec and status, without it, and read as before."""
    obj = _legacy_object(
        "AgentChannel",
        "channel",
        "c",
        {},
        {"participants": ["a"], "subject": "channels.c"},
        {"phase": "Open", "openedAt": "2025-06-01T00:00:00.000000Z"},
    )
    obj["metadata"]["annotations"][LEGACY_RECORD_ANNOTATION] = "{not json"
    async with ObjectStore(tmp_path / "objects.db") as store:
        await store.create("agentchannels", NS, obj, keep_status=True)
        assert await migrate_legacy_records(store, NS) == 1
        stored = await store.get("agentchannels", NS, "c")
        assert LEGACY_RECORD_ANNOTATION not in stored["metadata"]["annotations"]
        got = await StoreChannelRecords(store, NS).get("c")
        assert got is not None
        assert (got.participants, got.phase, got.created_by) == (["a"], "Open", "")
