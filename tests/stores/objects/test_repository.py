"""The record repository on the real SQLite object store: records are read from spec and
status on every read, writes are compare-and-set retried on 409 (no change is lost), fields
the record does not own are kept (docs/store.md "Records are objects"); the legacy record
annotation is test_legacy_records.py's."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentcoord.stores.agentrecords import AgentRecord, AgentTaskRecord
from agentcoord.stores.objects import Conflict, ObjectStore
from agentcoord.stores.objects.repository import (
    CAS_TRIES,
    LEGACY_RECORD_ANNOTATION,
    NOTE_PREFIX,
    StoreAgentRecords,
    StoreChannelRecords,
    StoreJobRecords,
    StorePromptRecords,
    StoreTaskRecords,
    record_of,
)
from agentcoord.stores.records import AlreadyAnswered, ChannelRecord, PromptRecord, effective_phase

NS = "default"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[ObjectStore]:
    async with ObjectStore(tmp_path / "objects.db") as s:
        yield s


class Racing:
    """The real store, with another writer's change landing just before each of the next
    ``times`` daemon updates (so that update is a 409), counting the 409s it caused."""

    def __init__(self, store: ObjectStore, other: Any, times: int = 1) -> None:
        self._store, self._other, self._times = store, other, times
        self.conflicts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def update(self, plural: str, namespace: str, obj: Any, **kw: Any) -> Any:
        if self._times > 0:
            self._times -= 1
            await self._other()
        try:
            return await self._store.update(plural, namespace, obj, **kw)
        except Conflict:
            self.conflicts += 1
            raise


def test_effective_phase_applies_expiry() -> None:
    """Open and Pending channels past expires_at read Expired; Closed stays Closed."""
    rec = ChannelRecord("c", "channels.c", ["a"], "a", phase="Open", expires_at=100.0)
    assert effective_phase(rec, 99.0) == "Open"
    assert effective_phase(rec, 100.0) == "Expired"
    rec.phase = "Closed"
    assert effective_phase(rec, 200.0) == "Closed"


async def test_channel_create_is_idempotent_and_lives_in_spec(store: ObjectStore) -> None:
    """Creating an existing channel returns it unchanged; participants and the TTL are in
    spec, the phase and times in status, and the record reads back whole."""
    channels = StoreChannelRecords(store, NS)
    # times are kept to the microsecond (RFC 3339 in status), so a round one compares exactly
    rec = ChannelRecord("c", "channels.c", ["a"], "a", topic="t", ttl_secs=60, created_at=1e9)
    rec.expires_at = rec.created_at + 60
    _, created = await channels.create(rec)
    again, created_again = await channels.create(ChannelRecord("c", "channels.c", ["a", "b"], "b"))
    assert (created, created_again) == (True, False)
    assert again == rec
    assert (await channels.add_participants("c", ["b", "a"])).participants == ["a", "b"]
    obj = await store.get("agentchannels", NS, "c")
    assert obj["spec"] == {
        "participants": ["a", "b"],
        "subject": "channels.c",
        "topic": "t",
        "ttl": "60s",
    }
    assert obj["status"]["phase"] == "Pending"
    assert LEGACY_RECORD_ANNOTATION not in obj["metadata"]["annotations"]
    assert obj["metadata"]["annotations"][NOTE_PREFIX + "created-by"] == "a"


async def test_a_spec_edit_is_what_the_next_read_returns(store: ObjectStore) -> None:
    """A merge patch of spec (what kubectl sends) changes the channel's participants and TTL
    (its expiry follows) and a registered agent's endpoint and capabilities at the next read."""
    channels = StoreChannelRecords(store, NS)
    rec = ChannelRecord("c", "channels.c", ["a"], "a", ttl_secs=60)
    rec.expires_at = rec.created_at + 60
    await channels.create(rec)
    await store.patch("agentchannels", NS, "c", {"spec": {"participants": ["a", "z"], "ttl": "1h"}})
    got = await channels.get("c")
    assert got is not None
    assert got.participants == ["a", "z"]
    assert got.ttl_secs == 3600
    assert got.expires_at == pytest.approx(rec.created_at + 3600)
    assert [c.participants for c in await channels.list()] == [["a", "z"]]

    agents = StoreAgentRecords(store, NS)
    await agents.upsert(AgentRecord("api", endpoint="http://old", capabilities=["x"]))
    await store.patch(
        "agents", NS, "api", {"spec": {"endpoint": "http://new", "capabilities": ["y"]}}
    )
    seen = agents.get("api")
    assert seen is not None
    assert (seen.endpoint, seen.capabilities) == ("http://new", ["y"])


