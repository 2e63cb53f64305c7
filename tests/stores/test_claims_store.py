"""ClaimStore against a real nats-server: CAS, sharing, expiry, auto-release, restart."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from typing import Any

import nats
import pytest
from nats.js import api

from agentcoord.daemon.natsd import NatsSupervisor
from agentcoord.stores.kv import (
    ClaimPolicy,
    ClaimStore,
    Contention,
    Granted,
    NotHolder,
    StaleToken,
    _natskv,
)
from agentcoord.stores.kv._procwatch import proc_key
from tests.stores.conftest import Recorder


async def _until(pred: Any, timeout: float = 30.0) -> None:
    """Wait until ``pred()`` holds. Generous (a busy machine is slow), and still short of the
    60 s TTLs these tests hold their other claims with."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in {timeout}s")
        await asyncio.sleep(0.02)


async def test_marker_regression_nats_py_create(js: Any) -> None:
    """nats-py's create fails over an expiry marker; our create succeeds on the same key."""
    kv = await js.create_key_value(
        api.KeyValueConfig(bucket="marker-test", history=1, limit_marker_ttl=30)
    )
    await kv.create("k", b"1", msg_ttl=1)
    stream, subject = "KV_marker-test", "$KV.marker-test.k"
    deadline = time.monotonic() + 60
    while True:
        value, _ = await _natskv.fetch(js, stream, subject)
        if value is None or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    assert value is None, "the entry did not expire"
    with pytest.raises(nats.js.errors.KeyWrongLastSequenceError):
        await kv.create("k", b"2", msg_ttl=5)  # the upstream bug this module works around
    rev = await _natskv.create(js, stream, subject, b"2", 5)
    assert (await _natskv.fetch(js, stream, subject)) == (b"2", rev)
    with pytest.raises(_natskv.CasConflict):
        await _natskv.create(js, stream, subject, b"3", 5)


async def test_write_excludes_read_shares(js: Any, audit: Recorder) -> None:
    """write excludes another writer and readers; reads share; intent coexists with all."""
    async with ClaimStore(js, audit) as store:
        g = await store.claim("a", "file:x", "write", 60)
        assert isinstance(g, Granted)
        assert g.holder.token == g.revision
        c = await store.claim("b", "file:x", "write", 60)
        assert isinstance(c, Contention)
        assert c.holder.agent == "a"
        assert isinstance(await store.claim("b", "file:x", "read", 60), Contention)
        assert isinstance(await store.claim("c", "file:x", "intent", 60), Granted)
        r1 = await store.claim("a", "file:y", "read", 60)
        r2 = await store.claim("b", "file:y", "read", 60)
        assert isinstance(r1, Granted)
        assert isinstance(r2, Granted)
        assert r2.holder.token > r1.holder.token  # type: ignore[operator]
        assert isinstance(await store.claim("c", "file:y", "write", 60), Contention)
        assert {h.agent for _, h in store.check("file:y")} == {"a", "b"}


async def test_racing_writers_exactly_one_wins(js: Any, audit: Recorder) -> None:
    """Many concurrent write claims on one key: exactly one acquires."""
    async with ClaimStore(js, audit) as store:
        outs = await asyncio.gather(*(store.claim(f"a{i}", "k", "write", 60) for i in range(40)))
        assert sum(isinstance(o, Granted) for o in outs) == 1


async def test_two_stores_race_with_cas(natsd: NatsSupervisor, audit: Recorder) -> None:
    """Two stores (two daemons' worth of views) racing on keys never both win a write."""
    ncs = [await nats.connect(natsd.url, user=natsd.user, password=natsd.password) for _ in "ab"]
    try:
        async with (
            ClaimStore(ncs[0].jetstream(), audit) as s1,
            ClaimStore(ncs[1].jetstream(), audit) as s2,
        ):
            for i in range(20):
                a, b = await asyncio.gather(
                    s1.claim("a", f"k{i}", "write", 60), s2.claim("b", f"k{i}", "write", 60)
                )
                assert isinstance(a, Granted) != isinstance(b, Granted)
    finally:
        for nc in ncs:
            await nc.close()


