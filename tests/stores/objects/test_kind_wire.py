"""The kinds' wire format is fixed: each kind's OpenAPI schema, the CRDs, and the object every
record kind is stored as are compared byte for byte with files recorded from the daemon before
the kinds were declared as typed classes (docs/store.md "Declaring a kind"), so objects in
users' store files still decode and kubectl sees the same schema."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from agentcoord.stores.agentrecords import AgentRecord, AgentTaskRecord
from agentcoord.stores.objects.apidiscovery import crds_yaml
from agentcoord.stores.objects.kinds import KINDS
from agentcoord.stores.objects.repository import object_of, record_of
from agentcoord.stores.records import ChannelRecord, PromptRecord, TaskRecord

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parent / "fixtures"

# Records covering each codec's branches: absent optional fields, empty ones, and full ones.
SAMPLES: dict[str, Any] = {
    "channel-full": ChannelRecord(
        "c",
        "channels.c",
        ["a", "b"],
        "agent:a",
        topic="t",
        ttl_secs=60,
        phase="Open",
        created_at=1e9,
        expires_at=1e9 + 60,
    ),
    "channel-bare": ChannelRecord("d", "channels.d", ["a"], "a", created_at=1.5e9),
    "channel-digest-name": ChannelRecord(
        "Team:Ops", "channels.Team:Ops", ["x"], "x", phase="Closed", created_at=1.25e9
    ),
    "prompt-notify": PromptRecord("p1", "agent:a", "notify", "done", created_at=1.75e9),
    "prompt-answered": PromptRecord(
        "p2",
        "agent:a",
        "choice",
        "which?",
        context="ctx",
        choices=["y", "n"],
        schema={"type": "string", "enum": ["y", "n"]},
        phase="Answered",
        answer="y",
        answered_by="human:u",
        created_at=1.5e9,
        answered_at=1.5e9 + 2.5,
    ),
    "prompt-answered-null": PromptRecord(
        "p3",
        "a",
        "input",
        "name?",
        phase="Answered",
        answer=None,
        answered_by="human:u",
        created_at=2e9,
    ),
    "handoff": TaskRecord(
        "handoff-b-ho-1",
        "fix the bug",
        "agent:b",
        {"handedOffFrom": {"agent": "a", "task": "t", "offer": "ho-1"}},
        {"summary": "s", "next": ["x"]},
        created_at=1.6e9,
    ),
    "registered-bare": AgentRecord("api"),
    "registered-full": AgentRecord(
        "alpha",
        agent_name="Alpha",
        agent_type="reviewer",
        capabilities=["review", "py"],
        endpoint="http://127.0.0.1:9000",
        transport="http",
        status="degraded",
        metadata={"region": "eu", "available_capacity": 3},
        registered_at="2026-01-01T00:00:00Z",
        last_heartbeat="2026-01-01T00:01:00.000Z",
        heartbeat_ttl=60,
        registered_by="agent:x",
    ),
    "registered-local-unknown": AgentRecord(
        "pkg", transport="local", status="", metadata={"available_capacity": -1}
    ),
    "job-pending": AgentTaskRecord("j1", "alpha", "local", "", "human:u"),
    "job-timed-out": AgentTaskRecord(
        "j2",
        "alpha",
        "local",
        "run it",
        "agent:a",
        status="timed_out",
        created_at="2026-01-01T00:00:00Z",
        finished_at="2026-01-01T00:05:00Z",
        sandbox="bwrap",
        log_dir="/tmp/j2",
        exit_code=-9,
        result={"n": 1},
        error="took too long",
        profile="default",
    ),
    "job-cancelled-no-error": AgentTaskRecord(
        "j3", "beta", "http", "t", "human:u", status="cancelled", remote_job_id="r9", exit_code=0
    ),
    "job-succeeded-text": AgentTaskRecord(
        "j4", "beta", "http", "t", "human:u", status="succeeded", result="all good"
    ),
}


def _fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


@pytest.mark.parametrize("plural", sorted(KINDS))
def test_schema_is_the_recorded_one(plural: str) -> None:
    """The kind's whole-object OpenAPI schema is, key order included, the recorded one."""
    recorded = _fixture("kind_schemas.json")[plural]
    assert json.dumps(KINDS[plural].schema()) == json.dumps(recorded)


def test_crds_are_the_recorded_ones() -> None:
    """`agentcoord crds` prints the recorded CustomResourceDefinitions, byte for byte."""
    assert crds_yaml() == (FIXTURES / "crds.yaml").read_text()


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_record_is_stored_as_the_recorded_object(sample: str) -> None:
    """A record encodes to the recorded object: spec, status and annotations, each field
    present or absent as recorded (key order aside: kubectl prints keys sorted)."""
    assert object_of(SAMPLES[sample]) == _fixture("record_objects.json")[sample]


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_recorded_object_decodes_to_its_record(sample: str) -> None:
    """The recorded object decodes to the record it came from, absent fields included."""
    got = record_of(_fixture("record_objects.json")[sample])
    assert got is not None
    assert dataclasses.asdict(got) == dataclasses.asdict(SAMPLES[sample])
    assert type(got) is type(SAMPLES[sample])