async def test_prompt_answered_once_and_listed_in_creation_order(store: ObjectStore) -> None:
    """The first answer wins; a second raises AlreadyAnswered; prompts list oldest first."""
    prompts = StorePromptRecords(store, NS)
    await prompts.create(PromptRecord("p2", "a", "notify", "second?", created_at=2.5))
    await prompts.create(
        PromptRecord("p1", "a", "choice", "q?", choices=["y", "n"], created_at=2.25)
    )
    assert [p.id for p in await prompts.list()] == ["p1", "p2"]
    done = await prompts.answer("p1", "y", "human:u")
    assert (done.phase, done.answer, done.answered_by) == ("Answered", "y", "human:u")
    with pytest.raises(AlreadyAnswered):
        await prompts.answer("p1", "n", "human:u")
    assert [p.id for p in await prompts.list()] == ["p2"]
    assert [p.id for p in await prompts.list(open_only=False)] == ["p1", "p2"]
    obj = await store.get("humanprompts", NS, "p1")
    assert obj["status"]["answer"] == {"value": "y"}
    assert obj["spec"]["choices"] == ["y", "n"]


async def test_handoff_task_idempotent_with_lineage_and_keeps_checkpoints(
    store: ObjectStore,
) -> None:
    """Recording the same accepted offer twice yields one task with its lineage in spec; its
    status (the operator's) is not rewritten."""
    tasks = StoreTaskRecords(store, NS)
    kw: dict[str, Any] = {
        "offer": "ho-1",
        "task": "t",
        "from_agent": "a",
        "to_agent": "b",
        "context": {"next": "x"},
    }
    one = await tasks.record_handoff(**kw)
    await store.patch(
        "agenttasks", NS, one.name, {"status": {"phase": "Running"}}, subresource="status"
    )
    two = await tasks.record_handoff(**kw)
    assert one == two
    assert one.lineage["handedOffFrom"] == {"agent": "a", "task": "t", "offer": "ho-1"}
    obj = await store.get("agenttasks", NS, one.name)
    assert json.loads(obj["spec"]["context"]) == {"next": "x"}
    assert obj["status"]["phase"] == "Running"


async def test_two_daemon_writers_on_one_channel_both_land(store: ObjectStore) -> None:
    """Two writers adding participants at once: one meets a 409, re-reads, re-applies; the
    channel ends with both."""
    await StoreChannelRecords(store, NS).create(ChannelRecord("c", "channels.c", ["a"], "a"))
    counted = Racing(store, other=lambda: asyncio.sleep(0), times=0)
    first, second = StoreChannelRecords(counted, NS), StoreChannelRecords(counted, NS)
    await asyncio.gather(first.add_participants("c", ["b"]), second.add_participants("c", ["d"]))
    got = await first.get("c")
    assert got is not None
    assert sorted(got.participants) == ["a", "b", "d"]
    assert counted.conflicts >= 1


async def test_upsert_racing_a_spec_edit_keeps_both(store: ObjectStore) -> None:
    """A heartbeat's upsert that meets a concurrent spec edit (409) keeps the edit and its own
    change: the upsert writes only the fields the caller changed."""
    plain = StoreAgentRecords(store, NS)
    await plain.upsert(AgentRecord("api", endpoint="http://e", capabilities=["x"], status="online"))

    async def kubectl_edit() -> None:
        await store.patch("agents", NS, "api", {"spec": {"capabilities": ["x", "y"], "pool": "p"}})

    racing = Racing(store, kubectl_edit)
    agents = StoreAgentRecords(racing, NS)
    rec = agents.get("api")
    assert rec is not None
    rec.status, rec.last_heartbeat = "degraded", "2026-01-01T00:00:00.000Z"
    await agents.upsert(rec)
    assert racing.conflicts == 1
    got = plain.get("api")
    assert got is not None
    assert (got.status, got.capabilities) == ("degraded", ["x", "y"])
    obj = await store.get("agents", NS, "api")
    assert obj["spec"]["pool"] == "p"  # a field the record does not map is kept
    assert obj["status"]["lastHeartbeat"] == "2026-01-01T00:00:00.000Z"


