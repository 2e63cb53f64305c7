"""Each record type's codec is derived from its slot table: a record goes to its object and
back whole, absent fields included; the fields a write owns are the ones the hand-written
codecs listed; and a slot naming a field its kind does not declare fails at once."""

from __future__ import annotations

from collections.abc import Set
from typing import Any

import pytest

from agentcoord.stores.agentrecords import AgentRecord, AgentTaskRecord
from agentcoord.stores.objects.kinds import KINDS
from agentcoord.stores.objects.recordcodec import RecordCodec, note, spec, status
from agentcoord.stores.objects.recordmaps import CHANNELS, HANDOFFS, JOBS, PROMPTS, REGISTERED
from agentcoord.stores.objects.repository import object_of, record_of
from agentcoord.stores.records import ChannelRecord, PromptRecord, TaskRecord
from tests.stores.objects.test_kind_wire import SAMPLES

pytestmark = pytest.mark.unit

KIND_OF = {
    ChannelRecord: "channel",
    PromptRecord: "prompt",
    TaskRecord: "handoff",
    AgentRecord: "registered",
    AgentTaskRecord: "job",
}


@pytest.mark.parametrize("record_kind", sorted(KIND_OF.values()))
def test_record_to_object_to_record(record_kind: str) -> None:
    """Every sample of the record type, bare and full, reads back equal from its object."""
    samples = [r for r in SAMPLES.values() if KIND_OF[type(r)] == record_kind]
    assert samples
    for rec in samples:
        obj = object_of(rec)
        assert obj["metadata"]["labels"] == {"fastverk.savvifi.com/record-kind": record_kind}
        assert record_of(obj) == rec


def test_a_channel_without_a_creator_reads_back() -> None:
    """A channel made with no creator (no created-by note) is still a channel, creator ''."""
    rec = ChannelRecord("c", "channels.c", ["a"], "", created_at=1e9)
    assert "record.fastverk.savvifi.com/created-by" not in object_of(rec)["metadata"]["annotations"]
    assert record_of(object_of(rec)) == rec


def test_an_object_a_person_wrote_reads_with_defaults() -> None:
    """A HumanPrompt made with kubectl (no notes, no status) is an open prompt created at its
    creationTimestamp; a handoff task's plain-text context is its hand-over text."""
    prompt = record_of(
        {
            "kind": "HumanPrompt",
            "metadata": {
                "name": "p",
                "labels": {"fastverk.savvifi.com/record-kind": "prompt"},
                "creationTimestamp": "2026-01-01T00:00:00Z",
            },
            "spec": {"kind": "input", "agent": "human:u", "message": "name?"},
        }
    )
    assert prompt == PromptRecord("p", "human:u", "input", "name?", created_at=1767225600.0)
    task = record_of(
        {
            "kind": "AgentTask",
            "metadata": {"name": "t", "labels": {"fastverk.savvifi.com/record-kind": "handoff"}},
            "spec": {
                "objective": "o",
                "assignedAgentRef": {"name": "b"},
                "context": "see the notes",
                "lineage": {},
            },
        }
    )
    assert task is not None
    assert (task.assigned_agent, task.handoff) == ("b", {"text": "see the notes"})


def test_owned_fields_are_the_ones_the_codecs_listed() -> None:
    """The fields a write replaces, derived from the slots, are exactly the lists the
    hand-written codecs kept (so other writers' fields are kept as before)."""
    listed: list[tuple[RecordCodec[Any, Any, Any], Set[str], Set[str], Set[str]]] = [
        (
            CHANNELS,
            {"participants", "subject", "topic", "ttl"},
            {"phase", "openedAt", "expiresAt"},
            {"created-by"},
        ),
        (
            PROMPTS,
            {"kind", "agent", "message", "replySubject", "meridianSpec", "choices"}
            | {"responseSchema"},
            {"phase", "answer", "answeredBy", "answeredAt"},
            {"created-at"},
        ),
        (HANDOFFS, {"objective", "assignedAgentRef", "context", "lineage"}, set(), {"created-at"}),
        (
            REGISTERED,
            {"agentType", "description", "capabilities", "endpoint", "capacity"},
            {"phase", "lastHeartbeat"},
            {"agent-type", "registered-at", "registered-by", "heartbeat-ttl", "metadata"},
        ),
        (
            JOBS,
            {"objective", "assignedAgentRef"},
            {"phase", "message", "result"},
            {"transport", "requested-by", "created-at", "finished-at", "sandbox", "log-dir"}
            | {"remote-job-id", "profile", "exit-code", "outcome", "result-format"},
        ),
    ]
    for codec, spec_keys, status_keys, note_keys in listed:
        owned = (codec.owned("spec"), codec.owned("status"), codec.owned("note"))
        assert owned == (spec_keys, status_keys, note_keys), codec.record_kind


def test_a_slot_the_kind_does_not_declare_fails_at_once() -> None:
    """A typo in a slot (a spec field, a status field, an also-owned field, a record field)
    is a TypeError when the codec is built, i.e. when the module is imported."""
    bad_slots = [
        {"subject": spec("subjct")},
        {"phase": status("phaze")},
        {"nope": note("x")},
    ]
    for slots in bad_slots:
        with pytest.raises(TypeError):
            RecordCodec(
                kind=KINDS["agentchannels"],
                record_kind="channel",
                record_type=ChannelRecord,
                key=lambda r: r.name,
                key_fields=lambda k: {"name": k},
                slots=slots,
            )
    for also in ("spec.tll", "sepc.ttl"):
        with pytest.raises(TypeError):
            RecordCodec(
                kind=KINDS["agentchannels"],
                record_kind="channel",
                record_type=ChannelRecord,
                key=lambda r: r.name,
                key_fields=lambda k: {"name": k},
                slots={},
                also_owns=(also,),
            )
