"""The object store contract: CRUD, conflicts, watch, patches, finalizers, GC.

Tests taking the ``store`` fixture run on both backends (SQLite, and Kubernetes through another
daemon's API; see conftest.py) with the same body; the rest are about the SQLite file itself.
"""

from __future__ import annotations

import asyncio
import sqlite3
import tracemalloc
from pathlib import Path

import pytest

from agentcoord.stores.objects import (
    AlreadyExists,
    Conflict,
    Expired,
    Invalid,
    ObjectBackend,
    ObjectNotFound,
    ObjectStore,
    StoreError,
    UnsupportedMediaType,
)

NS = "default"


def _agent(name: str, **labels: str) -> dict:
    return {"metadata": {"name": name, "labels": labels}, "spec": {"profile": "p"}}


def _rv(obj: dict) -> int:
    return int(obj["metadata"]["resourceVersion"])


async def test_create_get_list(store: ObjectBackend) -> None:
    """Create, AlreadyExists, get, list by namespace, label and field selector; rvs grow."""
    a = await store.create("agents", NS, _agent("a", team="x"))
    b = await store.create("agents", "other", _agent("b"))
    assert _rv(b) > _rv(a) > 0
    assert a["metadata"]["uid"]
    assert a["metadata"]["creationTimestamp"]
    with pytest.raises(AlreadyExists):
        await store.create("agents", NS, _agent("a"))
    assert (await store.get("agents", NS, "a"))["metadata"]["uid"] == a["metadata"]["uid"]
    assert store.get_raw("agents", "other", "b")
    with pytest.raises(ObjectNotFound):
        await store.get("agents", NS, "b")
    items, rv = await store.list("agents")
    assert [o["metadata"]["name"] for o in items] == ["a", "b"]
    assert rv >= _rv(b)
    assert [o["metadata"]["name"] for o in (await store.list("agents", "other"))[0]] == ["b"]
    assert len((await store.list("agents", labels="team=x"))[0]) == 1
    assert len((await store.list("agents", labels="team in (y),!team"))[0]) == 0
    assert len((await store.list("agents", labels="team notin (x)"))[0]) == 1
    assert len((await store.list("agents", fields="metadata.name=b"))[0]) == 1
    _, objs, _ = store.list_raw("agents", NS, "team")
    assert [o["metadata"]["name"] for o in objs] == ["a"]


async def test_create_get_list_and_reopen(tmp_path: Path) -> None:
    """Objects and the resourceVersion counter survive closing and reopening the file."""
    async with ObjectStore(tmp_path / "o.db") as s:
        a = await s.create("agents", NS, _agent("a", team="x"))
        await s.create("agents", "other", _agent("b"))
        assert a["metadata"]["resourceVersion"] == "1"
        with pytest.raises(AlreadyExists):
            await s.create("agents", NS, _agent("a"))
        items, rv = await s.list("agents")
        assert [o["metadata"]["name"] for o in items] == ["a", "b"]
        assert rv == 2
        assert [o["metadata"]["name"] for o in (await s.list("agents", "other"))[0]] == ["b"]
        assert len((await s.list("agents", labels="team=x"))[0]) == 1
        assert len((await s.list("agents", fields="metadata.name=b"))[0]) == 1
    async with ObjectStore(tmp_path / "o.db") as s:
        assert (await s.get("agents", NS, "a"))["metadata"]["uid"] == a["metadata"]["uid"]
        c = await s.create("agents", NS, _agent("c"))
        assert c["metadata"]["resourceVersion"] == "3"
    assert sqlite3.connect(tmp_path / "o.db").execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert (tmp_path / "o.db").stat().st_mode & 0o077 == 0


async def test_stale_update_is_conflict_and_patch_is_not(store: ObjectBackend) -> None:
    """PUT with an old resourceVersion is 409; a patch without one applies to the newest."""
    a = await store.create("agents", NS, _agent("a"))
    await store.patch("agents", NS, "a", {"spec": {"pool": "x"}})
    stale = {**a, "spec": {"profile": "q"}}
    with pytest.raises(Conflict, match="has been modified"):
        await store.update("agents", NS, stale)
    old_rv = a["metadata"]["resourceVersion"]
    with pytest.raises(Conflict):
        await store.patch("agents", NS, "a", {"metadata": {"resourceVersion": old_rv}})
    out = await store.patch("agents", NS, "a", {"spec": {"pool": "y"}})
    assert out["spec"] == {"profile": "p", "pool": "y"}
    assert out["metadata"]["generation"] == 3


