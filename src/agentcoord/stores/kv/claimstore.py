"""Claims (leases) on the NATS KV bucket ``agent-claims`` (docs/claims.md "How it works").

One KV entry per resource key (escaped reversibly, :mod:`.keys`) holds the key's holders
(:class:`._claimrules.ClaimRecord`). Every write is a compare-and-set on the entry's revision,
so two daemons or two racing calls cannot both win; within this daemon a per-key lock keeps
racing calls from burning CAS retries. The entry's per-key TTL is its latest holder's expiry, so a
claim dies with the bucket even while the daemon is down; the in-memory view (fed by a KV watch
and by our own writes) serves ``check_claims`` and drives the reaper, which releases holders
whose TTL, heartbeat grace or hard max age has passed, recording why. Holder processes are
watched (:mod:`._procwatch`); an exit releases their claims with reason ``holder-exited``.

Fencing tokens are KV revisions (stream sequences), which only grow, so a later grant on a key
always carries a larger token than an earlier one.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import heapq
import logging
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nats.js import api

from agentcoord.errors import InvalidArguments, StateConflict
from agentcoord.kernel.tasks import TaskSet
from agentcoord.stores._jspub import AckedPublisher
from agentcoord.stores._jsretry import connection_of
from agentcoord.stores.kv import _claimrules as _rules
from agentcoord.stores.kv import _natskv
from agentcoord.stores.kv._claimrules import (
    ClaimPolicy,
    ClaimRecord,
    Contention,
    Holder,
    Mode,
    NotHolder,
    ReleaseReason,
    StaleToken,
    due_reason,
    grant,
)
from agentcoord.stores.kv._procwatch import ProcessWatch, ProcKey
from agentcoord.stores.kv.keys import escape_key, unescape_key

if TYPE_CHECKING:
    from agentcoord.stores.audit import AuditSink

__all__ = [
    "BUCKET",
    "ClaimConflict",
    "ClaimStore",
    "Granted",
    "KeyIndex",
    "NotHolder",
    "StaleToken",
]

log = logging.getLogger(__name__)

BUCKET = "agent-claims"
STREAM = f"KV_{BUCKET}"
_PREFIX = f"$KV.{BUCKET}."
# How long the server keeps the marker of an expired key; the watch needs it to see expiry.
LIMIT_MARKER_TTL = 5.0
_WATCH_IDLE = 300.0  # seconds a lost view consumer lingers on the server
_GONE_KEEP = 4096  # absent keys whose revision is kept at least _GONE_AFTER_S
_GONE_AFTER_S = 60.0
_AUDITED_KEEP = 4096  # released grants remembered, so each is audited once
_CAS_ATTEMPTS = 16
# A key's last revision is the CAS hint of its next claim for this long after it went absent.
_HINT_FRESH_S = _natskv.DELETE_MARKER_TTL + 0.5
# Daemons on other hosts (docs/one-host-to-many.md) write the same keys outside our per-key
# lock; after a lost CAS, wait a random moment (growing, capped) so two daemons do not keep
# colliding in step.
_CAS_BACKOFF_S = 0.002
_CAS_BACKOFF_CAP_S = 0.05
_SYNC_TIMEOUT = 10.0
_EXIT_RETRIES = 6  # about 6 s of backoff for the release after a holder exits


class ClaimConflict(StateConflict):
    """A key kept changing under us for every retry."""


@dataclass(frozen=True)
class Granted:
    """A successful claim: the record after the grant and the caller's holder (with token)."""

    record: ClaimRecord
    holder: Holder
    revision: int


@dataclass(slots=True)  # one per claim and release: not frozen, whose __init__ is slower
class _Plan:
    record: ClaimRecord | None  # the new value, None to delete
    write: bool
    result: Callable[[int, ClaimRecord | None], Any]  # (revision, the record installed)
    released: tuple[tuple[Holder, ReleaseReason], ...] = ()


class KeyIndex:
    """The keys of the view that ``select`` picks (by original key), kept as the view changes:
    a service that must find a few kinds of keys among thousands (the leases service's folder
    and glob claims) reads them here instead of walking every claim. ``version`` grows when a
    key comes or goes."""

    def __init__(self, select: Callable[[str], bool]) -> None:
        self.select = select
        self.keys: dict[str, str] = {}  # escaped key -> original key
        self.version = 0

    def update(self, esc: str, record: ClaimRecord | None) -> None:
        """The view installed ``record`` (None: the key is gone) under ``esc``."""
        if record is not None and self.select(record.key):
            if esc not in self.keys:
                self.keys[esc] = record.key
                self.version += 1
        elif self.keys.pop(esc, None) is not None:
            self.version += 1


