"""State retention (docs/reliability.md "State retention"): the audit stream, the message
stream, the object store's log and checkpoint bundles stay within their configured limits,
on the real nats-server, real SQLite and a real daemon; a restart applies changed limits."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import nats
import pytest

from agentcoord.agentops.checkpoints import (
    BundleRetention,
    Stored,
    load_bundle,
    prune_plan,
    references,
)
from agentcoord.errors import ConfigError, DomainError
from agentcoord.kernel.config import load_config
from agentcoord.kernel.wire import make_message
from agentcoord.stores.audit import AuditLog
from agentcoord.stores.messagebus import MessageBus, inbox_subject
from agentcoord.stores.objects.store import ObjectStore
from tests.conftest import Daemon, kubectl_apply
from tests.tools.session_helpers import session_call

# -- config ------------------------------------------------------------------------------------


def test_retention_keys_take_units_and_refuse_nonsense(tmp_path: Path) -> None:
    """Durations take seconds or 30d/12h, sizes bytes or 64MiB; zero and junk are clear errors."""
    base = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    cfg = load_config(env=base)
    assert (cfg.audit_max_age, cfg.audit_max_bytes) == (30 * 86400, 64 << 20)
    assert (cfg.inbox_max_msgs, cfg.object_log_keep, cfg.checkpoint_keep) == (10_000, 10_000, 10)
    env = {
        **base,
        "AGENTCOORD_AUDIT_MAX_AGE": "12h",
        "AGENTCOORD_INBOX_MAX_AGE": "2d",
        "AGENTCOORD_AUDIT_MAX_BYTES": "8MiB",
        "AGENTCOORD_CHECKPOINT_MAX_BYTES": "1GB",
    }
    cfg = load_config(env=env)
    assert (cfg.audit_max_age, cfg.inbox_max_age) == (43200, 2 * 86400)
    assert (cfg.audit_max_bytes, cfg.checkpoint_max_bytes) == (8 << 20, 10**9)
    (tmp_path / "c.toml").write_text('audit_max_bytes = 4096\ninbox_max_age = "90m"\n')
    cfg = load_config({"config_file": str(tmp_path / "c.toml")}, env=base)
    assert (cfg.audit_max_bytes, cfg.inbox_max_age) == (4096, 5400)
    for var, value, says in [
        ("AGENTCOORD_AUDIT_MAX_AGE", "soon", "seconds or e.g. 30d"),
        ("AGENTCOORD_AUDIT_MAX_BYTES", "lots", "e.g. 64MiB"),
        ("AGENTCOORD_CHECKPOINT_KEEP", "0", "at least 1"),
        ("AGENTCOORD_INBOX_MAX_MSGS", "5k", "a whole number"),
    ]:
        with pytest.raises(ConfigError, match=says):
            load_config(env={**base, var: value})


# -- the streams, on a real nats-server ----------------------------------------------------------


async def test_audit_stream_stays_under_max_bytes_and_takes_new_limits(js: Any) -> None:
    """Past max_bytes the oldest events go (the newest stay queryable); reopening with other
    limits updates the existing stream and prunes it to them at once."""
    async with AuditLog(js, max_bytes=32 * 1024) as log:
        for i in range(2000):
            log.emit("CLAIM_ACQUIRED", f"a-{i % 10}", resource_key=f"k{i}", token=i)
        await log.flush()
        info = await js.stream_info("AGENT_EVENTS")
        assert 0 < info.state.bytes <= 32 * 1024
        assert info.state.first_seq > 1  # the oldest were dropped
        newest = await log.query(limit=1)
        assert newest[0].data["resource_key"] == "k1999"
    async with AuditLog(js, max_bytes=8 * 1024, max_age=3600) as log:
        info = await js.stream_info("AGENT_EVENTS")
        assert info.config.max_bytes == 8 * 1024
        assert info.config.max_age == 3600
        assert 0 < info.state.bytes <= 8 * 1024
        assert log.failed == 0


async def test_inbox_keeps_newest_max_msgs_per_subject(natsd: Any) -> None:
    """An inbox nobody reads keeps its newest max_msgs messages; another agent's inbox on the
    same stream is not pushed out by it."""
    nc = await nats.connect(natsd.url, user=natsd.user, password=natsd.password)
    try:
        async with MessageBus(nc, max_msgs=20, max_bytes=1 << 20) as bus:
            await bus.ensure_inbox("quiet")
            await bus.ensure_inbox("flooded")
            msg = make_message(sender="s", kind=0, body=b"keep me", to="quiet")
            await bus.publish(inbox_subject("quiet"), msg)
            for i in range(60):
                m = make_message(sender="s", kind=0, body=f"m{i}".encode(), to="flooded")
                await bus.publish(inbox_subject("flooded"), m)
            js = nc.jetstream()
            info = await js.stream_info("AGENT_MESSAGES", subjects_filter="agents.>")
            assert info.state.subjects == {"agents.quiet.inbox": 1, "agents.flooded.inbox": 20}
            got = await bus.read("flooded", limit=100)
            assert [r.message.body for r in got] == [f"m{i}".encode() for i in range(40, 60)]
            assert [r.message.body for r in await bus.read("quiet", limit=10)] == [b"keep me"]
    finally:
        await nc.close()


# -- the object store's log, on a real SQLite file ----------------------------------------------


def _log_rows(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT count(*) FROM events").fetchone()[0])
    finally:
        db.close()


def _agent(name: str, note: str) -> dict[str, Any]:
    return {
        "apiVersion": "fastverk.savvifi.com/v1",
        "kind": "Agent",
        "metadata": {"name": name, "annotations": {"note": note}},
        "spec": {},
    }


async def test_object_log_is_bounded_and_its_file_reuses_space(tmp_path: Path) -> None:
    """The event log never holds more than twice ``retention`` rows, the database file stops
    growing once freed pages are reused, the WAL stays under its cap, and a reopen with a
    smaller retention cuts the log at once."""
    path = tmp_path / "objects.db"
    big = "x" * 2000

    async def churn(store: ObjectStore, n: int) -> None:
        for i in range(n):
            obj = await store.get("agents", "default", f"a{i % 5}")
            obj["metadata"]["annotations"]["note"] = f"{i}{big}"
            await store.update("agents", "default", obj)

    async with ObjectStore(path, retention=200) as store:
        for i in range(5):
            await store.create("agents", "default", _agent(f"a{i}", big))
        await churn(store, 1500)
        assert _log_rows(path) <= 400
        settled = path.stat().st_size
        await churn(store, 3000)
        assert _log_rows(path) <= 400
        # Freed pages are reused: three times the writes, not three times the file.
        assert path.stat().st_size <= settled * 1.25
        wal = path.with_name(path.name + "-wal")
        assert wal.stat().st_size <= 8 << 20
    async with ObjectStore(path, retention=20) as store:
        assert _log_rows(path) <= 40
        assert store.compacted >= store.revision - 20


# -- checkpoint bundles: the pure plan ------------------------------------------------------------


def _task(name: str, *entries: tuple[str, str]) -> dict[str, Any]:
    cps = [{"ref": f"sha256:{d}", "agent": agent} for agent, d in entries]
    return {"metadata": {"name": name}, "status": {"checkpoints": cps}}


def test_plan_keeps_newest_per_agent_and_never_the_pinned() -> None:
    """keep=1 removes all but each agent's newest; the byte cap then takes the oldest, but
    never a task's last checkpoint, an Agent's resumeFrom, or a young unreferenced bundle."""
    d = {k: k * 64 for k in "abcdefgh"}  # digests
    tasks = [
        _task("t1", ("x", d["a"]), ("x", d["b"]), ("y", d["c"]), ("x", d["d"])),
        _task("t2", ("y", d["e"])),
    ]
    agents = [{"spec": {"resumeFrom": f"sha256:{d['a']}"}}]
    history, pinned = references(tasks, agents)
    assert history == {"x": [d["a"], d["b"], d["d"]], "y": [d["c"], d["e"]]}
    assert pinned == {d["a"], d["d"], d["e"]}  # resumeFrom, x's and t1's newest, y's and t2's
    now = 10_000.0
    stored = [Stored(d[k], 100, float(i)) for i, k in enumerate("abcdef")]
    stored.append(Stored(d["g"], 100, now - 5))  # just stored, its task entry not written yet
    plan = prune_plan(stored, history, pinned, BundleRetention(keep=1, max_bytes=10**9), now)
    assert sorted(plan) == sorted([d["b"], d["c"]])
    # A tiny byte cap: the orphan f (its task deleted) goes too, the pinned and g stay.
    plan = prune_plan(stored, history, pinned, BundleRetention(keep=5, max_bytes=1), now)
    assert sorted(plan) == sorted([d["b"], d["c"], d["f"]])


# -- a real daemon ---------------------------------------------------------------------------------


def _nats_login(d: Daemon) -> tuple[str, str, str]:
    conf = (d.state_dir / "nats" / "nats.conf").read_text()
    pw = re.search(r'user: "agentcoord", password: "([^"]+)"', conf)
    assert pw is not None
    from agentcoord.client.rpc import call_unix

    token = (d.state_dir / "human.token").read_text().strip()
    status = call_unix(d.socket, "agentcoord/status", {}, token=token)
    return str(status["nats_url"]), "agentcoord", pw.group(1)


async def _stream(d: Daemon, name: str) -> Any:
    url, user, pw = _nats_login(d)
    nc = await nats.connect(url, user=user, password=pw)
    try:
        return await nc.jetstream().stream_info(name)
    finally:
        await nc.close()


def test_daemon_bounds_audit_and_applies_changed_limits_on_restart(
    daemon_factory: Any, claude_bin: Path
) -> None:
    """Claims past audit_max_bytes leave the stream at or under it; a restart with other
    limits (audit, inbox) updates the existing streams and prunes them at once."""
    d = daemon_factory(AGENTCOORD_AUDIT_MAX_BYTES="48KiB", AGENTCOORD_INBOX_MAX_MSGS="50").start()
    # Each claim is one audit event; the session's exit releases them all (one more each).
    calls = [("claim", {"resource_key": f"k{i}", "ttl": "5m"}) for i in range(400)]
    results = session_call(d, claude_bin, calls)
    assert [r for r in results if r.get("isError")] == []
    info = asyncio.run(_stream(d, "AGENT_EVENTS"))
    assert info.config.max_bytes == 48 * 1024
    assert 0 < info.state.bytes <= 48 * 1024
    assert info.state.first_seq > 1  # events were dropped, not refused
    messages = asyncio.run(_stream(d, "AGENT_MESSAGES"))
    assert messages.config.max_msgs_per_subject == 50
    assert d.stop() == 0
    d.env.update(
        AGENTCOORD_AUDIT_MAX_BYTES="16KiB",
        AGENTCOORD_AUDIT_MAX_AGE="1h",
        AGENTCOORD_INBOX_MAX_MSGS="7",
        AGENTCOORD_INBOX_MAX_BYTES="1MiB",
        AGENTCOORD_INBOX_MAX_AGE="2h",
    )
    d.start()
    info = asyncio.run(_stream(d, "AGENT_EVENTS"))
    assert (info.config.max_bytes, info.config.max_age) == (16 * 1024, 3600)
    assert 0 < info.state.bytes <= 16 * 1024
    messages = asyncio.run(_stream(d, "AGENT_MESSAGES"))
    assert messages.config.max_msgs_per_subject == 7
    assert (messages.config.max_bytes, messages.config.max_age) == (1 << 20, 7200)


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    subprocess.run(["git", "-C", str(cwd), *args], env=env, capture_output=True, check=True)


def _bundles(d: Daemon) -> set[str]:
    folder = d.state_dir / "checkpoints" / "sha256"
    return {f"sha256:{p.name}" for p in folder.iterdir()} if folder.is_dir() else set()


def _task_body(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "fastverk.savvifi.com/v1",
        "kind": "AgentTask",
        "metadata": {"name": name},
        "spec": {"objective": "retention"},
    }


def test_daemon_keeps_newest_bundles_and_never_the_latest(
    daemon_factory: Any, claude_bin: Path, tmp_path: Path
) -> None:
    """With checkpoint_keep=2 five checkpoints leave the newest two; with a byte cap smaller
    than one bundle, a restart keeps only the latest, which still loads."""
    d = daemon_factory(AGENTCOORD_CHECKPOINT_KEEP="2").start()
    repo = tmp_path / "proj"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "f.txt").write_text("base\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    (repo / "f.txt").write_text("work in progress\n")
    kubectl_apply(d, [_task_body("t1")])
    calls = [("checkpoint", {"task": "t1", "summary": f"step {i}"}) for i in range(5)]
    results = session_call(d, claude_bin, calls, cwd=repo)
    assert not any(r.get("isError") for r in results), results
    refs = [r["structuredContent"]["ref"] for r in results]
    assert len(set(refs)) == 5
    assert _bundles(d) == set(refs[-2:])
    assert "removed by checkpoint retention" in _load_error(d, refs[0])
    assert d.stop() == 0
    d.env["AGENTCOORD_CHECKPOINT_MAX_BYTES"] = "1"
    d.start()
    assert _bundles(d) == {refs[-1]}
    assert load_bundle(d.state_dir, refs[-1]).meta["summary"] == "step 4"


def _load_error(d: Daemon, ref: str) -> str:
    with pytest.raises(DomainError) as err:
        load_bundle(d.state_dir, ref)
    return str(err.value)


def test_plan_of_a_stored_history_reads_refs_as_json() -> None:
    """references() reads entries exactly as the daemon stores them (JSON round trip)."""
    task = json.loads(json.dumps(_task("t", ("x", "a" * 64), ("x", "b" * 64))))
    history, pinned = references([task], [])
    assert history == {"x": ["a" * 64, "b" * 64]}
    assert pinned == {"b" * 64}