async def test_noop_update_keeps_resource_version(store: ObjectBackend) -> None:
    """A write that changes nothing does not move resourceVersion."""
    a = await store.create("agents", NS, _agent("a"))
    out = await store.patch("agents", NS, "a", {"spec": {"profile": "p"}})
    assert out["metadata"]["resourceVersion"] == a["metadata"]["resourceVersion"]
    assert store.revision == _rv(a)


async def test_watch_from_rv_replays_then_streams(store: ObjectBackend) -> None:
    """A watch from an rv replays later events from the log, then streams live ones in order."""
    a = await store.create("agents", NS, _agent("a"))
    p1 = await store.patch("agents", NS, "a", {"spec": {"pool": "1"}})
    p2 = await store.patch("agents", NS, "a", {"spec": {"pool": "2"}})
    async with await store.watch("agents", since=_rv(a)) as w:
        await store.delete("agents", NS, "a")
        got = [await w.next(timeout=5) for _ in range(3)]
    assert [(e.type, e.rv) for e in got if e][:2] == [("MODIFIED", _rv(p1)), ("MODIFIED", _rv(p2))]
    assert got[2] is not None
    assert (got[2].type, got[2].rv > _rv(p2)) == ("DELETED", True)
    with pytest.raises(ObjectNotFound):
        store.get_raw("agents", NS, "a")


async def test_watch_without_rv_starts_with_current_objects(store: ObjectBackend) -> None:
    """A watch with no rv first sends ADDED for the current objects (at their rv)."""
    await store.create("agents", NS, _agent("a"))
    await store.create("agents", NS, _agent("b"))
    async with await store.watch("agents") as w:
        first = [await w.next(timeout=5) for _ in range(2)]
        assert await w.next(timeout=0.2) is None
    assert [(e.type, e.object["metadata"]["name"]) for e in first if e] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
    ]


async def test_watch_start_holds_current_objects_as_json(tmp_path: Path) -> None:
    """A watch starting on many objects keeps them as stored JSON until each is handed out,
    in order and at its rv, before live events."""
    async with ObjectStore(tmp_path / "o.db") as s:
        made = await asyncio.gather(
            *(s.create("agents", NS, _agent(f"a{i:03}")) for i in range(300))
        )
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            w = await s.watch("agents")
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert grown < 300 * 100, grown  # as dicts: ~1 kB each
        async with w:
            await s.create("agents", NS, _agent("b"))
            events = [await w.next(timeout=5) for _ in range(301)]
        assert [(e.type, e.object["metadata"]["name"], e.rv) for e in events if e][:2] == [
            ("ADDED", "a000", _rv(made[0])),
            ("ADDED", "a001", _rv(made[1])),
        ]
        assert [e.object["metadata"]["name"] for e in events if e][-2:] == ["a299", "b"]


async def test_label_watch_sees_objects_enter_and_leave(store: ObjectBackend) -> None:
    """With a label selector, a relabel that enters/leaves it arrives as ADDED/DELETED."""
    await store.create("agents", NS, _agent("a", team="x"))
    async with await store.watch("agents", labels="team=y", since=store.revision) as w:
        await store.patch("agents", NS, "a", {"metadata": {"labels": {"team": "y"}}})
        await store.patch("agents", NS, "a", {"spec": {"pool": "1"}})
        await store.patch("agents", NS, "a", {"metadata": {"labels": {"team": "z"}}})
        got = [await w.next(timeout=5) for _ in range(3)]
    assert [e.type for e in got if e] == ["ADDED", "MODIFIED", "DELETED"]


async def test_label_watch_replay_sees_relabels(store: ObjectBackend) -> None:
    """Replayed from the log too, relabels into and out of the selector are ADDED/DELETED."""
    a = await store.create("agents", NS, _agent("a", team="x"))
    await store.create("agents", NS, _agent("b", team="y"))
    await store.patch("agents", NS, "a", {"metadata": {"labels": {"team": "y"}}})
    await store.patch("agents", NS, "b", {"metadata": {"labels": {"team": "z"}}})
    await store.patch("agents", NS, "a", {"spec": {"pool": "1"}})
    async with await store.watch("agents", labels="team=y", since=_rv(a)) as w:
        got = [await w.next(timeout=5) for _ in range(4)]
        assert await w.next(timeout=0.2) is None
    assert [(e.type, e.object["metadata"]["name"]) for e in got if e] == [
        ("ADDED", "b"),
        ("ADDED", "a"),
        ("DELETED", "b"),
        ("MODIFIED", "a"),
    ]