async def test_release_rules_and_tokens(js: Any, audit: Recorder) -> None:
    """Only the holder with its current token releases; others get the documented text."""
    async with ClaimStore(js, audit) as store:
        g = await store.claim("a", "r", "write", 60)
        assert isinstance(g, Granted)
        assert g.holder.token is not None
        with pytest.raises(NotHolder, match="claim on r is held by a, not b"):
            await store.release("b", "r", g.holder.token)
        with pytest.raises(StaleToken):
            await store.release("a", "r", g.holder.token - 1)
        assert await store.release("a", "r", g.holder.token) is True
        assert await store.release("a", "r", g.holder.token) is False
        again = await store.claim("b", "r", "write", 60)
        assert isinstance(again, Granted)
        assert again.holder.token is not None
        assert again.holder.token > g.holder.token
        assert audit.reasons() == ["released"]


async def test_release_and_renew_without_token(js: Any, audit: Recorder) -> None:
    """Without a token, release and renew act on the caller's own grant (docs/claims.md "Tools"); a
    token, when given, must be the current grant's, so an old one is refused."""
    async with ClaimStore(js, audit) as store:
        old = await store.claim("a", "r", "write", 60)
        new = await store.claim("a", "r", "write", 60)  # re-taken: a new grant, a new token
        assert isinstance(old, Granted)
        assert isinstance(new, Granted)
        assert (old.holder.token or 0) < (new.holder.token or 0)
        stale = f"token {old.holder.token} is stale on r: a's current grant there is token"
        with pytest.raises(StaleToken, match=stale):
            await store.release("a", "r", old.holder.token)
        with pytest.raises(StaleToken, match=stale):
            await store.renew("a", "r", old.holder.token, 120)
        renewed = await store.renew("a", "r", ttl=120)
        assert (renewed.token, renewed.ttl) == (new.holder.token, 120)
        with pytest.raises(NotHolder, match="claim on r is held by a, not b"):
            await store.release("b", "r")
        assert await store.release("a", "r") is True
        assert await store.release("a", "r") is False
        assert store.check("r") == []
        assert audit.reasons() == ["released", "released"]  # the replaced grant, then ours


async def test_release_leaves_nothing_behind(js: Any, audit: Recorder) -> None:
    """A release's delete marker expires (the server's own marker after it too), and the key is
    claimed again, by a create, once the subject is empty."""
    seen: list[dict[str, str]] = []

    async def record(msg: Any) -> None:
        seen.append(dict(msg.headers or {}))

    async with ClaimStore(js, audit) as store:
        sub = await js.subscribe(
            "$KV.agent-claims.gone", stream="KV_agent-claims", cb=record, ordered_consumer=True
        )
        try:
            g = await store.claim("a", "gone", "write", 60)
            assert isinstance(g, Granted)
            assert await store.release("a", "gone") is True
            stream, subject = "KV_agent-claims", "$KV.agent-claims.gone"

            async def empty() -> bool:
                return await _natskv.fetch(js, stream, subject) == (None, 0)

            deadline = time.monotonic() + 60  # the marker lives 1 s, the server's one 5 s more
            while not await empty():
                assert time.monotonic() < deadline, "the key's last message did not go"
                await asyncio.sleep(0.05)
            again = await store.claim("b", "gone", "write", 60)
            assert isinstance(again, Granted)
            assert store.check("gone")[0][1].agent == "b"
            await _until(lambda: len(seen) >= 3 and not seen[-1].get(_natskv.KV_OP))
            # The claim, its delete marker, (the server's marker,) the second claim.
            assert [h.get(_natskv.KV_OP) for h in (seen[0], seen[1], seen[-1])] == [
                None,
                "DEL",
                None,
            ]
        finally:
            await sub.unsubscribe()