class ClaimStore:
    """Async context manager: the bucket, its watch-fed view, the reaper and process watch."""

    def __init__(
        self,
        js: Any,
        audit: AuditSink,
        policy: ClaimPolicy | None = None,
        *,
        clock: Callable[[], float] = time.time,
        replicas: int = 1,
        host: str | None = None,
    ) -> None:
        self._js = js
        self._replicas = replicas  # R3 on a cluster (docs/one-host-to-many.md)
        self._host = host  # only this host's holder processes are watched
        self._audit = audit
        self.policy = policy or ClaimPolicy()
        self._clock = clock
        self._records: dict[str, ClaimRecord] = {}
        self._revs: dict[str, int] = {}
        self._audited: dict[tuple[str, int], None] = {}  # recent released grants, oldest first
        self._gone: dict[str, float] = {}  # absent keys, oldest first -> when (_forget_later)
        # key -> the calls waiting for it, oldest first; present while a call holds the key
        self._locks: dict[str, collections.deque[asyncio.Future[None]]] = {}
        # key -> the newest change seen while a write of ours on it was in flight
        self._echoes: dict[str, tuple[int, dict[str, str] | None, bytes]] = {}
        self._heap: list[tuple[float, str]] = []
        self._wake = asyncio.Event()
        self._synced = asyncio.Event()
        self._exits: asyncio.Queue[ProcKey] = asyncio.Queue()
        self._heartbeats: dict[str, float] = {}
        self._procs = ProcessWatch(self._exits.put_nowait)
        self._watcher: Any = None
        self._pub: AckedPublisher | None = None  # the claim path's writes (stores/_jspub.py)
        self._tasks = TaskSet("claims")
        # (wanting agent, key) -> (holder agent, when): recent contention, for "who waits
        # on whom"; cleared when the agent gets the key.
        self._contention: dict[tuple[str, str], tuple[str, float]] = {}
        self._indexes: list[KeyIndex] = []

    # ---- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> ClaimStore:
        try:
            await _natskv.ensure_bucket(
                self._js,
                api.KeyValueConfig(
                    bucket=BUCKET,
                    history=1,
                    limit_marker_ttl=LIMIT_MARKER_TTL,
                    replicas=self._replicas,
                ),
            )
            await self._procs.__aenter__()
            self._pub = await AckedPublisher(*connection_of(self._js)).__aenter__()
            self._watcher = await self._subscribe_view()
            # Serve nothing before the view holds every live claim (after a restart too).
            async with asyncio.timeout(_SYNC_TIMEOUT):
                await self._synced.wait()
            await self._tasks.__aenter__()
            self._tasks.spawn(self._reap_loop(), name="claims-reaper")
            self._tasks.spawn(self._exit_loop(), name="claims-exits")
            for key in set(self.processes()):
                self._procs.watch(key)
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._tasks.__aexit__(None, None, None)  # cancels the loops, waits for them
        finally:
            if self._watcher is not None:
                with contextlib.suppress(Exception):
                    await self._watcher.unsubscribe()
            if self._pub is not None:
                await self._pub.__aexit__(None, None, None)
            await self._procs.__aexit__(None, None, None)

    # ---- queries -------------------------------------------------------------------------

    def check(self, prefix: str = "", agent: str = "") -> list[tuple[str, Holder]]:
        """Live claims whose original key starts with ``prefix`` (optionally one agent's)."""
        now = self._clock()
        out = [
            (record.key, h)
            for record in self._records.values()
            if record.key.startswith(prefix)
            for h in record.holders
            if due_reason(h, now, self.policy) is None and (not agent or h.agent == agent)
        ]
        out.sort(key=lambda item: (item[0], item[1].token or 0))
        return out

    def held_by(self, agent: str) -> list[tuple[str, Holder]]:
        return self.check("", agent)

    def index(self, select: Callable[[str], bool]) -> KeyIndex:
        """A :class:`KeyIndex` of the keys ``select`` picks, filled from the view now and kept
        up to date by every change the view installs."""
        ix = KeyIndex(select)
        for esc, record in self._records.items():
            ix.update(esc, record)
        self._indexes.append(ix)
        return ix

    def holders(self, key: str) -> list[Holder]:
        """The live holders of exactly ``key``, oldest grant first: one lookup in the view,
        where :meth:`check` with the key as prefix visits every live claim (the write guard
        asks this on every Write, docs/claims.md "Claiming files")."""
        record = self._records.get(escape_key(key))
        if record is None:
            return []
        now = self._clock()
        live = [h for h in record.holders if due_reason(h, now, self.policy) is None]
        live.sort(key=lambda h: h.token or 0)
        return live

    # ---- commands ------------------------------------------------------------------------

    async def claim(
        self,
        agent: str,
        key: str,
        mode: Mode,
        ttl: float,
        *,
        purpose: str = "",
        proc: ProcKey | None = None,
    ) -> Granted | Contention:
        """Grant ``mode`` on ``key`` to ``agent`` for ``ttl`` seconds, or name the holder."""
        self._check_ttl(ttl)
        esc = escape_key(key)

        def plan(cur: ClaimRecord | None, now: float) -> _Plan:
            wanted = Holder(
                agent=agent,
                mode=mode,
                ttl=ttl,
                acquired=now,
                expires=now + ttl,
                purpose=purpose,
                pid=proc[0] if proc else None,
                pid_start=proc[1] if proc else None,
                heartbeat=now if agent in self._heartbeats else None,
                host=self._host,
            )
            outcome = grant(cur, key, wanted, now, self.policy)
            if isinstance(outcome, Contention):
                return _Plan(cur, False, lambda _rev, _rec: outcome)
            record, dropped = outcome

            def done(rev: int, final: ClaimRecord | None) -> Granted:
                assert final is not None
                mine = final.holders[-1]
                self._audit.emit(
                    "CLAIM_ACQUIRED",
                    agent,
                    resource_key=key,
                    mode=mode,
                    token=mine.token,
                    ttl=ttl,
                    purpose=purpose,
                )
                return Granted(final, mine, rev)

            return _Plan(record, True, done, tuple(dropped))

        result = await self._mutate(esc, plan)
        if isinstance(result, Granted):
            self._contention.pop((agent, key), None)
            if proc is not None:
                self._procs.watch(proc)
        elif isinstance(result, Contention):
            self._contention[(agent, key)] = (result.holder.agent, self._clock())
        return result  # type: ignore[no-any-return]

    def contention(self, window: float = 120.0) -> list[tuple[str, str, str, float]]:
        """Recent refused claims whose holder still holds the key:
        (wanting agent, key, holder, when), oldest first."""
        now = self._clock()
        held = {(key, h.agent) for key, h in self.check("")}
        out = []
        for (agent, key), (holder, when) in list(self._contention.items()):
            if now - when > window or (key, holder) not in held:
                del self._contention[(agent, key)]
                continue
            out.append((agent, key, holder, when))
        return sorted(out, key=lambda row: row[3])

    async def release(self, agent: str, key: str, token: int | None = None) -> bool:
        """Drop ``agent``'s grant on ``key`` (docs/claims.md "Tools"); False when nothing was held.
        ``token``, when given, must be that grant's (:class:`StaleToken` otherwise)."""

        def plan(cur: ClaimRecord | None, now: float) -> _Plan:
            out = _rules.release(cur, key, agent, token, now, self.policy)
            if out is None:
                return _Plan(cur, False, lambda _rev, _rec: False)
            record, gone = out
            return _Plan(record, True, lambda _rev, _rec: True, ((gone, "released"),))

        return bool(await self._mutate(escape_key(key), plan))

    async def renew(
        self, agent: str, key: str, token: int | None = None, ttl: float | None = None
    ) -> Holder:
        """Extend ``agent``'s grant on ``key`` by ``ttl`` (default: its own ttl); ``token``,
        when given, must be that grant's."""
        if ttl is not None:
            self._check_ttl(ttl)

        def plan(cur: ClaimRecord | None, now: float) -> _Plan:
            record, new = _rules.renew(cur, key, agent, token, ttl, now, self.policy)
            return _Plan(record, True, lambda _rev, _rec: new)

        return await self._mutate(escape_key(key), plan)  # type: ignore[no-any-return]

    async def heartbeat(self, agent: str) -> list[str]:
        """Renew every claim ``agent`` holds and mark it as a heartbeating holder
        (docs/claims.md "Rules")."""
        self._heartbeats[agent] = self._clock()

        def plan(cur: ClaimRecord | None, now: float) -> _Plan:
            record = _rules.beat(cur, agent, now, self.policy)
            return _Plan(record, record is not None, lambda _rev, _rec: record is not None)

        renewed: list[str] = []
        for key in sorted({key for key, _ in self.held_by(agent)}):
            if await self._mutate(escape_key(key), plan):
                renewed.append(key)
        return renewed

    def _check_ttl(self, ttl: float) -> None:
        if ttl <= 0:
            raise InvalidArguments("`ttl` must be positive")
        if ttl > self.policy.max_ttl:
            raise InvalidArguments(f"`ttl` may be at most {self.policy.max_ttl:g}s; renew instead")

    # ---- the CAS core --------------------------------------------------------------------

    # The per-key lock, by hand: an uncontended call (nearly every one) costs two dict
    # operations, where an asyncio.Lock per key behind an asynccontextmanager cost a lock, a
    # generator and a counter on every claim and release. Waiters are handed the key in order.

    async def _lock_key(self, esc: str) -> None:
        waiters = self._locks.get(esc)
        if waiters is None:
            self._locks[esc] = collections.deque()
            return
        handed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters.append(handed)
        try:
            await handed
        except BaseException:
            if handed.done() and not handed.cancelled():
                self._unlock_key(esc)  # handed the key, then cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):
                    waiters.remove(handed)
            raise

    def _unlock_key(self, esc: str) -> None:
        waiters = self._locks[esc]
        while waiters:
            handed = waiters.popleft()
            if not handed.done():
                handed.set_result(None)
                return
        del self._locks[esc]
        echo = self._echoes.pop(esc, None)
        if echo is not None and echo[0] > self._revs.get(esc, 0):
            self._on_change(esc, *echo)  # someone else's write landed meanwhile

    async def _fetch(self, esc: str) -> tuple[ClaimRecord | None, int]:
        data, rev = await _natskv.fetch(self._js, STREAM, _PREFIX + esc)
        record = _decode(data, rev) if data is not None else None
        return record, rev

    async def _mutate(self, esc: str, planner: Callable[[ClaimRecord | None, float], _Plan]) -> Any:
        subject = _PREFIX + esc
        await self._lock_key(esc)
        try:
            fresh = False
            for attempt in range(_CAS_ATTEMPTS):
                if fresh:
                    if attempt > 1:  # a backoff, not a poll: the next try re-reads the key
                        cap = min(_CAS_BACKOFF_CAP_S, _CAS_BACKOFF_S * 2**attempt)
                        await asyncio.sleep(random.uniform(0, cap))
                    cur, rev = await self._fetch(esc)
                    self._apply(esc, cur, rev)
                else:
                    cur, rev = self._records.get(esc), self._revs.get(esc, 0)
                now = self._clock()
                plan = planner(cur, now)
                if not plan.write:
                    return plan.result(rev, cur)
                try:
                    if plan.record is None:
                        new_rev = await _natskv.delete(self._js, subject, rev, self._pub)
                    elif cur is None:
                        new_rev = await self._create(esc, subject, plan.record, now, rev)
                    else:
                        data = plan.record.encode()
                        ttl = plan.record.kv_ttl(now)
                        new_rev = await _natskv.update(self._js, subject, data, rev, ttl, self._pub)
                except _natskv.CasConflict:
                    fresh = True
                    continue
                final = plan.record.with_tokens(new_rev) if plan.record else None
                self._apply(esc, final, new_rev)
                if plan.released:
                    resource = unescape_key(esc)
                    for holder, reason in plan.released:
                        self._released(resource, holder, reason)
                return plan.result(new_rev, final)
        finally:
            self._unlock_key(esc)
        raise ClaimConflict(f"{esc} kept changing; try again")

    async def _create(
        self, esc: str, subject: str, record: ClaimRecord, now: float, hint: int
    ) -> int:
        data, ttl = record.encode(), record.kv_ttl(now)
        gone = self._gone.get(esc)
        if hint and (gone is None or now - gone < _HINT_FRESH_S):
            # The view knows the key's last (delete or marker) revision, recent enough to be
            # there still: CAS on it directly. A delete marker of ours is gone after
            # DELETE_MARKER_TTL and leaves nothing (_natskv.REMOVED), so an older hint would
            # only cost a failed write before the create.
            with contextlib.suppress(_natskv.CasConflict):
                return await _natskv.update(self._js, subject, data, hint, ttl, self._pub)
        return await _natskv.create(self._js, STREAM, subject, data, ttl, self._pub)

    def _released(self, key: str, holder: Holder, reason: ReleaseReason) -> None:
        # A grant is released once, but two paths may see it go: the reaper's own delete and
        # a server expiry marker that arrives while that delete is in flight. Audit it once.
        if holder.token is not None:
            mark = (key, holder.token)
            if mark in self._audited:
                return
            self._audited[mark] = None
            if len(self._audited) > _AUDITED_KEEP:
                del self._audited[next(iter(self._audited))]
        self._audit.emit(
            "CLAIM_RELEASED", holder.agent, resource_key=key, token=holder.token, reason=reason
        )

    # ---- the view ------------------------------------------------------------------------

    def _apply(self, esc: str, record: ClaimRecord | None, rev: int) -> bool:
        """Install a state seen at ``rev``; older news (our own write echoed back) is ignored."""
        if rev <= self._revs.get(esc, 0):
            return False
        self._revs[esc] = rev
        for ix in self._indexes:
            ix.update(esc, record)
        if record is None:
            self._records.pop(esc, None)
            self._forget_later(esc)
            return True
        self._gone.pop(esc, None)
        self._records[esc] = record
        deadline = record.deadline(self.policy)
        if deadline is not None:
            heapq.heappush(self._heap, (deadline, esc))
            if self._heap[0][1] == esc:
                self._wake.set()
        return True

    def _forget_later(self, esc: str) -> None:
        """Keep an absent key's last revision a while (it orders late echoes and is the CAS
        hint of the next claim), then drop it: a long-running daemon must not keep an entry
        per key ever claimed. Only the oldest, and only once there are many."""
        self._gone.pop(esc, None)
        now = self._clock()
        self._gone[esc] = now
        while len(self._gone) > _GONE_KEEP:
            old = next(iter(self._gone))
            if self._gone[old] > now - _GONE_AFTER_S:
                break  # the oldest is recent: so is everything after it
            del self._gone[old]
            if old not in self._records and old not in self._locks:
                self._revs.pop(old, None)

    async def _subscribe_view(self) -> Any:
        """An ordered push consumer on the bucket (last value per key, then every change),
        each message handled in its callback. nats-py's KV watcher would add an Entry object
        and two queue hops per change: a quarter of the in-process claim+release cost."""
        sub = await self._js.subscribe(
            _PREFIX + ">",
            stream=STREAM,
            cb=self._on_msg,
            ordered_consumer=True,
            deliver_policy=api.DeliverPolicy.LAST_PER_SUBJECT,
            inactive_threshold=_WATCH_IDLE,
        )
        info = await sub.consumer_info()
        # Nothing pending and nothing delivered: no message will come to say the replay is
        # done. Judged by the consumer's own count, not the stream position: once every key's
        # marker has aged out the bucket is empty at a sequence above 0 (first 12 > last 11),
        # and the consumer's delivered.stream_seq starts there.
        if info.num_pending == 0 and info.delivered.consumer_seq == 0:
            self._synced.set()
        return sub

    async def _on_msg(self, msg: Any) -> None:
        try:
            rev, pending = _position(msg)
            self._on_change(msg.subject[len(_PREFIX) :], rev, msg.headers, msg.data)
            if pending == 0:  # the last of the initial values (and every live one)
                self._synced.set()
        except Exception:
            log.exception("claims: bad view message on %s", getattr(msg, "subject", "?"))

    def _on_change(self, esc: str, rev: int, headers: dict[str, str] | None, data: bytes) -> None:
        if rev <= self._revs.get(esc, 0):
            return  # older news: most often our own write, echoed back after we installed it
        op = _operation(headers)
        if op != "PURGE" and esc in self._locks:
            # A write of ours on this key is in flight: it installs its own result, or re-reads
            # the key after a conflict. Keep the newest change for when it is done (a write by
            # someone else, if newer than ours) instead of decoding our own echo first. A
            # server marker (PURGE) is handled at once: it is how an expiry gets audited.
            held = self._echoes.get(esc)
            if held is None or rev > held[0]:
                self._echoes[esc] = (rev, headers, data)
            return
        if op in ("DEL", "PURGE"):
            before = self._records.get(esc)
            if self._apply(esc, None, rev) and before is not None and op == "PURGE":
                # A server limit marker: the per-key TTL ran out before the reaper got there
                # (the daemon was down or late). Our own deletes are DEL and are audited by
                # whoever made them, even if the echo wins the race.
                for h in before.holders:
                    self._released(before.key, h, "expired")
            return
        self._apply(esc, _decode(data, rev), rev)

    # ---- automatic release ---------------------------------------------------------------

    async def _reap_loop(self) -> None:
        while True:
            now = self._clock()
            due: set[str] = set()
            while self._heap and self._heap[0][0] <= now:
                due.add(heapq.heappop(self._heap)[1])
            for esc in sorted(due):
                try:
                    await self._drop(esc, lambda h, now: due_reason(h, now, self.policy))
                except Exception:
                    log.exception("claims: reaping %s failed", esc)
            self._wake.clear()
            timeout = max(0.0, self._heap[0][0] - self._clock()) if self._heap else None
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wake.wait()

    async def _exit_loop(self) -> None:
        while True:
            key = await self._exits.get()
            why = _exited(key, self._host)
            hit = [
                esc
                for esc, record in list(self._records.items())
                if any(why(h, 0.0) for h in record.holders)
            ]
            for esc in hit:
                await self._drop_retrying(esc, why)

    async def _drop_retrying(
        self, esc: str, why: Callable[[Holder, float], ReleaseReason | None]
    ) -> None:
        """A holder's exit comes once: a transient NATS error (a timeout under load, a
        restart) must not leave its claims held until their TTL, so the release is retried."""
        for attempt in range(_EXIT_RETRIES):
            try:
                await self._drop(esc, why)
                return
            except Exception as exc:
                log.warning(
                    "claims: releasing %s after holder exit failed (%s); retrying", esc, exc
                )
                await asyncio.sleep(0.1 * 2**attempt)
        log.error("claims: gave up releasing %s after its holder exited", esc)

    async def _drop(self, esc: str, why: Callable[[Holder, float], ReleaseReason | None]) -> None:
        def plan(cur: ClaimRecord | None, now: float) -> _Plan:
            out = _rules.drop(cur, lambda h: why(h, now))
            if out is None:
                return _Plan(cur, False, lambda _rev, _rec: None)
            return _Plan(out[0], True, lambda _rev, _rec: None, tuple(out[1]))

        await self._mutate(esc, plan)

    def processes(self) -> Iterator[ProcKey]:
        """Processes whose exit would release claims (for tests and status): this host's only,
        since another host's pids mean nothing here (docs/one-host-to-many.md
        "What holds, and what does not")."""
        for record in self._records.values():
            for h in record.holders:
                if h.pid is not None and h.pid_start is not None and h.host == self._host:
                    yield h.pid, h.pid_start