async def test_compaction_gives_410(tmp_path: Path) -> None:
    """Below the compacted rv, watch and list-at-rv are 410 Expired; above it replay works."""
    async with ObjectStore(tmp_path / "o.db") as store:
        await _compaction_gives_410(store)


async def _compaction_gives_410(store: ObjectStore) -> None:
    for i in range(5):
        await store.create("agents", NS, _agent(f"a{i}"))
    await store.compact(3)
    assert store.compacted == 3
    with pytest.raises(Expired, match="too old resource version"):
        await store.watch("agents", since=2)
    async with await store.watch("agents", since=3) as w:
        e = await w.next(timeout=1)
    assert e is not None
    assert e.rv == 4


async def test_retention_compacts_automatically(tmp_path: Path) -> None:
    """With retention N the log keeps roughly the last N events and records the point."""
    async with ObjectStore(tmp_path / "o.db", retention=10) as s:
        for i in range(30):
            await s.create("agents", NS, _agent(f"a{i}"))
        assert 0 < s.compacted <= 20
    rows = sqlite3.connect(tmp_path / "o.db").execute("SELECT count(*) FROM events").fetchone()
    assert rows[0] <= 21
    async with ObjectStore(tmp_path / "o.db", retention=10) as s:
        assert s.revision == 30
        assert s.compacted > 0


async def test_slow_watcher_is_cut_off(tmp_path: Path) -> None:
    """A watcher that falls a full queue behind ends with Expired; the writer never waits."""
    async with ObjectStore(tmp_path / "o.db", watch_queue=4) as s:
        w = await s.watch("agents", since=s.revision)
        for i in range(10):
            await s.create("agents", NS, _agent(f"a{i}"))
        seen = [await w.next(timeout=1) for _ in range(4)]
        assert all(e is not None for e in seen)
        with pytest.raises(Expired, match="fell too far behind"):
            await w.next(timeout=1)


async def test_finalizers_hold_deletion(store: ObjectBackend) -> None:
    """Delete with a finalizer sets deletionTimestamp; removing the finalizer deletes it."""
    await store.create(
        "agents", NS, {**_agent("a"), "metadata": {"name": "a", "finalizers": ["x/y"]}}
    )
    marked = await store.delete("agents", NS, "a")
    assert marked["metadata"]["deletionTimestamp"]
    assert (await store.get("agents", NS, "a"))["metadata"]["deletionTimestamp"]
    await store.patch("agents", NS, "a", {"metadata": {"finalizers": None}})
    with pytest.raises(ObjectNotFound):
        await store.get("agents", NS, "a")


def _owned_by(owner: dict) -> list[dict]:
    return [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
        }
    ]


async def _gone(store: ObjectBackend, plural: str, name: str) -> bool:
    # Up to ~10 s: on the kubernetes store the server's collector and then its watch event
    # must run, on a machine shared with other test runs.
    for _ in range(1000):
        try:
            await store.get(plural, NS, name)
        except ObjectNotFound:
            return True
        await asyncio.sleep(0.01)
    return False


async def test_owner_deletion_collects_dependents(store: ObjectBackend) -> None:
    """Deleting an AgentTask garbage-collects the Agent it owns, and that Agent's dependents."""
    task = await store.create(
        "agenttasks", NS, {"metadata": {"name": "t"}, "spec": {"objective": "o"}}
    )
    agent = await store.create(
        "agents", NS, {"metadata": {"name": "a", "ownerReferences": _owned_by(task)}, "spec": {}}
    )
    await store.create(
        "agentchannels",
        NS,
        {
            "metadata": {"name": "c", "ownerReferences": _owned_by(agent)},
            "spec": {"participants": ["a"]},
        },
    )
    keep = await store.create("agents", NS, {"metadata": {"name": "free"}, "spec": {}})
    await store.delete("agenttasks", NS, "t")
    assert await _gone(store, "agents", "a")
    assert await _gone(store, "agentchannels", "c")
    assert (await store.get("agents", NS, "free"))["metadata"]["uid"] == keep["metadata"]["uid"]