async def test_holders_of_one_key_match_check(js: Any, audit: Recorder) -> None:
    """holders(key) gives the live holders of exactly that key, as check() does for it,
    without the keys it is a prefix of; nothing for a free or escaped-but-absent key."""
    async with ClaimStore(js, audit) as store:
        for agent, key in (("a", "file:src/a.py"), ("b", "file:src/a.py.orig"), ("c", "k")):
            assert isinstance(await store.claim(agent, key, "read", 60), Granted)
        assert isinstance(await store.claim("d", "file:src/a.py", "read", 60), Granted)
        exact = [h for k, h in store.check("file:src/a.py") if k == "file:src/a.py"]
        assert store.holders("file:src/a.py") == exact
        assert [h.agent for h in exact] == ["a", "d"]
        assert store.holders("file:src/b.py") == []
        assert await store.release("a", "file:src/a.py") is True
        assert [h.agent for h in store.holders("file:src/a.py")] == ["d"]


@pytest.mark.parametrize("handed", [False, True])
async def test_key_lock_passes_on_past_a_cancelled_waiter(
    js: Any, audit: Recorder, handed: bool
) -> None:
    """Calls on one key wait their turn; a waiter cancelled before (or just after) it is handed
    the key does not keep it from the next one, and nothing is left locked."""
    async with ClaimStore(js, audit) as store:
        await store._lock_key("k")  # held, so both calls below queue behind it
        second = asyncio.create_task(store.claim("b", "k", "write", 60))
        third = asyncio.create_task(store.claim("c", "k", "write", 60))
        await _until(lambda: len(store._locks["k"]) == 2)
        if handed:
            store._unlock_key("k")  # handed to the second call, cancelled before it ran
            second.cancel()
        else:
            second.cancel()
            await asyncio.wait([second])
            store._unlock_key("k")
        got = await asyncio.wait_for(third, 60)
        assert isinstance(got, Granted)
        assert got.holder.agent == "c"
        with pytest.raises(asyncio.CancelledError):
            await second
        assert store._locks == {}
        assert [h.agent for _, h in store.check("k")] == ["c"]


async def test_expiry_releases_at_the_deadline(js: Any, audit: Recorder) -> None:
    """A 1s claim disappears from the view once its deadline passes (not before), reason
    expired. (How soon after is the daemon's latency: bench/, not a test.)"""
    async with ClaimStore(js, audit) as store:
        g = await store.claim("a", "ttl", "write", 1)
        assert isinstance(g, Granted)
        await _until(lambda: audit.reasons() == ["expired"])
        assert time.time() >= g.holder.expires
        assert store.check("ttl") == []
        assert isinstance(await store.claim("b", "ttl", "write", 5), Granted)


async def test_renew_and_heartbeat_extend(js: Any, audit: Recorder) -> None:
    """renew and heartbeat push the expiry out; renew needs the current token."""
    async with ClaimStore(js, audit) as store:
        g = await store.claim("a", "k1", "write", 1)
        g2 = await store.claim("a", "k2", "read", 4)
        assert isinstance(g, Granted)
        assert isinstance(g2, Granted)
        assert g.holder.token is not None
        h = await store.renew("a", "k1", g.holder.token, 30)
        assert h.expires > g.holder.expires + 20
        with pytest.raises(StaleToken):
            await store.renew("a", "k1", g.holder.token + 100)
        with pytest.raises(NotHolder):
            await store.renew("b", "k1", g.holder.token)
        await asyncio.sleep(2.0)  # half k2's TTL: room for a busy machine on either side
        assert await store.heartbeat("a") == ["k1", "k2"]
        # Past k2's first deadline, which it would not have outlived without the heartbeat.
        await asyncio.sleep(max(0.0, g2.holder.expires - time.time()) + 0.3)
        assert {k for k, _ in store.check()} == {"k1", "k2"}