async def test_a_job_round_trips_through_spec_status_and_notes(store: ObjectStore) -> None:
    """A dispatch job's every field survives the object; outcome and JSON results too."""
    jobs = StoreJobRecords(store, NS)
    job = AgentTaskRecord("j1", "alpha", "local", "", "human:u", created_at="2026-01-01T00:00:00Z")
    await jobs.upsert(job)
    job.status, job.error, job.exit_code = "timed_out", "took too long", -9
    job.result, job.sandbox, job.profile = {"n": 1}, "bwrap", "p"
    await jobs.upsert(job)
    assert jobs.get("j1") == job
    assert [j.job_id for j in jobs.list()] == ["j1"]
    obj = await store.get("agenttasks", NS, "job-j1")
    assert obj["spec"]["objective"] == "(no task text)"
    assert (obj["status"]["phase"], obj["status"]["message"]) == ("Failed", "took too long")
    assert await jobs.delete("j1") is True
    assert jobs.get("j1") is None


async def test_retries_are_bounded_with_a_clear_error(store: ObjectStore) -> None:
    """A record that changes under every attempt fails after CAS_TRIES with a Conflict that
    says so, rather than overwriting."""
    await StoreChannelRecords(store, NS).create(ChannelRecord("c", "channels.c", ["a"], "a"))
    n = 0

    async def bump() -> None:
        nonlocal n
        n += 1
        await store.patch("agentchannels", NS, "c", {"spec": {"topic": f"t{n}"}})

    racing = Racing(store, bump, times=CAS_TRIES)
    with pytest.raises(Conflict, match="another writer keeps changing it"):
        await StoreChannelRecords(racing, NS).set_phase("c", "Open")
    assert racing.conflicts == CAS_TRIES
    got = await StoreChannelRecords(store, NS).get("c")
    assert got is not None
    assert (got.phase, got.topic) == ("Pending", f"t{CAS_TRIES}")


async def test_record_of_decodes_any_record_object(store: ObjectStore) -> None:
    """record_of gives the record a stored object holds, and None for an object that is not
    a record (a session Agent)."""
    await StoreAgentRecords(store, NS).upsert(AgentRecord("api", endpoint="http://e"))
    await store.create("agents", NS, {"metadata": {"name": "s"}, "spec": {"agentType": "session"}})
    got = {o["metadata"]["name"]: record_of(o) for o in (await store.list("agents", NS))[0]}
    assert got["s"] is None
    assert isinstance(got["api"], AgentRecord)
    assert got["api"].endpoint == "http://e"


async def test_a_change_of_spec_and_status_is_one_version(store: ObjectStore) -> None:
    """A heartbeat that moves metadata and status.lastHeartbeat writes one version (one row of
    the object log), and both parts read back."""
    agents = StoreAgentRecords(store, NS)
    await agents.upsert(AgentRecord("api", endpoint="http://e", last_heartbeat="t1"))
    before = int((await store.get("agents", NS, "api"))["metadata"]["resourceVersion"])
    beat = AgentRecord("api", endpoint="http://e", metadata={"load": 3}, last_heartbeat="t2")
    await agents.upsert(beat)
    obj = await store.get("agents", NS, "api")
    assert int(obj["metadata"]["resourceVersion"]) == before + 1
    assert obj["status"]["lastHeartbeat"] == "t2"
    got = agents.get("api")
    assert got is not None
    assert (got.metadata, got.last_heartbeat) == ({"load": 3}, "t2")