async def test_orphan_propagation_keeps_dependents(store: ObjectBackend) -> None:
    """propagationPolicy Orphan leaves the dependent and removes its owner reference."""
    task = await store.create(
        "agenttasks", NS, {"metadata": {"name": "t"}, "spec": {"objective": "o"}}
    )
    await store.create(
        "agents", NS, {"metadata": {"name": "a", "ownerReferences": _owned_by(task)}, "spec": {}}
    )
    await store.delete("agenttasks", NS, "t", propagation="Orphan")
    for _ in range(1000):
        if "ownerReferences" not in (await store.get("agents", NS, "a"))["metadata"]:
            break
        await asyncio.sleep(0.01)
    assert "ownerReferences" not in (await store.get("agents", NS, "a"))["metadata"]


async def test_group_commit_batches_concurrent_writes(tmp_path: Path) -> None:
    """64 concurrent creates commit in fewer transactions than writes, all acknowledged."""
    async with ObjectStore(tmp_path / "o.db") as store:
        await asyncio.gather(*(store.create("agents", NS, _agent(f"a{i}")) for i in range(64)))
        assert store.stats.writes == 64
        assert store.stats.batches < 64
        assert store.revision == 64


async def test_newer_schema_is_refused(tmp_path: Path) -> None:
    """A database from a newer schema version is not opened."""
    conn = sqlite3.connect(tmp_path / "o.db")
    conn.execute("PRAGMA user_version=99")
    conn.close()
    with pytest.raises(StoreError, match="schema version 99"):
        async with ObjectStore(tmp_path / "o.db"):
            pass


async def test_merge_and_json_patch_status_and_415(store: ObjectBackend) -> None:
    """Merge patch merges, JSON patch edits status through /status, a failed test op is 422
    Invalid, and strategic merge and apply patches are 415."""
    await store.create("agenttasks", NS, {"metadata": {"name": "t"}, "spec": {"objective": "o"}})
    merged = await store.patch(
        "agenttasks", NS, "t", {"metadata": {"labels": {"k": "v"}}, "spec": {"priority": 3}}
    )
    assert merged["spec"] == {"objective": "o", "priority": 3}
    assert merged["metadata"]["labels"] == {"k": "v"}
    await store.patch("agenttasks", NS, "t", {"status": {"checkpoints": []}}, subresource="status")
    checkpoint = {"ref": "r1", "summary": "s"}
    out = await store.patch(
        "agenttasks",
        NS,
        "t",
        [{"op": "add", "path": "/status/checkpoints/-", "value": checkpoint}],
        content_type="application/json-patch+json",
        subresource="status",
    )
    assert out["status"]["checkpoints"] == [checkpoint]
    assert store.get_raw("agenttasks", NS, "t")
    assert (await store.get("agenttasks", NS, "t"))["status"]["checkpoints"] == [checkpoint]
    with pytest.raises(Invalid):
        await store.patch(
            "agenttasks",
            NS,
            "t",
            [{"op": "test", "path": "/spec/priority", "value": 4}],
            content_type="application/json-patch+json",
        )
    for media in ("application/strategic-merge-patch+json", "application/apply-patch+yaml"):
        with pytest.raises(UnsupportedMediaType):
            await store.patch("agenttasks", NS, "t", {"spec": {}}, content_type=media)


async def test_missing_object_and_kind_are_not_found(store: ObjectBackend) -> None:
    """Writes to an absent object and reads of an unknown kind raise ObjectNotFound (404)."""
    with pytest.raises(ObjectNotFound):
        await store.patch("agents", NS, "nope", {"spec": {"pool": "x"}})
    with pytest.raises(ObjectNotFound):
        await store.delete("agents", NS, "nope")
    with pytest.raises(ObjectNotFound):
        store.list_raw("pods", NS)


async def test_open_derives_every_schema_so_a_first_write_derives_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening the store derives each kind's schema; a first write then derives none and is
    still validated against it."""
    from agentcoord.stores.objects import kinds

    monkeypatch.setattr(kinds, "_SCHEMAS", {})
    async with ObjectStore(tmp_path / "o.db") as s:
        assert set(kinds._SCHEMAS) == set(kinds.KINDS)

        def derive(self: kinds.Kind) -> dict:
            raise AssertionError(f"{self.plural}'s schema derived at a write")

        monkeypatch.setattr(kinds.Kind, "_derived_schema", derive)
        body = {"metadata": {"name": "c"}, "spec": {"participants": ["a"], "topic": "t"}}
        created = await s.create("agentchannels", NS, body)
        assert created["spec"]["topic"] == "t"
        with pytest.raises(Invalid):
            await s.create("agentchannels", NS, {"metadata": {"name": "d"}, "spec": {"topic": "t"}})