async def test_heartbeat_silence_and_max_age(js: Any, audit: Recorder) -> None:
    """A heartbeating holder that goes silent past the grace, and any claim past max age,
    is released with that reason."""
    policy = ClaimPolicy(default_ttl=60, max_ttl=600, max_age=1.5, heartbeat_grace=0.8)
    async with ClaimStore(js, audit, policy) as store:
        await store.heartbeat("hb")
        await store.claim("hb", "k-hb", "write", 60)
        await store.claim("old", "k-old", "write", 60)
        await _until(lambda: sorted(audit.reasons()) == ["heartbeat-lost", "max-age"])
        assert store.check() == []


async def test_holder_exit_releases(js: Any, audit: Recorder) -> None:
    """When the holder process exits, its claims go with reason holder-exited."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])  # noqa: ASYNC220
    try:
        key = proc_key(proc.pid)
        assert key is not None
        async with ClaimStore(js, audit) as store:
            await store.claim("p", "k", "write", 60, proc=key)
            await store.claim("p", "k2", "read", 60, proc=key)
            proc.kill()
            proc.wait()
            await _until(lambda: len(audit.reasons()) == 2)
            assert set(audit.reasons()) == {"holder-exited"}  # not their 60 s expiry
            assert store.check() == []
    finally:
        proc.kill()
        proc.wait()


async def test_restart_keeps_live_and_drops_expired(js: Any, audit: Recorder) -> None:
    """A new store over the same bucket sees live claims and reaps the expired ones."""
    async with ClaimStore(js, audit) as store:
        await store.claim("a", "live", "write", 60)
        await store.claim("a", "short", "write", 1)
    await asyncio.sleep(1.2)
    async with ClaimStore(js, audit) as store:
        await _until(lambda: [k for k, _ in store.check()] == ["live"])
        assert isinstance(await store.claim("b", "short", "write", 5), Granted)
        assert isinstance(await store.claim("b", "live", "write", 5), Contention)


async def test_released_keys_are_forgotten_once_many_and_old(
    js: Any, audit: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The view drops the revisions of long-released keys beyond a bound; those keys still claim."""
    from agentcoord.stores.kv import claimstore as claims_mod

    monkeypatch.setattr(claims_mod, "_GONE_KEEP", 5)
    now = [time.time()]
    async with ClaimStore(js, audit, clock=lambda: now[0]) as store:
        for i in range(12):
            g = await store.claim("a", f"old{i}", "write", 300)
            assert isinstance(g, Granted)
            assert g.holder.token is not None
            assert await store.release("a", f"old{i}", g.holder.token)
        # Recent releases are all kept: they order late echoes.
        assert sum(k.startswith("old") for k in store._revs) == 12
        now[0] += claims_mod._GONE_AFTER_S + 1
        g = await store.claim("a", "new", "write", 300)
        assert isinstance(g, Granted)
        assert g.holder.token is not None
        assert await store.release("a", "new", g.holder.token)
        assert len(store._gone) == 5
        assert sum(k.startswith("old") for k in store._revs) == 4
        again = await store.claim("b", "old0", "write", 300)  # its revision was forgotten
        assert isinstance(again, Granted)
        assert store.check("old0")[0][1].agent == "b"


def test_a_release_seen_twice_is_audited_once(audit: Recorder) -> None:
    """The reaper's delete and a server expiry marker noticing one grant audit it once."""
    import dataclasses

    from agentcoord.stores.kv import Holder

    store = ClaimStore(None, audit)
    h = Holder(agent="a", mode="write", ttl=1.0, acquired=0.0, expires=1.0, token=7)
    store._released("t", h, "expired")
    store._released("t", h, "expired")
    store._released("t", dataclasses.replace(h, token=8), "expired")  # another grant
    assert audit.reasons() == ["expired", "expired"]