def _exited(key: ProcKey, host: str | None) -> Callable[[Holder, float], ReleaseReason | None]:
    def why(h: Holder, _now: float) -> ReleaseReason | None:
        return "holder-exited" if (h.pid, h.pid_start) == key and h.host == host else None

    return why


def _position(msg: Any) -> tuple[int, int]:
    """(stream sequence, messages still pending) of a consumer delivery. The short ack subject
    ``$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>`` is read directly
    (nats-py's ``metadata`` also builds a datetime and a dataclass, on every claim's echo);
    any other form goes through nats-py."""
    tokens = msg.reply.split(".")
    if len(tokens) == 9 and tokens[0] == "$JS" and tokens[1] == "ACK":
        return int(tokens[5]), int(tokens[8])
    meta = msg.metadata
    return int(meta.sequence.stream), int(meta.num_pending)


def _operation(headers: dict[str, str] | None) -> str | None:
    """DEL, PURGE or None (a value) for a KV message, as nats-py's watcher reads it: the
    KV-Operation header, or a server marker's reason (nats-server >= 2.11 TTL expiry)."""
    if not headers:
        return None
    op = headers.get(_natskv.KV_OP)
    if op is not None:
        return op
    reason = headers.get(_natskv.MARKER_REASON)
    if reason is None:
        return None
    return "DEL" if reason == "Remove" else "PURGE"


def _decode(data: bytes | None, rev: int) -> ClaimRecord | None:
    if not data:
        return None
    try:
        return ClaimRecord.decode(data).with_tokens(rev)
    except (ValueError, TypeError, KeyError):
        log.warning("claims: undecodable entry at revision %d; treating it as free", rev)
        return None
